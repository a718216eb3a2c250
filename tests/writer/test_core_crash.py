"""A writer killed (SIGKILL) at random points leaves a table that reads as its last completed state.

A zygote process (``python -c``) imports the writer once and forks a fresh writer process per round; the
writer runs the load generator (writes with compaction, clean and archive in between) until the test kills it
after a random delay (seeded). After each kill, our reader and hudi-rs must return exactly the state of the
workload replayed in memory up to the last step whose commit completed (found in the commit metadata), and
the next writer — which first rolls back or finishes what the killed one left pending — must write a step
that reads back correctly. Forking from a warm zygote keeps a round at a fraction of a second, so dozens
of kills fit in a few seconds per table.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from test_core import Model, assert_state

from hudi_streaming import hoodie
from hudi_streaming.writer.loadgen import STEP_KEY, LoadGenerator, completed_steps

pytestmark = pytest.mark.slow

KILLS = 8  # per table; four tables: 32 kills

ZYGOTE = r"""
import json, os, signal, sys, traceback
from hudi_streaming.writer.loadgen import LoadGenerator
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
print("ready", flush=True)
for line in sys.stdin:
    args = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            sys.stdin.close()
            gen = LoadGenerator(args["path"], **args["gen"])
            gen.run(None, **args["services"])
        except BaseException:
            with open(args["errors"], "a") as f:
                f.write(traceback.format_exc())
        finally:
            os._exit(1)
    print(pid, flush=True)
"""

GEN = dict(keys=80, partitions=3, seed=7, batch=20, max_file_records=15)
SERVICES = dict(compact_every=3, clean_every=4, archive_every=5, retain_commits=3, keep_active=4)


def step_instants(path: str) -> dict[int, str]:
    t = hoodie.HudiTable(path)
    out = {}
    for e in t.timeline.completed_writes(include_archived=True):
        step = t.timeline.commit_metadata(e.requested_time).extra_metadata.get(STEP_KEY)
        if step:
            out[int(step)] = e.requested_time
    return out


def expected(path: str, merge_mode: str) -> tuple[int, dict]:
    """(last completed step, the model replayed up to it) — the model built by hand from the planned steps."""
    last = completed_steps(path)
    instants = step_instants(path)
    dry = LoadGenerator(None, merge_mode=merge_mode, **{k: v for k, v in GEN.items() if k != "max_file_records"})
    model = Model(merge_mode == "EVENT_TIME_ORDERING")
    for n in range(1, last + 1):
        model.apply(dry.plan(), instants[n])
    return last, model.rows


@pytest.fixture(scope="module")
def zygote():
    proc = subprocess.Popen([sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "ready"
    yield proc
    proc.stdin.close()
    proc.wait(timeout=30)


def _gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.005)
    raise AssertionError(f"writer {pid} did not die")


@pytest.mark.parametrize("version,table_type", [(9, "MERGE_ON_READ"), (6, "MERGE_ON_READ"), (9, "COPY_ON_WRITE"),
                                                (6, "COPY_ON_WRITE")])
def test_killed_writer_leaves_last_completed_state(tmp_path, zygote, version, table_type):
    path = str(tmp_path / "t")
    mode = "EVENT_TIME_ORDERING"
    LoadGenerator(path, table_type=table_type, version=version, **GEN).run(2)
    errors = tmp_path / "errors.txt"
    rng = random.Random(f"crash:{version}:{table_type}")
    last_steps = []
    for kill in range(KILLS):
        zygote.stdin.write(json.dumps({"path": path, "gen": GEN, "services": SERVICES,
                                       "errors": str(errors)}) + "\n")
        zygote.stdin.flush()
        pid = int(zygote.stdout.readline())
        time.sleep(rng.uniform(0.02, 0.45))
        os.kill(pid, signal.SIGKILL)
        _gone(pid)
        assert not errors.exists(), f"the writer failed by itself:\n{errors.read_text()}"
        last, rows = expected(path, mode)
        last_steps.append(last)
        assert_state(path, rows, f"after kill {kill} (last completed step {last})", archived=True)
        # the next writer rolls back / finishes what was left pending, then writes
        gen = LoadGenerator(path, **GEN)
        assert gen.steps_done == last
        gen.step()
        last2, rows2 = expected(path, mode)
        assert last2 == last + 1
        assert_state(path, rows2, f"after the write following kill {kill}", archived=True)
        pending = [e for e in hoodie.HudiTable(path).timeline.active.entries if not e.is_completed]
        assert not pending, f"left pending after a successful write: {pending}"
    assert last_steps[-1] > last_steps[0], "the killed writers made progress"
