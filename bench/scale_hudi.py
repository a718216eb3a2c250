"""``bench_scale.py --hudi``: the stream on wide tables written by Apache Hudi itself (metadata table on), local
and on a slow object store, against ``spark.read.parquet``, Hudi's own snapshot read and hudi-rs.

For each ``--sizes`` partition count (``scale_tables.hudi_table``: one file group per partition, a log file in
each, cached), in one Spark session (``local[2]``) of the project, each reader once after a warm-up query on
that size's table (in three passes over the sizes: local, S3, Hudi's snapshot reads, so that a run cut
short has the targets' figures first):

* **first batch**: ``readStream.format("hudi_streaming")`` from ``earliest`` with ``maxFilesPerTrigger=10``
  (Delta's name; the source maps it onto ``maxSplitsPerTrigger``) into a ``foreachBatch`` sink writing Spark's
  ``noop``; the time from defining the query to the sink having written batch 0, stopped then. On S3 the store
  requests counted by the proxy up to the sink's call of batch 0 (the driver's: Spark has planned the batch's
  offsets, no task has run) and up to its end (+ the batch's tasks and the driver's ``partitions()``);
* **AvailableNow**: the same from ``earliest`` without limits, Trigger.AvailableNow, start to end; Spark's tasks
  per batch (the jobs of the query's run id); on S3 its requests;
* **driver peak RSS**: the streaming source's runner process (where the source plans) during each query,
  sampled every 0.25 s (``common.PeakRss``), and the JVM's (driver and executors in one);
* ``spark.read.parquet`` of the same base files into ``noop`` (local only: the project's Spark has no S3A
  connector), the anchor of the ratio; Hudi's snapshot read (``scale_tables.hudi_snapshot_read``, local, its
  warm read; its JVM start-up not counted) and hudi-rs's ``HudiTable.read`` snapshot (local).

On S3 the table is uploaded to moto behind ``scale_s3.LatencyProxy`` (``--latency`` per request, 40 ms).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import MIB, PeakRss, load, ratio, tasks_of, verdict  # bench/
from scale_s3 import SlowStore  # bench/
from scale_tables import hudi_snapshot_read, hudi_table  # bench/

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "oracle" / "hudi_oracle"))
from env import ensure  # noqa: E402  Hudi's own environment

SOURCE_RUNNER, JVM = "Python source runner", "JVM (driver + executors)"
ROWS = 5  # per partition: a wide table of small partitions, where per-file costs show
#: issue 25's targets
SPEED_TARGET, GROWTH_TARGET, REQUEST_TARGET, RSS_TARGET = 1.0, 1.5, 50, 1.2


@dataclass
class Query:
    """One streaming query's figures."""

    seconds: float
    rows: int
    tasks: list[int]  # per batch
    runner_rss: int  # the source runner's peak, bytes
    jvm_rss: int
    requests: dict = field(default_factory=dict)  # by operation, S3 only: the whole query
    driver_requests: dict = field(default_factory=dict)  # first batch on S3: up to the sink's call


def describe(table: Path) -> dict:
    files = [p for p in table.rglob("*") if p.is_file() and ".hoodie" not in p.relative_to(table).parts
             and p.suffix != ".crc" and not p.name.startswith(".hoodie_partition_metadata")]
    base = [p for p in files if p.suffix == ".parquet"]
    logs = [p for p in files if ".log." in p.name]
    return {"partitions": len({p.parent for p in base}), "base": len(base), "logs": len(logs),
            "mib": sum(p.stat().st_size for p in files) / MIB,
            "metadata": (table / ".hoodie" / "metadata" / "files").is_dir(), "base_files": sorted(map(str, base))}


