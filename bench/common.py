"""What the benchmark scripts share: worker processes, memory high-water marks, best-of-N timing, report figures.

* **Worker processes**: a measurement whose memory must not mix with another's runs in a fresh process. The
  script runs itself with ``--worker ...`` (:func:`run_worker`) and the worker prints its result as one JSON
  line and leaves (:func:`worker_done`). Workers are started through a lean launcher: Linux carries a process's
  RSS high-water mark (``ru_maxrss``) across fork/vfork + exec, so a child started directly by a big parent
  would report the parent's peak; a child of the launcher starts from the launcher's ~10 MiB.
* **Memory of this process** (Linux): :func:`rss_now`, :func:`rss_peak` (``ru_maxrss``), :func:`vm_hwm` (the
  kernel's ``VmHWM``, to cross-check it).
* **Memory of a process tree** (Linux ``/proc``): a local Spark job is a tree of processes — the Python driver,
  the JVM (driver and executors in one) and the Python processes it starts (workers' daemon and its forked
  workers, a Python streaming source's runner). :func:`tree` follows it by parent pid (PySpark's worker daemon
  puts itself in a process group of its own); :func:`spark_role` names each process's role; :class:`PeakRss`
  samples its summed RSS, and its PSS, which counts the pages a forked worker shares with its daemon once (a sum
  of RSS counts them twice).
* **Spark jobs**: :func:`tasks_of` (the tasks of a query's or a read's jobs).
* **Timing**: :func:`best_of`, :func:`pct`.
* **Reports**: :func:`mib`, :func:`size`, :func:`ratio`, :func:`verdict`, :func:`load`.
"""
from __future__ import annotations

import collections
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1 << 20

# -- worker processes ------------------------------------------------------------------------------------------

LAUNCHER = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"


