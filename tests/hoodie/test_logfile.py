"""The log file codec (``hoodie.logfile``: format, reader, blocks, writer) on real Hudi files and under damage.

Oracles independent of the code under test: fastavro decoding each record with the block's own SCHEMA header,
the spec's ``HoodieDeleteRecordList.avsc``, pyarrow reading parquet directly, the SQL that generated the
fixtures, and the bytes Hudi wrote (every block must re-encode to exactly them).
"""
from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import logging
import posixpath
import re
import shutil
import struct
import zipfile
import zlib
from functools import lru_cache
from pathlib import Path

import fastavro
import fastavro.schema
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, LOG_FILES, TABLE_ZIPS

from hudi_streaming import read_table
from hudi_streaming.errors import CorruptFileError, HudiStreamingError, OptionError, UnsupportedTableError
from hudi_streaming.hoodie import HudiTable
from hudi_streaming.hoodie.fs_view import FileSystemView, parse_log_file
from hudi_streaming.hoodie.logfile.blocks import DeleteRecords, decode_data_block, decode_delete_block, read_hfile_cells
from hudi_streaming.hoodie.logfile.format import (
    DELETE_RECORD_LIST_SCHEMA,
    MAGIC,
    BlockType,
    HeaderKey,
    LogBlock,
    Ordering,
    log_file_sort_key,
    make_log_file_name,
    parse_log_file_name,
)
from hudi_streaming.hoodie.logfile.reader import iter_blocks, read_log_file
from hudi_streaming.hoodie.logfile.writer import (
    COMMIT_TIME_DELETE,
    encode_avro_data_block,
    encode_block,
    encode_delete_block,
    encode_parquet_data_block,
    encode_rollback_block,
)
from hudi_streaming.hoodie.storage import FileInfo, Storage

SPEC = FIXTURES / "avro"
INSTANT = re.compile(r"^\d{17}$")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")


def _is_log(name: str) -> bool:
    return ".log." in name and not name.endswith(".crc")


def _zips_with_logs() -> list[str]:
    names = []
    for z in TABLE_ZIPS:
        with zipfile.ZipFile(z) as archive:
            if any(_is_log(Path(n).name) and "__MACOSX" not in n for n in archive.namelist()):
                names.append(z.stem)
    return names


LOG_ZIPS = _zips_with_logs()


def _table_log_files(table: Path) -> list[Path]:
    return sorted(p for p in table.rglob("*") if p.is_file() and _is_log(p.name))


def _fixture_file(kind: str) -> Path:
    (path,) = [p for p in LOG_FILES if p.parent.name == kind]
    return path


# --- oracles ---------------------------------------------------------------------------------------------

def _avro_records(block: LogBlock) -> list[dict]:
    """The records of an Avro data block by hand: content version 3, count, then int32 length + record."""
    content = bytes(block.content)
    version, count = struct.unpack_from(">ii", content)
    assert version == 3
    schema = fastavro.parse_schema(json.loads(block.schema_json))
    records, pos = [], 8
    for _ in range(count):
        (length,) = I32.unpack_from(content, pos)
        buf = io.BytesIO(content[pos + 4:pos + 4 + length])
        records.append(fastavro.schemaless_reader(buf, schema, None))
        assert buf.tell() == length, "record does not fill its length"
        pos += 4 + length
    assert pos == len(content)
    return records


def _plain_fields(schema_json: str) -> list[str]:
    """Fields whose Avro type is a primitive without logical type, possibly nullable: same value in Arrow."""
    plain = {"string", "int", "long", "float", "double", "boolean", "bytes"}

    def is_plain(t) -> bool:
        if isinstance(t, list):
            non_null = [b for b in t if b != "null"]
            return len(non_null) == 1 and is_plain(non_null[0])
        return isinstance(t, str) and t in plain

    return [f["name"] for f in json.loads(schema_json)["fields"] if is_plain(f["type"])]


@lru_cache(maxsize=1)
def _spec_delete_schema():
    return fastavro.parse_schema(json.loads((SPEC / "HoodieDeleteRecordList.avsc").read_text()))


def _spec_deletes(block: LogBlock) -> list[dict]:
    """Delete records decoded with the spec's own .avsc (named union branches kept)."""
    content = bytes(block.content)
    version, length = struct.unpack_from(">ii", content)
    assert (version, length) == (3, len(content) - 8)
    buf = io.BytesIO(content[8:])
    records = fastavro.schemaless_reader(buf, _spec_delete_schema(), None, return_record_name=True)
    assert buf.tell() == length
    return records["deleteRecordList"]


# --- per-block checks, shared by every fixture file --------------------------------------------------------

def _check_log_file(path: Path) -> list[LogBlock]:
    """Frame, re-encode and decode every block of one real log file; return its blocks."""
    data = path.read_bytes()
    blocks = list(iter_blocks(data, str(path)))
    assert blocks, f"{path}: no blocks"
    pos = 0
    for block in blocks:
        assert block.offset == pos and block.path == str(path)
        pos += block.size
        if not block.is_corrupt:
            _check_block(block, data)
    assert pos == len(data), "blocks do not tile the file"
    return blocks


def _check_block(block: LogBlock, data: bytes) -> None:
    on_disk = data[block.offset:block.offset + block.size]
    assert encode_block(block.type, block.header, block.content, block.footer) == on_disk
    assert INSTANT.match(block.instant_time)
    assert block.footer == {}
    if block.type is BlockType.AVRO_DATA:
        _check_avro_block(block)
    elif block.type is BlockType.PARQUET_DATA:
        _check_parquet_block(block)
    elif block.type is BlockType.HFILE_DATA:
        _check_hfile_block(block)
    elif block.type is BlockType.DELETE:
        _check_delete_block(block)
    elif block.type is BlockType.COMMAND:
        assert block.is_rollback and INSTANT.match(block.target_instant_time) and len(block.content) == 0
        assert encode_rollback_block(block.instant_time, block.target_instant_time) == on_disk
    else:
        pytest.fail(f"unexpected block type {block.type!r} in the fixtures")


def _check_avro_block(block: LogBlock) -> None:
    expected = _avro_records(block)
    table = decode_data_block(block)
    assert block.is_data and table.num_rows == len(expected)
    plain = _plain_fields(block.schema_json)
    for name in plain:
        assert table.column(name).to_pylist() == [r[name] for r in expected], name
    projected = decode_data_block(block, columns=[plain[-1], "no_such_column", plain[0]])
    assert projected.column_names == [plain[-1], plain[0]]
    assert projected.to_pylist() == table.select([plain[-1], plain[0]]).to_pylist()
    # The writer encodes the same records to the same bytes Hudi wrote.
    rewritten = encode_avro_data_block(expected, block.schema_json, block.instant_time)
    (again,) = iter_blocks(rewritten, "rewritten")
    assert bytes(again.content) == bytes(block.content)


