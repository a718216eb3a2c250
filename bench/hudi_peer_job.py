"""The jobs of ``bench_vs_hudi.py``, one per process: Apache Hudi writes the table and its load, and a streaming
reader — Hudi's own source or ours — runs with the same code, so both are measured the same way.

Standard library only at import: the file runs under two interpreters that never share a process.

* ``write`` and ``load`` run in Hudi's oracle environment (PySpark 3.5 with Hudi 1.2's Spark bundle,
  ``tests/oracle/hudi_oracle/env.py``), with the Spark session of ``tests/oracle/hudi_oracle/writer_job.py``:
  ``write`` makes the MERGE_ON_READ table (table version 9, partitioned by ``city``: ``--rows`` inserts, then
  an upsert of every tenth key, which lands in log files); ``load`` upserts ``--batch`` existing keys every
  ``--interval`` s for ``--seconds`` (never the same key twice, so an upsert-mode reader delivers every written
  row) and logs each commit's requested and completion time and its completed timeline file's modification time.
* ``stream`` is the reader: ``--source hudi`` is ``spark.readStream.format("hudi")`` in the oracle environment
  (the same session as the writer's); ``--source ours`` is ``format("hudi_streaming")`` in the project's
  environment (PySpark 4.3, ``local_spark`` with the same driver memory, passed in ``PYSPARK_SUBMIT_ARGS`` by
  the caller); ``--source bare`` is the floor of any Python source on that Spark: ``bench_stream.bare_source``,
  registered in the same session as ours, which yields the table's base files' Arrow batches (with a
  ``_change_type`` column) and does nothing else — no log, no merge, no state (throughput only). Hudi's and
  ours start from ``hoodie.datasource.streaming.startOffset`` (Hudi's option; ours accepts it); all run on
  ``local[2]`` into a ``foreachBatch`` sink, and write one JSON line per batch to ``--out``.
  ``--mode throughput``: Trigger.AvailableNow; the sink writes every column to Spark's ``noop`` sink and counts
  the rows with an ``Observation``. ``--mode latency``: the default trigger until the file ``--stop`` exists;
  the sink collects each row's ``_hoodie_commit_time`` and notes when it has them. The last line holds Spark's
  progress reports.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORACLE = HERE.parent / "tests" / "oracle" / "hudi_oracle"
PARTITIONS = 4  # city c0..c3
KEY_STRIDE = 7919  # a prime: the load's keys walk the key space without repeating
#: a line that names an exception: ``org.apache.hudi.exception.HoodieIOException: ...``, ``ValueError: ...``
_EXCEPTION_LINE = re.compile(r"^(Caused by: )?[\w.$]*(Exception|Error|Throwable)\b")


def telling_line(text: str) -> str:
    """The line of an error's text that says why: a JVM trace's deepest ``Caused by:``, else the last line that
    names an exception (a Python traceback's last), else the first line; at most 300 characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line.removeprefix("Caused by: ") for line in lines if line.startswith("Caused by: ")]
    named = [line for line in lines if _EXCEPTION_LINE.match(line)]
    line = causes[-1] if causes else named[-1] if named else lines[0] if lines else ""
    return line if len(line) <= 300 else line[:297] + "..."


def hudi_session(jar: str):
    sys.path.insert(0, str(ORACLE))
    from writer_job import session  # the Spark configuration Hudi needs: Kryo, extensions, catalog, the bundle

    spark = session(jar)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_options(table_name: str) -> dict[str, str]:
    return {"hoodie.table.name": table_name, "hoodie.datasource.write.table.type": "MERGE_ON_READ",
            "hoodie.write.table.version": "9", "hoodie.write.auto.upgrade": "false",
            "hoodie.datasource.write.recordkey.field": "uuid", "hoodie.datasource.write.partitionpath.field": "city",
            "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.upsert.shuffle.parallelism": "2", "hoodie.insert.shuffle.parallelism": "2",
            "hoodie.embed.timeline.server": "false"}


def rows(spark, ids, ts):
    """The rows of keys ``ids`` (a DataFrame with a long ``id``) at version ``ts``."""
    from pyspark.sql import functions as F

    return ids.select(F.format_string("u%09d", "id").alias("uuid"), F.lit(ts).cast("long").alias("ts"),
                      F.concat(F.lit("rider-"), (F.col("id") % 997).cast("string")).alias("rider"),
                      F.concat(F.lit("driver-"), (F.col("id") % 991).cast("string")).alias("driver"),
                      (F.rand(ts) * 100).alias("fare"),
                      F.concat(F.lit("c"), (F.col("id") % PARTITIONS).cast("string")).alias("city"))


def save(df, table: str, operation: str) -> None:
    (df.write.format("hudi").options(**write_options("bench_vs_hudi"))
     .option("hoodie.datasource.write.operation", operation).mode("append").save(table))


def write_main(a) -> None:
    spark = hudi_session(a.jar)
    t0 = time.monotonic()
    save(rows(spark, spark.range(a.rows), 1), a.table, "insert")
    t1 = time.monotonic()
    save(rows(spark, spark.range(a.rows).where("id % 10 = 7"), 2), a.table, "upsert")
    print(json.dumps({"insert_s": t1 - t0, "upsert_s": time.monotonic() - t1, "spark": spark.version}), flush=True)
    spark.stop()


def completed(timeline: Path) -> dict[str, Path]:
    """requested time → completed deltacommit file (v9: ``{requested}_{completed}.deltacommit``)."""
    return {f.name.split("_")[0]: f for f in timeline.glob("*_*.deltacommit")}


def load_main(a) -> None:
    spark = hudi_session(a.jar)
    timeline = Path(a.table) / ".hoodie" / "timeline"
    seen = set(completed(timeline))
    out = open(a.log, "a", buffering=1)
    start, n = time.monotonic(), 0
    while True:
        phase = "warmup" if n < a.warmup else "timed"
        if phase == "timed" and n == a.warmup:
            start = time.monotonic()
        if phase == "timed" and time.monotonic() - start >= a.seconds:
            break
        first = n * a.batch
        ids = spark.range(first, first + a.batch).selectExpr(f"(id * {KEY_STRIDE}) % {a.keys} AS id")
        t0 = time.time()
        save(rows(spark, ids, 3 + n), a.table, "upsert")
        t1 = time.time()
        for requested, f in sorted(completed(timeline).items()):
            if requested not in seen:
                seen.add(requested)
                out.write(json.dumps({"phase": phase, "requested": requested, "completed": f.stem.split("_")[1],
                                      "mtime": f.stat().st_mtime_ns / 1e9, "t0": t0, "t1": t1,
                                      "rows": a.batch}) + "\n")
        n += 1
        if phase == "timed":
            time.sleep(max(0.0, start + (n - a.warmup) * a.interval - time.monotonic()))
        else:
            time.sleep(1.0)
    out.write(json.dumps({"done": True, "commits": n}) + "\n")
    spark.stop()


# -- the reader ------------------------------------------------------------------------------------------------
def stream_main(a) -> None:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    if a.source == "hudi":
        spark, fmt = hudi_session(a.jar), "hudi"
    else:
        from hudi_streaming.cli.local_spark import local_spark
        spark, fmt = local_spark("bench-vs-hudi"), "hudi_streaming"
    if a.source == "bare":
        import bench_stream  # bench/: PySpark 4.3 only, imported here
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(bench_stream)  # Spark's Python workers have no bench/ on their path
        fmt = "bare_parquet"
        files = sorted(str(p) for p in Path(a.table).rglob("*.parquet") if ".hoodie" not in p.parts)
        spark.dataSource.register(bench_stream.bare_source(files, fmt, change_type=True))
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    out = open(a.out, "w", buffering=1)
    work = Path(a.work)

    def throughput_sink(df, batch_id: int) -> None:
        t_call = time.time()
        obs = Observation(f"rows_{batch_id}")
        df.observe(obs, F.count(F.lit(1)).alias("n")).write.format("noop").mode("overwrite").save()
        n = obs.get["n"]
        out.write(json.dumps({"batch": batch_id, "rows": n, "t_call": t_call, "t_recv": time.time()}) + "\n")

    def latency_sink(df, batch_id: int) -> None:
        t_call = time.time()
        commits = collections.Counter(r[0] for r in df.select("_hoodie_commit_time").collect())
        out.write(json.dumps({"batch": batch_id, "rows": sum(commits.values()), "t_call": t_call,
                              "t_recv": time.time(), "commits": commits}) + "\n")

    t0 = time.time()
    reader = spark.readStream.format(fmt).option("hoodie.datasource.streaming.startOffset", a.start)
    if a.source == "ours":
        reader = reader.option("stateLocation", str(work / "state"))
    writer = (reader.load(a.table).writeStream
              .foreachBatch(throughput_sink if a.mode == "throughput" else latency_sink)
              .option("checkpointLocation", str(work / "checkpoint")))
    if a.mode == "throughput":
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
    else:
        query = writer.start()
        while query.lastProgress is None and query.exception() is None:
            time.sleep(0.05)
        Path(a.ready).touch()
        while not os.path.exists(a.stop) and query.exception() is None:
            time.sleep(0.1)
        query.stop()
    error = query.exception()
    progress = [json.loads(p.json) if hasattr(p, "json") else p for p in query.recentProgress]
    out.write(json.dumps({"t_start": t0, "t_end": time.time(), "spark": spark.version, "progress": progress,
                          "error": str(error)[:2000] if error else None,
                          "cause": telling_line(str(error)) if error else None}) + "\n")
    out.close()
    spark.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("job", choices=["write", "load", "stream"])
    ap.add_argument("--table", required=True)
    ap.add_argument("--jar", help="Hudi's Spark bundle (write, load, stream --source hudi)")
    ap.add_argument("--rows", type=int, default=1_000_000, help="write: inserted rows")
    ap.add_argument("--keys", type=int, default=1_000_000, help="load: keys in the table")
    ap.add_argument("--batch", type=int, default=300, help="load: rows per upsert")
    ap.add_argument("--interval", type=float, default=0.5, help="load: one upsert every INTERVAL s")
    ap.add_argument("--seconds", type=float, default=60.0, help="load: timed phase (s)")
    ap.add_argument("--warmup", type=int, default=3, help="load: warm-up upserts first (1 s apart)")
    ap.add_argument("--log", help="load: commit log (JSON lines)")
    ap.add_argument("--source", choices=["hudi", "ours", "bare"], help="stream: which streaming source")
    ap.add_argument("--mode", choices=["throughput", "latency"], default="throughput")
    ap.add_argument("--start", default="earliest", help="stream: hoodie.datasource.streaming.startOffset")
    ap.add_argument("--work", help="stream: folder for the checkpoint (and our state)")
    ap.add_argument("--out", help="stream: batches and progress (JSON lines)")
    ap.add_argument("--ready", help="stream --mode latency: touched once the query has run its first trigger")
    ap.add_argument("--stop", help="stream --mode latency: the query stops once this file exists")
    a = ap.parse_args()
    {"write": write_main, "load": load_main, "stream": stream_main}[a.job](a)


if __name__ == "__main__":
    main()
