"""Thread pools shared by every read in a process, started on first use.

A pool started per read costs a thread start and join each time: on a table of many small file groups that is
most of what a slice's read-ahead costs (issue 25: ~1 ms of CPU per file group, a fifth of the read). A pool kept
for the process starts its threads once; ``ThreadPoolExecutor`` starts one more only when none is idle, so
sequential reads share one thread.

Spark's Python workers are forked from a daemon, and a forked child has none of its parent's threads: the
child forgets the pool and starts its own on first use.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor


class SharedPool:
    """A process-wide :class:`ThreadPoolExecutor` of at most ``workers`` threads named ``prefix``, started on
    first use (and again in a forked child)."""

    def __init__(self, workers: int, prefix: str):
        self.workers, self.prefix = workers, prefix
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix=self.prefix)
            return self._pool

    def _forget(self) -> None:
        """In a forked child: the parent's threads are gone (and its lock may be held by one of them)."""
        self._pool, self._lock = None, threading.Lock()
