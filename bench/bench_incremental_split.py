"""Cost of telling inserts from updates on an incremental split: the stream's split read vs a plain range read.

A v9 MOR file group of ``--rows`` rows gets ``--commits`` upserts of ``--updates`` random keys each (one log
file per commit). The stream plans the last commit as one split; the script times, best of ``--repeat``:

- plain: ``read_slice_changes`` of the split's range (the merged rows the range wrote, nothing else);
- stream: ``slice_changes`` in upsert mode (the same rows plus ``_change_type``, which needs the file group's
  earlier state: from the same decoded blocks on v8+);
- changelog: ``slice_changes`` in changelog mode (plus pre-images).

It prints each time and its ratio to the plain read, after checking the stream's rows equal the plain read's.

    python bench/bench_incremental_split.py [--rows 100000] [--commits 20] [--updates 5000] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import common  # bench/


def build(table: str, rows: int, commits: int, updates: int) -> None:
    import numpy as np
    import pyarrow as pa

    from hudi_streaming.writer import create_table

    schema = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("v", pa.string()), ("x", pa.float64())])
    rng = np.random.default_rng(0)
    keys = np.array([f"k{i:09d}" for i in range(rows)])
    w = create_table(table, "incremental", schema, record_key="uuid", ordering_field="ts", table_type="MERGE_ON_READ",
                     version=9, max_file_records=rows)
    w.insert(pa.table({"uuid": keys, "ts": np.zeros(rows, np.int64), "v": keys, "x": rng.random(rows)},
                      schema=schema))
    for n in range(1, commits + 1):
        k = rng.choice(keys, updates, replace=False)
        w.upsert(pa.table({"uuid": k, "ts": np.full(updates, n), "v": k, "x": rng.random(updates)}, schema=schema))


def best_of(repeat: int, fn) -> tuple[float, object]:
    """The best wall time of ``repeat`` runs of ``fn`` and its last result."""
    results: list = []
    return common.best_of(fn, repeat, results.append).seconds, results[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--updates", type=int, default=5_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="folder to keep (and reuse) the table in")
    args = ap.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-incremental-"))
    table = str(work / "table")
    if not os.path.exists(table):
        build(table, args.rows, args.commits, args.updates)

    from hudi_streaming.hoodie.changes import slice_changes
    from hudi_streaming.hoodie.deletes import Deletes
    from hudi_streaming.hoodie.feed_schema import output_schema, read_columns
    from hudi_streaming.hoodie.scanner import InstantRange
    from hudi_streaming.hoodie.slice_reader import SliceRead, read_slice_changes
    from hudi_streaming.hoodie.table import HudiTable
    from hudi_streaming.monitor.monitor import MonitorOptions, StreamMonitor

    t = HudiTable(table)
    mon = StreamMonitor(t, MonitorOptions())
    done, _ = mon.completed_after(None)
    split = mon.plan_next(mon.cursor_of(done[-2]), 1).splits[0]
    out = output_schema(t.arrow_schema(), None)
    cols = read_columns(t, out)
    req = SliceRead(t, cols, split.max_instant, InstantRange(instants=frozenset(split.instants)))
    plain_s, (plain, _) = best_of(args.repeat, lambda: read_slice_changes(req, split.slice, with_deletes=False))
    stream_s, stream = best_of(args.repeat, lambda: slice_changes(t, split, out, cols, Deletes.IGNORE))
    log_s, changes = best_of(args.repeat, lambda: slice_changes(t, split, out, cols, Deletes.IGNORE, changelog=True))
    if sorted(stream.column("uuid").to_pylist()) != sorted(plain.column("uuid").to_pylist()):
        sys.exit("the stream's rows differ from the plain range read")
    kinds = dict(Counter(changes.column("_change_type").to_pylist()))
    print(f"file group: {args.rows:,} base rows, {len(split.slice.log_files)} log files; the split delivers "
          f"{plain.num_rows:,} rows of instant {split.instants[0]} (changelog: {kinds})")
    print(f"{'read':<44} | {'best ms':>8} | {'vs plain':>8}")
    for name, secs in (("plain range read (read_slice_changes)", plain_s),
                       ("stream, upsert mode (slice_changes)", stream_s),
                       ("stream, changelog mode (pre-images)", log_s)):
        print(f"{name:<44} | {secs * 1000:>8.1f} | {secs / plain_s:>7.2f}x")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
