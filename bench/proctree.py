"""A process and its live descendants, read from ``/proc`` (Linux): what each uses, and a sampler of the peak.

Shared by the benchmarks that measure a Spark job as a whole: a local Spark job is a tree of processes — the
Python driver, the JVM it starts (driver and executors in one), and the Python processes the JVM starts (the
workers' daemon and its forked workers, a Python streaming source's runner). The tree is followed by parent pid,
not by process group: PySpark's worker daemon puts itself in a process group of its own.

``bench_latency.py`` takes CPU seconds per process from :func:`tree`; ``bench_vs_hudi.py`` samples the tree's
resident set size with :class:`PeakRss`. RSS is summed over the processes, so pages a forked worker still shares
with its daemon count twice: a sum of RSS overstates the memory the tree needs (more, the more Python workers a
job has); :class:`PeakRss` also samples the tree's PSS, which counts a shared page once.
"""
from __future__ import annotations

import collections
import os
import threading
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


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


def spark_role(p: Proc, root: int) -> str:
    """What a process of a local PySpark job is, from its command line."""
    exe = p.cmd.split(" ")[0]
    if p.pid == root:
        return "Python driver"
    if exe.endswith("java"):
        return "JVM (driver + executors)"
    if "python_streaming_source_runner" in p.cmd:
        return "Python source runner"
    if "pyspark" in p.cmd:
        return "Python workers"
    return "other" if p.cmd else "exited"


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
    split by :func:`spark_role` at that peak (``split``: role → (bytes, processes)). Every ``pss_every``-th
    sample also sums the tree's PSS (dearer to read: the kernel walks each process's page tables), whose peak
    (``peak_pss``) counts the pages forked workers share once. ``stop()`` returns ``(peak bytes, split)``."""

    def __init__(self, root: int, interval: float = 0.25, pss_every: int = 4):
        self.root, self.interval, self.pss_every = root, interval, pss_every
        self.peak, self.peak_pss, self.samples = 0, 0, 0
        self.split: dict[str, tuple[int, int]] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            procs = tree(self.root)
            total = sum(p.rss for p in procs.values())
            if self.samples % self.pss_every == 0:
                self.peak_pss = max(self.peak_pss, sum(pss(pid) for pid in procs))
            self.samples += 1
            if total > self.peak:
                split: dict[str, tuple[int, int]] = {}
                for p in procs.values():
                    size, n = split.get(spark_role(p, self.root), (0, 0))
                    split[spark_role(p, self.root)] = (size + p.rss, n + 1)
                self.peak, self.split = total, split
            if self._done.wait(self.interval):
                return

    def stop(self) -> tuple[int, dict[str, tuple[int, int]]]:
        self._done.set()
        self._thread.join()
        return self.peak, self.split