def _check_parquet_block(block: LogBlock) -> None:
    expected = pq.read_table(pa.BufferReader(bytes(block.content)))
    table = decode_data_block(block)
    assert block.is_data and table.num_rows > 0 and table.equals(expected)
    assert table.column_names == [f["name"] for f in json.loads(block.schema_json)["fields"]]
    projected = decode_data_block(block, columns=["_hoodie_record_key", "no_such_column"])
    assert projected.column_names == ["_hoodie_record_key"]


def _check_hfile_block(block: LogBlock) -> None:
    cells = read_hfile_cells(block)
    keys = [key for key, _ in cells]
    assert cells and keys == sorted(keys) and len(set(keys)) == len(keys), "HFile cells are key-sorted, unique"
    schema = fastavro.parse_schema(json.loads(block.schema_json))
    records = []
    for key, value in cells:
        buf = io.BytesIO(bytes(value))
        record = fastavro.schemaless_reader(buf, schema, None)
        assert buf.tell() == len(value)
        assert record.get("key") in ("", key), "writers blank the 'key' field, or leave it equal to the row key"
        records.append(record)
    if "/.hoodie/metadata/" in block.path:
        return  # metadata-table payloads (unions of wrapper records) are not a data-table concern
    table = decode_data_block(block)
    assert table.column("key").to_pylist() == keys, "the blanked key is refilled from the HFile row keys"
    for name in _plain_fields(block.schema_json):
        if name != "key":
            assert table.column(name).to_pylist() == [r[name] for r in records], name


def _check_delete_block(block: LogBlock) -> None:
    deletes = decode_delete_block(block)
    spec = _spec_deletes(block)
    assert deletes.record_keys == [d["recordKey"] for d in spec]
    assert deletes.partition_paths == [d["partitionPath"] for d in spec]
    kinds = {"IntWrapper": "int", "LongWrapper": "long", "DoubleWrapper": "double", "StringWrapper": "string"}
    expected = [(kinds[d["orderingVal"][0].rsplit(".", 1)[1]], d["orderingVal"][1]["value"]) for d in spec]
    assert list(zip(deletes.ordering_kinds, deletes.ordering_values)) == expected
    assert deletes.ordering_is_commit_time == [kind == "int" and value == 0 for kind, value in expected]
    # Re-encoding with the same wrappers reproduces Hudi's bytes.
    orderings = [Ordering(k, v) for k, v in zip(deletes.ordering_kinds, deletes.ordering_values)]
    rewritten = encode_delete_block(deletes.record_keys, deletes.partition_paths, orderings, block.instant_time)
    (again,) = iter_blocks(rewritten, "rewritten")
    assert bytes(again.content) == bytes(block.content)


# --- 1. every real block decodes -------------------------------------------------------------------------

def test_fixture_avro_data_file():
    (block,) = _check_log_file(_fixture_file("valid_log_avro_data"))
    assert block.type is BlockType.AVRO_DATA and block.instant_time == "20250316025828811"
    (row,) = decode_data_block(block).to_pylist()
    assert (row["_hoodie_record_key"], row["rider"], row["ts"], row["fare"]) == \
        ("334e26e9-8355-45cc-97c6-c31daf0df330", "rider-A", 1695159649088, 29.1)


def test_fixture_parquet_data_file():
    (block,) = _check_log_file(_fixture_file("valid_log_parquet_data"))
    assert block.type is BlockType.PARQUET_DATA and block.instant_time == "20250113230424191"
    assert bytes(block.content[:4]) == bytes(block.content[-4:]) == b"PAR1"
    (row,) = decode_data_block(block).to_pylist()
    assert (row["uuid"], row["rider"], row["_hoodie_commit_time"]) == \
        ("334e26e9-8355-45cc-97c6-c31daf0df330", "rider-A", "20250113230424191")


def test_fixture_delete_file():
    """datagen.sql: DELETE ... WHERE rider in ('rider-A', 'rider-C', 'rider-D'), all in san_francisco."""
    (block,) = _check_log_file(_fixture_file("valid_log_delete"))
    assert block.type is BlockType.DELETE and block.instant_time == "20250618054714114"
    deletes = decode_delete_block(block)
    assert sorted(deletes.record_keys) == sorted(["334e26e9-8355-45cc-97c6-c31daf0df330",
                                                  "e96c4396-3fad-413a-a942-4cb36106d721",
                                                  "9909a8b1-2d15-4d3d-8ec9-efc48c536a00"])
    assert deletes.partition_paths == ["city=san_francisco"] * 3
    # Spark SQL DELETE writes IntWrapper(0): the commit-time sentinel, not a real ordering value.
    assert deletes.ordering_kinds == ["int"] * 3 and deletes.ordering_values == [0] * 3
    assert deletes.ordering_is_commit_time == [True] * 3


def test_fixture_rollback_file_reproduced_byte_for_byte():
    path = _fixture_file("valid_log_rollback")
    data = path.read_bytes()
    (block,) = _check_log_file(path)
    assert len(data) == 105 and block.size == 105
    assert block.is_rollback and not block.is_data
    assert (block.instant_time, block.target_instant_time) == ("20250126040936578", "20250126040826878")
    assert encode_rollback_block("20250126040936578", "20250126040826878") == data


@pytest.mark.parametrize("name", LOG_ZIPS)
def test_every_block_of_every_table_log_file(name, unzip_fixture):
    fx = unzip_fixture(name)
    files = _table_log_files(fx.table)
    blocks = [b for path in files for b in _check_log_file(path)]
    corrupt = [b for b in blocks if b.is_corrupt]
    assert len(corrupt) == (1 if name == "mor_avro__table_corrupt_tail_block" else 0)
    assert any(not b.is_corrupt for b in blocks)


def test_corrupt_tail_block(unzip_fixture, caplog):
    fx = unzip_fixture("mor_avro__table_corrupt_tail_block")
    (path,) = [p for p in _table_log_files(fx.table) if "20260607061228578" in p.name]
    with caplog.at_level(logging.WARNING, logger="hudi_streaming.hoodie.logfile.reader"):
        good, corrupt = iter_blocks(path.read_bytes(), str(path))
    assert [r["key"] for r in decode_data_block(good).to_pylist()] == ["k2"]
    assert corrupt.is_corrupt and (corrupt.offset, corrupt.size) == (884, 18)
    assert corrupt.offset + corrupt.size == path.stat().st_size
    assert corrupt.header == {} and bytes(corrupt.content[:6]) == MAGIC
    (warning,) = [r for r in caplog.records if r.name == "hudi_streaming.hoodie.logfile.reader"]
    assert str(path) in warning.getMessage() and "884" in warning.getMessage()


