"""PySpark's worker daemon with this source's modules imported once, before it forks its workers
(``spark.python.daemon.module=hudi_streaming.streaming.daemon``, see README "Recommended Spark configuration").

Why: the executors' task workers (worker module ``pyspark.worker``) each import Arrow, PySpark's SQL modules and
this package itself — about a second and 100 MiB per process. Imported here once, in the daemon, they are in
every forked worker at once, on pages it shares with the daemon (copy on write) instead of copies of its own.

Spark (4.x) starts this module only for the executors' workers: the data-source lookup, ``schema()`` and the
planner run in workers of ``pyspark.daemon`` whatever this setting says (``PythonPlannerRunner`` asks for the
default daemon), one worker per query or session, and the streaming source's runner is no daemon worker (Spark
starts it directly). :data:`PRELOAD` therefore names only ``pyspark.worker``'s imports.

What a task imports anyway is imported here: ``pyspark.worker``, ``pyarrow.parquet``, the source with the modules
its tasks' reading imports where it is used (``consumer``, ``rewind_keys``), the local file system's fsspec
implementation, and pandas where it is installed (pyarrow imports it on a task's first ``pa.array``, ~0.5 s and 40
MiB in each worker; ``tests/streaming/test_daemon.py`` checks that a task then imports nothing of these, and none of
this package's modules). Only what is safe across ``fork`` is imported: polars is left out (its import starts its
thread pool, which does not survive a fork: the worker that decodes a log block imports it), and so are the
object-store clients (s3fs starts an event-loop thread on first use; a local table needs none). numpy's BLAS thread
and Arrow's jemalloc background thread, which their imports start, have fork handlers of their own (a child forked
after the preload reads a table in the same test).

Two settings make the workers' memory smaller (:func:`prepare`; ``bench/bench_vs_hudi.py``'s task workers):

- Arrow's memory pool is jemalloc (:data:`ARROW_POOL`; ``ARROW_DEFAULT_MEMORY_POOL``, set before pyarrow is
  imported, unless the environment sets it already). pyarrow's default, mimalloc, keeps what a task freed (a
  base file's decoded pieces, a slice's log records) in its per-thread segments: a worker reading the 1M-row
  benchmark table peaked at 345-389 MiB RSS with it, 290-315 MiB with jemalloc or the system allocator, whose
  pool peaks (85 MiB) are the same.
- The preloaded modules' objects are moved out of the garbage collector's generations (``gc.freeze()``) before
  the first fork: a collection in a worker would otherwise write to the header of every object it traverses,
  and so copy the daemon's pages it touches into the worker (copy on write), page by page, until each worker
  holds its own copy of the preload.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys

from pyspark import daemon

#: worker module -> what its daemon imports before the first fork: what each of its workers imports anyway
#: (pandas: pyarrow's first conversion of Python values imports it, where it is installed)
PRELOAD = {
    "pyspark.worker": ("pyspark.worker", "pyarrow.parquet", "pyarrow.pandas_compat", "pandas",
                       "fsspec.implementations.local", "hudi_streaming.streaming.source",
                       # what ``source``'s task reading imports where it is used
                       "hudi_streaming.streaming.consumer", "hudi_streaming.state.rewind_keys"),
}


#: Arrow's memory pool in the executors' workers (see the module's docstring)
ARROW_POOL = "jemalloc"


def worker_module() -> str:
    """The worker module Spark started this daemon for, as ``pyspark.daemon`` decides it."""
    return sys.argv[1] if len(sys.argv) > 1 and sys.argv[1].startswith("pyspark") else "pyspark.worker"


def preload(worker: str) -> None:
    """Imports :data:`PRELOAD`'s modules for ``worker``; a module that fails to import (pandas where it is not
    installed) is left to the worker that needs it, which reports the failure where Spark shows it (a daemon that
    dies here would say only that it did not start)."""
    for name in PRELOAD.get(worker, ()):
        try:
            importlib.import_module(name)
        except Exception:  # the worker that needs it reports it (see the docstring)
            pass


def prepare(worker: str) -> None:
    """What the daemon does before it forks its first ``worker``: Arrow's pool chosen (before pyarrow is
    imported), the preload, and the preloaded objects frozen out of the garbage collector's reach."""
    if worker in PRELOAD:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", ARROW_POOL)
    preload(worker)
    gc.freeze()


if __name__ == "__main__":
    prepare(worker_module())
    daemon.manager()
