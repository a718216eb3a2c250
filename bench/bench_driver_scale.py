"""The stream's driver on wide tables without Spark: what the source runner's calls cost as the table grows.

    python bench/bench_driver_scale.py                       # the cached 100, 1,000 and 10,000-partition tables
    python bench/bench_driver_scale.py --sizes 100,1000      # the sizes whose tables exist
    python bench/bench_driver_scale.py --option maxFilesPerTrigger=10

``bench_scale.py --hudi`` measures the source runner's peak RSS in Spark, where PySpark's runner process, pyarrow and
the S3 client stack are most of it and a run takes minutes; this isolates the part that grows with the table. For
each size (``scale_tables.hudi_table``'s cached table, written by Hudi 1.2: one file group per partition, a log
file in each, metadata table on), a fresh process (``common.run_worker``) imports the source, then makes the
runner's calls on one ``StreamDriver`` as Spark makes them for an AvailableNow batch from ``earliest``: the schema
(Spark's schema call), the first ``latest_offset`` (metadata-table listing, the snapshot's splits planned and
saved in a state folder), ``partitions`` (the batch's tasks) and ``commit``. It prints per size the RSS growth
over the process after its imports (its ``ru_maxrss`` peak and after each call), the CPU seconds of the calls
(``process_time``), the splits and tasks; then the peak growth and CPU of the largest size against the smallest.

Issue 25's target is the runner's whole peak within 1.2x of the 100-partition run's; with Spark's runner at
~123 MiB, that leaves ~25 MiB for what grows here.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from common import MIB, load, rss_now, run_worker, worker_done  # bench/


def measure(table: str, options: dict[str, str]) -> dict:
    """The runner's calls on ``table`` in this (fresh) process: RSS growth and CPU (see the module docstring)."""
    import pyarrow  # noqa: F401  the runner has it loaded before the source is asked anything

    from hudi_streaming.streaming.admission import BatchLimit
    from hudi_streaming.streaming.driver import StreamDriver
    from hudi_streaming.streaming.offsets import make_offset
    from hudi_streaming.streaming.options import parse_options
    from hudi_streaming.streaming.schema import source_schema

    base = rss_now()
    cpu = time.process_time()
    growth = {}
    with tempfile.TemporaryDirectory() as state:
        opts = parse_options({"path": table, "stateLocation": f"{state}/state", **options})
        driver = StreamDriver(opts, source_schema(opts))
        start = make_offset(0, 0)
        end = driver.latest_offset(start, BatchLimit())
        growth["latest_offset"] = rss_now() - base
        tasks = driver.partitions(start, end, lambda ranges, columns, commits, clock: len(ranges))
        growth["partitions"] = rss_now() - base
        driver.commit(end)
        growth["commit"] = rss_now() - base
        splits = driver.last_batch.get("splits", 0)
    cpu = time.process_time() - cpu
    # the kernel's high-water mark and /proc's current figure round differently: the peak is at least each sample
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base, *growth.values())
    return {"peak": peak, "growth": growth, "cpu": cpu, "splits": splits, "tasks": len(tasks)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000", help="partition counts of the cached Hudi tables")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="a source option")
    ap.add_argument("--worker", nargs=2, metavar=("TABLE", "OPTIONS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        table, opts = a.worker
        worker_done(measure(table, dict(o.split("=", 1) for o in opts.split(",") if o)))
    from scale_tables import cache_folder  # bench/

    results = {}
    for n in (int(s) for s in a.sizes.split(",")):
        folder = cache_folder(n)
        if not (folder / "params.json").exists():
            raise SystemExit(f"no complete {n:,}-partition table in {folder}: run bench_scale.py --hudi --sizes {n} "
                             "(it has Hudi write it)")
        r = results[n] = run_worker(Path(__file__), str(folder / "table"), ",".join(a.option))
        g = r["growth"]
        print(f"{n:,} partitions: {r['splits']:,} splits, {r['tasks']:,} tasks; RSS growth peak {r['peak'] / MIB:.1f} "
              f"MiB (after latest_offset {g['latest_offset'] / MIB:.1f}, partitions {g['partitions'] / MIB:.1f}, "
              f"commit {g['commit'] / MIB:.1f}); CPU {r['cpu']:.2f} s; load {load()}", flush=True)
    if len(results) > 1:
        small, big = results[min(results)], results[max(results)]
        print(f"{max(results):,} vs {min(results):,} partitions: peak growth {small['peak'] / MIB:.1f} -> "
              f"{big['peak'] / MIB:.1f} MiB, CPU {small['cpu']:.2f} -> {big['cpu']:.2f} s")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