@pytest.mark.parametrize("kind,values,python_type", [
    ("int", [4, 3], int),
    ("long", [4000, 3000], int),
    ("double", [6.0, 4.5], float),
    ("string", ["ord_4", "ord_3"], str),
])
def test_delete_ordering_values_are_typed(kind, values, python_type, unzip_fixture):
    """Tables keyed ``id`` with ordering field ``ts`` (int, bigint, double, string); ids 3 and 4 deleted."""
    fx = unzip_fixture(f"mor_avro__table_delete_ord_{kind}")
    (path,) = _table_log_files(fx.table)
    (block,) = _check_log_file(path)
    deletes = decode_delete_block(block)
    assert deletes.record_keys == ["4", "3"] and deletes.partition_paths == ["", ""]
    assert deletes.ordering_kinds == [kind, kind] and deletes.ordering_values == values
    assert all(type(v) is python_type for v in deletes.ordering_values)
    assert deletes.ordering_is_commit_time == [False, False]
    gold = pq.read_table(fx.root / "gold_data").to_pylist()
    assert sorted(r["id"] for r in gold) == [1, 2]  # the deleted keys are gone ...
    assert all(type(r["ts"]) is python_type for r in gold)  # ... and ordering values have the column's type


def test_hfile_block_of_a_data_table(unzip_fixture):
    fx = unzip_fixture("mor_avro__table_hfile_log_block")
    (path,) = _table_log_files(fx.table)
    (block,) = _check_log_file(path)
    assert block.type is BlockType.HFILE_DATA and block.is_data
    rows = decode_data_block(block, columns=["key", "ts", "value", "num", "_hoodie_record_key"]).to_pylist()
    assert rows == [{"key": "k1", "ts": 100, "value": "v1_upd", "num": 11, "_hoodie_record_key": "k1"},
                    {"key": "k2", "ts": 100, "value": "v1_upd", "num": 11, "_hoodie_record_key": "k2"}]
    schema = fastavro.parse_schema(json.loads(block.schema_json))
    stored = [fastavro.schemaless_reader(io.BytesIO(bytes(v)), schema, None) for _, v in read_hfile_cells(block)]
    assert [r["key"] for r in stored] == ["", ""]  # what Hudi stored: the key field blanked


def test_delete_schema_is_the_spec_schema():
    spec = json.loads((SPEC / "HoodieDeleteRecordList.avsc").read_text())
    canonical = fastavro.schema.to_parsing_canonical_form
    assert canonical(fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)) == canonical(fastavro.parse_schema(spec))


# --- 2. writing --------------------------------------------------------------------------------------------

SYNTHETIC_SCHEMA = json.dumps({"type": "record", "name": "r", "namespace": "t", "fields": [
    {"name": "_hoodie_record_key", "type": ["null", "string"], "default": None},
    {"name": "id", "type": "long"},
    {"name": "name", "type": ["null", "string"], "default": None},
    {"name": "n", "type": ["null", "int"], "default": None},
    {"name": "x", "type": "double"},
    {"name": "flag", "type": "boolean"},
    {"name": "raw", "type": ["null", "bytes"], "default": None},
]})
SYNTHETIC_ROWS = [
    {"_hoodie_record_key": "a", "id": 1, "name": "α", "n": 7, "x": 1.5, "flag": True, "raw": b"\x00#HUDI"},
    {"_hoodie_record_key": "b", "id": -(2**63), "name": None, "n": None, "x": -0.0, "flag": False, "raw": None},
    {"_hoodie_record_key": "c", "id": 2**63 - 1, "name": "", "n": -(2**31), "x": 1e300, "flag": True, "raw": b""},
]


def test_avro_data_block_round_trip():
    extra = {HeaderKey.COMPACTED_BLOCK_TIMES: "20231231000000001,20231231000000002"}
    data = encode_avro_data_block(SYNTHETIC_ROWS, SYNTHETIC_SCHEMA, "20240101000000001", extra_header=extra)
    (block,) = iter_blocks(data, "mem")
    assert block.type is BlockType.AVRO_DATA and block.size == len(data)
    assert block.header == {HeaderKey.INSTANT_TIME: "20240101000000001", HeaderKey.SCHEMA: SYNTHETIC_SCHEMA, **extra}
    assert list(block.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA, HeaderKey.COMPACTED_BLOCK_TIMES]
    assert _avro_records(block) == SYNTHETIC_ROWS
    assert decode_data_block(block).to_pylist() == SYNTHETIC_ROWS
    assert decode_data_block(block, columns=["x", "id"]).to_pylist() == [{"x": r["x"], "id": r["id"]}
                                                                         for r in SYNTHETIC_ROWS]


def test_avro_data_block_content_version_1_has_no_count():
    """Old writers (content version 1) wrote no record count: records run to the end of the content."""
    (v3,) = iter_blocks(encode_avro_data_block(SYNTHETIC_ROWS, SYNTHETIC_SCHEMA, "20240101000000001"), "mem")
    content = I32.pack(1) + bytes(v3.content[8:])
    (v1,) = iter_blocks(encode_block(BlockType.AVRO_DATA, v3.header, content), "mem")
    assert decode_data_block(v1).to_pylist() == SYNTHETIC_ROWS


