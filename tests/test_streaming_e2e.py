"""End to end: a real local Spark streaming query over a table that changes, SIGKILLed again and again.

A fixture table written by Apache Hudi is replayed instant by instant (its timeline revealed while the
stream runs), the driver process group — JVM included — is killed with SIGKILL at random points and restarted
from its checkpoint, and at the end what the ``foreachBatch`` sink received must be exactly the table's
changes: no version twice, and applied in order they rebuild the table's snapshot.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import hoodie

sys.path.insert(0, str(Path(__file__).parent / "e2e"))
from reveal import TimelineReveal  # noqa: E402
from verify import apply_upserts, delivered, duplicates, state_differences  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "e2e" / "stream_driver.py"


class Driver:
    """One run of the streaming driver in its own process group, with its output collected."""

    def __init__(self, table: Path, work: Path, options: dict, until_caught_up: bool = False):
        env = dict(os.environ, PYTHONPATH=str(REPO), PYSPARK_PYTHON=sys.executable)
        cmd = [sys.executable, str(DRIVER), "--table", str(table), "--work", str(work),
               "--options", json.dumps(options)] + (["--until-caught-up"] if until_caught_up else [])
        self.proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.batches = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if line.startswith("batch "):
                self.batches += 1

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._reader.join(5)

    def wait(self, timeout: float) -> int:
        rc = self.proc.wait(timeout)
        self._reader.join(5)
        return rc

    def errors(self) -> list[str]:
        return [ln for ln in self.lines if "Error" in ln or "Exception" in ln]


def run_with_kills(fixture: Path, tmp: Path, options: dict, kills: int, seed: int) -> tuple[Path, Path]:
    table, work = tmp / "table", tmp / "work"
    shutil.copytree(fixture, table)
    reveal = TimelineReveal(table, tmp / "hidden")
    reveal.reveal_next()
    rng = random.Random(seed)
    for i in range(kills):
        driver = Driver(table, work, options)
        # kill at a random point: during start-up and planning, or a little after some batch completed
        after_batches = rng.choice([0, 0, 1, 1, 2, 3])
        delay = rng.uniform(0.0, 2.5)
        started, deadline = time.monotonic(), time.monotonic() + 60
        while time.monotonic() < deadline and driver.proc.poll() is None:
            if rng.random() < 0.35:
                reveal.reveal_next()
            if after_batches == 0 and time.monotonic() - started > 3 + delay * 3:
                break
            if after_batches and driver.batches >= after_batches:
                time.sleep(delay)
                break
            time.sleep(0.3)
        driver.kill()
        assert not driver.errors(), f"run {i}: {driver.errors()[:5]}"
    reveal.reveal_all()
    final = Driver(table, work, options, until_caught_up=True)
    assert final.wait(600) == 0, final.lines[-30:]
    return table, work


@pytest.mark.parametrize("name,kills,options", [
    ("mor_avro__v9_txns_simple_meta", 16, {"emitDeletes": "true", "maxRowsPerTrigger": "3"}),
    ("mor_avro__v6_trips_8i3d", 4, {"emitDeletes": "true", "maxSplitsPerTrigger": "1"}),
])
def test_killed_and_restarted_stream_delivers_each_change_once(name, kills, options, unzip_fixture, tmp_path):
    fx = unzip_fixture(name)
    table, work = run_with_kills(fx.table, tmp_path, options, kills, seed=len(name))
    rows = delivered(work / "out")
    assert rows, "nothing was delivered"
    assert duplicates(rows) == []
    assert state_differences(apply_upserts(rows), hoodie.read_table(str(table))) == []
