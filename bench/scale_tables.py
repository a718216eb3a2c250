"""Wide tables written by Apache Hudi itself, for ``bench_scale.py``: the job that writes them and Hudi's own
snapshot read of them, each run in Hudi's oracle environment (PySpark 3.5 + the Hudi 1.2 bundle,
``tests/oracle/hudi_oracle/env.py``) in a JVM of its own.

Why Hudi's writer and not the project's: a user's wide table carries what Hudi writes — its metadata table
(``files`` and the other partitions Hudi 1.2 turns on by default), its commit metadata and its log-file naming —
and the planner's cost depends on exactly those.

The table (``write``): MERGE_ON_READ, table version 9, metadata table on, partitioned by ``part``
(``p00000`` …): ``--partitions`` × ``--rows`` rows in one ``bulk_insert`` (repartitioned and sorted by partition
path: one file group per partition, a parquet base file), then one ``upsert`` of one key per partition (a log
file in every file group). ``read``: ``spark.read.format("hudi")`` snapshot with
``hoodie.metadata.enable=true`` into Spark's ``noop`` sink, a cold read then ``--repeat`` warm ones (the same
session), the rows counted. Each job prints one JSON line.

Standard library only at import: the file runs under both interpreters (the oracle's for the jobs, the project's
for :func:`hudi_table` and :func:`hudi_snapshot_read`, which start them).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from hudi_peer_job import hudi_session, telling_line, write_options  # bench/: stdlib only at import

JOB = Path(__file__).resolve()
HUDI = "1.2"  # the bundle that writes and reads table version 9


def cache_folder(partitions: int) -> Path:
    """Where the table of ``partitions`` partitions is kept: ``~/.cache/hudi-streaming/bench-scale/<partitions>``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hudi-streaming" / "bench-scale" / str(partitions)


# -- the jobs (oracle environment) -------------------------------------------------------------------------------
def _rows(spark, n: int, partitions: int, ts: int):
    """Keys 0..n-1 at version ``ts``; key k lives in partition ``k % partitions``."""
    from pyspark.sql import functions as F

    return spark.range(n).select(F.format_string("u%09d", "id").alias("uuid"), F.lit(ts).cast("long").alias("ts"),
                                 F.format_string("p%05d", F.col("id") % partitions).alias("part"),
                                 (F.rand(ts) * 100).alias("fare"))


def write_main(a) -> None:
    spark = hudi_session(a.jar)
    # Hudi's embedded timeline server on, as by default (the oracle's jobs turn it off): without it each of the
    # upsert's per-partition tasks (the latest base files of a partition, its small files, ...) builds a file
    # system view from the metadata table itself, ~3 tasks a second here, so at 10,000 partitions each of the
    # upsert's four stages of 10,000 tasks took ~55 min; with it they ask the driver's view
    options = {**write_options("bench_scale"), "hoodie.datasource.write.partitionpath.field": "part",
               "hoodie.metadata.enable": "true", "hoodie.embed.timeline.server": "true"}

    def save(df, operation: str) -> float:
        t0 = time.monotonic()
        df.write.format("hudi").options(**options).option("hoodie.datasource.write.operation", operation) \
            .mode("append").save(a.table)
        return time.monotonic() - t0

    # bulk_insert with the rows repartitioned and sorted by partition path: each partition's rows in one task, one
    # partition's file open at a time (unsorted, a task of 500 partitions runs out of a 3g heap), so one base
    # file (one file group) per partition from two tasks; an ``insert`` makes a task per partition (slow here)
    options.update({"hoodie.bulkinsert.sort.mode": "PARTITION_PATH_REPARTITION_AND_SORT",
                    "hoodie.bulkinsert.shuffle.parallelism": "2"})
    insert_s = save(_rows(spark, a.partitions * a.rows, a.partitions, 1), "bulk_insert")
    upsert_s = save(_rows(spark, a.partitions, a.partitions, 2), "upsert")  # keys 0..P-1: one per partition
    print(json.dumps({"insert_s": insert_s, "upsert_s": upsert_s, "spark": spark.version}), flush=True)
    spark.stop()


def read_main(a) -> None:
    spark = hudi_session(a.jar)
    times, count = [], 0
    for _ in range(a.repeat + 1):
        t0 = time.monotonic()
        df = spark.read.format("hudi").option("hoodie.metadata.enable", "true").load(a.table)
        df.write.format("noop").mode("overwrite").save()
        times.append(time.monotonic() - t0)
    count = spark.read.format("hudi").option("hoodie.metadata.enable", "true").load(a.table).count()
    print(json.dumps({"cold_s": times[0], "warm_s": times[1:], "rows": count}), flush=True)
    spark.stop()


# -- starting them (project environment) -------------------------------------------------------------------------
def _run_job(oracle, log: Path, *args: str, timeout: float) -> dict:
    """A job of this file in the oracle environment; the JSON line it printed. Fails naming the log's cause."""
    cmd = [str(oracle.python), str(JOB), *args, "--jar", str(oracle.jars[HUDI])]
    with open(log, "a") as f:
        done = subprocess.run(cmd, env=oracle.spark_env(), stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
    text = log.read_text(errors="replace")
    if done.returncode:
        raise RuntimeError(f"Hudi job {args[0]} failed (exit {done.returncode}): {telling_line(text)}; see {log}")
    return json.loads([line for line in text.splitlines() if line.startswith("{")][-1])


def hudi_table(oracle, partitions: int, rows: int, timeout: float = 4 * 3600) -> Path:
    """Hudi's table of ``partitions`` × ``rows`` (see the module docstring), written once and kept in
    :func:`cache_folder`; a kept table of other parameters is written again."""
    folder = cache_folder(partitions)
    table, marker = folder / "table", folder / "params.json"
    params = {"partitions": partitions, "rows": rows, "hudi": HUDI}
    if marker.exists() and {k: json.loads(marker.read_text()).get(k) for k in params} == params:
        return table
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    print(f"Hudi {HUDI} writes {partitions:,} partitions x {rows} rows, then one update per partition, into "
          f"{table} ...", flush=True)
    t0 = time.monotonic()
    info = _run_job(oracle, folder / "write.log", "write", "--table", str(table), "--partitions", str(partitions),
                    "--rows", str(rows), timeout=timeout)
    marker.write_text(json.dumps({**params, **info, "seconds": round(time.monotonic() - t0, 1)}))
    print(f"  written in {time.monotonic() - t0:.0f} s (insert {info['insert_s']:.0f} s, upsert "
          f"{info['upsert_s']:.0f} s, job start-up included)", flush=True)
    return table


def hudi_snapshot_read(oracle, table: Path, log: Path, repeat: int = 1, timeout: float = 1800) -> dict:
    """Hudi's own snapshot read of ``table`` (metadata table on): ``{"cold_s", "warm_s": [...], "rows"}``."""
    return _run_job(oracle, log, "read", "--table", str(table), "--repeat", str(repeat), timeout=timeout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("job", choices=["write", "read"])
    ap.add_argument("--table", required=True)
    ap.add_argument("--jar", required=True, help="Hudi's Spark bundle")
    ap.add_argument("--partitions", type=int, default=100, help="write: partitions (one file group each)")
    ap.add_argument("--rows", type=int, default=5, help="write: rows per partition")
    ap.add_argument("--repeat", type=int, default=1, help="read: warm reads after the cold one")
    a = ap.parse_args()
    {"write": write_main, "read": read_main}[a.job](a)


if __name__ == "__main__":
    main()