def test_parquet_data_block_round_trip():
    table = pa.Table.from_pylist(SYNTHETIC_ROWS, schema=pa.schema([
        ("_hoodie_record_key", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("n", pa.int32()),
        ("x", pa.float64()), ("flag", pa.bool_()), ("raw", pa.binary())]))
    (block,) = iter_blocks(encode_parquet_data_block(table, SYNTHETIC_SCHEMA, "20240101000000002"), "mem")
    assert block.type is BlockType.PARQUET_DATA and block.schema_json == SYNTHETIC_SCHEMA
    assert decode_data_block(block).to_pylist() == SYNTHETIC_ROWS
    metadata = pq.ParquetFile(pa.BufferReader(bytes(block.content))).metadata
    assert metadata.metadata[b"parquet.avro.schema"] == SYNTHETIC_SCHEMA.encode()
    assert metadata.row_group(0).column(0).compression == "GZIP"


def test_delete_block_round_trip_of_every_wrapper():
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc)
    cases = [  # (value given to the writer, kind read back, value read back, commit-time sentinel?)
        (COMMIT_TIME_DELETE, "int", 0, True),
        (None, None, None, True),
        (True, "boolean", True, False),
        (5, "long", 5, False),
        (0, "long", 0, False),  # a real long 0 is not the sentinel: only IntWrapper(0) is
        (Ordering("int", -7), "int", -7, False),
        (2.5, "double", 2.5, False),
        (Ordering("float", 1.5), "float", 1.5, False),
        ("z", "string", "z", False),
        (b"\x00\xff", "bytes", b"\x00\xff", False),
        (decimal.Decimal("-12.5"), "decimal", decimal.Decimal("-12.500000000000000"), False),
        (dt.date(2024, 2, 29), "date", dt.date(2024, 2, 29), False),
        (when, "timestamp_micros", when, False),
        (when.replace(tzinfo=None), "timestamp_micros", when, False),  # naive = UTC
        (dt.time(23, 59, 59, 999999), "time_micros", dt.time(23, 59, 59, 999999), False),
        ((1, "a"), "array", (1, "a"), False),
    ]
    keys = [f"k{i}" for i in range(len(cases))]
    partitions = [None if i % 2 else f"p={i}" for i in range(len(cases))]
    data = encode_delete_block(keys, partitions, [c[0] for c in cases], "20240101000000003")
    (block,) = iter_blocks(data, "mem")
    assert block.header == {HeaderKey.INSTANT_TIME: "20240101000000003"}
    deletes = decode_delete_block(block)
    assert isinstance(deletes, DeleteRecords) and len(deletes) == len(cases)
    assert deletes.record_keys == keys and deletes.partition_paths == partitions
    assert deletes.ordering_kinds == [c[1] for c in cases]
    assert deletes.ordering_values == [c[2] for c in cases]
    assert [type(v) for v in deletes.ordering_values] == [type(c[2]) for c in cases]
    assert deletes.ordering_is_commit_time == [c[3] for c in cases]
    spec = _spec_deletes(block)  # the spec schema reads our bytes with the same wrapper names
    assert [d["orderingVal"] and d["orderingVal"][0].rsplit(".", 1)[1] for d in spec][:4] == \
        ["IntWrapper", None, "BooleanWrapper", "LongWrapper"]


def test_empty_delete_block_round_trip():
    (block,) = iter_blocks(encode_delete_block([], [], [], "20240101000000004"), "mem")
    assert bytes(block.content) == I32.pack(3) + I32.pack(1) + b"\x00"  # an empty Avro array is one 0 byte
    assert decode_delete_block(block).record_keys == []


@pytest.mark.parametrize("value,error", [
    (object(), "no Hudi ordering value wrapper for object"),
    (Ordering("int", 2**31), "does not fit IntWrapper"),
    (2**63, "does not fit LongWrapper"),
    (decimal.Decimal("1e-16"), "does not fit DecimalWrapper"),  # Hudi's setScale(15) refuses to round
    (decimal.Decimal("1e15"), "does not fit DecimalWrapper"),  # 16 integer digits do not fit decimal(30, 15)
])
def test_delete_block_rejects_unwrappable_values(value, error):
    with pytest.raises(OptionError, match=error):
        encode_delete_block(["k"], [None], [value], "20240101000000005")


def test_writer_refuses_bad_calls():
    with pytest.raises(ValueError):
        encode_delete_block(["a", "b"], [None], [None, None], "20240101000000005")
    with pytest.raises(ValueError):
        encode_block(BlockType.CORRUPT, {}, b"")
    with pytest.raises(ValueError):
        Ordering("int64", 1)


# --- 3. reading damaged and odd files ------------------------------------------------------------------------

def _framed(inner: bytes) -> bytes:
    """A block around ``inner`` (version .. footer) whose framing checks out, whatever ``inner`` says."""
    size = len(inner) + 8
    return MAGIC + I64.pack(size) + inner + I64.pack(size + 6)


def _inner(version=1, block_type=0, header=b"\x00\x00\x00\x00", content_length=0, content=b"",
           footer=b"\x00\x00\x00\x00") -> bytes:
    return I32.pack(version) + I32.pack(block_type) + header + I64.pack(content_length) + content + footer


ROLLBACK = encode_rollback_block("20240101000000009", "20240101000000008")


def _only_corrupt(data: bytes) -> LogBlock:
    (block,) = iter_blocks(data, "mem")
    assert block.is_corrupt and block.offset == 0 and block.size == len(data)
    return block


def _valid_header(block_type: BlockType) -> dict[HeaderKey, str]:
    if block_type is BlockType.COMMAND:
        return {HeaderKey.INSTANT_TIME: "20240101000000009", HeaderKey.COMMAND_BLOCK_TYPE: "0",
                HeaderKey.TARGET_INSTANT_TIME: "20240101000000008"}
    return {HeaderKey.INSTANT_TIME: "20240101000000009", HeaderKey.SCHEMA: SYNTHETIC_SCHEMA}


def _corrupt_with_reason(data: bytes, path: str, reason: str, caplog) -> None:
    """``data`` reads as exactly one CORRUPT block, and the warning about it says ``reason``."""
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        (block,) = iter_blocks(data, path)
    assert block.is_corrupt and (block.offset, block.size) == (0, len(data))
    (record,) = caplog.records
    assert re.search(reason, record.getMessage()), record.getMessage()


