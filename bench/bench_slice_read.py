"""Speed and memory of reading one Merge-On-Read file slice: our reader against hudi-rs and pyarrow.

Run: ``python bench/bench_slice_read.py [--sizes N1,N2,...] [--updates U] [--blocks B] [--repeat R] [--keep DIR]
[--compression CODEC] [--profile [N]]`` (defaults: sizes 1,000,000 and 4,000,000 base rows, 200,000 updates at
every size, 4 blocks, best of 3, gzip; ``--rows N`` is ``--sizes N``). ``--keep DIR`` keeps each size's table in
``DIR/rows_<N>``; run again with the same DIR and flags to reuse them instead of writing them again.

For each size, builds a valid Hudi table version 9 MOR table (non-partitioned, COMMIT_TIME_ORDERING, laid out
like the fixture ``mor_avro__v9_mor_nonpart_3commits``) holding one file slice: a base parquet file of N
trips-like rows written by deltacommit 1, and one log file of deltacommit 2 with U updates of distinct existing
keys in B Avro data blocks, encoded with the project's own ``hoodie.logfile.writer``. Before timing anything it
checks that our merged output (batch API and streaming path), hudi-rs's merged output and the expected state (the
base with the updates applied) are the same rows, and that both read-optimized reads equal the base file; it
aborts (exit 1) if not.

Then every measurement runs in a fresh subprocess (so memory high-water marks don't mix), taking the best of R
runs (wall time, plus the CPU time of that run over all threads, which is steadier on a busy machine), and the
script prints, per size:

* merged read rows/s, ours vs hudi-rs, slice level, table opened and slice planned outside the timing: our
  batch API ``read_slice``; our **streaming path**, what a Spark task runs (``streaming.consumer.consume`` over
  one snapshot split of the slice, planned like ``plan_batch_read`` plans ``spark.read``, iterating the record
  batches of ``miniBatchSize`` 65,536 rows and keeping none, as a task hands each to Spark; plus its time to the
  first batch); hudi-rs ``HudiFileGroupReader.read_file_slice`` and, for reference, its
  ``read_file_slice_stream`` (batches dropped likewise);
* merged read rows/s at table level (``hoodie.read_table(url)`` vs ``HudiTableBuilder...build().read(...)``,
  open included); read-optimized rows/s, ``hoodie.read_table(url, read_optimized=True)`` vs
  ``pyarrow.parquet.read_table``;
* memory of each: **peak RSS** (the worker's ``resource.getrusage`` high-water mark), **peak RSS growth** (that
  minus the worker's RSS just before the first read, after imports, opening the table and planning, so
  interpreter and library baselines don't mix in), and the Arrow default memory pool's high-water mark (counts
  only Arrow-pool allocations, not polars' or hudi-rs's own, so compare RSS across readers);
* where our merged ``read_slice`` spends its time: base parquet read, log file read and block framing,
  Avro -> Arrow decode, log assembly (align/concat/keys), merge, other;
* the ratios against the targets.

After the last size: how each reader's peak RSS growth scales from the first size to the last, and a summary
of every target with the measured ratio and PASS/FAIL. Targets (issue 12, at the first size, 1M + 200k by
default): streaming path peak RSS growth <= 0.75x hudi-rs ``read_file_slice``'s while its rows/s stays >= 2.0x
hudi-rs's; streaming path peak RSS growth from the first to the last size (4M base rows, same update count)
< 1.25x. The batch API ``read_slice`` is reported against the same two ratios. Earlier targets, still shown:
table-level merged >= 1.0x hudi-rs, read-optimized >= 0.8x pyarrow.

``--profile`` adds a cProfile of one merged slice read (top N lines by cumulative time, default 25).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path

import fastavro  # noqa: E402
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_streaming.hoodie.logfile.avro_arrow import avro_bytes, avro_long, records_to_avro_dicts  # noqa: E402
from hudi_streaming.hoodie.logfile.format import make_log_file_name  # noqa: E402
from hudi_streaming.hoodie.logfile.writer import encode_avro_data_block  # noqa: E402

MERGED_TARGET = 1.0  # table level, ours / hudi-rs rows/s
READ_OPTIMIZED_TARGET = 0.8  # ours / pyarrow rows/s
SLICE_SPEED_TARGET = 2.0  # issue 12: merged slice, ours / hudi-rs read_file_slice rows/s, at the first size
GROWTH_TARGET = 0.75  # issue 12: merged slice peak RSS growth, ours / hudi-rs read_file_slice, at the first size
SCALING_TARGET = 1.25  # issue 12: our streaming path's peak RSS growth, last size / first size (strictly below)
MINI_BATCH = 65_536  # the source's default miniBatchSize
DEFAULT_SIZES = (1_000_000, 4_000_000)

DATABASE = "default"
TABLE_NAME = "bench_trips"
INSTANT_1 = "20250601120000000"  # deltacommit 1: the base file (requested time)
COMPLETION_1 = "20250601120005123"
INSTANT_2 = "20250601120010000"  # deltacommit 2: the log file
COMPLETION_2 = "20250601120015456"
BASE_TOKEN = "0-10-100"
LOG_TOKEN = "0-20-200"
SEED = 20250601

META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name"]
KEY = "_hoodie_record_key"
CITIES = ["san_francisco", "sao_paulo", "chennai", "new_york", "amsterdam", "berlin", "tokyo"]

# Writer schema without meta fields, as Hudi/Spark writes it (nullable unions, null first, default null).
DATA_FIELDS = [("uuid", "string"), ("ts", "long"), ("rider", "string"), ("driver", "string"),
               ("fare", "double"), ("city", "string")]
WRITER_SCHEMA = {
    "type": "record", "name": f"{TABLE_NAME}_record", "namespace": f"hoodie.{TABLE_NAME}",
    "fields": [{"name": n, "type": ["null", t], "default": None} for n, t in DATA_FIELDS],
}
# With meta fields first: the SCHEMA header of the log blocks and parquet.avro.schema of the base file.
FULL_SCHEMA = dict(WRITER_SCHEMA, fields=[{"name": n, "type": ["null", "string"], "doc": "", "default": None}
                                          for n in META] + WRITER_SCHEMA["fields"])
WRITER_SCHEMA_JSON = json.dumps(WRITER_SCHEMA, separators=(",", ":"))
FULL_SCHEMA_JSON = json.dumps(FULL_SCHEMA, separators=(",", ":"))
ARROW_TYPES = {"string": pa.string(), "long": pa.int64(), "double": pa.float64()}
ARROW_SCHEMA = pa.schema([pa.field(n, pa.string()) for n in META]
                         + [pa.field(n, ARROW_TYPES[t]) for n, t in DATA_FIELDS])

# The Avro schema embedded, byte for byte, in the completed deltacommit files of table version 8/9 fixtures
# (mor_avro__v9_mor_nonpart_3commits): Hudi's HoodieCommitMetadata.avsc as Avro's Java writer prints it.
COMMIT_METADATA_SCHEMA = (
    '{"type":"record","name":"HoodieCommitMetadata","namespace":"org.apache.hudi.avro.model","fields":[{"name":'
    '"partitionToWriteStats","type":["null",{"type":"map","values":{"type":"array","items":{"type":"record",'
    '"name":"HoodieWriteStat","fields":[{"name":"fileId","type":["null",{"type":"string","avro.java.string":'
    '"String"}],"default":null},{"name":"path","type":["null",{"type":"string","avro.java.string":"String"}],'
    '"default":null},{"name":"prevCommit","type":["null",{"type":"string","avro.java.string":"String"}],'
    '"default":null},{"name":"numWrites","type":["null","long"],"default":null},{"name":"numDeletes","type":'
    '["null","long"],"default":null},{"name":"numUpdateWrites","type":["null","long"],"default":null},{"name":'
    '"totalWriteBytes","type":["null","long"],"default":null},{"name":"totalWriteErrors","type":["null","long"],'
    '"default":null},{"name":"partitionPath","type":["null",{"type":"string","avro.java.string":"String"}],'
    '"default":null},{"name":"totalLogRecords","type":["null","long"],"default":null},{"name":"totalLogFiles",'
    '"type":["null","long"],"default":null},{"name":"totalUpdatedRecordsCompacted","type":["null","long"],'
    '"default":null},{"name":"numInserts","type":["null","long"],"default":null},{"name":"totalLogBlocks",'
    '"type":["null","long"],"default":null},{"name":"totalCorruptLogBlock","type":["null","long"],"default":'
    'null},{"name":"totalRollbackBlocks","type":["null","long"],"default":null},{"name":"fileSizeInBytes",'
    '"type":["null","long"],"default":null},{"name":"logVersion","type":["null","int"],"default":null},{"name":'
    '"logOffset","type":["null","long"],"default":null},{"name":"baseFile","type":["null",{"type":"string",'
    '"avro.java.string":"String"}],"default":null},{"name":"logFiles","type":["null",{"type":"array","items":'
    '{"type":"string","avro.java.string":"String"},"default":null}],"default":null},{"name":"cdcStats","type":'
    '["null",{"type":"map","values":"long","avro.java.string":"String","default":null}],"default":null},'
    '{"name":"prevBaseFile","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},'
    '{"name":"minEventTime","type":["null","long"],"default":null},{"name":"maxEventTime","type":["null",'
    '"long"],"default":null},{"name":"runtimeStats","type":["null",{"type":"record","name":'
    '"HoodieRuntimeStats","fields":[{"name":"totalScanTime","type":["null","long"],"default":null},{"name":'
    '"totalCreateTime","type":["null","long"],"default":null},{"name":"totalUpsertTime","type":["null","long"],'
    '"default":null}]}],"default":null},{"name":"totalLogFilesCompacted","type":["null","long"],"default":null},'
    '{"name":"totalLogReadTimeMs","type":["null","long"],"default":null},{"name":"totalLogSizeCompacted",'
    '"type":["null","long"],"default":null},{"name":"tempPath","type":["null",{"type":"string",'
    '"avro.java.string":"String"}],"default":null},{"name":"numUpdates","type":["null","long"],"default":null}]}},'
    '"avro.java.string":"String"}],"default":null},{"name":"compacted","type":["null","boolean"],"default":null},'
    '{"name":"extraMetadata","type":["null",{"type":"map","values":{"type":"string","avro.java.string":"String"},'
    '"avro.java.string":"String","default":null}],"default":null},{"name":"version","type":["int","null"],'
    '"default":1},{"name":"operationType","type":["null",{"type":"string","avro.java.string":"String"}],'
    '"default":null}]}'
)
_COMMIT_METADATA_PARSED = fastavro.parse_schema(json.loads(COMMIT_METADATA_SCHEMA))


# ---------------------------------------------------------------------------------------------------------------
# Building the table
# ---------------------------------------------------------------------------------------------------------------

def commit_metadata_file(record: dict, sync: bytes) -> bytes:
    """An Avro object container file of one ``HoodieCommitMetadata`` record, codec null, like Hudi writes."""
    datum = io.BytesIO()
    fastavro.schemaless_writer(datum, _COMMIT_METADATA_PARSED, record)
    header = (b"Obj\x01" + avro_long(1) + avro_bytes(b"avro.schema") + avro_bytes(COMMIT_METADATA_SCHEMA.encode())
              + avro_long(0) + sync)
    body = datum.getvalue()
    return header + avro_long(1) + avro_long(len(body)) + body + sync


def write_stat(**fields) -> dict:
    """A ``HoodieWriteStat`` with the defaults the fixtures show (counters 0, optional fields null)."""
    stat = {"fileId": None, "path": None, "prevCommit": None, "numWrites": 0, "numDeletes": 0,
            "numUpdateWrites": 0, "totalWriteBytes": 0, "totalWriteErrors": 0, "partitionPath": "",
            "totalLogRecords": 0, "totalLogFiles": None, "totalUpdatedRecordsCompacted": 0, "numInserts": 0,
            "totalLogBlocks": 0, "totalCorruptLogBlock": 0, "totalRollbackBlocks": 0, "fileSizeInBytes": 0,
            "logVersion": None, "logOffset": None, "baseFile": None, "logFiles": None, "cdcStats": None,
            "prevBaseFile": None, "minEventTime": None, "maxEventTime": None, "runtimeStats": None,
            "totalLogFilesCompacted": 0, "totalLogReadTimeMs": 0, "totalLogSizeCompacted": 0, "tempPath": None,
            "numUpdates": 0}
    stat.update(fields)
    return stat


def commit_metadata(stats: list[dict], operation: str, with_schema: bool = True) -> dict:
    return {"partitionToWriteStats": {"": stats}, "compacted": False,
            "extraMetadata": {"schema": WRITER_SCHEMA_JSON} if with_schema else {}, "version": None,
            "operationType": operation}


def _java_properties_escape(value: str) -> str:
    """Escape a value as ``java.util.Properties.store`` does (ASCII values: backslash, ``:``, ``=``, ``#``, ``!``)."""
    out = value.replace("\\", "\\\\")
    for ch in ":=#!":
        out = out.replace(ch, "\\" + ch)
    return out


def hoodie_properties() -> str:
    """The fixture's hoodie.properties with our name/fields, no metadata table partitions, a correct checksum."""
    props = {
        "hoodie.table.initial.version": "9",
        "hoodie.table.keygenerator.type": "NON_PARTITION",
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.archivelog.folder": "archived",
        "hoodie.table.create.schema": WRITER_SCHEMA_JSON,
        "hoodie.timeline.layout.version": "2",
        "hoodie.timeline.history.path": "history",
        "hoodie.table.checksum": str(zlib.crc32(f"{DATABASE}.{TABLE_NAME}".encode())),
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.recordkey.fields": "uuid",
        "hoodie.table.name": TABLE_NAME,
        "hoodie.table.format": "native",
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.timeline.path": "timeline",
        "hoodie.table.ordering.fields": "ts",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.database.name": DATABASE,
        "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.table.version": "9",
    }
    lines = ["#Updated at 2025-06-01T12:00:00.000000Z", "#Sun Jun 01 12:00:00 UTC 2025"]
    lines += [f"{k}={_java_properties_escape(v)}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def _const(value: str, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, pa.string()), n)


def make_base(n: int, base_name: str, rng: np.random.Generator) -> pa.Table:
    """N trips rows of deltacommit 1, meta columns first, ``_hoodie_file_name`` = the base file name."""
    pyrng = random.Random(SEED)
    uuids = pa.array([str(uuid.UUID(int=pyrng.getrandbits(128), version=4)) for _ in range(n)], pa.string())
    ts = pa.array(1_717_200_000_000 + np.sort(rng.integers(0, 86_400_000, n)), pa.int64())
    rider = pc.binary_join_element_wise("rider-", pc.cast(pa.array(rng.integers(0, 10_000, n)), pa.string()), "")
    driver = pc.binary_join_element_wise("driver-", pc.cast(pa.array(rng.integers(0, 10_000, n)), pa.string()), "")
    fare = pa.array(np.round(rng.uniform(5.0, 120.0, n), 2), pa.float64())
    city = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, len(CITIES), n).astype(np.int32)),
                                          pa.array(CITIES)).cast(pa.string())
    seqno = pc.binary_join_element_wise(f"{INSTANT_1}_0_", pc.cast(pa.array(np.arange(n)), pa.string()), "")
    cols = {
        "_hoodie_commit_time": _const(INSTANT_1, n),
        "_hoodie_commit_seqno": seqno,
        "_hoodie_record_key": uuids,
        "_hoodie_partition_path": _const("", n),
        "_hoodie_file_name": _const(base_name, n),
        "uuid": uuids, "ts": ts, "rider": rider, "driver": driver, "fare": fare, "city": city,
    }
    return pa.Table.from_pydict(cols, schema=ARROW_SCHEMA)


