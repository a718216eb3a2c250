"""PySpark's worker daemon with this source's modules imported once, before it forks its workers
(``spark.python.daemon.module=hudi_streaming.streaming.daemon``, see README "Recommended Spark configuration").

Why: Spark starts a Python daemon per worker kind (the data-source lookup, ``schema()``, the planner, the
executors' task workers) and each task worker it forks imports Arrow, PySpark's SQL modules and this package
itself — about a second and 100 MiB per process. Imported here once, in the daemon, they are in every forked
worker at once, on pages it shares with the daemon (copy on write) instead of copies of its own.

Only the executors' daemon (worker module ``pyspark.worker``) imports ahead: it forks a task worker per
concurrent task (and again when one was stopped), so its children share one import. The other daemons fork one
worker per query or session (lookup, ``schema()``, planner), where importing before the fork saves nothing: the
daemon starts when that worker is first asked for. The streaming source's runner is no daemon worker (Spark
starts it directly).

Only what is safe across ``fork`` is imported: polars is left out (its thread pool does not survive a fork:
``hoodie.logfile.avro_arrow`` imports it in the worker that decodes with it), and so are the object-store clients (s3fs
starts an event-loop thread on first use; a local table needs none). numpy's BLAS thread and Arrow's jemalloc
background thread, which their imports start, have fork handlers of their own (``tests/test_daemon.py`` reads a
table in a child forked after the preload).
"""
from __future__ import annotations

import importlib
import sys

from pyspark import daemon

#: worker module -> what its daemon imports before the first fork: what each of its workers imports anyway
PRELOAD = {
    "pyspark.worker": ("pyspark.worker", "pyarrow.parquet", "hudi_streaming.streaming.source"),
}


def worker_module() -> str:
    """The worker module Spark started this daemon for, as ``pyspark.daemon`` decides it."""
    return sys.argv[1] if len(sys.argv) > 1 and sys.argv[1].startswith("pyspark") else "pyspark.worker"


def preload(worker: str) -> None:
    """Imports :data:`PRELOAD`'s modules for ``worker``; a module that fails to import is left to the worker that
    needs it, which reports the failure where Spark shows it (a daemon that dies here would say only that it did
    not start)."""
    for name in PRELOAD.get(worker, ()):
        try:
            importlib.import_module(name)
        except Exception:  # the worker that needs it reports it (see the docstring)
            pass


if __name__ == "__main__":
    preload(worker_module())
    daemon.manager()