@pytest.mark.parametrize("block_type,header,reason", [
    # Hudi's scanner would fail on the missing command type; we must not drop the deletes silently either
    (BlockType.COMMAND, {HeaderKey.INSTANT_TIME: "20240101000000009", HeaderKey.SCHEMA: SYNTHETIC_SCHEMA},
     "COMMAND block has header key.*SCHEMA"),
    (BlockType.COMMAND, {}, "COMMAND block without header key.*COMMAND_BLOCK_TYPE"),
    (BlockType.COMMAND, {**_valid_header(BlockType.COMMAND), HeaderKey.COMMAND_BLOCK_TYPE: "1"},
     "COMMAND_BLOCK_TYPE is '1'"),
    (BlockType.COMMAND, {**_valid_header(BlockType.COMMAND), HeaderKey.TARGET_INSTANT_TIME: "2024010100000000x"},
     "TARGET_INSTANT_TIME is '2024010100000000x', not an instant time"),
    (BlockType.AVRO_DATA, {HeaderKey.SCHEMA: SYNTHETIC_SCHEMA}, "without header key.*INSTANT_TIME"),
    (BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: "20240101000000009"}, "without header key.*SCHEMA"),
    (BlockType.AVRO_DATA, {**_valid_header(BlockType.AVRO_DATA), HeaderKey.INSTANT_TIME: "2024010100000000"},
     "INSTANT_TIME is '2024010100000000', not an instant time"),  # 16 digits
    (BlockType.AVRO_DATA, {**_valid_header(BlockType.AVRO_DATA), HeaderKey.INSTANT_TIME: "２" * 17},
     "not an instant time"),  # digits, but not ASCII ones
    (BlockType.AVRO_DATA, {**_valid_header(BlockType.AVRO_DATA), HeaderKey.TARGET_INSTANT_TIME: "20240101000000008"},
     "AVRO_DATA block has header key.*TARGET_INSTANT_TIME"),
    (BlockType.AVRO_DATA, {**_valid_header(BlockType.AVRO_DATA), HeaderKey.SCHEMA: '{"type": "strin"}'},
     "SCHEMA header is not an Avro schema"),
    (BlockType.AVRO_DATA, {**_valid_header(BlockType.AVRO_DATA), HeaderKey.SCHEMA: '["null", "string"]'},
     "SCHEMA header is not an Avro schema.*not a record"),
    (BlockType.AVRO_DATA, {**_valid_header(BlockType.AVRO_DATA),
                           HeaderKey.SCHEMA: SYNTHETIC_SCHEMA.replace('"long"', '"lonf"', 1)},
     "SCHEMA header is not an Avro schema"),
    (BlockType.AVRO_DATA, {**_valid_header(BlockType.AVRO_DATA), HeaderKey.COMPACTED_BLOCK_TIMES: "001,002"},
     "COMPACTED_BLOCK_TIMES is '001,002'"),
    (BlockType.AVRO_DATA, {**_valid_header(BlockType.AVRO_DATA), HeaderKey.RECORD_POSITIONS: "not base64!"},
     "RECORD_POSITIONS .* not Base64"),
    (BlockType.AVRO_DATA, {**_valid_header(BlockType.AVRO_DATA), HeaderKey.BLOCK_IDENTIFIER: "1"},
     "BLOCK_IDENTIFIER is '1'"),
    (BlockType.AVRO_DATA, {**_valid_header(BlockType.AVRO_DATA), HeaderKey.IS_PARTIAL: "yes"}, "IS_PARTIAL is 'yes'"),
    (BlockType.CDC_DATA, _valid_header(BlockType.AVRO_DATA), "CDC_DATA block in a data log file"),
])
def test_block_with_an_invalid_header_is_corrupt(block_type, header, reason, caplog):
    content = b"" if block_type is BlockType.COMMAND else I32.pack(3) + I32.pack(0)
    path = "p/" + make_log_file_name("f1-0", "20240101000000001", 1, "1-0-1")
    _corrupt_with_reason(encode_block(block_type, header, content), path, reason, caplog)


def test_header_rules_that_depend_on_the_file_name():
    """INSTANT_TIME is required in .log files only (v6 archive blocks carry just SCHEMA), and CDC_DATA blocks
    are what CDC log files hold; a path that is no log file name leaves both rules out."""
    schema_only = encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: SYNTHETIC_SCHEMA}, I32.pack(3) + I32.pack(0))
    for path in (".hoodie/archived/.commits_.archive.1_1-0-1", "copied-log-file"):
        (block,) = iter_blocks(schema_only, path)
        assert block.type is BlockType.AVRO_DATA
    cdc = encode_block(BlockType.CDC_DATA, _valid_header(BlockType.AVRO_DATA), I32.pack(3) + I32.pack(0))
    assert [b.type for b in iter_blocks(cdc, ".f1-0_20240101000000001.log.1_0-1-2.cdc")] == [BlockType.CDC_DATA]
    assert [b.type for b in iter_blocks(cdc, "copied-log-file")] == [BlockType.CDC_DATA]
    data = encode_avro_data_block([], SYNTHETIC_SCHEMA, "20240101000000001")
    assert [b.type for b in iter_blocks(data, ".f1-0_20240101000000001.log.1_0-1-2.cdc")] == [BlockType.CORRUPT]


def test_every_header_value_hudi_writes_is_valid():
    """Instant times of every length Hudi writes, and the optional keys' values as Hudi formats them."""
    header = {**_valid_header(BlockType.AVRO_DATA), HeaderKey.COMPACTED_BLOCK_TIMES: "20240101000000,20240101000000001",
              HeaderKey.RECORD_POSITIONS: "AQAAAAAAAAAAAAAAOjAAAAEAAAAAAAEAEAAAAAAAAQA=",
              HeaderKey.BLOCK_IDENTIFIER: "0,12", HeaderKey.IS_PARTIAL: "false",
              HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS: "20240101000000001001"}
    for instant in ("20240101000000", "20240101000000001", "20240101000000001005"):
        (block,) = iter_blocks(encode_block(BlockType.AVRO_DATA, {**header, HeaderKey.INSTANT_TIME: instant},
                                            I32.pack(3) + I32.pack(0)), "p/.f1-0_20240101000000001.log.1_0-1-2")
        assert block.type is BlockType.AVRO_DATA and block.instant_time == instant


@pytest.mark.parametrize("inner,why", [
    (_inner(block_type=2), "type CORRUPT is never written"),
    (_inner(block_type=7), "type out of range"),
    (_inner(block_type=-1), "negative type"),
    (_inner(header=I32.pack(2**31 - 1)), "header count beyond the block"),
    (_inner(header=I32.pack(-1)), "negative header count"),
    (_inner(header=I32.pack(1) + I32.pack(0) + I32.pack(-5)), "negative header value length"),
    (_inner(header=I32.pack(1) + I32.pack(0) + I32.pack(10**6) + b"x"), "header value beyond the block"),
    (_inner(header=I32.pack(1) + I32.pack(9) + I32.pack(1) + b"x"), "unknown header key"),
    (_inner(header=I32.pack(2) + (I32.pack(0) + I32.pack(1) + b"1") * 2), "duplicate header key"),
    (_inner(header=I32.pack(1) + I32.pack(0) + I32.pack(2) + b"\xff\xfe"), "header value not UTF-8"),
    (_inner(content_length=2**40), "content beyond the block"),
    (_inner(content_length=-1), "negative content length"),
    (_inner(content_length=1, content=b"xy"), "unaccounted bytes"),
    (_inner(footer=I32.pack(3)), "footer count beyond the block"),
    (_inner()[:-1], "footer cut short"),
    (_inner() + b"\x00\x00", "bytes between footer and trailing length"),
])
def test_inconsistent_block_is_corrupt(inner, why):
    _only_corrupt(_framed(inner))


