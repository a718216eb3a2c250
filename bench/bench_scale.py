"""Tables of production size (issue 25): a wide MOR table streamed from ``earliest`` against Spark's own reader.

A Hudi v9 MOR table of ``--partitions`` partitions × ``--rows-per-partition`` rows (one file group each), written
by the project's writer in one insert, then one upsert that updates ``--updates`` rows spread over the partitions
(log files). In one Spark session (``local[2]``), interleaved, ``--repeat`` rounds after a cold one:

* the stream: ``readStream.format("hudi_streaming")`` from ``earliest`` with Trigger.AvailableNow into a
  ``noop`` foreachBatch sink, start to end (query start-up included, as a user waits for it);
* ``spark.read.parquet`` of the same base files into ``noop``: Spark's file source, the anchor.

Printed per reader: best and median wall seconds; the ratio stream / parquet speed (the anchor's time ÷ the
stream's; target ≥ 1.0×), the Spark tasks of each stream batch and of the parquet read (Spark's status tracker:
the jobs of the query's job group, one per batch, and of the parquet read's; every stage's tasks), and, without
Spark, what planning the stream's first batch costs the driver: the time of ``StreamMonitor.plan_snapshot`` and
the data files (outside ``.hoodie/``) it opens, and what the batch's tasks cost in their Python workers
(:func:`task_read_cost`; ``--no-spark`` stops there). ``--option maxPartitionBytes=1`` gives every file group a
task of its own, as before issue 25.

    python bench/bench_scale.py                             # 1,000 partitions x 20 rows, 1,000 updates, 2 rounds
    python bench/bench_scale.py --partitions 200 --repeat 1  # a smoke run
    python bench/bench_scale.py --keep /tmp/scale           # keep (and reuse) the table

``--hudi``: tables written by Apache Hudi itself instead (metadata table on; ``scale_tables.py``, cached), of each
``--sizes`` partition count, each local and on S3 (moto behind a proxy adding ``--latency`` per request,
``scale_s3.py``): time to the first batch and the driver's requests before it, AvailableNow start to end, tasks
per batch, the source runner's peak RSS, against ``spark.read.parquet``, Hudi's own snapshot read and hudi-rs
(``scale_hudi.py`` says how each is measured).

    python bench/bench_scale.py --hudi                      # 100 and 1,000 partitions, local and S3
    python bench/bench_scale.py --hudi --sizes 100,1000,10000 --s3-available-now-max 1000 --hudi-warm-reads 0
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import load, ratio, tasks_of  # bench/

TARGET = 1.0  # the stream's speed / spark.read.parquet's, start to end (issue 25)


def build(table: str, partitions: int, rows_per_partition: int, updates: int) -> dict:
    """The table (see the module docstring); returns its parameters, as ``params.json`` keeps them."""
    import numpy as np
    import pyarrow as pa

    from hudi_streaming.writer import create_table

    schema = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("part", pa.string()), ("fare", pa.float64())])
    rng = np.random.default_rng(25)
    n = partitions * rows_per_partition

    def rows(keys: np.ndarray, ts: int) -> pa.Table:
        return pa.table({"uuid": [f"u{k:09d}" for k in keys], "ts": np.full(len(keys), ts),
                         "part": [f"p{k % partitions:05d}" for k in keys], "fare": rng.random(len(keys)) * 100},
                        schema=schema)

    w = create_table(table, "bench_scale", schema, record_key="uuid", partition_fields="part", ordering_field="ts",
                     table_type="MERGE_ON_READ", version=9)
    w.insert(rows(np.arange(n), 1))
    if updates:  # keys k, k + partitions, ...: one per partition while updates <= partitions
        w.upsert(rows(np.arange(min(updates, n)), 2))
    return {"partitions": partitions, "rows_per_partition": rows_per_partition, "updates": updates}


def plan_cost(table: str) -> tuple[float, int, int]:
    """(seconds, splits, data files opened) of planning the stream's snapshot on the driver, without Spark."""
    from hudi_streaming.hoodie.storage import Storage
    from hudi_streaming.hoodie.table import HudiTable
    from hudi_streaming.monitor.monitor import MonitorOptions, StreamMonitor

    opened: list[str] = []
    originals = {name: getattr(Storage, name) for name in ("read_bytes", "open", "parquet_file", "input_file")}

    def counting(name):
        def call(self, rel, *args, **kwargs):
            if not rel.startswith(".hoodie"):
                opened.append(rel)
            return originals[name](self, rel, *args, **kwargs)
        return call

    for name in originals:
        setattr(Storage, name, counting(name))
    try:
        t0 = time.perf_counter()
        plan = StreamMonitor(HudiTable(table), MonitorOptions()).plan_snapshot()
        took = time.perf_counter() - t0
    finally:
        for name, fn in originals.items():
            setattr(Storage, name, fn)
    return took, len(plan.splits), len(set(opened))


