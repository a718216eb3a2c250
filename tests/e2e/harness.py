"""The kill-and-restart harness shared by the e2e tests and ``bench/soak.py``: the user's job as a process
group that can be SIGKILLed whole, and the project's writer changing a table while it runs."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

DRIVER = Path(__file__).resolve().parent / "stream_driver.py"


class Driver:
    """One run of the streaming job (``stream_driver.py``) in its own process group, with its output collected.

    ``args`` are more job arguments (``--sinks``, ``--task-retries``); ``env`` more environment, e.g. the fault
    point to die at (``hudi_streaming._faults``), which Spark passes on to its Python workers.
    """

    def __init__(self, table: Path, work: Path, options: dict, until_caught_up: bool = False,
                 args: list[str] | None = None, env: dict[str, str] | None = None):
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, **(env or {}))
        cmd = [sys.executable, str(DRIVER), "--table", str(table), "--work", str(work),
               "--options", json.dumps(options), *(args or [])] + (["--until-caught-up"] if until_caught_up else [])
        self.proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.batches = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())
            if line.startswith("batch "):
                self.batches += 1

    def kill(self) -> None:
        """SIGKILL the whole process group: the job's Python process, Spark's JVM and its Python workers."""
        kill_group(self.proc)
        self._reader.join(5)

    def wait(self, timeout: float) -> int:
        rc = self.proc.wait(timeout)
        self._reader.join(5)
        return rc

    def errors(self) -> list[str]:
        return [ln for ln in self.lines if "Error" in ln or "Exception" in ln]


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a process started in a group of its own, and everything it started; wait for it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def live_writer(table: Path, late_share: float, retain_commits: int = 5) -> tuple[list, Callable[[], None]]:
    """The project's writer with table services: returns (steps written so far, advance).

    ``advance()`` writes two load-generator steps (upserts; every fifth step deletes), compacting every third,
    cleaning every fourth and archiving every fifth step.
    """
    from hudi_streaming.writer.loadgen import LoadGenerator

    gen = LoadGenerator(str(table), keys=300, partitions=3, seed=11, batch=40, name="e2e", late_share=late_share)
    steps = [gen.step()]

    def advance() -> None:
        for _ in range(2):
            steps.append(gen.step())
            n, w = len(steps), gen.writer
            assert w is not None
            if n % 3 == 0:
                w.compact()
            if n % 4 == 0:
                w.clean(retain_commits=retain_commits)
            if n % 5 == 0:
                w.archive(keep_active=6)

    return steps, advance
