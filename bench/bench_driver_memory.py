"""Driver memory of a stream that follows a table for thousands of commits while the cleaner removes files.

    python bench/bench_driver_memory.py [--commits 3000] [--batch 20] [--keys 5000] [--keep DIR]

A writer process (the project's load generator: upserts, every fifth step deletes, compaction every 5 commits,
clean every 10 keeping 20, archive every 20 keeping 40 active) commits ``--commits`` small writes to a v9 MOR
table; this process is the stream's driver side as PySpark runs it — the source runner's calls only
(``latestOffset``, the progress report, ``partitions``, ``commit``; tasks read elsewhere) — following the table
from its first write until the writer has ended and it has caught up (``lagInstants`` 0, no pending split).
Every few seconds it samples its resident set size (``VmRSS``) and the number of Python objects.

**Target** (issue 10): flat driver memory over thousands of commits with cleaning — the driver's RSS at the end
is within 10 % of its RSS once warm (the mean of the samples from 20 % to 40 % of the commits). What it
watches: the monitor's partition listings (dropped when a clean or rollback completes), the state's pending
splits (dropped at each commit) and its record of the active timeline's writes (late instants), the timeline's
cached instant files. Exits 1 when the target fails or the writer failed.
"""
from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import MIB, rss_now, verdict
from soak import first_write  # the stream starts at the first commit, as the soak's does

from hudi_streaming.hoodie.table import HudiTable
from hudi_streaming.streaming.admission import BatchLimit
from hudi_streaming.streaming.driver import StreamDriver
from hudi_streaming.streaming.offsets import make_offset
from hudi_streaming.streaming.options import parse_options
from hudi_streaming.streaming.schema import source_schema

SAMPLE_SECONDS = 3.0


def rss_mib() -> float:
    return rss_now() / MIB


def start_writer(url: str, args: argparse.Namespace, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "hudi_streaming.writer.loadgen", url, "--keys", str(args.keys),
           "--partitions", "4", "--batch", str(args.batch), "--commits", str(args.commits),
           "--compact-every", "5", "--clean-every", "10", "--retain-commits", "20", "--archive-every", "20",
           "--keep-active", "40", "--seed", "5"]
    with open(log, "w") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)


def writer_alive(writer: subprocess.Popen) -> None:
    if writer.poll() is not None:
        raise SystemExit(f"the writer ended ({writer.returncode}) before its first commit")


def completed_writes(url: str) -> int:
    t = HudiTable(url)
    return len(t.timeline.completed_writes(include_archived=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=20, help="rows per commit")
    ap.add_argument("--keys", type=int, default=5000)
    ap.add_argument("--keep", default=None, help="folder for the table, state and writer log (default: temporary)")
    args = ap.parse_args(argv)
    root = Path(args.keep or tempfile.mkdtemp(prefix="hudi-streaming-driver-mem-"))
    root.mkdir(parents=True, exist_ok=True)
    url = str(root / "table")
    writer = start_writer(url, args, root / "writer.log")
    print(f"driver memory: {args.commits} commits of {args.batch} rows to {url}, writer log {root / 'writer.log'}",
          flush=True)
    try:
        opts = parse_options({"path": url, "stateLocation": str(root / "state"), "emitDeletes": "true",
                              "startingInstant": first_write(Path(url), lambda: writer_alive(writer))})
        driver = StreamDriver(opts, source_schema(opts))
        start, planned, batches = make_offset(0, 0), 0, 0
        samples: list[tuple[float, int, int, float, int]] = []
        began = last_sample = time.monotonic()
        gc.collect()
        samples.append((0.0, 0, 0, rss_mib(), len(gc.get_objects())))
        print(f"  {'seconds':>7}  {'written':>7}  {'planned':>7}  {'RSS MiB':>7}  {'objects':>9}", flush=True)
        while True:
            end = driver.latest_offset(start, BatchLimit())
            metrics = driver.metrics()
            if end != start:
                driver.partitions(start, end, lambda ranges, columns, commits, clock: None)
                driver.commit(end)
                planned += driver.last_batch.get("instants", 0)
                batches += 1
                start = end
            else:
                if writer.poll() is not None and metrics["lagInstants"] == 0 and metrics["pendingSplits"] == 0:
                    break  # the writer is done and every commit it made is planned and committed
                time.sleep(0.05)
            if time.monotonic() - last_sample >= SAMPLE_SECONDS:
                last_sample = time.monotonic()
                written = completed_writes(url)
                samples.append((last_sample - began, written, planned, rss_mib(), len(gc.get_objects())))
                print("  {:7.0f}  {:7d}  {:7d}  {:7.1f}  {:9d}".format(*samples[-1]), flush=True)
    finally:
        if writer.poll() is None:
            writer.kill()
    written = completed_writes(url)
    gc.collect()
    samples.append((time.monotonic() - began, written, planned, rss_mib(), len(gc.get_objects())))
    if writer.returncode != 0:
        print(f"the writer failed ({writer.returncode}): see {root / 'writer.log'}")
        return 1
    warm = [s[3] for s in samples if 0.2 * written <= s[2] <= 0.4 * written]
    warm_rss = sum(warm) / len(warm) if warm else samples[-1][3]  # a run too short to sample while warm
    end_rss, peak = samples[-1][3], max(s[3] for s in samples)
    growth = end_rss / warm_rss
    ok = growth <= 1.10
    print(f"\n{written} writes committed (with compaction, clean and archive), {planned} instants in the "
          f"driver's {batches} batches (compactions are skipped), {samples[-1][0]:.0f} s")
    print(f"driver RSS: {samples[0][3]:.1f} MiB at start, {warm_rss:.1f} MiB warm (20-40 % of the commits), "
          f"{end_rss:.1f} MiB at the end, peak {peak:.1f} MiB; end / warm = {growth:.3f} (target <= 1.10): "
          f"{verdict(ok)}; Python objects {samples[1][4]} -> {samples[-1][4]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