@pytest.mark.parametrize("block_size", [-(2**63), -1, 0, 31, 2**62, 2**63 - 1])
def test_impossible_block_size_is_corrupt_not_an_allocation(block_size):
    _only_corrupt(MAGIC + I64.pack(block_size) + bytes(40))


def test_version_other_than_1_fails_like_hudi():
    data = ROLLBACK + _framed(_inner(version=0))
    with pytest.raises(CorruptFileError, match=rf"some/file\.log.*offset {len(ROLLBACK)}.*version 0"):
        list(iter_blocks(data, "some/file.log"))
    with pytest.raises(CorruptFileError, match="version 2"):
        list(iter_blocks(_framed(_inner(version=2)), "mem"))


def test_footer_entries_make_a_block_corrupt(caplog):
    """Hudi defines no footer keys (``FooterMetadataType`` is empty; its reader would fail on any)."""
    footer = I32.pack(1) + I32.pack(0) + I32.pack(2) + b"ok"
    data = encode_block(BlockType.COMMAND, _valid_header(BlockType.COMMAND), b"", {0: "ok"})
    assert footer in data
    _corrupt_with_reason(data, "mem", r"footer keys \[0\]", caplog)


def test_garbage_before_the_first_block_is_one_corrupt_block():
    corrupt, block = iter_blocks(b"junk!!!" + ROLLBACK, "mem")
    assert corrupt.is_corrupt and (corrupt.offset, corrupt.size) == (0, 7)
    assert block.is_rollback and block.offset == 7


def test_corrupt_scan_starts_after_the_magic():
    """Hudi scans for the next magic from the end of the corrupt block's own magic, so a magic overlapping it
    (``#HUDI#HUDI#``: the second starts at byte 5) is not a block start."""
    corrupt, block = iter_blocks(b"#HUDI#HUDI#" + ROLLBACK, "mem")
    assert corrupt.is_corrupt and (corrupt.offset, corrupt.size) == (0, 11)
    assert block.is_rollback and block.offset == 11


def test_short_tail_is_ignored_and_long_tail_spoils_the_last_block():
    """Hudi: < 6 bytes after a block read as EOF; >= 6 non-magic bytes fail that block's next-magic check."""
    (block,) = iter_blocks(ROLLBACK + b"xxxxx", "mem")
    assert block.is_rollback
    first, spoiled = iter_blocks(ROLLBACK + ROLLBACK + b"xxxxxx", "mem")
    assert first.is_rollback and spoiled.is_corrupt
    assert (spoiled.offset, spoiled.size) == (len(ROLLBACK), len(ROLLBACK) + 6)


def test_empty_and_tiny_files():
    assert list(iter_blocks(b"", "mem")) == []
    assert list(iter_blocks(b"#HUDI", "mem")) == []
    _only_corrupt(MAGIC + b"\x00" * 7)  # ends inside the block size


def test_read_log_file_through_storage(tmp_path):
    name = make_log_file_name("f1-0", "20240101000000001", 1, "1-0-1")
    (tmp_path / name).write_bytes(ROLLBACK + b"#HUDI#\x00")
    blocks = read_log_file(Storage(str(tmp_path)), name)
    assert [b.type for b in blocks] == [BlockType.COMMAND, BlockType.CORRUPT]
    assert blocks[0].path == name and blocks[1].offset == len(ROLLBACK)


def _content_block(block_type: BlockType, content: bytes, schema: str | None = SYNTHETIC_SCHEMA) -> LogBlock:
    """A block as the decoders may be handed one: made by hand, not checked by the reader."""
    header = {HeaderKey.INSTANT_TIME: "20240101000000001"}
    if schema is not None:
        header[HeaderKey.SCHEMA] = schema
    return LogBlock(block_type, header, {}, content, 0, 0, "some/file.log")


BAD_AVRO_CONTENT = [
    b"\x00\x00\x00",  # too short for a version
    I32.pack(3) + b"\x00\x00",  # too short for a count
    I32.pack(7) + I32.pack(0),  # unknown content version
    I32.pack(3) + I32.pack(-1),  # negative count
    I32.pack(3) + I32.pack(1000) + bytes(12),  # more records than bytes
    I32.pack(3) + I32.pack(1) + I32.pack(50) + b"x",  # record longer than the block
    I32.pack(3) + I32.pack(1) + I32.pack(-1) + b"x",  # negative record length
    I32.pack(3) + I32.pack(0) + b"trailing",  # bytes after the last record
    I32.pack(1) + I32.pack(2) + b"x",  # version 1: last record cut off
    I32.pack(3) + I32.pack(1) + I32.pack(1) + b"\xff",  # undecodable record
]


@pytest.mark.parametrize("content", BAD_AVRO_CONTENT)
def test_bad_avro_content_raises_corrupt_file_error(content):
    with pytest.raises(CorruptFileError, match=r"some/file\.log@0"):
        decode_data_block(_content_block(BlockType.AVRO_DATA, content))


@pytest.mark.parametrize("block_type,content,reason", [
    *[(BlockType.AVRO_DATA, content, "") for content in BAD_AVRO_CONTENT[:-1]],  # the last one is value damage
    (BlockType.COMMAND, b"x", "COMMAND block with 1 bytes of content"),
    (BlockType.DELETE, I32.pack(3), "too short"),
    (BlockType.DELETE, I32.pack(4) + I32.pack(0), "delete block content version 4"),
    (BlockType.DELETE, I32.pack(3) + I32.pack(5) + b"\x00", "payload length 5"),
    (BlockType.PARQUET_DATA, b"PAR1garbagePAR1", "parquet footer length"),
    (BlockType.PARQUET_DATA, bytes(5000), "not a parquet file"),
    (BlockType.HFILE_DATA, bytes(5000), "HFile trailer"),
])
def test_content_that_contradicts_its_own_lengths_is_a_corrupt_block(block_type, content, reason, caplog):
    """The reader checks the layout of the content (versions, counts, lengths) before anything is decoded."""
    header = _valid_header(block_type) if block_type is not BlockType.DELETE else {
        HeaderKey.INSTANT_TIME: "20240101000000001"}
    _corrupt_with_reason(encode_block(block_type, header, content), "some/file.log", reason, caplog)


def test_avro_block_without_schema_raises():
    with pytest.raises(CorruptFileError, match="SCHEMA"):
        decode_data_block(_content_block(BlockType.AVRO_DATA, I32.pack(3) + I32.pack(0), schema=None))


@pytest.mark.parametrize("block_type", [BlockType.PARQUET_DATA, BlockType.HFILE_DATA])
@pytest.mark.parametrize("content", [b"", b"PAR1garbagePAR1", bytes(5000)])
def test_bad_parquet_or_hfile_content_raises_corrupt_file_error(block_type, content):
    with pytest.raises(CorruptFileError, match=r"some/file\.log@0"):
        decode_data_block(_content_block(block_type, content))