def task_read_cost(table: str, rounds: int = 3) -> dict:
    """What the stream's tasks cost in their Python workers, without Spark: the AvailableNow batch planned as
    Spark plans it (``HudiStreamingDataSource``: schema, stream reader, ``latestOffset``, ``partitions``), each
    task pickled and read as a worker reads it, its batches written as the Arrow IPC stream a worker hands the
    JVM. CPU (``process_time``: the read-ahead and Arrow threads included) per file group, each task's best of
    ``rounds`` after a warm-up task; and the batches and rows per batch Spark receives."""
    import io
    import pickle

    import pyarrow as pa
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from hudi_streaming.streaming.data_source import HudiStreamingDataSource

    with tempfile.TemporaryDirectory(prefix="bench-scale-state-") as state:
        source = HudiStreamingDataSource({"path": table, "stateLocation": state})
        reader = source.streamReader(source.schema())
        reader.prepareForTriggerAvailableNow()
        start = reader.initialOffset()
        tasks = [pickle.dumps(t) for t in reader.partitions(start, reader.latestOffset(start, ReadAllAvailable()))]

    def read(task: bytes) -> list:
        batches = list(reader.read(pickle.loads(task)))
        if batches:
            with pa.ipc.new_stream(io.BytesIO(), batches[0].schema) as out:
                for b in batches:
                    out.write_batch(b)
        return batches

    groups = [len({(r.split.partition, r.split.file_id) for r in pickle.loads(t).ranges}) for t in tasks]
    read(tasks[0])  # the worker's first task imports and opens what the others reuse: not counted
    best = [float("inf")] * len(tasks)
    for _ in range(rounds):
        for i, task in enumerate(tasks[1:], 1):
            t0 = time.process_time()
            batches = read(task)
            best[i] = min(best[i], time.process_time() - t0)
    counted = sum(groups[1:])
    rows = sum(b.num_rows for b in batches)
    return {"tasks": len(tasks), "groups": sum(groups), "ms_per_group": sum(best[1:]) / counted * 1e3,
            "batches_last_task": len(batches), "rows_last_task": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--rows-per-partition", type=int, default=20)
    ap.add_argument("--updates", type=int, default=1000, help="rows the one upsert updates (one per partition)")
    ap.add_argument("--repeat", type=int, default=2, help="warm rounds after a cold one (best and median count)")
    ap.add_argument("--keep", help="folder to keep (and reuse) the table in")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="a source option for the stream, e.g. maxPartitionBytes=1m (repeatable)")
    ap.add_argument("--no-spark", action="store_true",
                    help="only what is measured without Spark: the driver's planning, the tasks' reads")
    ap.add_argument("--hudi", action="store_true", help="tables written by Apache Hudi, local and on S3")
    ap.add_argument("--sizes", default="100,1000", help="--hudi: partition counts of the tables, comma-separated")
    ap.add_argument("--latency", type=float, default=0.04, help="--hudi: seconds the S3 proxy adds per request")
    ap.add_argument("--skip-s3", action="store_true", help="--hudi: local only")
    ap.add_argument("--s3-available-now-max", type=int, metavar="PARTITIONS",
                    help="--hudi: the S3 AvailableNow query only up to this many partitions (first batch at all)")
    ap.add_argument("--hudi-warm-reads", type=int, default=1,
                    help="--hudi: warm reads of Hudi's snapshot read after the cold one (0: the cold one counts)")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if args.hudi:
        from scale_hudi import run  # bench/

        run(sorted(int(n) for n in args.sizes.split(",")), args.latency, args.skip_s3, args.keep,
            s3_full_max=args.s3_available_now_max, hudi_warm=args.hudi_warm_reads)
        return
    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-scale-"))
    table = work / "table"
    params = {"partitions": args.partitions, "rows_per_partition": args.rows_per_partition, "updates": args.updates}
    if (table / ".hoodie").exists():
        kept = json.loads((work / "params.json").read_text()) if (work / "params.json").exists() else None
        if kept != params:
            raise SystemExit(f"{work} holds a table of other parameters ({kept}); use another --keep folder")
    else:
        t0 = time.perf_counter()
        (work / "params.json").write_text(json.dumps(build(str(table), **params)))
        print(f"wrote {args.partitions:,} partitions x {args.rows_per_partition} rows + {args.updates:,} updates in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    rows = args.partitions * args.rows_per_partition
    took, splits, opened = plan_cost(str(table))
    print(f"driver: planning the snapshot took {took:.2f} s for {splits:,} splits, opening {opened:,} data files",
          flush=True)
    cost = task_read_cost(str(table))
    print(f"tasks without Spark: {cost['tasks']} tasks, {cost['groups']:,} file groups; read (and written as Arrow "
          f"IPC) in {cost['ms_per_group']:.2f} CPU ms per file group (each task's best of 3); the last task hands "
          f"Spark {cost['batches_last_task']} batch(es) of {cost['rows_last_task']:,} rows; load {load()}", flush=True)
    if args.no_spark:
        return

    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    tracker = spark.sparkContext.statusTracker()
    base_files = sorted(str(p) for p in table.rglob("*.parquet"))

    def stream_run(i: int) -> tuple[float, int, list[int]]:
        for d in (f"state{i}", f"ck{i}"):
            shutil.rmtree(work / d, ignore_errors=True)
        reader = spark.readStream.format("hudi_streaming").option("stateLocation", str(work / f"state{i}"))
        for opt in args.option:
            name, value = opt.split("=", 1)
            reader = reader.option(name, value)
        t0 = time.perf_counter()
        q = (reader.load(str(table)).writeStream
             .foreachBatch(lambda df, _: df.write.format("noop").mode("overwrite").save())
             .option("checkpointLocation", str(work / f"ck{i}")).trigger(availableNow=True).start())
        q.awaitTermination()
        if q.exception() is not None:
            raise SystemExit(f"the stream failed: {q.exception()}")
        took = time.perf_counter() - t0
        # a query's jobs run in the job group of its run id: here one job per batch, its noop write
        jobs = tracker.getJobIdsForGroup(q.runId)
        return took, sum(p["numInputRows"] for p in q.recentProgress), tasks_of(tracker, jobs)

    def parquet_run(i: int) -> tuple[float, int, list[int]]:
        group = f"parquet-{i}"
        spark.sparkContext.setJobGroup(group, "spark.read.parquet")
        t0 = time.perf_counter()
        spark.read.parquet(*base_files).write.format("noop").mode("overwrite").save()
        took = time.perf_counter() - t0
        # the last job is the read (before it: listing the files in parallel, reading a footer for the schema)
        return took, rows, tasks_of(tracker, tracker.getJobIdsForGroup(group))[-1:]

    runs = {"spark.read.parquet (base files)": parquet_run, "hudi_streaming AvailableNow": stream_run}
    warm: dict[str, list[tuple[float, int, list[int]]]] = {name: [] for name in runs}
    for i in range(args.repeat + 1):  # round 0 is cold: not counted
        for name, fn in runs.items():
            secs, n, tasks = fn(i)
            print(f"  round {i} {name}: {secs:.2f} s, {n:,} rows, tasks {tasks}", flush=True)
            if n != rows:
                raise SystemExit(f"{name} delivered {n:,} rows, not {rows:,}")
            if i:
                warm[name].append((secs, n, tasks))
    spark.stop()
    print(f"{args.partitions:,} partitions x {args.rows_per_partition} rows, {args.updates:,} updates; options "
          f"{args.option or 'none'}; load {load()}")
    print(f"{'reader':<34} | {'best s':>7} | {'median s':>8} | tasks (per batch)")
    for name, done in warm.items():
        best = min(r[0] for r in done)
        print(f"{name:<34} | {best:>7.2f} | {statistics.median(r[0] for r in done):>8.2f} | {done[0][2]}")
    stream, anchor = warm["hudi_streaming AvailableNow"], warm["spark.read.parquet (base files)"]
    per_round = [a[0] / s[0] for a, s in zip(anchor, stream)]
    best_ratio = ratio(min(a[0] for a in anchor), min(s[0] for s in stream))
    print(f"ratio stream / parquet speed (parquet time / stream time): best runs {best_ratio}, per round "
          f"{', '.join(f'{r:.2f}x' for r in per_round)} (target >= {TARGET}x)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