class Bench:
    def __init__(self, spark, work: Path, store: SlowStore | None):
        self.spark, self.work, self.store = spark, work, store
        self.tracker = spark.sparkContext.statusTracker()
        self.n = 0

    def tasks_of(self, group: str) -> list[int]:
        return tasks_of(self.tracker, self.tracker.getJobIdsForGroup(group))

    def stream(self, url: str, options: dict[str, str], first_batch_only: bool) -> Query:
        """A query from ``earliest`` (see the module docstring): to the end of batch 0, or AvailableNow."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        self.n += 1
        run = self.work / f"q{self.n}"
        shutil.rmtree(run, ignore_errors=True)
        proxy = self.store.proxy if self.store else None
        marks: dict = {}
        done = threading.Event()

        def sink(df, batch_id: int) -> None:
            if batch_id == 0 and proxy:
                marks["driver"] = proxy.stats()["by_op"]
            if batch_id == 0 and first_batch_only:  # its rows counted as it is written, not by a second read
                obs = Observation("rows")
                df.observe(obs, F.count(F.lit(1)).alias("n")).write.format("noop").mode("overwrite").save()
                marks["rows"], marks["first"] = obs.get["n"], time.perf_counter()
                done.set()
            else:
                df.write.format("noop").mode("overwrite").save()

        if proxy:
            proxy.reset_stats()
        peak = PeakRss(os.getpid())
        t0 = time.perf_counter()
        reader = (self.spark.readStream.format("hudi_streaming").options(**options)
                  .option("stateLocation", str(run / "state")))
        if first_batch_only:
            reader = reader.option("maxFilesPerTrigger", "10")
        writer = reader.load(url).writeStream.foreachBatch(sink).option("checkpointLocation", str(run / "ck"))
        if first_batch_only:
            q = writer.start()
            while not done.wait(0.05) and q.exception() is None and q.isActive:
                pass
            q.stop()
        else:
            q = writer.trigger(availableNow=True).start()
            q.awaitTermination()
        took = (marks["first"] if first_batch_only and "first" in marks else time.perf_counter()) - t0
        peak.stop()
        if q.exception() is not None:
            raise SystemExit(f"the stream of {url} failed: {q.exception()}")
        rows = marks.get("rows", 0) if first_batch_only else sum(p["numInputRows"] for p in q.recentProgress)
        return Query(took, rows, self.tasks_of(q.runId), peak.role_peak.get(SOURCE_RUNNER, 0),
                     peak.role_peak.get(JVM, 0), proxy.stats()["by_op"] if proxy else {}, marks.get("driver", {}))

    def parquet(self, files: list[str]) -> tuple[float, list[int]]:
        self.n += 1
        group = f"parquet-{self.n}"
        self.spark.sparkContext.setJobGroup(group, "spark.read.parquet")
        t0 = time.perf_counter()
        self.spark.read.parquet(*files).write.format("noop").mode("overwrite").save()
        took = time.perf_counter() - t0
        self.spark.sparkContext.setJobGroup("", "")
        return took, self.tasks_of(group)[-1:]  # the read (before it: listing, a footer for the schema)


def hudi_rs_read(table: Path) -> tuple[float, int]:
    """hudi-rs's snapshot read of the whole table (its own listing), seconds and rows."""
    import hudi

    t0 = time.perf_counter()
    batches = hudi.HudiTableBuilder.from_base_uri(str(table)).build().read(hudi.HudiReadOptions())
    return time.perf_counter() - t0, sum(b.num_rows for b in batches)


def total(requests: dict) -> int:
    return sum(requests.values())


def fmt_requests(requests: dict) -> str:
    return f"{total(requests):,} ({', '.join(f'{k} {v:,}' for k, v in sorted(requests.items()))})" if requests else "—"