def run_worker(script: str | Path, *args: str, env: dict[str, str] | None = None) -> dict:
    """``script --worker ARGS`` run in a fresh process (through the launcher); the JSON object it printed last."""
    cmd = [sys.executable, "-c", LAUNCHER, sys.executable, str(Path(script).resolve()), "--worker", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"worker {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def worker_done(result: dict) -> NoReturn:
    """Print a worker's result and leave without interpreter finalization: after pyarrow has read parquet
    through an fsspec (Python) file object, a normal exit aborts now and then ("terminate called without an
    active exception", SIGABRT; more often with polars loaded), a shutdown problem, not a measurement's."""
    print(json.dumps(result), flush=True)
    sys.stderr.flush()
    os._exit(0)


# -- this process's memory -------------------------------------------------------------------------------------

def rss_now() -> int:
    """Resident set size now, bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def rss_peak() -> int:
    """``ru_maxrss``: the RSS high-water mark, bytes (inherited across exec: see :data:`LAUNCHER`)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def vm_hwm() -> int:
    """The kernel's RSS high-water mark of this process image (``VmHWM``), bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


# -- a process tree's memory and CPU ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    cmd: str  # the command line, arguments joined by spaces ("" for a zombie)
    cpu: float  # user + system CPU seconds
    rss: int  # resident set size, bytes


def snapshot() -> dict[int, Proc]:
    """Every process readable now, by pid."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = Path(f"/proc/{d}/stat").read_text()
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            rss = int(Path(f"/proc/{d}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):  # exited meanwhile
            continue
        fields = raw[raw.rindex(")") + 2:].split()
        out[int(d)] = Proc(int(d), int(fields[1]), cmd.strip(), (int(fields[11]) + int(fields[12])) / TICK, rss)
    return out


def tree(root: int, procs: dict[int, Proc] | None = None) -> dict[int, Proc]:
    """``root`` and its live descendants (from ``procs``, or a new :func:`snapshot`)."""
    procs = snapshot() if procs is None else procs
    children: dict[int, list[int]] = collections.defaultdict(list)
    for p in procs.values():
        children[p.ppid].append(p.pid)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in procs:
            out[pid] = procs[pid]
        todo += children.get(pid, [])
    return out


#: PySpark's worker module → the Python worker role it runs for a Python data source
WORKER_ROLES = {"lookup_data_sources": "lookup", "create_data_source": "schema", "plan_data_source_read": "planner",
                "pyspark.worker": "tasks"}


def spark_role(p: Proc, root: int, procs: dict[int, Proc] | None = None) -> str:
    """What a process of a local PySpark job is, from its command line: the Python driver, the JVM, the streaming
    source's runner, and per worker module (:data:`WORKER_ROLES`) its daemon (``python -m <daemon module> <worker
    module>``) apart from the workers it forks (same command line, the daemon as parent; ``procs`` tells them
    apart, else both count as workers)."""
    exe = p.cmd.split(" ")[0]
    if p.pid == root:
        return "Python driver"
    if exe.endswith("java"):
        return "JVM (driver + executors)"
    if "python_streaming_source_runner" in p.cmd:
        return "Python source runner"
    if "pyspark" not in p.cmd:
        return "other" if p.cmd else "exited"
    kind = next((role for module, role in WORKER_ROLES.items() if p.cmd.endswith(module)), "other")
    parent = procs.get(p.ppid) if procs is not None else None
    daemon = ".daemon " in p.cmd and parent is not None and parent.cmd != p.cmd
    return f"Python {kind} {'daemon' if daemon else 'workers'}"


def pss(pid: int) -> int:
    """Proportional set size in bytes (shared pages divided among the processes that share them), 0 if gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class PeakRss:
    """The peak of the summed RSS of ``root``'s process tree, sampled every ``interval`` s by a thread, with the
    split by :func:`spark_role` at that peak (``split``: role → (bytes, processes)) and each role's own peak
    (``role_peak``: role → bytes; a role's processes summed, e.g. the streaming source's runner). Every ``pss_every``-th
    sample also sums the tree's PSS (dearer to read: the kernel walks each process's page tables), whose peak
    (``peak_pss``, split by role at that peak in ``split_pss``) counts the pages forked workers share with their
    daemon once: the fair measure of a tree whose Python workers are forked (a sum of RSS counts those pages in
    every process that maps them). ``stop()`` returns ``(peak bytes, split)``."""

    def __init__(self, root: int, interval: float = 0.25, pss_every: int = 2):
        self.root, self.interval, self.pss_every = root, interval, pss_every
        self.peak, self.peak_pss, self.samples = 0, 0, 0
        self.split: dict[str, tuple[int, int]] = {}
        self.split_pss: dict[str, tuple[int, int]] = {}
        self.role_peak: dict[str, int] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            procs = tree(self.root)
            roles = {pid: spark_role(p, self.root, procs) for pid, p in procs.items()}
            total = sum(p.rss for p in procs.values())
            if self.samples % self.pss_every == 0:
                sizes = {pid: pss(pid) for pid in procs}
                if sum(sizes.values()) > self.peak_pss:
                    self.peak_pss, self.split_pss = sum(sizes.values()), by_role(roles, sizes)
            self.samples += 1
            split = by_role(roles, {pid: p.rss for pid, p in procs.items()})
            for role, (size, _) in split.items():
                self.role_peak[role] = max(self.role_peak.get(role, 0), size)
            if total > self.peak:
                self.peak, self.split = total, split
            if self._done.wait(self.interval):
                return

    def stop(self) -> tuple[int, dict[str, tuple[int, int]]]:
        self._done.set()
        self._thread.join()
        return self.peak, self.split


def by_role(roles: dict[int, str], sizes: dict[int, int]) -> dict[str, tuple[int, int]]:
    """role → (the sizes of its processes summed, how many)."""
    out: dict[str, tuple[int, int]] = {}
    for pid, size in sizes.items():
        total, n = out.get(roles[pid], (0, 0))
        out[roles[pid]] = (total + size, n + 1)
    return out


# -- Spark jobs ------------------------------------------------------------------------------------------------

def tasks_of(tracker, jobs: list[int]) -> list[int]:
    """The tasks of each of these Spark jobs (every stage's), in job order, from ``sc.statusTracker()``."""
    out = []
    for job in sorted(jobs):
        info = tracker.getJobInfo(job)
        stages = [tracker.getStageInfo(s) for s in (info.stageIds if info else [])]
        out.append(sum(s.numTasks for s in stages if s is not None))
    return out


# -- timing ----------------------------------------------------------------------------------------------------

@dataclass
class Best:
    """``repeat`` runs of one function: the best (shortest) run's wall and CPU seconds (CPU: every thread of the
    process, steadier than wall time on a busy machine), and every run's."""

    seconds: float
    cpu_seconds: float
    times: list[float]
    cpu_times: list[float]
    index: int  # of the best run


def best_of(fn: Callable[[], T], repeat: int, each: Callable[[T], Any] | None = None) -> Best:
    """Run ``fn`` ``repeat`` times. Each result goes to ``each`` (a check, a count) and is dropped before the
    next run, so a memory high-water mark is that of one run."""
    times, cpus = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        if each is not None:
            each(out)
        del out
    best = min(range(repeat), key=times.__getitem__)
    return Best(times[best], cpus[best], times, cpus, best)


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(-(-p * len(s) // 100)) - 1))]


# -- report figures --------------------------------------------------------------------------------------------

def mib(b: float) -> str:
    return f"{b / MIB:,.0f} MiB"


def size(n: int) -> str:
    """1000000 -> 1M, 200000 -> 200k."""
    if n and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n and n % 1_000 == 0:
        return f"{n // 1_000}k"
    return f"{n:,}"


def ratio(x: float, y: float) -> str:
    """``x / y`` as ``1.23x``, or ``n/a`` where either is missing (0 or NaN)."""
    return f"{x / y:.2f}x" if y and x == x and y == y else "n/a"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def load() -> str:
    """The load averages (1, 5, 15 minutes)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