@pytest.mark.parametrize("content,error,message", [
    (I32.pack(2) + I32.pack(4) + b"kryo", UnsupportedTableError, "Kryo"),
    (I32.pack(1) + I32.pack(4) + b"kryo", UnsupportedTableError, "compact"),
    (I32.pack(4) + I32.pack(0), CorruptFileError, "version 4"),
    (I32.pack(3), CorruptFileError, "too short"),
    (I32.pack(3) + I32.pack(5) + b"\x00", CorruptFileError, "payload length"),
    (I32.pack(3) + I32.pack(1) + b"\x07", CorruptFileError, "undecodable"),  # array count -4: needs a size
    (I32.pack(3) + I32.pack(5) + b"\x02\x00\x00\x00\x00", CorruptFileError, "without a record key"),
    (I32.pack(3) + I32.pack(5) + b"\x02\x02\x00\x00\x1a", CorruptFileError, "undecodable"),  # union index 13
    (I32.pack(3) + I32.pack(2) + b"\x00\x00", CorruptFileError, "end at byte 1"),
])
def test_bad_delete_content(content, error, message):
    with pytest.raises(error, match=message):
        decode_delete_block(_content_block(BlockType.DELETE, content))


def test_decoders_refuse_the_wrong_block_type():
    (rollback,) = iter_blocks(ROLLBACK, "mem")
    with pytest.raises(ValueError):
        decode_data_block(rollback)
    with pytest.raises(ValueError):
        decode_delete_block(rollback)


# --- 3b. truncation and bit flips: never a crash, never a misparsed block ------------------------------------

@lru_cache(maxsize=1)
def _synthetic_log() -> bytes:
    """Several block kinds in one file, as a v6 log file accumulates them."""
    table = pa.Table.from_pylist(SYNTHETIC_ROWS[:2])
    return b"".join([
        encode_avro_data_block(SYNTHETIC_ROWS, SYNTHETIC_SCHEMA, "20240101000000001"),
        encode_delete_block(["a", "b"], ["p", None], [COMMIT_TIME_DELETE, 5], "20240101000000002"),
        encode_parquet_data_block(table, SYNTHETIC_SCHEMA, "20240101000000003"),
        encode_rollback_block("20240101000000004", "20240101000000001"),
        encode_avro_data_block(SYNTHETIC_ROWS[1:], SYNTHETIC_SCHEMA, "20240101000000005",
                               extra_header={HeaderKey.IS_PARTIAL: "true"}),
    ])


DAMAGE_FILES = {p.parent.name: p for p in LOG_FILES}


def _damage_subject(name: str) -> tuple[bytes, list[LogBlock]]:
    data = _synthetic_log() if name == "synthetic" else DAMAGE_FILES[name].read_bytes()
    blocks = list(iter_blocks(data, "f"))
    assert not any(b.is_corrupt for b in blocks) and data.count(MAGIC) == len(blocks)
    return data, blocks


@pytest.mark.parametrize("name", [*sorted(DAMAGE_FILES), "synthetic"])
def test_truncated_file_keeps_every_whole_block(name):
    data, blocks = _damage_subject(name)
    for cut in range(len(data) + 1):
        got = list(iter_blocks(data[:cut], "f"))
        whole = [b for b in blocks if b.offset + b.size <= cut]
        assert got[:len(whole)] == whole, cut
        rest = cut - (whole[-1].offset + whole[-1].size if whole else 0)
        if rest < len(MAGIC):  # a partial magic reads as EOF
            assert len(got) == len(whole), cut
        else:
            (tail,) = got[len(whole):]
            assert tail.is_corrupt and tail.offset + tail.size == cut, cut


def _length_fields(block: LogBlock) -> set[int]:
    """Offsets of the bytes of a block that no flip may leave undetected: magic, sizes, counts, lengths."""
    o = block.offset
    fields = [(o, 6), (o + 6, 8), (o + block.size - 8, 8)]
    pos = o + 22
    fields.append((pos, 4))
    pos += 4
    for value in block.header.values():
        fields.append((pos + 4, 4))  # value length (the key before it may flip to another valid key)
        pos += 8 + len(value.encode())
    fields += [(pos, 8), (pos + 8 + len(block.content), 4)]  # content length, footer count
    return {i for start, size in fields for i in range(start, start + size)}


@pytest.mark.slow
@pytest.mark.parametrize("name", [*sorted(DAMAGE_FILES), "synthetic"])
def test_bit_flips_are_caught_by_framing_or_stay_inside_one_block(name):
    """Every single-bit flip: only a flip of a block's version raises (as in Hudi); every other block comes
    out unchanged, except the preceding one when the flip hits a magic (Hudi's next-magic check); the
    damaged block is CORRUPT whenever a magic, size, count or length was hit, and otherwise (the format
    has no checksum) it is parsed exactly as the damaged bytes say and decodes or raises a HudiStreamingError."""
    data, blocks = _damage_subject(name)
    for pos in range(len(data)):
        k = next(i for i, b in enumerate(blocks) if b.offset <= pos < b.offset + b.size)
        hit = blocks[k]
        damaged = bytearray(data)
        damaged[pos] ^= 1 << (pos * 5 % 8)
        damaged = bytes(damaged)
        if hit.offset + 14 <= pos < hit.offset + 18:
            with pytest.raises(CorruptFileError, match=rf"offset {hit.offset}\b.*version"):
                list(iter_blocks(damaged, "f"))
            continue
        got = list(iter_blocks(damaged, "f"))
        assert sum(b.size for b in got) == len(data) and all(
            a.offset + a.size == b.offset for a, b in zip(got, got[1:])), pos
        spoils_previous = k > 0 and pos < hit.offset + len(MAGIC)
        kept = [b for i, b in enumerate(blocks) if i != k and not (spoils_previous and i == k - 1)]
        assert [b for b in got if b in kept] == kept, pos
        others = [b for b in got if b not in kept and not b.is_corrupt]
        if pos in _length_fields(hit):
            assert others == [], pos
        for block in others:
            assert (block.offset, block.size) == (hit.offset, hit.size), pos
            assert encode_block(block.type, block.header, block.content, block.footer) == \
                damaged[block.offset:block.offset + block.size], pos
            _decode_or_hoodie_error(block)


def _decode_or_hoodie_error(block: LogBlock) -> None:
    try:
        if block.type is BlockType.DELETE:
            decode_delete_block(block)
        elif block.is_data or block.type is BlockType.CDC_DATA:
            decode_data_block(block)
    except HudiStreamingError:
        pass