def make_updates(base: pa.Table, u: int, file_id: str, rng: np.random.Generator) -> tuple[pa.Table, np.ndarray]:
    """U updates of distinct existing keys (random order) by deltacommit 2, and the base rows they replace."""
    n = base.num_rows
    rows = rng.choice(n, size=u, replace=False)
    idx = pa.array(rows)
    old = base.take(idx)
    seqno = pc.binary_join_element_wise(f"{INSTANT_2}_0_", pc.cast(pa.array(np.arange(u)), pa.string()), "")
    cols = {
        "_hoodie_commit_time": _const(INSTANT_2, u),
        "_hoodie_commit_seqno": seqno,
        "_hoodie_record_key": old.column(KEY),
        "_hoodie_partition_path": old.column("_hoodie_partition_path"),
        "_hoodie_file_name": _const(file_id, u),
        "uuid": old.column("uuid"),
        "ts": pc.add(old.column("ts"), pa.scalar(86_400_000, pa.int64())),
        "rider": pc.binary_join_element_wise("rider-", pc.cast(pa.array(rng.integers(10_000, 20_000, u)),
                                                               pa.string()), ""),
        "driver": pc.binary_join_element_wise("driver-", pc.cast(pa.array(rng.integers(10_000, 20_000, u)),
                                                                 pa.string()), ""),
        "fare": pa.array(np.round(rng.uniform(5.0, 120.0, u), 2), pa.float64()),
        "city": old.column("city"),
    }
    return pa.Table.from_pydict(cols, schema=ARROW_SCHEMA), rows


