"""Streaming throughput: rows/s through a hudi_streaming foreachBatch sink vs Spark's own parquet reader.

Target (issue: streaming source): ≥ 0.5× ``spark.read.parquet`` of the same base files. A MOR table version 9
is written with the project's writer (``--rows`` inserts in file groups of ``--group-rows``, then ``--updates``
updates in log files); the stream reads it from ``earliest`` with Trigger.AvailableNow, so its batches are the
merged snapshot. Both sides write to Spark's ``noop`` sink, which materialises every column. Each side runs
twice in one Spark session; the warm run counts.

    python bench/bench_stream.py [--rows 1000000] [--updates 100000] [--max-rows-per-trigger 0]
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build(table: str, rows: int, updates: int, group_rows: int) -> None:
    import numpy as np
    import pyarrow as pa

    from hoodie.writer import create_table

    rng = np.random.default_rng(1)
    schema = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("rider", pa.string()), ("driver", pa.string()),
                        ("fare", pa.float64()), ("city", pa.string())])

    def batch(keys: np.ndarray, ts: int) -> pa.Table:
        n = len(keys)
        return pa.table({"uuid": pa.array([f"u{k:09d}" for k in keys]), "ts": pa.array(np.full(n, ts)),
                         "rider": pa.array([f"rider-{k % 997}" for k in keys]),
                         "driver": pa.array([f"driver-{k % 991}" for k in keys]),
                         "fare": pa.array(rng.random(n) * 100), "city": pa.array([f"c{k % 5}" for k in keys])},
                        schema=schema)

    w = create_table(table, "bench_stream", schema, "uuid", [], "ts", table_type="MERGE_ON_READ", version=9,
                     max_file_records=group_rows)
    step = 200_000
    for lo in range(0, rows, step):
        w.insert(batch(np.arange(lo, min(lo + step, rows)), 1))
    if updates:
        w.upsert(batch(rng.choice(rows, size=updates, replace=False), 2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--updates", type=int, default=100_000)
    ap.add_argument("--group-rows", type=int, default=100_000)
    ap.add_argument("--max-rows-per-trigger", type=int, default=0)
    ap.add_argument("--keep", help="folder to keep (and reuse) the table in")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-stream-"))
    table = str(work / "table")
    if not (work / "table" / ".hoodie").exists():
        t0 = time.perf_counter()
        build(table, args.rows, args.updates, args.group_rows)
        print(f"wrote {args.rows:,} rows + {args.updates:,} updates in {time.perf_counter() - t0:.1f} s")
    from pyspark.sql import SparkSession

    from streaming.source import HudiStreamingDataSource

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(HudiStreamingDataSource)
    base_files = sorted(glob.glob(f"{table}/**/*.parquet", recursive=True))

    def parquet_run() -> tuple[float, int]:
        t0 = time.perf_counter()
        df = spark.read.parquet(*base_files)
        df.write.format("noop").mode("overwrite").save()
        return time.perf_counter() - t0, args.rows

    in_batch = [0.0]  # seconds Spark spent inside batches (reading and the sink), without query start-up

    def stream_run(i: int) -> tuple[float, int]:
        def sink(df, _):
            df.write.format("noop").mode("overwrite").save()

        reader = (spark.readStream.format("hudi_streaming").option("stateLocation", str(work / f"state{i}"))
                  .option("miniBatchSize", "65536"))
        if args.max_rows_per_trigger:
            reader = reader.option("maxRowsPerTrigger", str(args.max_rows_per_trigger))
        t0 = time.perf_counter()
        q = (reader.load(table).writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(work / f"ck{i}")).trigger(availableNow=True).start())
        q.awaitTermination()
        took = time.perf_counter() - t0
        rows = sum(p["numInputRows"] for p in q.recentProgress)
        in_batch[0] = sum(p["durationMs"].get("addBatch", 0) for p in q.recentProgress) / 1000
        return took, rows

    results = {}
    for name, fn in (("spark.read.parquet (base files)", lambda i: parquet_run()),
                     ("hudi_streaming AvailableNow", stream_run)):
        for i in range(2):
            for d in (f"state{i}", f"ck{i}"):
                shutil.rmtree(work / d, ignore_errors=True)
            results[name] = fn(i)
    print(f"{'reader':<34} | {'rows':>10} | {'seconds (warm)':>14} | {'rows/s':>12}")
    for name, (took, rows) in results.items():
        print(f"{name:<34} | {rows:>10,} | {took:>14.2f} | {rows / took:>12,.0f}")
    (ps, pr), (ss, sr) = results["spark.read.parquet (base files)"], results["hudi_streaming AvailableNow"]
    print(f"ratio stream / parquet rows/s: {(sr / ss) / (pr / ps):.2f}x end to end (query start-up included), "
          f"{(sr / in_batch[0]) / (pr / ps):.2f}x inside batches (target >= 0.5x); the stream also merges "
          f"{args.updates:,} log updates that the parquet baseline does not read")
    spark.stop()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
