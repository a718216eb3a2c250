"""Speed and memory of reading one Merge-On-Read file slice: our reader against hudi-rs and pyarrow.

Run: ``python bench/bench_slice_read.py [--sizes N1,N2,...] [--updates U] [--blocks B] [--repeat R] [--keep DIR]
[--compression CODEC] [--profile [N]]`` (defaults: 1,000,000 and 4,000,000 base rows, 200,000 updates, 4 blocks,
best of 3, gzip). bench/README.md says what each line of the report measures.

Per size, the project's writer (``hudi_streaming.writer``) makes a table version 9 MOR table of one file slice: a base
file of N trips-like rows (deltacommit 1) and a log file of U updates of distinct existing keys in B Avro data
blocks (deltacommit 2). Our merged reads (batch API and stream task) must equal hudi-rs's and the expected
state, our read-optimized read and pyarrow's the base rows, or nothing is timed (exit 1). Then each reader runs
in a fresh worker process, best of R: rows/s, CPU time, peak RSS and its growth over the worker's RSS before the
first read, the Arrow pool's peak; where our ``read_slice`` spends its time (the reader's own ``ScanStats``
counters); the ratios against the targets (issue 12, at the first size): the stream task's peak RSS growth
<= 0.75x hudi-rs ``read_file_slice``'s, its rows/s >= 2.0x, its growth from the first size to the last < 1.25x;
earlier ones, table-level merged >= 1.0x hudi-rs, read-optimized >= 0.8x pyarrow.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import common  # bench/: workers, memory, timing, report figures
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from common import mib, size, verdict

MERGED_TARGET = 1.0  # table level, ours / hudi-rs rows/s
READ_OPTIMIZED_TARGET = 0.8  # ours / pyarrow rows/s
SLICE_SPEED_TARGET = 2.0  # issue 12: merged slice, ours / hudi-rs read_file_slice rows/s, at the first size
GROWTH_TARGET = 0.75  # issue 12: merged slice peak RSS growth, ours / hudi-rs read_file_slice, at the first size
SCALING_TARGET = 1.25  # issue 12: our streaming path's peak RSS growth, last size / first size (strictly below)
MINI_BATCH = 65_536  # the source's default miniBatchSize
DEFAULT_SIZES = (1_000_000, 4_000_000)
SEED = 20250601
TABLE_NAME = "bench_trips"
SCHEMA = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("rider", pa.string()), ("driver", pa.string()),
                    ("fare", pa.float64()), ("city", pa.string())])
EXPECTED = ["_hoodie_commit_time", *SCHEMA.names]  # the columns checked against the expected state
KEY = "uuid"  # the record key (= _hoodie_record_key)
CITIES = ["san_francisco", "sao_paulo", "chennai", "new_york", "amsterdam", "berlin", "tokyo"]


# -- the table -------------------------------------------------------------------------------------------------

def generate(n: int, u: int) -> tuple[pa.Table, pa.Table, np.ndarray]:
    """N trips rows, U updates of distinct existing keys (random order) and the rows they update; the same
    for the same (n, u)."""
    rng, pyrng = np.random.default_rng(SEED), random.Random(SEED)

    def names(prefix: str, lo: int, hi: int, k: int) -> pa.Array:
        return pc.binary_join_element_wise(prefix, pc.cast(pa.array(rng.integers(lo, hi, k)), pa.string()), "")
    keys = pa.array([str(uuid.UUID(int=pyrng.getrandbits(128), version=4)) for _ in range(n)], pa.string())
    base = pa.table({
        "uuid": keys, "ts": pa.array(1_717_200_000_000 + np.sort(rng.integers(0, 86_400_000, n))),
        "rider": names("rider-", 0, 10_000, n), "driver": names("driver-", 0, 10_000, n),
        "fare": np.round(rng.uniform(5.0, 120.0, n), 2),
        "city": pa.array(CITIES).take(pa.array(rng.integers(0, len(CITIES), n)))}, schema=SCHEMA)
    rows = rng.choice(n, size=u, replace=False)
    old = base.take(pa.array(rows))
    updates = pa.table({
        "uuid": old["uuid"], "ts": pc.add(old["ts"], 86_400_000), "rider": names("rider-", 10_000, 20_000, u),
        "driver": names("driver-", 10_000, 20_000, u), "fare": np.round(rng.uniform(5.0, 120.0, u), 2),
        "city": old["city"]}, schema=SCHEMA)
    return base, updates, rows


def write_table(path: Path, n: int, u: int, blocks: int, compression: str) -> list[str]:
    """The table, with the project's writer; its two instants."""
    from hudi_streaming.writer import create_table

    base, updates, _ = generate(n, u)
    w = create_table(str(path), TABLE_NAME, SCHEMA, record_key=KEY, ordering_field="ts", table_type="MERGE_ON_READ",
                     version=9, merge_mode="COMMIT_TIME_ORDERING", max_file_records=n, parquet_compression=compression,
                     max_log_block_records=-(-u // blocks))
    return [w.insert(base), w.upsert(updates)]


def kept(root: Path, n: int, u: int, blocks: int, compression: str) -> dict | None:
    """The parameters of the table kept in ``root`` (None: ``root`` is empty); SystemExit if ``root`` holds
    anything else, or a table of other parameters."""
    wanted = {"rows": n, "updates": u, "blocks": blocks, "compression": compression.lower()}
    if not (root.exists() and any(root.iterdir())):
        return None
    if not (root / "params.json").exists():
        raise SystemExit(f"{root} exists, is not empty and holds no table of bench_slice_read.py")
    params = json.loads((root / "params.json").read_text())
    if {k: params.get(k) for k in wanted} != wanted:
        raise SystemExit(f"{root} holds a table of {params}, not {wanted}; use another directory")
    return params


def table_at(root: Path, n: int, u: int, blocks: int, compression: str) -> tuple[Path, dict, bool]:
    """The table of these parameters in ``root/table`` (its parameters in ``root/params.json``): the one kept
    there, or a new one. (table, parameters, whether it was kept)."""
    params = kept(root, n, u, blocks, compression)
    table = root / "table"
    if params is not None:
        return table, params, True
    root.mkdir(parents=True, exist_ok=True)
    wanted = {"rows": n, "updates": u, "blocks": blocks, "compression": compression.lower()}
    t0 = time.perf_counter()
    params = {**wanted, "instants": write_table(table, n, u, blocks, compression)}
    (root / "params.json").write_text(json.dumps(params))
    print(f"  wrote the table in {time.perf_counter() - t0:.1f} s (not measured)", flush=True)
    return table, params, False


def data_files(table: Path) -> tuple[Path, Path | None]:
    """The base file and the log file of the table's one file slice."""
    (base,) = table.glob("*.parquet")
    logs = list(table.glob(".*.log.*"))
    return base, logs[0] if logs else None


# -- verification (in the parent, before any timing) -----------------------------------------------------------

class Mismatch(Exception):
    pass


def assert_same_rows(a: pa.Table, b: pa.Table, what_a: str, what_b: str, columns: list[str] | None = None) -> None:
    """Same rows (compared by record key, unique here) in ``columns`` (default: all of ``a``'s), ``b``'s columns
    cast to ``a``'s types (hudi-rs may return other string layouts)."""
    columns = columns or a.column_names
    missing = [c for c in columns if c not in b.column_names]
    if missing:
        raise Mismatch(f"{what_b}: columns {missing} missing (has {b.column_names})")
    a = a.select(columns)
    b = pa.Table.from_arrays([b.column(c).cast(a.schema.field(c).type) for c in columns], schema=a.schema)
    if a.num_rows != b.num_rows:
        raise Mismatch(f"{what_a} has {a.num_rows:,} rows, {what_b} {b.num_rows:,}")
    if pc.count_distinct(a.column(KEY)).as_py() != a.num_rows:
        raise Mismatch(f"{what_a}: record keys are not unique")
    if not a.column(KEY).equals(b.column(KEY)):  # not already in the same order
        a, b = a.sort_by(KEY), b.sort_by(KEY)
    for name in columns:
        x, y = a.column(name).combine_chunks(), b.column(name).combine_chunks()
        if not x.equals(y):
            bad = np.flatnonzero(~pc.fill_null(pc.equal(x, y), False).to_numpy(zero_copy_only=False)
                                 & ~(pc.is_null(x).to_numpy(zero_copy_only=False)
                                     & pc.is_null(y).to_numpy(zero_copy_only=False)))
            i = int(bad[0]) if len(bad) else 0
            raise Mismatch(f"column {name!r} differs in {len(bad):,} rows; e.g. key {a.column(KEY)[i].as_py()}: "
                           f"{what_a} {x[i].as_py()!r} vs {what_b} {y[i].as_py()!r}")


def verify(table: Path, params: dict) -> None:
    """Ours (table level, stream task) == hudi-rs (table level, read_file_slice) == the expected state; read-
    optimized, ours == pyarrow == the base rows."""
    import hudi

    from hudi_streaming import read_table

    base, updates, rows = generate(params["rows"], params["updates"])
    t1, t2 = params["instants"]

    def at(t: pa.Table, instant: str) -> pa.Table:
        return t.add_column(0, "_hoodie_commit_time", pa.repeat(pa.scalar(instant, pa.string()), t.num_rows))
    src = np.arange(base.num_rows)
    src[rows] = base.num_rows + np.arange(len(rows))
    expected = pa.concat_tables([at(base, t1), at(updates, t2)]).take(pa.array(src))
    path = str(table)
    ours = read_table(path)
    assert_same_rows(expected, ours, "expected state", "ours (merged)")
    rs_table = hudi.HudiTableBuilder.from_base_uri(path).build()
    assert_same_rows(ours, pa.Table.from_batches(rs_table.read(hudi.HudiReadOptions())), "ours (merged)",
                     "hudi-rs (merged)")
    slices = rs_table.get_file_slices()
    if len(slices) != 1 or not slices[0].has_log_files:
        raise Mismatch(f"hudi-rs plans {len(slices)} file slices (log files: "
                       f"{[s.log_file_names for s in slices]}), expected one slice with a log file")
    batch = rs_table.create_file_group_reader_with_options().read_file_slice(slices[0])
    assert_same_rows(ours, pa.Table.from_batches([batch]), "ours (merged)", "hudi-rs read_file_slice")
    del batch, ours
    # the stream task: the same rows, every one an insert (a snapshot split), in batches of <= MINI_BATCH rows
    batches = list(stream_task(path)())
    big = [b.num_rows for b in batches if b.num_rows > MINI_BATCH]
    if big:
        raise Mismatch(f"ours (streaming path): batches of {big[:3]} rows, more than miniBatchSize {MINI_BATCH}")
    streamed = pa.Table.from_batches(batches)
    del batches
    kinds = pc.unique(streamed.column("_change_type")).to_pylist()
    if kinds != ["insert"]:
        raise Mismatch(f"ours (streaming path): change types {kinds}, expected only 'insert' for a snapshot split")
    assert_same_rows(expected, streamed, "expected state", "ours (streaming path)", EXPECTED)
    del streamed
    base_rows = at(base, t1)
    assert_same_rows(base_rows, read_table(path, read_optimized=True), "base rows", "ours (read-optimized)")
    assert_same_rows(base_rows, pq.read_table(data_files(table)[0]), "base rows", "pyarrow base read")


# -- measurements (each in a fresh worker process: ``--worker KIND``) ------------------------------------------

def _ours_slice_setup(path: str, read_optimized: bool = False, runs: list | None = None):
    """``read_slice`` of the table's one slice, opened and planned here; each read's ``ScanStats`` to ``runs``."""
    from hudi_streaming.hoodie.read import plan_slices
    from hudi_streaming.hoodie.scanner import ScanStats
    from hudi_streaming.hoodie.slice_reader import SliceRead, read_slice
    from hudi_streaming.hoodie.table import HudiTable

    table = HudiTable(path)
    (fs,), max_instant, _ = plan_slices(table)
    req = SliceRead(table, table.arrow_schema(), max_instant, read_optimized=read_optimized)

    def read() -> pa.Table:
        stats = ScanStats()
        if runs is not None:
            runs.append(stats)
        return read_slice(req, fs, stats)
    return read


def stream_task(path: str, storage_options: dict | None = None):
    """What a Spark task of this source runs on the slice, as a function returning its batch iterator.

    Driver side, as ``streaming.batch_read.plan_batch_read`` plans ``spark.read``: the snapshot's slice made a split
    (every row of the slice), the output schema and the columns to read. Task side, as the source's ``read``: a
    table opened without listing, then ``consume`` over the whole split with the stream's defaults. The table is
    opened and the split planned here, outside the timing; the read starts when the iterator is first advanced.
    """
    from hudi_streaming.hoodie.deletes import Deletes
    from hudi_streaming.hoodie.feed_schema import output_schema, read_columns
    from hudi_streaming.hoodie.read import plan_slices
    from hudi_streaming.hoodie.table import HudiTable
    from hudi_streaming.monitor.monitor import MonitorOptions, StreamMonitor
    from hudi_streaming.streaming.consumer import SplitRange, consume

    driver_table = HudiTable(path, storage_options)
    (fs,), max_instant, _ = plan_slices(driver_table)
    target = output_schema(driver_table.arrow_schema(), None)
    split = StreamMonitor(driver_table, MonitorOptions()).split_of(fs, None, max_instant, est_rows=0)
    columns = read_columns(driver_table, target)
    del driver_table
    task_table = HudiTable(path, storage_options)
    return lambda: consume(task_table, [SplitRange(split, 0, None)], target, columns, target, deletes=Deletes.FAIL,
                           changelog=False, merge_type="payload_combine", mini_batch=MINI_BATCH)


def _hudi_setup(path: str):
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(path).build()
    (fs,) = table.get_file_slices()
    return fs, table.create_file_group_reader_with_options(), hudi.HudiReadOptions().with_batch_size(MINI_BATCH)


def worker_fn(kind: str, path: str, base_file: str, runs: list):
    """The function a worker times, made (imports, table open, planning) outside the timing."""
    if kind in ("ours_slice", "ours_ro_slice"):
        return _ours_slice_setup(path, kind == "ours_ro_slice", runs)
    if kind == "ours_stream":
        return stream_task(path)
    if kind in ("hudi_slice", "hudi_slice_stream"):
        fs, reader, options = _hudi_setup(path)
        return (lambda: reader.read_file_slice(fs)) if kind == "hudi_slice" else \
            (lambda: reader.read_file_slice_stream(fs, options))
    if kind == "hudi_table":
        import hudi
        return lambda: hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    if kind == "pyarrow_ro":
        return lambda: pq.read_table(base_file)
    from hudi_streaming import read_table
    return lambda: read_table(path, read_optimized=kind == "ours_ro")


def drain(make_batches) -> dict:
    """Iterate the batch iterator ``make_batches()`` returns keeping no batch (a Spark task hands each on): rows,
    batches, largest batch and the time from the call to the first batch in hand."""
    t0, first, rows, n, biggest = time.perf_counter(), float("nan"), 0, 0, 0
    for batch in make_batches():
        if not n:
            first = time.perf_counter() - t0
        rows, n, biggest = rows + batch.num_rows, n + 1, max(biggest, batch.num_rows)
        del batch  # nothing kept: the next batch may reuse the memory
    return {"rows": rows, "batches": n, "max_batch_rows": biggest, "first_batch": first}


def run_worker(kind: str, path: str, base_file: str, repeat: int) -> dict:
    runs: list = []  # our read_slice's ScanStats, one per read
    fn = worker_fn(kind, path, base_file, runs)
    return {"kind": kind, **time_reads(fn, repeat, kind in ("ours_stream", "hudi_slice_stream"), runs)}


def time_reads(fn, repeat: int, streams: bool, runs: list | None = None) -> dict:
    """``repeat`` reads by ``fn`` (``streams``: it returns a batch iterator, drained), made in this process just
    before: the best run's times, the memory high-water marks, and the ``ScanStats`` the best run left in
    ``runs``."""
    pool = pa.default_memory_pool()
    rss_before, pool_before = common.rss_now(), pool.max_memory()
    drained: list[dict] = []

    def count(out) -> None:
        drained.append(out if streams else {"rows": out.num_rows if hasattr(out, "num_rows")
                                            else sum(b.num_rows for b in out)})
    best = common.best_of((lambda: drain(fn)) if streams else fn, repeat, count)
    if len({d["rows"] for d in drained}) != 1:
        raise SystemExit(f"row count changed between runs: {[d['rows'] for d in drained]}")
    result = {**drained[best.index], "seconds": best.seconds, "times": best.times,
              "cpu_seconds": best.cpu_seconds, "first_batch_times": [d.get("first_batch") for d in drained],
              "rss_before": rss_before, "rss_peak": common.rss_peak(), "vm_hwm": common.vm_hwm(),
              "pool_peak": pool.max_memory(), "pool_before": pool_before, "pool_backend": pool.backend_name,
              "phases": dataclasses.asdict(runs[best.index]) if runs else None}
    if not streams:
        out = fn()  # one more read, kept alive: what the result holds
        result["result_nbytes"] = out.nbytes if hasattr(out, "nbytes") else sum(b.nbytes for b in out)
    return result


def run_profile(path: str, top: int) -> dict:
    import cProfile
    import io
    import pstats

    fn = _ours_slice_setup(path)
    fn()  # warm-up (imports, lru caches)
    prof = cProfile.Profile()
    prof.runcall(fn)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("cumulative").print_stats(top)
    return {"kind": "ours_profile", "text": buf.getvalue()}


def measure(kind: str, table: Path, repeat: int) -> dict:
    return common.run_worker(__file__, kind, "--table-path", str(table), "--base-file", str(data_files(table)[0]),
                             "--repeat", str(repeat))


# -- report ----------------------------------------------------------------------------------------------------

# (query, reader label, worker kind), in the order measured and printed
ROWS = [
    ("merged, slice", "ours     stream task: consume(snapshot split)", "ours_stream"),
    ("merged, slice", "ours     read_slice (batch API)", "ours_slice"),
    ("merged, slice", "hudi-rs  HudiFileGroupReader.read_file_slice", "hudi_slice"),
    ("merged, slice", "hudi-rs  read_file_slice_stream", "hudi_slice_stream"),
    ("merged, table", "ours     read_table(url)", "ours_table"),
    ("merged, table", "hudi-rs  HudiTable.read(HudiReadOptions())", "hudi_table"),
    ("read-optimized", "ours     read_table(url, read_optimized=True)", "ours_ro"),
    ("read-optimized", "ours     read_slice (read_optimized)", "ours_ro_slice"),
    ("read-optimized", "pyarrow  pq.read_table(base file)", "pyarrow_ro"),
]
LABEL = {kind: label for _, label, kind in ROWS}


def _growth(r: dict) -> int:
    """Peak RSS growth: the worker's RSS high-water mark minus its RSS just before the first read."""
    return r["rss_peak"] - r["rss_before"]


def _ratio(results: dict, ours: str, theirs: str, key: str = "seconds") -> float:
    """Ours rows/s / theirs rows/s (both read the same N rows: the inverse ratio of the times)."""
    return results[theirs][key] / results[ours][key]


def report(args, n: int, files: tuple[Path, Path | None], results: dict[str, dict], load_at_start: float,
           first: bool) -> None:
    import hudi

    base, log = files
    print(f"\nOne MOR file slice: {n:,} base rows + {args.updates:,} log updates ({args.blocks} Avro data blocks, one "
          f"log file); best of {args.repeat}")
    print(f"base parquet {mib(base.stat().st_size)} ({args.compression}), log file "
          f"{mib(log.stat().st_size if log else 0)}; hudi-rs {hudi.__version__}, pyarrow {pa.__version__}, "
          f"{os.cpu_count()} CPUs")
    load = os.getloadavg()[0]
    print(f"load average at start {load_at_start:.1f}, at end {load:.1f}"
          + (f" -- MORE THAN {os.cpu_count()} CPUs: other processes compete, timings are noisy"
             if max(load_at_start, load) > (os.cpu_count() or 1) else ""))
    head = (f"{'query':<15} {'reader':<52} {'best s':>7} {'median':>7} {'CPU s':>6} {'rows/s':>11} "
            f"{'1st batch':>9} {'peak RSS':>10} {'RSS growth':>11} {'Arrow pool peak':>16}")
    print(f"\n{head}\n{'-' * len(head)}")
    for query, label, kind in ROWS:
        r = results[kind]
        pool_peak = mib(r["pool_peak"]) if kind.startswith(("ours", "pyarrow")) else "(not Arrow)"
        first_batch = f"{min(r['first_batch_times']):.3f}" if "batches" in r else "-"
        print(f"{query:<15} {label:<52} {r['seconds']:>7.3f} {float(np.median(r['times'])):>7.3f} "
              f"{r['cpu_seconds']:>6.2f} {r['rows'] / r['seconds']:>11,.0f} {first_batch:>9} "
              f"{mib(r['rss_peak']):>10} {mib(_growth(r)):>11} {pool_peak:>16}")
    odd = [k for k, r in results.items() if abs(r["rss_peak"] - r["vm_hwm"]) > 0.1 * r["vm_hwm"]]
    if odd:
        print(f"WARNING: ru_maxrss and VmHWM disagree for {odd}: "
              + ", ".join(f"{mib(results[k]['rss_peak'])} vs {mib(results[k]['vm_hwm'])}" for k in odd))
    stream, hstream = results["ours_stream"], results["hudi_slice_stream"]
    print(f"(read_slice's result: {mib(results['ours_slice']['result_nbytes'])}; the stream task yielded "
          f"{stream['batches']} batches of <= {stream['max_batch_rows']:,} rows, hudi-rs's stream "
          f"{hstream['batches']} of <= {hstream['max_batch_rows']:,}; Arrow pool: "
          f"{results['ours_slice']['pool_backend']})")

    total, p = results["ours_slice"]["seconds"], results["ours_slice"]["phases"]
    base_s = p["base_wait_seconds"] or p["base_read_seconds"]
    parts = [(f"base file: waiting for the read-ahead's pieces ({p['base_read_seconds']:.3f} s of reading in its "
              "thread)", base_s),
             ("log files read + block framing (scan_blocks)", p["log_scan_seconds"]),
             ("log decode, Avro -> Arrow", p["log_decode_seconds"]),
             ("log records: align, concat, keys, flags", p["log_records_seconds"] - p["log_decode_seconds"]),
             ("merge: fold the log, merge it onto the base pieces, the log-only tail", p["merge_seconds"])]
    parts.append(("other: base keys/ordering arrays, glue (remainder)", total - sum(s for _, s in parts)))
    print(f"\nTime split of our merged read_slice, its best run ({total:.3f} s), by the reader's ScanStats:")
    for label, sec in parts:
        print(f"  {label:<92} {sec:>7.3f} s {100 * sec / total:>5.1f} %")

    where = "" if first else " (the targets apply at the first size; shown for comparison)"
    hudi_growth = _growth(results["hudi_slice"])
    print(f"\nMerged slice, ours / hudi-rs read_file_slice at {size(n)} + {size(args.updates)}{where}:")
    for kind in ("ours_stream", "ours_slice"):
        speed, growth = _ratio(results, kind, "hudi_slice"), _growth(results[kind]) / hudi_growth
        print(f"  {LABEL[kind].split(None, 1)[1]:<46} rows/s {speed:>5.2f}x (target >= {SLICE_SPEED_TARGET:.1f}x"
              f"{': ' + verdict(speed >= SLICE_SPEED_TARGET) if first else ''}; by CPU time "
              f"{_ratio(results, kind, 'hudi_slice', 'cpu_seconds'):.2f}x);  peak RSS growth {growth:>5.2f}x "
              f"(target <= {GROWTH_TARGET:.2f}x{': ' + verdict(growth <= GROWTH_TARGET) if first else ''}; "
              f"{mib(_growth(results[kind]))} vs {mib(hudi_growth)})")
    print("Other ratios, ours rows/s / theirs rows/s (wall time: the target; CPU time: steadier on a busy machine):")
    for label, ours, theirs, target in [
            ("merged, table level: ours read_table / hudi-rs HudiTable.read", "ours_table", "hudi_table",
             MERGED_TARGET),
            ("read-optimized: ours read_table(read_optimized) / pq.read_table", "ours_ro", "pyarrow_ro",
             READ_OPTIMIZED_TARGET)]:
        value = _ratio(results, ours, theirs)
        print(f"  {label:<68} {value:>5.2f}x  (target >= {target:.1f}x: {verdict(value >= target)});  by CPU time "
              f"{_ratio(results, ours, theirs, 'cpu_seconds'):.2f}x")


def final_report(args, runs: dict[int, dict]) -> None:
    """Growth from the first size to the last, and the summary of every target."""
    lo, hi = args.sizes[0], args.sizes[-1]
    first, last = runs[lo], runs[hi]
    scaling = {}
    if hi != lo:
        print(f"\nPeak RSS growth from {size(lo)} to {size(hi)} base rows ({size(args.updates)} updates at both):")
        for kind in ("ours_stream", "ours_slice", "hudi_slice", "hudi_slice_stream"):
            a, b = _growth(first[kind]), _growth(last[kind])
            scaling[kind] = b / a
            note = {"ours_stream": f"target < {SCALING_TARGET:.2f}x: {verdict(b / a < SCALING_TARGET)}",
                    "ours_slice": "returns the whole slice: grows with it"}.get(kind, "for comparison")
            print(f"  {LABEL[kind]:<52} {mib(a):>10} -> {mib(b):>10}  {scaling[kind]:>5.2f}x  ({note})")

    def row(what: str, target: str, value: float | None, ok: bool | None) -> None:
        shown = f"{value:.2f}x" if value is not None else "-"
        print(f"  {what:<78} {target:>8} {shown:>9}  {verdict(ok) if ok is not None else 'n/a'}")

    print(f"\nSummary (rows/s by wall time, best of {args.repeat}; ratios at {size(lo)} + {size(args.updates)} "
          "unless named):")
    print(f"  {'target':<78} {'wanted':>8} {'measured':>9}  verdict")
    for kind, name in (("ours_stream", "stream task (consume)"), ("ours_slice", "batch API (read_slice)")):
        g = _growth(first[kind]) / _growth(first["hudi_slice"])
        row(f"{name}: peak RSS growth / hudi-rs read_file_slice's", f"<= {GROWTH_TARGET:.2f}x", g, g <= GROWTH_TARGET)
        v = _ratio(first, kind, "hudi_slice")
        row(f"{name}: rows/s / hudi-rs read_file_slice's", f">= {SLICE_SPEED_TARGET:.1f}x", v, v >= SLICE_SPEED_TARGET)
    if scaling:
        row(f"stream task: peak RSS growth {size(hi)} / {size(lo)} (hudi-rs read_file_slice's: "
            f"{scaling['hudi_slice']:.2f}x)", f"< {SCALING_TARGET:.2f}x", scaling["ours_stream"],
            scaling["ours_stream"] < SCALING_TARGET)
    else:
        row("stream task: peak RSS growth, last size / first size (one size measured)", f"< {SCALING_TARGET:.2f}x",
            None, None)
    v = _ratio(first, "ours_table", "hudi_table")
    row("merged, table level: ours read_table rows/s / hudi-rs HudiTable.read's", f">= {MERGED_TARGET:.1f}x", v,
        v >= MERGED_TARGET)
    v = _ratio(first, "ours_ro", "pyarrow_ro")
    row("read-optimized: ours read_table rows/s / pq.read_table's", f">= {READ_OPTIMIZED_TARGET:.1f}x", v,
        v >= READ_OPTIMIZED_TARGET)
    print("  stream task time to first batch: " + ", ".join(
        f"{size(n)} {min(r['first_batch_times']):.3f} s (of {r['seconds']:.3f} s)"
        for n, r in ((n, runs[n]["ours_stream"]) for n in args.sizes)))


# -- the run ---------------------------------------------------------------------------------------------------

def run_size(args, n: int) -> dict:
    """Build (or reuse), verify and measure the table of ``n`` base rows; print its report."""
    load_at_start = os.getloadavg()[0]
    root = Path(args.keep).resolve() / f"rows_{n}" if args.keep else Path(tempfile.mkdtemp(prefix="bench_slice_"))
    print(f"\n=== {n:,} base rows + {args.updates:,} log updates, in {root} ===", flush=True)
    remove = not args.keep
    try:
        table, params, reused = table_at(root, n, args.updates, args.blocks, args.compression)
        if reused:
            print("  reusing the table kept there")
        t0 = time.perf_counter()
        try:
            verify(table, params)
        except Mismatch as e:
            remove = False
            raise SystemExit(f"VERIFICATION FAILED, nothing timed: {e}\n(table kept in {table})") from None
        print(f"  verified: ours (batch API, stream task) == hudi-rs == expected state, read-optimized ours == "
              f"pyarrow == base rows ({time.perf_counter() - t0:.1f} s)", flush=True)
        results = {}
        for kind in LABEL:
            print(f"measuring {kind} ...", flush=True)
            results[kind] = measure(kind, table, args.repeat)
            if results[kind]["rows"] != n:
                raise SystemExit(f"{kind} returned {results[kind]['rows']:,} rows, expected {n:,}")
        report(args, n, data_files(table), results, load_at_start, first=n == args.sizes[0])
        if args.profile:
            print(f"\ncProfile of one merged read_slice (ours), top {args.profile} by cumulative time:")
            print(measure("ours_profile", table, args.profile)["text"])
        return results
    finally:
        if remove:
            shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), metavar="N1,N2",
                        help="base file rows of each table; the first is where the ratio targets apply, first to "
                             "last is the memory scaling")
    parser.add_argument("--rows", type=int, help="one size only: the same as --sizes N")
    parser.add_argument("--updates", type=int, default=200_000,
                        help="log updates of distinct existing keys (the same at every size)")
    parser.add_argument("--blocks", type=int, default=4, help="Avro data blocks the updates are split into")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is reported")
    parser.add_argument("--keep", metavar="DIR",
                        help="build each size's table in DIR/rows_<N> and keep it; one built with the same "
                             "--updates/--blocks/--compression is reused")
    parser.add_argument("--compression", default="gzip", help="base file codec (Hudi's default: gzip)")
    parser.add_argument("--profile", type=int, nargs="?", const=25, default=0, metavar="N",
                        help="also cProfile one merged slice read of ours, top N lines by cumtime (default 25)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--table-path", help=argparse.SUPPRESS)
    parser.add_argument("--base-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        common.worker_done(run_profile(args.table_path, args.repeat) if args.worker == "ours_profile"
                           else run_worker(args.worker, args.table_path, args.base_file, args.repeat))
    try:
        args.sizes = [args.rows] if args.rows is not None else [int(x) for x in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes: comma-separated row counts, not {args.sizes!r}")
    if (any(n < 1 or not 0 < args.updates <= n for n in args.sizes) or len(set(args.sizes)) != len(args.sizes)
            or args.blocks < 1 or args.repeat < 1):
        parser.error("need distinct sizes >= 1, 0 < updates <= every size, blocks >= 1, repeat >= 1")
    for n in args.sizes if args.keep else ():  # refuse a wrong --keep DIR before spending minutes on a size
        kept(Path(args.keep).resolve() / f"rows_{n}", n, args.updates, args.blocks, args.compression)
    runs = {n: run_size(args, n) for n in args.sizes}
    final_report(args, runs)


if __name__ == "__main__":
    main()