def file_names() -> tuple[str, str, str]:
    """File id, base file name and log file name (deterministic, so a kept table can be found again)."""
    file_id = f"{uuid.UUID(int=random.Random(SEED + 1).getrandbits(128), version=4)}-0"
    return (file_id, f"{file_id}_{BASE_TOKEN}_{INSTANT_1}.parquet",
            make_log_file_name(file_id, INSTANT_2, 1, LOG_TOKEN))


def generate(n: int, u: int) -> dict:
    """The rows (deterministic for given n, u): base, updates, expected merged state."""
    rng = np.random.default_rng(SEED)
    file_id, base_name, log_name = file_names()
    base = make_base(n, base_name, rng)
    updates, rows = make_updates(base, u, file_id, rng)
    # expected state: the base with each updated row replaced in place
    src = np.arange(n, dtype=np.int64)
    src[rows] = n + np.arange(u)
    expected = pa.concat_tables([base, updates]).take(pa.array(src))
    return {"base": base, "updates": updates, "expected": expected, "updated_keys": updates.column(KEY),
            "file_id": file_id, "base_name": base_name, "log_name": log_name}


def write_table(root: Path, data: dict, blocks: int, compression: str) -> None:
    """Write the table of ``data`` under ``root``: properties, partition metadata, timeline, base and log file."""
    base, updates, file_id = data["base"], data["updates"], data["file_id"]
    base_name, log_name = data["base_name"], data["log_name"]
    n, u = base.num_rows, updates.num_rows
    timeline = root / ".hoodie" / "timeline"
    (timeline / "history").mkdir(parents=True)
    (root / ".hoodie" / "hoodie.properties").write_text(hoodie_properties())
    (root / ".hoodie_partition_metadata").write_text(
        f"#partition metadata\n#Sun Jun 01 12:00:00 UTC 2025\ncommitTime={INSTANT_1}\npartitionDepth=0\n")
    sync = random.Random(SEED + 2).randbytes(16)

    def instant_files(instant: str, completion: str, inflight: dict, done: dict) -> None:
        (timeline / f"{instant}.deltacommit.requested").write_bytes(b"")
        (timeline / f"{instant}.deltacommit.inflight").write_bytes(commit_metadata_file(inflight, sync))
        # the completed file appears atomically: temp name, then rename
        tmp = timeline / f".{instant}_{completion}.deltacommit.tmp"
        tmp.write_bytes(commit_metadata_file(done, sync))
        tmp.rename(timeline / f"{instant}_{completion}.deltacommit")

    runtime = {"totalScanTime": 0, "totalCreateTime": 0, "totalUpsertTime": 0}
    # deltacommit 1: the base file
    keys = base.column(KEY)
    metadata = {b"parquet.avro.schema": FULL_SCHEMA_JSON.encode(), b"writer.model.name": b"avro",
                b"hoodie_min_record_key": pc.min(keys).as_py().encode(),
                b"hoodie_max_record_key": pc.max(keys).as_py().encode()}
    pq.write_table(base.replace_schema_metadata(metadata), root / base_name, compression=compression)
    base_size = (root / base_name).stat().st_size
    instant_files(
        INSTANT_1, COMPLETION_1,
        commit_metadata([write_stat(fileId=file_id, prevCommit="null", partitionPath=None)], "INSERT", False),
        commit_metadata([write_stat(fileId=file_id, path=base_name, prevCommit="null", numWrites=n, numInserts=n,
                                    totalWriteBytes=base_size, fileSizeInBytes=base_size, runtimeStats=runtime)],
                        "INSERT"))

    # deltacommit 2: one log file, U updates in B Avro data blocks
    edges = np.linspace(0, u, blocks + 1).astype(int)
    with open(root / log_name, "wb") as f:
        for lo, hi in zip(edges[:-1], edges[1:]):
            records = records_to_avro_dicts(updates.slice(lo, hi - lo), FULL_SCHEMA_JSON)
            f.write(encode_avro_data_block(records, FULL_SCHEMA_JSON, INSTANT_2))
    log_size = (root / log_name).stat().st_size
    instant_files(
        INSTANT_2, COMPLETION_2,
        commit_metadata([write_stat(fileId=file_id, prevCommit=INSTANT_1, numUpdateWrites=u, partitionPath=None)],
                        "UPSERT", False),
        commit_metadata([write_stat(fileId=file_id, path=log_name, prevCommit=INSTANT_2, numWrites=u,
                                    numUpdateWrites=u, totalWriteBytes=log_size, fileSizeInBytes=log_size,
                                    totalLogBlocks=blocks, logVersion=1, logOffset=0, baseFile="",
                                    logFiles=[log_name], runtimeStats=runtime)], "UPSERT"))