def run(sizes: list[int], latency: float, skip_s3: bool, keep: str | None, rows: int = ROWS,
        s3_full_max: int | None = None, hudi_warm: int = 1) -> None:
    """The whole ``--hudi`` benchmark; prints the table and, last, the targets.

    ``s3_full_max``: the S3 AvailableNow query only up to this many partitions (its requests are the tasks',
    one GET per data file at 40 ms each, so at 10,000 partitions it runs for tens of minutes; the targets need
    only the S3 first batch and its driver requests). ``hudi_warm``: warm reads of Hudi's snapshot read after its
    cold one (0: the cold one is the figure, which at 10,000 partitions saves a read of several minutes)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    oracle = ensure(progress=lambda msg: print(msg, flush=True))
    tables = {n: hudi_table(oracle, n, rows) for n in sizes}
    work = Path(keep or tempfile.mkdtemp(prefix="bench-scale-hudi-"))
    work.mkdir(parents=True, exist_ok=True)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    store = None if skip_s3 else SlowStore(latency)
    bench = Bench(spark, work, store)
    results: dict[tuple[int, str], dict] = {}
    infos = {n: describe(tables[n]) for n in sizes}

    def warm_up(n: int) -> None:
        # not counted: PySpark ends Python workers idle for a minute, and the size before's anchors (Hudi's
        # snapshot read runs minutes in a JVM of its own) leave them idle longer, so the next size's first query
        # paid their start-up and imports (one warm-up for all sizes made the local first batch look 2.8-3.4x
        # slower at 1,000 partitions than at 100; interleaved in one warm session they are even)
        bench.stream(str(tables[n]), {}, first_batch_only=True)

    def streams(n: int, where: str, url: str, options: dict[str, str]) -> None:
        first = bench.stream(url, options, first_batch_only=True)
        print(f"  {where} first batch: {first}", flush=True)
        if where == "S3" and s3_full_max is not None and n > s3_full_max:
            print(f"  {where} AvailableNow: skipped (more than {s3_full_max:,} partitions)", flush=True)
            results[n, where] = {"first": first, "full": None}
            return
        full = bench.stream(url, options, first_batch_only=False)
        print(f"  {where} AvailableNow: {full}", flush=True)
        if full.rows != n * rows:
            raise SystemExit(f"the stream delivered {full.rows:,} rows, not {n * rows:,}")
        results[n, where] = {"first": first, "full": full}

    # three passes over the sizes, so that a run cut short has the targets first: local (the stream,
    # spark.read.parquet, hudi-rs), then S3 (uploading a 10,000-partition table to moto takes minutes), then
    # Hudi's snapshot reads (minutes each at that size)
    try:
        for n in sizes:
            warm_up(n)
            info = infos[n]
            print(f"{n:,} partitions: {info['partitions']:,} partitions, {info['base']:,} base files, "
                  f"{info['logs']:,} log files, {info['mib']:.1f} MiB, metadata table: {info['metadata']}; "
                  f"load {load()}", flush=True)
            streams(n, "local", str(tables[n]), {})
            parquet_s, parquet_tasks = bench.parquet(info["base_files"])
            print(f"  spark.read.parquet: {parquet_s:.2f} s, tasks {parquet_tasks}", flush=True)
            results[n, "local"].update(parquet=parquet_s, parquet_tasks=parquet_tasks, hudi=float("nan"))
            rs_s, rs_rows = hudi_rs_read(tables[n])
            print(f"  hudi-rs snapshot: {rs_s:.2f} s, {rs_rows:,} rows", flush=True)
            results[n, "local"]["hudi_rs"] = rs_s
        for n in sizes if store else ():
            assert store is not None
            t0 = time.perf_counter()
            url = store.upload(tables[n], f"scale-{n}")
            print(f"{n:,} partitions: uploaded to moto in {time.perf_counter() - t0:.0f} s; load {load()}", flush=True)
            warm_up(n)
            streams(n, "S3", url, store.proxy.spark_options)
        for n in reversed(sizes):  # the largest first: the target compares the first batch with it there
            try:
                hudi = hudi_snapshot_read(oracle, tables[n], work / f"hudi-read-{n}.log", repeat=hudi_warm)
            except (RuntimeError, subprocess.TimeoutExpired) as exc:  # its failure must not cost the rest
                print(f"{n:,} partitions: Hudi snapshot read FAILED: {exc}", flush=True)
            else:
                print(f"{n:,} partitions: Hudi snapshot read: {hudi}; load {load()}", flush=True)
                results[n, "local"]["hudi"] = min(hudi["warm_s"] or [hudi["cold_s"]])
    finally:
        spark.stop()
        if store:
            store.stop()
    report(sizes, rows, latency, results)
    if not keep:
        shutil.rmtree(work, ignore_errors=True)


def report(sizes: list[int], rows: int, latency: float, results: dict) -> None:
    print(f"\nHudi 1.2 tables (MOR v9, metadata table on): one file group per partition, {rows} rows each, one update "
          f"per partition (a log file each); S3 = moto + {latency * 1000:.0f} ms per request; load {load()}")
    print("| partitions | store | first batch s (maxFilesPerTrigger=10) | driver requests before it | requests to "
          "its end | AvailableNow s | tasks per batch | AvailableNow requests | runner peak RSS | JVM peak RSS | "
          "spark.read.parquet s | ratio | Hudi snapshot s | hudi-rs s |")
    print("|" + "---|" * 14)
    for (n, where), r in results.items():
        first, full = r["first"], r["full"]
        anchors = (f"{r['parquet']:.2f} | {ratio(r['parquet'], full.seconds)} | {r['hudi']:.2f} | {r['hudi_rs']:.2f}"
                   if where == "local" else "— | — | — | —")
        ran = [q for q in (first, full) if q is not None]
        whole = f"{full.seconds:.2f} | {full.tasks} | {fmt_requests(full.requests)}" if full else "— | — | —"
        print(f"| {n:,} | {where} | {first.seconds:.2f} | {fmt_requests(first.driver_requests)} | "
              f"{fmt_requests(first.requests)} | {whole} | {max(q.runner_rss for q in ran) / MIB:.0f} MiB | "
              f"{max(q.jvm_rss for q in ran) / MIB:.0f} MiB | {anchors} |")
    speeds = [results[n, "local"]["parquet"] / results[n, "local"]["full"].seconds for n in sizes]
    small, big = sizes[0], sizes[-1]
    before = sizes[-2] if len(sizes) > 1 else big  # growth is the issue's, between the two largest sizes
    parts = [f"AvailableNow / spark.read.parquet speed {', '.join(f'{s:.2f}x' for s in speeds)} "
             f"(>= {SPEED_TARGET}x: {verdict(min(speeds) >= SPEED_TARGET)})"]
    for where in ("local", "S3") if big != before else ():  # growth needs two sizes
        if (big, where) in results:
            growth = results[big, where]["first"].seconds / results[before, where]["first"].seconds
            parts.append(f"first batch {where} {before:,} -> {big:,} partitions grows {growth:.2f}x "
                         f"(<= {GROWTH_TARGET}x: {verdict(growth <= GROWTH_TARGET)})")
    first, hudi = results[big, "local"]["first"].seconds, results[big, "local"]["hudi"]
    parts.append(f"first batch at {big:,} partitions {first:.2f} s vs Hudi's snapshot read {hudi:.2f} s "
                 f"(<=: {verdict(first <= hudi)})")
    if (big, "S3") in results:
        req = total(results[big, "S3"]["first"].driver_requests)
        parts.append(f"driver requests before the first batch at {big:,} partitions on S3: {req} "
                     f"(<= {REQUEST_TARGET}: {verdict(req <= REQUEST_TARGET)})")
    for where in ("local", "S3") if big != small else ():
        if (big, where) in results and (small, where) in results:
            peaks = [max(q.runner_rss for q in (r["first"], r["full"]) if q is not None)
                     for r in (results[small, where], results[big, where])]
            parts.append(f"runner peak RSS {where} {small:,} -> {big:,} partitions {peaks[0] / MIB:.0f} -> "
                         f"{peaks[1] / MIB:.0f} MiB, {peaks[1] / peaks[0]:.2f}x (<= {RSS_TARGET}x: "
                         f"{verdict(peaks[1] <= RSS_TARGET * peaks[0])})")
    print("targets: " + "; ".join(parts))