# --- file names ------------------------------------------------------------------------------------------------

def _hadoop_crc(data: bytes) -> bytes:
    """The checksum file Hadoop's ``ChecksumFileSystem`` writes beside ``data``: ``crc\\0``, bytes per checksum
    (512), then the CRC32 of each 512-byte chunk (checked against the real ones in table_evo_add_col below)."""
    chunks = (data[i:i + 512] for i in range(0, len(data), 512))
    return b"crc\x00" + I32.pack(512) + b"".join(struct.pack(">I", zlib.crc32(chunk)) for chunk in chunks)


def _raw_listing(table: HudiTable) -> list:
    """Every file of every partition as a plain directory listing shows it (what the monitor builds views from)."""
    partitions = {posixpath.dirname(info.path) for info in table.listing()}
    return [info for part in sorted(partitions) for info in table.storage.list_dir(part)]


def test_hadoop_checksum_files_are_invisible(unzip_fixture, tmp_path, caplog):
    """A table copied from a laptop has a ``.<name>.crc`` beside every file: the read is the same as without
    them, nothing is reported corrupt, and neither the listing nor a file-system view built from a plain
    directory listing (the monitor's) holds a checksum file."""
    src = unzip_fixture("mor_avro__v6_trips_8i3d").table
    copy = tmp_path / src.name
    shutil.copytree(src, copy)
    files = [p for p in copy.rglob("*") if p.is_file()]
    for path in files:
        (path.parent / f".{path.name}.crc").write_bytes(_hadoop_crc(path.read_bytes()))
    assert any(".log." in p.name for p in files)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert read_table(str(copy)).equals(read_table(str(src)))
    assert [r.getMessage() for r in caplog.records] == []
    table, original = HudiTable(str(copy)), HudiTable(str(src))
    assert sorted(i.path for i in table.listing()) == sorted(i.path for i in original.listing())
    raw = _raw_listing(table)
    assert any(i.path.endswith(".crc") for i in raw)
    view = FileSystemView(table.config, table.timeline, raw)
    assert {key: [s.files for s in slices] for key, slices in view.groups.items()} == \
        {key: [s.files for s in slices] for key, slices in original.file_system_view().groups.items()}


def test_real_hadoop_checksum_files_make_no_file_group(unzip_fixture):
    """table_evo_add_col was copied with Hadoop's checksum files: ``..<log file>.crc`` matches Hudi's
    unanchored log-file pattern (file group ``.<fileId>``), yet no such group may appear."""
    table = HudiTable(str(unzip_fixture("mor_avro__table_evo_add_col").table))
    raw = _raw_listing(table)
    checksums = [i.path for i in raw if i.path.endswith(".crc")]
    for path in checksums:
        target = posixpath.join(posixpath.dirname(path), posixpath.basename(path)[1:-len(".crc")])
        assert _hadoop_crc(table.storage.read_bytes(target)) == table.storage.read_bytes(path)
    assert any(parse_log_file_name(path) is not None for path in checksums)
    view = FileSystemView(table.config, table.timeline, raw)
    assert view.groups and not [key for key in view.groups if key[1].startswith(".")]

def test_parse_every_fixture_log_file_name(unzip_fixture):
    for path in LOG_FILES:
        parsed = parse_log_file_name(path.name)
        assert parsed is not None and parsed.extension == "log" and not parsed.cdc
        assert make_log_file_name(parsed.file_id, parsed.instant, parsed.version, parsed.write_token) == path.name
    fx = unzip_fixture("mor_avro__v6_trips_8i3d")
    (path,) = [p for p in _table_log_files(fx.table) if ".hoodie" not in p.parts]
    parsed = parse_log_file_name(str(path))  # a path is reduced to its name
    assert (parsed.file_id, parsed.instant, parsed.version, parsed.write_token) == \
        ("6d3d1d6e-2298-4080-a0c1-494877d6f40a-0", "20250618054711154", 1, "0-26-85")


def test_parse_log_file_name_variants():
    cdc = parse_log_file_name(".f1-0_20240101000000001.log.3_1-2-3.cdc")
    assert (cdc.file_id, cdc.version, cdc.write_token, cdc.cdc) == ("f1-0", 3, "1-2-3", True)
    archive = parse_log_file_name(".commits_.archive.12_1-0-1")
    assert (archive.file_id, archive.instant, archive.extension, archive.version) == ("commits", "", "archive", 12)
    no_token = parse_log_file_name(".f1-0_20240101000000001.log.2")
    assert (no_token.version, no_token.write_token) == (2, None)
    for name in ["f1-0_20240101000000001.log.1_1-0-1", ".f1-0_20240101000000001.parquet",
                 ".f1-0_20240101000000001.log.x_1-0-1", "f1-0_0-1-2_20240101000000001.parquet"]:
        assert parse_log_file_name(name) is None, name


def test_log_file_sort_key_is_hudis_comparator():
    names = [
        ".f_20240101000000002.log.1_0-1-1",
        ".f_20240101000000001.log.10_0-1-1",
        ".f_20240101000000001.log.2_2-1-1",
        ".f_20240101000000001.log.2_10-1-1",  # tokens compare as strings: "10-1-1" < "2-1-1"
        ".f_20240101000000001.log.2",  # a missing token sorts first
        ".f_20240101000000001.log.2_10-1-1.cdc",
    ]
    assert sorted(names, key=log_file_sort_key) == [
        ".f_20240101000000001.log.2",
        ".f_20240101000000001.log.2_10-1-1",
        ".f_20240101000000001.log.2_10-1-1.cdc",
        ".f_20240101000000001.log.2_2-1-1",
        ".f_20240101000000001.log.10_0-1-1",
        ".f_20240101000000002.log.1_0-1-1",
    ]
    with pytest.raises(ValueError):
        log_file_sort_key("base.parquet")


def test_a_views_log_file_sorts_by_its_names_key():
    """``LogFile.sort_key`` reads the fields parsed out of the name: the same order as the name's key."""
    names = [".f_20240101000000002.log.1_0-1-1", ".f_20240101000000001.log.10_0-1-1",
             ".f_20240101000000001.log.2_2-1-1", ".f_20240101000000001.log.2_10-1-1", ".f_20240101000000001.log.2"]
    for name in names:
        lf = parse_log_file(FileInfo(f"p1/{name}", 1, None))
        assert lf is not None and lf.sort_key() == log_file_sort_key(name), name
    assert parse_log_file(FileInfo("p1/.f_20240101000000001.log.2_10-1-1.cdc", 1, None)) is None