def kept_table_params(root: Path) -> tuple[int, int, int, str] | None:
    """(rows, updates, blocks, codec) of a table this script built in ``root`` earlier, or None."""
    _, base_name, log_name = file_names()
    completed = root / ".hoodie" / "timeline" / f"{INSTANT_2}_{COMPLETION_2}.deltacommit"
    if not ((root / base_name).is_file() and (root / log_name).is_file() and completed.is_file()):
        return None
    md = pq.ParquetFile(root / base_name).metadata
    with open(completed, "rb") as f:
        (stat,) = next(fastavro.reader(f))["partitionToWriteStats"][""]
    return md.num_rows, stat["numUpdateWrites"], stat["totalLogBlocks"], md.row_group(0).column(0).compression


# ---------------------------------------------------------------------------------------------------------------
# Verification (in the parent, before any timing)
# ---------------------------------------------------------------------------------------------------------------

class Mismatch(Exception):
    pass


def _conform(t: pa.Table, what: str) -> pa.Table:
    """``t`` with exactly our columns and types (hudi-rs may return other string layouts or nullability)."""
    missing = [c for c in ARROW_SCHEMA.names if c not in t.column_names]
    if missing:
        raise Mismatch(f"{what}: columns {missing} missing (has {t.column_names})")
    cols = [t.column(f.name).cast(f.type) for f in ARROW_SCHEMA]
    return pa.Table.from_arrays(cols, schema=ARROW_SCHEMA)


def assert_same_rows(a: pa.Table, b: pa.Table, what_a: str, what_b: str) -> None:
    """Same multiset of rows (compared sorted by record key, which is unique here), every column."""
    a, b = _conform(a, what_a), _conform(b, what_b)
    if a.num_rows != b.num_rows:
        raise Mismatch(f"{what_a} has {a.num_rows:,} rows, {what_b} {b.num_rows:,}")
    if pc.count_distinct(a.column(KEY)).as_py() != a.num_rows:
        raise Mismatch(f"{what_a}: record keys are not unique")
    if not a.column(KEY).equals(b.column(KEY)):  # not already in the same order
        a, b = a.sort_by(KEY), b.sort_by(KEY)
    for name in ARROW_SCHEMA.names:
        x, y = a.column(name).combine_chunks(), b.column(name).combine_chunks()
        if x.equals(y):
            continue
        eq = pc.fill_null(pc.equal(x, y), False).to_numpy(zero_copy_only=False)
        both_null = (pc.is_null(x).to_numpy(zero_copy_only=False) & pc.is_null(y).to_numpy(zero_copy_only=False))
        bad = np.flatnonzero(~(eq | both_null))
        i = int(bad[0]) if len(bad) else 0
        raise Mismatch(f"column {name!r} differs in {len(bad):,} rows; e.g. key {a.column(KEY)[i].as_py()}: "
                       f"{what_a} {x[i].as_py()!r} vs {what_b} {y[i].as_py()!r}")


def check_updated_sample(t: pa.Table, expected: pa.Table, updated_keys: pa.ChunkedArray, what: str,
                         k: int = 20) -> None:
    """Spot check: a sample of updated keys carries the log version (deltacommit 2's values) in ``t``."""
    if len(updated_keys) == 0:
        return
    sample = updated_keys.take(pa.array(np.random.default_rng(7).choice(len(updated_keys),
                                                                        min(k, len(updated_keys)), replace=False)))
    got = _conform(t, what).filter(pc.is_in(t.column(KEY), value_set=sample.combine_chunks())).sort_by(KEY)
    want = expected.filter(pc.is_in(expected.column(KEY), value_set=sample.combine_chunks())).sort_by(KEY)
    if got.num_rows != want.num_rows or not got.equals(want):
        raise Mismatch(f"{what}: updated keys do not carry the log values, e.g. {got.slice(0, 1).to_pylist()} vs "
                       f"expected {want.slice(0, 1).to_pylist()}")
    n_new = pc.sum(pc.equal(t.column("_hoodie_commit_time"), INSTANT_2)).as_py() or 0
    if n_new != len(updated_keys):
        raise Mismatch(f"{what}: {n_new:,} rows have commit time {INSTANT_2}, expected {len(updated_keys):,}")


def verify(path: str, built: dict) -> None:
    import hudi

    from hudi_streaming import hoodie

    expected, base = built["expected"], built["base"]
    ours = hoodie.read_table(path)
    check_updated_sample(ours, expected, built["updated_keys"], "ours (merged)")
    assert_same_rows(ours, expected, "ours (merged)", "expected state")
    rs_table = hudi.HudiTableBuilder.from_base_uri(path).build()
    theirs = pa.Table.from_batches(rs_table.read(hudi.HudiReadOptions()))
    check_updated_sample(theirs, expected, built["updated_keys"], "hudi-rs (merged)")
    assert_same_rows(ours, theirs, "ours (merged)", "hudi-rs (merged)")
    slices = rs_table.get_file_slices()
    if len(slices) != 1 or not slices[0].has_log_files:
        raise Mismatch(f"hudi-rs plans {len(slices)} file slices (log files: "
                       f"{[s.log_file_names for s in slices]}), expected one slice with a log file")
    batch = rs_table.create_file_group_reader_with_options().read_file_slice(slices[0])
    assert_same_rows(ours, pa.Table.from_batches([batch]), "ours (merged)", "hudi-rs read_file_slice")
    del theirs, batch
    # the streaming path: the same rows, every one an insert (a snapshot split), in batches of <= MINI_BATCH rows
    batches = list(_ours_stream_setup(path)())
    big = [b.num_rows for b in batches if b.num_rows > MINI_BATCH]
    if big:
        raise Mismatch(f"ours (streaming path): batches of {big[:3]} rows, more than miniBatchSize {MINI_BATCH}")
    streamed = pa.Table.from_batches(batches)
    del batches
    kinds = pc.unique(streamed.column("_change_type")).to_pylist()
    if kinds != ["insert"]:
        raise Mismatch(f"ours (streaming path): change types {kinds}, expected only 'insert' for a snapshot split")
    assert_same_rows(streamed.drop_columns(["_change_type"]), expected, "ours (streaming path)", "expected state")
    del streamed
    ro = hoodie.read_table(path, read_optimized=True)
    assert_same_rows(ro, base, "ours (read-optimized)", "base file")
    assert_same_rows(pq.read_table(os.path.join(path, built["base_name"])), base, "pyarrow base read", "base file")


# ---------------------------------------------------------------------------------------------------------------
# Measurements (each in a fresh subprocess: ``--worker KIND``)
# ---------------------------------------------------------------------------------------------------------------

