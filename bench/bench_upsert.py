"""Upsert throughput of the table writer (``hudi_streaming.writer``), MOR and COW.

Run: ``python bench/bench_upsert.py [--rows 1000000] [--update-fraction 0.1] [--types MOR,COW] [--version 9]
[--partitions 10] [--max-file-records 100000] [--repeat 2] [--dir PATH]``.

For each table type: a table is created and loaded with ``--rows`` records (one upsert of new keys: the
*insert* throughput), then ``--repeat`` upserts each update a random ``--update-fraction`` of the keys (the
*update* throughput, the number asked for: 10 % updates into a 1M-row table), then one mixed upsert of as
many rows, half updates and half new keys. Records look like trips (key, partition, ts, 4 doubles, 2 strings,
a timestamp). Prints rows/s per phase and the table's size on disk. MOR appends the updates to the logs of
their file groups; COW rewrites every base file an update touches (with 10 % random updates: all of them).
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from hudi_streaming.writer import create_table  # noqa: E402

SCHEMA = pa.schema([
    ("uuid", pa.string()), ("city", pa.string()), ("ts", pa.int64()), ("fare", pa.float64()),
    ("tip", pa.float64()), ("lat", pa.float64()), ("lon", pa.float64()), ("rider", pa.string()),
    ("driver", pa.string()), ("at", pa.timestamp("us", tz="UTC")),
])


def batch(keys: np.ndarray, partitions: int, ts: int, rng: np.random.Generator) -> pa.Table:
    n = len(keys)
    uuid = pa.array(np.char.add("trip-", keys.astype("U12")).astype(object), pa.string())
    city = pa.array(np.char.add("city-", (keys % partitions).astype("U4")).astype(object), pa.string())
    rider = pa.array(np.char.add("rider-", rng.integers(0, 10_000, n).astype("U6")).astype(object), pa.string())
    driver = pa.array(np.char.add("driver-", rng.integers(0, 5_000, n).astype("U6")).astype(object), pa.string())
    at = pa.array((1_700_000_000_000_000 + rng.integers(0, 10**12, n)).astype("int64"), pa.int64()) \
        .cast(pa.timestamp("us", tz="UTC"))
    return pa.table({"uuid": uuid, "city": city, "ts": pa.array(np.full(n, ts, np.int64)),
                     "fare": rng.uniform(5, 100, n), "tip": rng.uniform(0, 20, n), "lat": rng.uniform(-90, 90, n),
                     "lon": rng.uniform(-180, 180, n), "rider": rider, "driver": driver, "at": at}, schema=SCHEMA)


def du(path: str) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def run(table_type: str, args, root: str) -> None:
    path = os.path.join(root, f"bench_{table_type.lower()}")
    shutil.rmtree(path, ignore_errors=True)
    rng = np.random.default_rng(42)
    w = create_table(path, "bench", SCHEMA, record_key="uuid", partition_fields="city", ordering_field="ts",
                     table_type=table_type, version=args.version,
                     max_file_records=args.max_file_records)
    label = "MOR" if table_type == "MERGE_ON_READ" else "COW"
    data = batch(np.arange(args.rows), args.partitions, 1, rng)
    t0 = time.perf_counter()
    w.upsert(data)
    dt = time.perf_counter() - t0
    print(f"{label}: insert {args.rows:,} rows: {dt:.2f} s = {args.rows / dt:,.0f} rows/s", flush=True)
    n_upd = int(args.rows * args.update_fraction)
    for r in range(args.repeat):
        keys = rng.choice(args.rows, n_upd, replace=False)
        data = batch(keys, args.partitions, 2 + r, rng)
        t0 = time.perf_counter()
        w.upsert(data)
        dt = time.perf_counter() - t0
        print(f"{label}: upsert of {n_upd:,} updates ({args.update_fraction:.0%} of {args.rows:,}): {dt:.2f} s = "
              f"{n_upd / dt:,.0f} rows/s", flush=True)
    half = n_upd // 2
    keys = np.concatenate([rng.choice(args.rows, half, replace=False), np.arange(args.rows, args.rows + n_upd - half)])
    data = batch(keys, args.partitions, 100, rng)
    t0 = time.perf_counter()
    w.upsert(data)
    dt = time.perf_counter() - t0
    print(f"{label}: mixed upsert of {n_upd:,} rows (half updates, half inserts): {dt:.2f} s = "
          f"{n_upd / dt:,.0f} rows/s", flush=True)
    if table_type == "MERGE_ON_READ" and args.compact:
        t0 = time.perf_counter()
        w.compact()
        dt = time.perf_counter() - t0
        print(f"{label}: compaction of {args.rows + n_upd - half:,} rows: {dt:.2f} s", flush=True)
    print(f"{label}: table size {du(path) / 1e6:.1f} MB", flush=True)
    if not args.keep:
        shutil.rmtree(path, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--update-fraction", type=float, default=0.1)
    p.add_argument("--types", default="MOR,COW")
    p.add_argument("--version", type=int, default=9, choices=[6, 9])
    p.add_argument("--partitions", type=int, default=10)
    p.add_argument("--max-file-records", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--compact", action="store_true", help="MOR: also time a compaction at the end")
    p.add_argument("--dir", default=None, help="where to write the tables (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the tables")
    args = p.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="hoodie-bench-")
    types = {"MOR": "MERGE_ON_READ", "COW": "COPY_ON_WRITE"}
    for t in args.types.split(","):
        run(types[t.strip().upper()], args, root)
    if not args.dir:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