def _rss_now_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _rss_peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _vm_hwm_bytes() -> int:
    """The kernel's RSS high-water mark of this process image (``VmHWM``), to cross-check ``ru_maxrss``."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _best_of(fn, repeat: int) -> tuple[float, int, list[float], float]:
    """Best wall time of ``repeat`` runs, the row count, all wall times, and the CPU time (all threads) of the best."""
    times, cpus, rows = [], [], None
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        cpus.append(time.process_time() - c0)
        n = out.num_rows if hasattr(out, "num_rows") else sum(b.num_rows for b in out)
        if rows is not None and n != rows:
            raise SystemExit(f"row count changed between runs: {rows} then {n}")
        rows = n
        times.append(dt)
        del out  # free before the next run so the high-water marks are those of one read
    best = min(range(repeat), key=times.__getitem__)
    return times[best], rows, times, cpus[best]


def _ours_slice_setup(path: str, read_optimized: bool = False):
    from hudi_streaming.hoodie.read import plan_slices
    from hudi_streaming.hoodie.slice_reader import SliceRead, read_slice
    from hudi_streaming.hoodie.table import HudiTable

    table = HudiTable(path)
    slices, max_instant, _ = plan_slices(table)
    if len(slices) != 1:
        raise SystemExit(f"ours plans {len(slices)} file slices, expected 1")
    req = SliceRead(table, table.arrow_schema(), max_instant, read_optimized=read_optimized)
    return lambda: read_slice(req, slices[0])


def _hudi_slice_setup(path: str):
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(path).build()
    (fs,) = table.get_file_slices()
    reader = table.create_file_group_reader_with_options()
    return lambda: reader.read_file_slice(fs)


def _ours_stream_setup(path: str, storage_options: dict | None = None):
    """What a Spark task of this source runs on the slice, as a function returning its batch iterator.

    Driver side, as ``streaming.driver.plan_batch_read`` does for ``spark.read``: plan the snapshot's slices, make
    each a split (``StreamMonitor.split_of``, no instant range: every row of the slice), the output schema
    (``output_schema``: table columns + ``_change_type``) and the columns to read (``read_columns``). Task side, as
    ``HudiStreamingDataSource.read`` does: a table opened without listing, then ``consume`` over the whole split
    (``SplitRange(split, 0, None)``) with the stream's defaults (deletes stop the stream, upsert mode,
    ``payload_combine``, ``miniBatchSize`` 65,536). The table is opened and the split planned here, outside
    the timing; the read starts when the iterator is first advanced.
    """
    from hudi_streaming.hoodie.read import plan_slices
    from hudi_streaming.hoodie.table import HudiTable
    from hudi_streaming.monitor.monitor import MonitorOptions, StreamMonitor
    from hudi_streaming.streaming.consumer import SplitRange, consume, output_schema, read_columns
    from hudi_streaming.streaming.options import Deletes

    driver_table = HudiTable(path, storage_options)
    slices, max_instant, _ = plan_slices(driver_table)
    if len(slices) != 1:
        raise SystemExit(f"ours plans {len(slices)} file slices, expected 1")
    target = output_schema(driver_table.arrow_schema(), None)
    split = StreamMonitor(driver_table, MonitorOptions()).split_of(slices[0], None, max_instant, est_rows=0)
    columns = read_columns(driver_table, target)
    del driver_table, slices
    task_table = HudiTable(path, storage_options)
    return lambda: consume(task_table, [SplitRange(split, 0, None)], target, columns, target, deletes=Deletes.FAIL,
                           changelog=False, merge_type="payload_combine", mini_batch=MINI_BATCH)


def _hudi_stream_setup(path: str):
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(path).build()
    (fs,) = table.get_file_slices()
    reader = table.create_file_group_reader_with_options()
    options = hudi.HudiReadOptions().with_batch_size(MINI_BATCH)
    return lambda: reader.read_file_slice_stream(fs, options)


STREAM_KINDS = {"ours_stream": _ours_stream_setup, "hudi_slice_stream": _hudi_stream_setup}


def run_stream_worker(kind: str, path: str, repeat: int) -> dict:
    """Drain a batch iterator ``repeat`` times keeping no batch (a Spark task hands each on); best run counts.

    Time to first batch is measured from the call that makes the iterator to the first batch in hand.
    """
    batches_of = STREAM_KINDS[kind](path)
    pool = pa.default_memory_pool()
    rss_before, pool_before = _rss_now_bytes(), pool.max_memory()
    runs = []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        first = None
        rows = n = biggest = 0
        schema = None
        for batch in batches_of():
            if first is None:
                first = time.perf_counter() - t0
                schema = batch.schema
            rows += batch.num_rows
            n += 1
            biggest = max(biggest, batch.num_rows)
            del batch  # nothing kept: the next batch may reuse the memory
        runs.append({"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
                     "first_batch": first if first is not None else float("nan"), "rows": rows, "batches": n,
                     "max_batch_rows": biggest})
        if runs[0]["rows"] != rows:
            raise SystemExit(f"row count changed between runs: {runs[0]['rows']} then {rows}")
    best = min(runs, key=lambda r: r["seconds"])
    return {"kind": kind, **best, "times": [r["seconds"] for r in runs],
            "first_batch_times": [r["first_batch"] for r in runs], "rss_before": rss_before,
            "rss_peak": _rss_peak_bytes(), "vm_hwm": _vm_hwm_bytes(), "pool_peak": pool.max_memory(),
            "pool_before": pool_before, "pool_held_by_result": 0, "result_nbytes": 0,
            "pool_backend": pool.backend_name, "schema": str(schema)}


def worker_fn(kind: str, path: str, base_file: str):
    """The function a worker times, built (imports, table open, planning) outside the timing."""
    if kind == "ours_slice":
        return _ours_slice_setup(path)
    if kind == "hudi_slice":
        return _hudi_slice_setup(path)
    if kind == "ours_table":
        from hudi_streaming import hoodie
        return lambda: hoodie.read_table(path)
    if kind == "hudi_table":
        import hudi
        return lambda: hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    if kind == "ours_ro":
        from hudi_streaming import hoodie
        return lambda: hoodie.read_table(path, read_optimized=True)
    if kind == "ours_ro_slice":
        return _ours_slice_setup(path, read_optimized=True)
    if kind == "pyarrow_ro":
        return lambda: pq.read_table(base_file)
    raise SystemExit(f"unknown worker kind {kind!r}")


def run_worker(kind: str, path: str, base_file: str, repeat: int) -> dict:
    if kind in STREAM_KINDS:
        return run_stream_worker(kind, path, repeat)
    if kind == "ours_phases":
        return run_phases(path, repeat)
    if kind == "ours_profile":
        return run_profile(path, repeat)
    fn = worker_fn(kind, path, base_file)
    pool = pa.default_memory_pool()
    rss_before, pool_before = _rss_now_bytes(), pool.max_memory()
    best, rows, times, cpu = _best_of(fn, repeat)
    out = fn()  # one more read, kept alive: what the result holds in the Arrow pool
    held = pa.total_allocated_bytes()
    return {"kind": kind, "seconds": best, "times": times, "cpu_seconds": cpu, "rows": rows, "rss_before": rss_before,
            "rss_peak": _rss_peak_bytes(), "vm_hwm": _vm_hwm_bytes(), "pool_peak": pool.max_memory(),
            "pool_before": pool_before,
            "pool_held_by_result": held, "result_nbytes": _nbytes(out), "pool_backend": pool.backend_name}


def _nbytes(out) -> int:
    return out.nbytes if hasattr(out, "nbytes") else sum(b.nbytes for b in out)


def run_phases(path: str, repeat: int) -> dict:
    """Our merged slice read with timers around the steps ``read_slice`` calls; the best run's split.

    The steps are found by name in ``hoodie.slice_reader`` (``scan_blocks``, ``_log_records``,
    ``decode_data_block``, ``_base_pieces``, ``merge_with_base``), ``hoodie.merge`` (``BaseMerge.piece`` and
    ``.tail``: the merge of a slice read in pieces) and ``hoodie.logfile.avro_arrow`` (``_decode_polars``); a name
    that is gone is reported, not fatal. The base file read is the time spent advancing ``_base_pieces`` or,
    without it, everything before the first ``scan_blocks`` call; where ``_read_ahead`` runs ``_base_pieces`` in a
    thread of its own (overlapping the rest), the base read is the time the read waits for its pieces, and the
    time ``_base_pieces`` took in that thread is shown beside it.
    """
    import hudi_streaming.hoodie.logfile.avro_arrow as avro_arrow
    import hudi_streaming.hoodie.merge as merge_module
    import hudi_streaming.hoodie.slice_reader as sr

    timers: dict[str, float] = {}
    counts: dict[str, int] = {}
    first_start: dict[str, float] = {}
    missing = []

    def add(key: str, seconds: float) -> None:
        timers[key] = timers.get(key, 0.0) + seconds
        counts[key] = counts.get(key, 0) + 1

    def wrap(owner, name: str, key: str, count_none: str | None = None) -> None:
        orig = getattr(owner, name, None)
        if orig is None:
            missing.append(f"{getattr(owner, '__module__', '')}.{owner.__name__}.{name}".lstrip("."))
            return

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            first_start.setdefault(key, t0)
            try:
                result = orig(*args, **kwargs)
            finally:
                add(key, time.perf_counter() - t0)
            if count_none is not None and result is None:
                counts[count_none] = counts.get(count_none, 0) + 1
            return result
        setattr(owner, name, timed)

    def wrap_generator(owner, name: str, key: str, optional: bool = False) -> None:
        """Time each step of the iterator a function returns (not the caller's work between its items). The
        function is called when the wrapper is, so what it starts at once (a read ahead) still starts then."""
        orig = getattr(owner, name, None)
        if orig is None:
            if not optional:
                missing.append(f"{owner.__name__}.{name}")
            return

        def steps(it):
            while True:
                t0 = time.perf_counter()
                try:
                    item = next(it)
                except StopIteration:
                    return
                finally:
                    add(key, time.perf_counter() - t0)
                yield item

        def timed(*args, **kwargs):
            return steps(iter(orig(*args, **kwargs)))
        setattr(owner, name, timed)

    merged = _ours_slice_setup(path)
    wrap(sr, "scan_blocks", "log_scan")
    wrap(sr, "_log_records", "log_records")
    wrap(sr, "decode_data_block", "log_decode")
    wrap(sr, "merge_with_base", "merge")
    wrap_generator(sr, "_base_pieces", "base_pieces")
    wrap_generator(sr, "_read_ahead", "base_wait", optional=True)
    base_merge = getattr(merge_module, "BaseMerge", None)
    if base_merge is not None:
        wrap(base_merge, "piece", "merge")
        wrap(base_merge, "tail", "merge")
    wrap(avro_arrow, "_decode_polars", "polars_decode", count_none="polars_fallback")
    best = None
    for _ in range(repeat):
        timers.clear()
        counts.clear()
        first_start.clear()
        t0 = time.perf_counter()
        out = merged()
        total = time.perf_counter() - t0
        rows = out.num_rows
        del out
        run = {"total": total, "rows": rows, **timers, **{f"n_{k}": v for k, v in counts.items()}}
        if "base_wait" in timers:
            run["base_read"] = timers["base_wait"]
        elif "base_pieces" in timers:
            run["base_read"] = timers["base_pieces"]
        elif "log_scan" in first_start:
            run["base_read"] = first_start["log_scan"] - t0
        if best is None or total < best["total"]:
            best = run
    best["missing_hooks"] = missing
    return {"kind": "ours_phases", **best}


def run_profile(path: str, top: int) -> dict:
    import cProfile
    import pstats

    fn = _ours_slice_setup(path)
    fn()  # warm-up (imports, lru caches)
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("cumulative").print_stats(top)
    return {"kind": "ours_profile", "text": buf.getvalue()}


# Workers are started through this small launcher. Linux carries a process's RSS high-water mark across
# fork/vfork + exec (``ru_maxrss`` of a child started directly by this big parent would start at the parent's
# peak); a child of the lean launcher starts from the launcher's ~10 MiB instead.
LAUNCHER = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"


def measure(kind: str, path: str, base_file: str, repeat: int) -> dict:
    cmd = [sys.executable, "-c", LAUNCHER, sys.executable, str(Path(__file__).resolve()), "--worker", kind,
           "--table-path", path, "--base-file", base_file, "--repeat", str(repeat)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"worker {kind} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------------

def _mb(b: float) -> str:
    return f"{b / 2**20:,.0f} MiB"


def _size(n: int) -> str:
    """1000000 -> 1M, 200000 -> 200k."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n % 1_000 == 0:
        return f"{n // 1_000}k"
    return f"{n:,}"


def _growth(r: dict) -> int:
    """Peak RSS growth: the worker's RSS high-water mark minus its RSS just before the first read."""
    return r["rss_peak"] - r["rss_before"]


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# (query, reader label, worker kind), in the order measured and printed
ROWS = [
    ("merged, slice", "ours     stream task: consume(snapshot split)", "ours_stream"),
    ("merged, slice", "ours     read_slice (batch API)", "ours_slice"),
    ("merged, slice", "hudi-rs  HudiFileGroupReader.read_file_slice", "hudi_slice"),
    ("merged, slice", "hudi-rs  read_file_slice_stream", "hudi_slice_stream"),
    ("merged, table", "ours     hoodie.read_table(url)", "ours_table"),
    ("merged, table", "hudi-rs  HudiTable.read(HudiReadOptions())", "hudi_table"),
    ("read-optimized", "ours     hoodie.read_table(url, read_optimized=True)", "ours_ro"),
    ("read-optimized", "ours     read_slice (read_optimized)", "ours_ro_slice"),
    ("read-optimized", "pyarrow  pq.read_table(base file)", "pyarrow_ro"),
]
MEASURED = [kind for _, _, kind in ROWS]
LABEL = {kind: label for _, label, kind in ROWS}


def _ratio(results: dict, ours: str, theirs: str, key: str = "seconds") -> float:
    """Ours rows/s / theirs rows/s (both read the same N rows: the inverse ratio of the times)."""
    return results[theirs][key] / results[ours][key]


def report(args, n: int, built: dict, results: dict[str, dict], phases: dict, hudi_version: str,
           load_at_start: float, first: bool) -> None:
    u = args.updates
    print()
    print(f"One MOR file slice: {n:,} base rows + {u:,} log updates ({args.blocks} Avro data blocks, one log "
          f"file); best of {args.repeat}")
    print(f"base parquet {built['base_size'] / 2**20:.1f} MiB ({args.compression}), log file "
          f"{built['log_size'] / 2**20:.1f} MiB; hudi-rs (hudi) {hudi_version}, pyarrow {pa.__version__}, "
          f"{os.cpu_count()} CPUs")
    load = os.getloadavg()
    print(f"load average at start {load_at_start:.1f}, at end {load[0]:.1f}"
          + (f" -- MORE THAN {os.cpu_count()} CPUs: other processes compete, timings are noisy"
             if max(load_at_start, load[0]) > (os.cpu_count() or 1) else ""))
    print()
    head = (f"{'query':<15} {'reader':<52} {'best s':>7} {'median':>7} {'CPU s':>6} {'rows/s':>11} "
            f"{'1st batch':>9} {'peak RSS':>10} {'RSS growth':>11} {'Arrow pool peak':>16}")
    print(head)
    print("-" * len(head))
    for query, label, kind in ROWS:
        r = results[kind]
        pool_peak = _mb(r["pool_peak"]) if kind.startswith(("ours", "pyarrow")) else "(not Arrow)"
        first_batch = f"{min(r['first_batch_times']):.3f}" if "first_batch_times" in r else "-"
        print(f"{query:<15} {label:<52} {r['seconds']:>7.3f} {float(np.median(r['times'])):>7.3f} "
              f"{r['cpu_seconds']:>6.2f} {r['rows'] / r['seconds']:>11,.0f} {first_batch:>9} "
              f"{_mb(r['rss_peak']):>10} {_mb(_growth(r)):>11} {pool_peak:>16}")
    print()
    odd = [k for k in MEASURED if abs(results[k]["rss_peak"] - results[k]["vm_hwm"]) > 0.1 * results[k]["vm_hwm"]]
    if odd:
        print(f"WARNING: ru_maxrss and VmHWM disagree for {odd}: " + ", ".join(
            f"{_mb(results[k]['rss_peak'])} vs {_mb(results[k]['vm_hwm'])}" for k in odd))
    stream, hstream = results["ours_stream"], results["hudi_slice_stream"]
    print("best s = best wall time (rows/s uses it); median = median wall time of the runs; "
          "CPU s = CPU time of the best run, all threads; 1st batch = best time from making the batch iterator "
          "to holding its first batch; "
          "peak RSS = ru_maxrss of the worker process (agrees with its VmHWM); RSS growth = peak RSS - RSS just "
          "before the first read (after imports, opening the table, planning); Arrow pool peak = "
          f"pa.default_memory_pool().max_memory() ({results['ours_slice']['pool_backend']}). The merged result "
          f"of read_slice is {_mb(results['ours_slice']['result_nbytes'])}; the stream task yielded "
          f"{stream['batches']} batches of <= {stream['max_batch_rows']:,} rows (miniBatchSize {MINI_BATCH:,}) "
          f"and kept none, hudi-rs's stream {hstream['batches']} batches of <= {hstream['max_batch_rows']:,} rows "
          f"(batch_size {MINI_BATCH:,}).")

    p = phases
    total = p["total"]
    known = ["log_scan", "log_records", "merge"]
    missing = p.get("missing_hooks") or []
    decode = p.get("log_decode", 0.0)
    assemble = p.get("log_records", 0.0) - decode
    base_read = p.get("base_read", 0.0)
    other = total - base_read - sum(p.get(k, 0.0) for k in known)
    nblocks = p.get("n_log_decode", 0)
    fallback = p.get("n_polars_fallback", 0)
    npolars = p.get("n_polars_decode", 0)
    base_how = (f"waited for: _read_ahead x{p['n_base_wait']}; {p.get('base_pieces', 0.0):.3f} s in its thread"
                if "n_base_wait" in p else f"_base_pieces x{p['n_base_pieces']}" if "n_base_pieces" in p
                else "everything before scan_blocks")
    print()
    print(f"Time split of our merged slice read (read_slice, best of {args.repeat}: {total:.3f} s; a separate run "
          f"with timers around the steps):")
    parts = [
        (f"base parquet read + align ({base_how})", base_read),
        ("log files read + block framing (scan_blocks)", p.get("log_scan", 0.0)),
        (f"log decode Avro -> Arrow (decode_data_block x{nblocks}; polars fast path {npolars - fallback}/"
         f"{npolars}{', FELL BACK to fastavro' if fallback else ''})", decode),
        ("log assembly: align, concat, keys, flags (_log_records - decode)", assemble),
        (f"merge (merge_with_base, BaseMerge.piece/tail: x{p.get('n_merge', 0)})", p.get("merge", 0.0)),
        ("other: base keys/ordering arrays, glue (remainder)", other),
    ]
    for label, sec in parts:
        print(f"  {label:<92} {sec:>7.3f} s {100 * sec / total:>5.1f} %")
    if missing:
        print(f"  (hooks not found, phases incomplete: {', '.join(missing)})")

    where = "" if first else " (the targets apply at the first size; shown for comparison)"
    print()
    print(f"Merged slice, ours / hudi-rs read_file_slice at {_size(n)} + {_size(u)}{where}:")
    hudi = results["hudi_slice"]
    for kind in ("ours_stream", "ours_slice"):
        speed = _ratio(results, kind, "hudi_slice")
        growth = _growth(results[kind]) / _growth(hudi)
        speed_verdict = f": {_verdict(speed >= SLICE_SPEED_TARGET)}" if first else ""
        growth_verdict = f": {_verdict(growth <= GROWTH_TARGET)}" if first else ""
        print(f"  {LABEL[kind].split(None, 1)[1]:<46} rows/s {speed:>5.2f}x (target >= {SLICE_SPEED_TARGET:.1f}x"
              f"{speed_verdict}; by CPU time {_ratio(results, kind, 'hudi_slice', 'cpu_seconds'):.2f}x);  "
              f"peak RSS growth {growth:>5.2f}x (target <= {GROWTH_TARGET:.2f}x{growth_verdict}; "
              f"{_mb(_growth(results[kind]))} vs {_mb(_growth(hudi))})")
    print()
    print("Other ratios, ours rows/s / theirs rows/s (wall time: the target; CPU time: steadier on a busy machine):")
    for label, ours, theirs, target in [
        ("merged, table level: ours read_table / hudi-rs HudiTable.read", "ours_table", "hudi_table",
         MERGED_TARGET),
        ("read-optimized: ours read_table(read_optimized) / pq.read_table", "ours_ro", "pyarrow_ro",
         READ_OPTIMIZED_TARGET),
    ]:
        value = _ratio(results, ours, theirs)
        print(f"  {label:<68} {value:>5.2f}x  (target >= {target:.1f}x: {_verdict(value >= target)});  by CPU time "
              f"{_ratio(results, ours, theirs, 'cpu_seconds'):.2f}x")


def final_report(args, sizes: list[int], runs: dict[int, dict]) -> None:
    """Growth from the first size to the last, and the summary of every target."""
    lo, hi = sizes[0], sizes[-1]
    first, last = runs[lo]["results"], runs[hi]["results"]
    u = _size(args.updates)
    scaling = {}
    if hi != lo:
        print()
        print(f"Peak RSS growth from {_size(lo)} to {_size(hi)} base rows ({u} updates at both sizes):")
        for kind in ("ours_stream", "ours_slice", "hudi_slice", "hudi_slice_stream"):
            a, b = _growth(first[kind]), _growth(last[kind])
            scaling[kind] = b / a
            note = {"ours_stream": f"target < {SCALING_TARGET:.2f}x: {_verdict(scaling[kind] < SCALING_TARGET)}",
                    "ours_slice": "returns the whole slice: grows with it",
                    "hudi_slice": "for comparison", "hudi_slice_stream": "for comparison"}[kind]
            print(f"  {LABEL[kind]:<52} {_mb(a):>10} -> {_mb(b):>10}  {scaling[kind]:>5.2f}x  ({note})")

    def row(what: str, target: str, value: float | None, ok: bool | None) -> None:
        shown = f"{value:.2f}x" if value is not None else "-"
        verdict = _verdict(ok) if ok is not None else "n/a"
        print(f"  {what:<78} {target:>8} {shown:>9}  {verdict}")

    at = f"{_size(lo)} + {u}"
    hudi = first["hudi_slice"]
    print()
    print(f"Summary (rows/s by wall time, best of {args.repeat}; ratios at {at} unless named):")
    print(f"  {'target':<78} {'wanted':>8} {'measured':>9}  verdict")
    for kind, name in (("ours_stream", "stream task (consume)"), ("ours_slice", "batch API (read_slice)")):
        g = _growth(first[kind]) / _growth(hudi)
        row(f"{name}: peak RSS growth / hudi-rs read_file_slice's", f"<= {GROWTH_TARGET:.2f}x", g,
            g <= GROWTH_TARGET)
        v = _ratio(first, kind, "hudi_slice")
        row(f"{name}: rows/s / hudi-rs read_file_slice's", f">= {SLICE_SPEED_TARGET:.1f}x", v,
            v >= SLICE_SPEED_TARGET)
    if "ours_stream" in scaling:
        row(f"stream task: peak RSS growth {_size(hi)} / {_size(lo)} (hudi-rs read_file_slice's: "
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
    ttfb = ", ".join(f"{_size(n)} {min(runs[n]['results']['ours_stream']['first_batch_times']):.3f} s "
                     f"(of {runs[n]['results']['ours_stream']['seconds']:.3f} s)" for n in sizes)
    print(f"  stream task time to first batch: {ttfb}")


def table_dir(args, n: int, parser: argparse.ArgumentParser) -> tuple[Path, bool]:
    """Where the table of ``n`` base rows goes under ``--keep DIR``, and whether one is there to reuse."""
    root = Path(args.keep).resolve() / f"rows_{n}"
    if root.exists() and any(root.iterdir()):
        params = kept_table_params(root)
        wanted = (n, args.updates, args.blocks, args.compression.upper())
        if params is None:
            parser.error(f"--keep: {root} exists, is not empty and holds no table of this script")
        if params != wanted:
            parser.error(f"--keep: {root} holds a table of (rows, updates, blocks, codec) = {params}, "
                         f"not {wanted}; use another directory")
        return root, True
    return root, False


def run_size(args, n: int, hudi_version: str, parser: argparse.ArgumentParser) -> dict:
    """Build (or reuse), verify and measure the table of ``n`` base rows; print its report."""
    load_at_start = os.getloadavg()[0]
    cleanup = None
    if args.keep:
        root, reuse = table_dir(args, n, parser)
        root.mkdir(parents=True, exist_ok=True)
    else:
        reuse = False
        cleanup = tempfile.mkdtemp(prefix="bench_slice_read_")
        root = Path(cleanup) / TABLE_NAME
        root.mkdir()
    print(f"\n=== {n:,} base rows + {args.updates:,} log updates ===", flush=True)
    try:
        path = str(root)
        t0 = time.perf_counter()
        built = generate(n, args.updates)
        t_gen = time.perf_counter() - t0
        if reuse:
            print(f"reusing the table in {path} (rows generated again in memory for the checks: {t_gen:.1f} s)")
        else:
            print(f"building the table in {path} ...", flush=True)
            t0 = time.perf_counter()
            write_table(root, built, args.blocks, args.compression)
            print(f"  generation {t_gen:.1f} s, writing {time.perf_counter() - t0:.1f} s (not measured)")
        built["base_size"] = (root / built["base_name"]).stat().st_size
        built["log_size"] = (root / built["log_name"]).stat().st_size
        print("verifying: ours (batch API, streaming path) == hudi-rs == expected state (merged), ours == pyarrow "
              "== base (read-optimized) ...", flush=True)
        t0 = time.perf_counter()
        try:
            verify(path, built)
        except Mismatch as e:
            raise SystemExit(f"VERIFICATION FAILED, nothing timed: {e}\n(table kept at {path})") from None
        print(f"  ok: {n:,} rows, all columns equal; {args.updates:,} updated keys carry deltacommit 2's "
              f"values in both readers ({time.perf_counter() - t0:.1f} s)")
        del built["base"], built["updates"], built["expected"], built["updated_keys"]
        base_file = str(root / built["base_name"])
        results = {}
        for kind in MEASURED:
            print(f"measuring {kind} ...", flush=True)
            results[kind] = measure(kind, path, base_file, args.repeat)
            if results[kind]["rows"] != n:
                raise SystemExit(f"{kind} returned {results[kind]['rows']:,} rows, expected {n:,}")
        print("measuring ours_phases ...", flush=True)
        phases = measure("ours_phases", path, base_file, args.repeat)
        report(args, n, built, results, phases, hudi_version, load_at_start, first=n == args.sizes[0])
        if args.profile:
            prof = measure("ours_profile", path, base_file, args.profile)
            print()
            print(f"cProfile of one merged read_slice (ours), top {args.profile} by cumulative time:")
            print(prof["text"])
        if args.keep:
            print(f"\ntable kept in {path}")
        return {"results": results, "phases": phases}
    except SystemExit as e:
        if cleanup and isinstance(e.code, str) and "table kept" in e.code:
            cleanup = None  # keep the table of a failed verification for inspection
        raise
    finally:
        if cleanup:
            shutil.rmtree(cleanup, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, metavar="N1,N2",
                        help="base file rows of each table, comma-separated; the first is where the ratio targets "
                             "apply, first to last is the memory scaling (default 1000000,4000000)")
    parser.add_argument("--rows", type=int, help="one size only: the same as --sizes N")
    parser.add_argument("--updates", type=int, default=200_000,
                        help="log updates of distinct existing keys (the same at every size)")
    parser.add_argument("--blocks", type=int, default=4, help="Avro data blocks the updates are split into")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is reported")
    parser.add_argument("--keep", metavar="DIR",
                        help="build each size's table in DIR/rows_<N> and keep it; a DIR/rows_<N> holding a table "
                             "this script built with the same --updates/--blocks/--compression is reused as it is")
    parser.add_argument("--compression", default="gzip", help="base file codec (Hudi's default: gzip)")
    parser.add_argument("--profile", type=int, nargs="?", const=25, default=0, metavar="N",
                        help="also cProfile one merged slice read of ours, top N lines by cumtime (default 25)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--table-path", help=argparse.SUPPRESS)
    parser.add_argument("--base-file", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        print(json.dumps(run_worker(args.worker, args.table_path, args.base_file, args.repeat)), flush=True)
        # Skip interpreter finalization: after pyarrow has read parquet through an fsspec (Python) file object,
        # exiting normally aborts now and then ("terminate called without an active exception", SIGABRT) --
        # a pyarrow/fsspec shutdown problem, more frequent with polars loaded, not a measurement failure.
        sys.stderr.flush()
        os._exit(0)

    if args.rows is not None and args.sizes is not None:
        parser.error("give --sizes or --rows, not both")
    try:
        args.sizes = ([args.rows] if args.rows is not None
                      else [int(x) for x in args.sizes.split(",")] if args.sizes else list(DEFAULT_SIZES))
    except ValueError:
        parser.error(f"--sizes: comma-separated row counts, not {args.sizes!r}")
    if (any(n < 1 or args.updates > n for n in args.sizes) or len(set(args.sizes)) != len(args.sizes)
            or args.updates < 0 or args.blocks < 1 or args.repeat < 1):
        parser.error("need distinct sizes >= 1, 0 <= updates <= every size, blocks >= 1, repeat >= 1")
    if args.keep:
        for n in args.sizes:  # refuse a wrong --keep DIR before spending minutes on the first size
            table_dir(args, n, parser)
    import hudi

    runs = {n: run_size(args, n, hudi.__version__, parser) for n in args.sizes}
    final_report(args, args.sizes, runs)


if __name__ == "__main__":
    main()
