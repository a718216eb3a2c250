"""Avro records of data blocks <-> Arrow (``hoodie.logfile.avro_arrow``).

The fast (polars) decoder is checked against the fastavro reference decoder on every Avro data block of every
fixture table, the reference decoder against values written independently (synthetic schemas with every type
the mapping knows), the mapping against the types of the tables' own parquet base files, and the structure
checks against damaged blocks.
"""
from __future__ import annotations

import datetime as dt
import functools
import io
import itertools
import json
import random
import re
import struct
import uuid
import zipfile
from collections import Counter
from decimal import Decimal

import fastavro
import polars
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, LOG_FILES, fixture_names

from hudi_streaming.errors import CorruptFileError, UnsupportedTableError
from hudi_streaming.hoodie.logfile import avro_arrow
from hudi_streaming.hoodie.logfile.avro_arrow import arrow_schema_from_avro, decode_avro_records
from hudi_streaming.hoodie.logfile.format import BlockType
from hudi_streaming.hoodie.logfile.reader import iter_blocks
from hudi_streaming.writer.avro_encode import records_to_avro_dicts

UTC = dt.timezone.utc


# --- helpers ------------------------------------------------------------------------------------------------

def encode_payload(schema: dict, records: list[dict]) -> bytes:
    """What an Avro data block holds after its record count: int32 length | record, for each record."""
    parsed = fastavro.parse_schema(schema)
    out = io.BytesIO()
    for record in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, record)
        out.write(struct.pack(">i", buf.tell()) + buf.getvalue())
    return out.getvalue()


def both_decoders(schema_json: str, payload: bytes, count: int, columns=None) -> tuple[pa.Table, pa.Table | None]:
    """(reference result, fast result or None when the fast decoder declined or its result failed the
    re-encoding check), both as returned to callers."""
    plan = avro_arrow._plan(schema_json, None if columns is None else tuple(columns))
    view = memoryview(payload)
    lengths = avro_arrow._record_lengths(view, count, "test")
    reference = avro_arrow._decode_fastavro(plan, view, lengths, "test")
    assert avro_arrow._misread(reference, plan, view, lengths) is None
    fast = avro_arrow._decode_polars(plan, view, lengths) if plan.ocf_header is not None else None
    if fast is not None and avro_arrow._misread(fast, plan, view, lengths) is not None:
        fast = None

    def as_returned(table: pa.Table) -> pa.Table:
        return avro_arrow._to_target(table.select(list(plan.columns)), plan, "test")

    return as_returned(reference), None if fast is None else as_returned(fast)


def assert_tables_identical(actual: pa.Table, expected: pa.Table) -> None:
    actual.validate(full=True)
    assert actual.schema == expected.schema
    assert actual.schema.equals(expected.schema, check_metadata=True)
    if not actual.equals(expected):
        for name in expected.column_names:
            assert actual.column(name).to_pylist() == expected.column(name).to_pylist(), name
        raise AssertionError("tables differ")


# --- fixture tables -----------------------------------------------------------------------------------------

#: ``.<fileId>_<instant>.log.<version>_<writeToken>`` (not the ``..<name>.crc`` checksum files beside them).
LOG_FILE_NAME = re.compile(r"\.[^.].*\.log\.\d+(_[0-9-]+)?")


def table_entries(z: zipfile.ZipFile) -> list[str]:
    """Names in a fixture zip, without the gold outputs and macOS resource forks."""
    return [entry for entry in sorted(z.namelist())
            if not any(part.startswith(("gold_", "__MACOSX", "._")) for part in entry.split("/"))]


def avro_blocks(data: bytes, path: str) -> list[tuple[str, str, int, memoryview]]:
    """(log file, schema, record count, payload) of every Avro data block of one log file."""
    blocks = []
    for block in iter_blocks(data, path):
        if block.type is BlockType.AVRO_DATA:
            content = memoryview(block.content)
            version, count = struct.unpack_from(">ii", content)
            assert version == 3, f"{path}: content version {version}"
            blocks.append((path, block.schema_json, count, content[8:]))
    return blocks


@functools.lru_cache(maxsize=None)
def fixture_avro_blocks(name: str) -> list[tuple[str, str, int, memoryview]]:
    """The Avro data blocks of one fixture table, or of the loose fixture log files for ``"log_files"``."""
    if name == "log_files":
        return [b for path in LOG_FILES for b in avro_blocks(path.read_bytes(), path.name)]
    with zipfile.ZipFile(FIXTURES / "tables" / f"{name}.zip") as z:
        return [block for entry in table_entries(z) if LOG_FILE_NAME.fullmatch(entry.rsplit("/", 1)[-1])
                for block in avro_blocks(z.read(entry), entry)]


@functools.lru_cache(maxsize=None)
def fixture_base_file_schemas(name: str) -> list[tuple[str, pa.Schema]]:
    """Arrow schemas of the table's parquet base files (not the gold outputs, not the metadata table)."""
    if name == "log_files":
        return []
    schemas = []
    with zipfile.ZipFile(FIXTURES / "tables" / f"{name}.zip") as z:
        for entry in table_entries(z):
            if entry.endswith(".parquet") and ".hoodie" not in entry.split("/"):
                schemas.append((entry, pq.read_schema(pa.BufferReader(z.read(entry)))))
    return schemas


AVRO_TABLES = [name for name in [*fixture_names(), "log_files"] if fixture_avro_blocks(name)]


def test_fixtures_have_avro_blocks():
    assert len(AVRO_TABLES) >= 15
    assert {"mor_avro__table_all_data_types", "log_files"} <= set(AVRO_TABLES)


@pytest.mark.parametrize("table", AVRO_TABLES)
def test_fast_decoder_equals_reference_on_fixture_blocks(table):
    for log, schema_json, count, payload in fixture_avro_blocks(table):
        reference, fast = both_decoders(schema_json, payload, count)
        assert fast is not None, f"{log}: the fast decoder declined a valid block"
        assert reference.num_rows == count
        assert reference.schema == arrow_schema_from_avro(schema_json)
        assert_tables_identical(fast, reference)
        assert_tables_identical(decode_avro_records(schema_json, payload, count, path=log), reference)

        names = reference.column_names
        columns = [names[-1], names[2], names[0]] if len(names) > 2 else names[::-1]
        reference, fast = both_decoders(schema_json, payload, count, columns)
        assert fast is not None
        assert_tables_identical(fast, reference)
        assert_tables_identical(decode_avro_records(schema_json, payload, count, columns=columns),
                                decode_avro_records(schema_json, payload, count).select(columns))


@pytest.mark.parametrize("table", AVRO_TABLES)
def test_fixture_blocks_reencode_to_the_same_bytes(table):
    """records_to_avro_dicts + fastavro reproduce exactly the bytes Hudi (Java Avro) wrote."""
    for log, schema_json, count, payload in fixture_avro_blocks(table):
        decoded = decode_avro_records(schema_json, payload, count)
        rows = records_to_avro_dicts(decoded, schema_json)
        assert encode_payload(json.loads(schema_json), rows) == bytes(payload), log


def _relax_list_items(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` with every list item nullable (see test_decoded_types_equal_base_file_types)."""
    if pa.types.is_list(arrow_type):
        return pa.list_(pa.field("element", _relax_list_items(arrow_type.value_type)))
    if pa.types.is_map(arrow_type):
        return pa.map_(arrow_type.key_field, arrow_type.item_field.with_type(_relax_list_items(arrow_type.item_type)))
    if pa.types.is_struct(arrow_type):
        return pa.struct([f.with_type(_relax_list_items(f.type)) for f in arrow_type])
    return arrow_type


@pytest.mark.parametrize("table", [t for t in AVRO_TABLES if fixture_base_file_schemas(t)])
def test_decoded_types_equal_base_file_types(table):
    """Log rows must concatenate with base-file rows: same types and nullability, column by column.

    One difference is known and allowed: parquet-avro (Hudi's base-file writer) writes Avro arrays as legacy
    two-level lists whose items are required, so an ``array<["null", T]>`` reads back from a base file as
    ``list<array: T not null>`` while the Avro type (and Spark's result) has nullable items. Readers must cast
    such base-file columns to the log schema (a widening cast) before concatenating.
    """
    compared = 0
    for schema_json in {schema for _, schema, _, _ in fixture_avro_blocks(table)}:
        ours = arrow_schema_from_avro(schema_json)
        for base_path, base in fixture_base_file_schemas(table):
            for field in ours:
                if base.get_field_index(field.name) < 0:
                    continue  # a column added later (schema evolution) or a partial-update block
                base_field = base.field(field.name)
                assert field.nullable == base_field.nullable, (base_path, field.name)
                if field.type != base_field.type:
                    assert _relax_list_items(field.type) == _relax_list_items(base_field.type), \
                        (base_path, field.name, field.type, base_field.type)
                compared += 1
    assert compared


def test_all_data_types_fixture_types():
    """The mapping on Hudi's own all-types table, against its base file's types as written out here."""
    (_, schema_json, _, _), *_ = fixture_avro_blocks("mor_avro__table_all_data_types")
    nested = pa.struct([("nested_int", pa.int32()), ("level", pa.string())])
    ts = pa.timestamp("us", tz="UTC")
    expected = {
        "ts": pa.int64(), "severity": pa.int32(), "double_field": pa.float64(), "float_field": pa.float32(),
        "boolean_field": pa.bool_(), "string_field": pa.string(), "bytes_field": pa.binary(),
        "decimal_field": pa.decimal128(20, 2), "nested_record": nested,
        "nullable_map_field": pa.map_(pa.string(), nested),
        "array_field": pa.list_(pa.field("element", nested)),
        "enum_field": pa.string(), "date_nullable_field": pa.date32(),
        "timestamp_millis_nullable_field": ts, "timestamp_micros_nullable_field": ts,
        # named "local" but typed timestamp-micros in the table's schema: zoned
        "timestamp_local_millis_nullable_field": ts, "timestamp_local_micros_nullable_field": ts,
    }
    schema = arrow_schema_from_avro(schema_json)
    for name, arrow_type in expected.items():
        assert schema.field(name).type == arrow_type, name
        assert schema.field(name).nullable
    assert schema.field("array_field").type.value_field.name == "element"
    assert schema.field("_hoodie_commit_time").type == pa.string()


# --- synthetic schemas --------------------------------------------------------------------------------------

INNER = {"type": "record", "name": "Inner", "fields": [
    {"name": "a", "type": "int"},
    {"name": "s", "type": ["null", "string"], "default": None},
    {"name": "deep", "type": ["null", {"type": "record", "name": "Deep", "namespace": "other.ns", "fields": [
        {"name": "x", "type": ["null", "long"]},
        {"name": "when", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]}]}]},
]}
ALL_TYPES = {
    "type": "record", "name": "all_types", "namespace": "test.avro_arrow", "doc": "every type of the mapping",
    "fields": [
        {"name": "_hoodie_commit_time", "type": ["null", "string"], "doc": "", "default": None},
        {"name": "flag", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": ["null", "long"], "default": None},
        {"name": "f", "type": "float"},
        {"name": "d", "type": ["double", "null"], "default": 0.0},
        {"name": "s", "type": {"type": "string", "avro.java.string": "String"}},
        {"name": "by", "type": ["null", "bytes"]},
        {"name": "fx", "type": {"type": "fixed", "name": "Fx", "size": 3, "aliases": ["F3"]}},
        {"name": "fx_again", "type": ["null", "Fx"]},
        {"name": "dec_bytes", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 10,
                                                 "scale": 3}]},
        {"name": "dec_fixed", "type": {"type": "fixed", "name": "Dec9", "size": 9, "logicalType": "decimal",
                                       "precision": 20, "scale": 2}},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "t_us", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
        {"name": "ts_ms", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
        {"name": "ts_us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "lts_ms", "type": ["null", {"type": "long", "logicalType": "local-timestamp-millis"}]},
        {"name": "lts_us", "type": ["null", {"type": "long", "logicalType": "local-timestamp-micros"}]},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "inner", "type": ["null", INNER]},
        {"name": "inners", "type": ["null", {"type": "array", "items": ["null", "Inner"]}]},
        {"name": "ints", "type": {"type": "array", "items": "int"}},
        {"name": "counts", "type": ["null", {"type": "map", "values": ["null", "int"]}]},
        {"name": "tags", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
        {"name": "deep_again", "type": ["null", "other.ns.Deep"]},
    ],
}
TS = pa.timestamp("us", tz="UTC")
LOCAL_TS = pa.timestamp("us")  # local-timestamp-*: Spark's TIMESTAMP_NTZ, no zone
DEEP = pa.struct([("x", pa.int64()), ("when", TS)])
INNER_ARROW = pa.struct([pa.field("a", pa.int32(), nullable=False), ("s", pa.string()), ("deep", DEEP)])
ALL_TYPES_ARROW = pa.schema([
    ("_hoodie_commit_time", pa.string()),
    pa.field("flag", pa.bool_(), nullable=False),
    pa.field("i", pa.int32(), nullable=False),
    ("l", pa.int64()),
    pa.field("f", pa.float32(), nullable=False),
    ("d", pa.float64()),
    pa.field("s", pa.string(), nullable=False),
    ("by", pa.binary()),
    pa.field("fx", pa.binary(), nullable=False),
    ("fx_again", pa.binary()),
    ("dec_bytes", pa.decimal128(10, 3)),
    pa.field("dec_fixed", pa.decimal128(20, 2), nullable=False),
    ("day", pa.date32()),
    pa.field("t_ms", pa.time32("ms"), nullable=False),
    ("t_us", pa.time64("us")),
    ("ts_ms", TS), ("ts_us", TS), ("lts_ms", LOCAL_TS), ("lts_us", LOCAL_TS),
    pa.field("id", pa.string(), nullable=False),
    ("inner", INNER_ARROW),
    ("inners", pa.list_(pa.field("element", INNER_ARROW))),
    pa.field("ints", pa.list_(pa.field("element", pa.int32(), nullable=False)), nullable=False),
    ("counts", pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.int32()))),
    pa.field("tags", pa.map_(pa.field("key", pa.string(), nullable=False),
                             pa.field("value", pa.list_(pa.field("element", pa.string(), nullable=False)),
                                      nullable=False)), nullable=False),
    ("deep_again", DEEP),
])
WORDS = ["", "a", "héllo wörld", "日本語", "emoji 🎉", "x" * 300, "\x00nul"]


def all_types_records(n: int, seed: int = 7) -> list[dict]:
    """Records of ALL_TYPES as Python values that both fastavro's writer and pyarrow accept (the oracle)."""
    rng = random.Random(seed)

    def maybe(value):
        return None if rng.random() < 0.25 else value

    def ts(unit_us: int, tz):
        micros = rng.randrange(-2 * 10**16, 2 * 10**16) // unit_us * unit_us  # years ~1336..2603
        return dt.datetime(1970, 1, 1, tzinfo=tz) + dt.timedelta(microseconds=micros)

    def deep():
        return maybe({"x": maybe(rng.randrange(-2**63, 2**63)), "when": maybe(ts(1000, UTC))})

    def inner():
        return {"a": rng.randrange(-2**31, 2**31), "s": maybe(rng.choice(WORDS)), "deep": deep()}

    records = []
    for i in range(n):
        records.append({
            "_hoodie_commit_time": maybe(f"2024010100000{i % 10}"),
            "flag": rng.random() < 0.5,
            "i": rng.choice([0, -1, 2**31 - 1, -2**31, rng.randrange(-1000, 1000)]),
            "l": maybe(rng.choice([0, -1, 2**63 - 1, -2**63, rng.randrange(-10**12, 10**12)])),
            "f": rng.choice([0.0, -1.5, 3.25, float("inf"), -float("inf")]),
            "d": maybe(rng.choice([0.0, -0.0, 1e308, -2.5e-308, rng.uniform(-1e6, 1e6)])),
            "s": rng.choice(WORDS),
            "by": maybe(rng.choice([b"", b"\x00\xff", bytes(range(256))])),
            "fx": bytes(rng.randrange(256) for _ in range(3)),
            "fx_again": maybe(b"abc"),
            "dec_bytes": maybe(Decimal(rng.randrange(-10**10 + 1, 10**10)).scaleb(-3)),
            "dec_fixed": Decimal(rng.choice([0, -1, 10**20 - 1, -(10**20 - 1), rng.randrange(-10**9, 10**9)]))
            .scaleb(-2),
            "day": maybe(dt.date(1970, 1, 1) + dt.timedelta(days=rng.randrange(-700000, 700000))),
            "t_ms": dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(1000) * 1000),
            "t_us": maybe(dt.time(rng.randrange(24), rng.randrange(60), rng.randrange(60), rng.randrange(10**6))),
            "ts_ms": maybe(ts(1000, UTC)),
            "ts_us": maybe(ts(1, UTC)),
            "lts_ms": maybe(ts(1000, None)),
            "lts_us": maybe(ts(1, None)),
            "id": str(uuid.UUID(int=rng.getrandbits(128))),
            "inner": maybe(inner()),
            "inners": maybe([maybe(inner()) for _ in range(rng.randrange(4))]),
            "ints": [rng.randrange(-2**31, 2**31) for _ in range(rng.randrange(5))],
            "counts": maybe({rng.choice(WORDS) + str(k): maybe(k) for k in range(rng.randrange(4))}),
            "tags": {f"t{k}": [rng.choice(WORDS) for _ in range(rng.randrange(3))] for k in range(rng.randrange(3))},
            "deep_again": deep(),
        })
    return records


def oracle(records: list[dict], schema: pa.Schema = ALL_TYPES_ARROW) -> pa.Table:
    """The expected decoding, built by pyarrow from the Python values the records were written from."""
    return pa.Table.from_pylist(records, schema=schema)


def test_schema_mapping_of_every_type():
    assert arrow_schema_from_avro(json.dumps(ALL_TYPES)) == ALL_TYPES_ARROW
    assert arrow_schema_from_avro(ALL_TYPES) == ALL_TYPES_ARROW  # a dict works too
    assert arrow_schema_from_avro(json.dumps(ALL_TYPES)).metadata is None


@pytest.mark.parametrize("count", [0, 1, 3, 200])
def test_reference_decoder_on_every_type(count):
    records = all_types_records(count)
    payload = encode_payload(ALL_TYPES, records)
    reference, _ = both_decoders(json.dumps(ALL_TYPES), payload, count)
    assert_tables_identical(reference, oracle(records))


@pytest.mark.parametrize("count", [1, 3, 200])
def test_fast_decoder_on_every_type(count):
    records = all_types_records(count, seed=count)
    payload = encode_payload(ALL_TYPES, records)
    reference, fast = both_decoders(json.dumps(ALL_TYPES), payload, count)
    assert fast is not None
    assert_tables_identical(fast, reference)
    assert_tables_identical(decode_avro_records(json.dumps(ALL_TYPES), payload, count), oracle(records))


@pytest.mark.parametrize("per_thread", [1, 7, 60])
def test_fast_decoder_in_threads(monkeypatch, per_thread):
    """Large blocks are decoded as runs of records in parallel threads; the runs must join seamlessly."""
    monkeypatch.setattr(avro_arrow, "_WORKERS", 3)
    monkeypatch.setattr(avro_arrow, "_RECORDS_PER_THREAD", per_thread)
    records = all_types_records(200, seed=per_thread)
    payload = encode_payload(ALL_TYPES, records)
    reference, fast = both_decoders(json.dumps(ALL_TYPES), payload, 200, ["inner", "s", "counts", "ts_ms"])
    assert fast is not None
    assert fast.column("s").num_chunks == 3
    assert_tables_identical(fast, reference)
    assert_tables_identical(fast, oracle(records).select(["inner", "s", "counts", "ts_ms"]))
    # a run that polars cannot decode sends the whole block to fastavro
    real_read_avro = polars.read_avro
    calls = itertools.count()

    def second_run_fails(*args, **kwargs):
        if next(calls) == 1:
            raise polars.exceptions.ComputeError("simulated")
        return real_read_avro(*args, **kwargs)

    monkeypatch.setattr(polars, "read_avro", second_run_fails)
    view = memoryview(payload)
    plan = avro_arrow._plan(json.dumps(ALL_TYPES), None)
    assert avro_arrow._decode_polars(plan, view, avro_arrow._record_lengths(view, 200, "")) is None
    assert_tables_identical(decode_avro_records(json.dumps(ALL_TYPES), payload, 200), oracle(records))


def test_projection():
    records = all_types_records(50)
    payload = encode_payload(ALL_TYPES, records)
    columns = ["tags", "ts_ms", "i", "inner"]
    full = oracle(records)
    reference, fast = both_decoders(json.dumps(ALL_TYPES), payload, 50, columns)
    assert fast is not None
    assert_tables_identical(reference, full.select(columns))
    assert_tables_identical(fast, full.select(columns))
    assert_tables_identical(decode_avro_records(json.dumps(ALL_TYPES), memoryview(payload), 50, columns=columns),
                            full.select(columns))
    no_columns = decode_avro_records(json.dumps(ALL_TYPES), payload, 50, columns=[])
    assert (no_columns.num_rows, no_columns.num_columns) == (50, 0)
    for bad in (["nope"], ["i", "i"]):
        with pytest.raises(ValueError):
            decode_avro_records(json.dumps(ALL_TYPES), payload, 50, columns=bad)


def test_exact_types_from_sliced_arrays():
    """The last step rebuilds maps and non-nullable fields; chunks may be slices of larger arrays."""
    arrow_type = pa.struct([pa.field("a", pa.int32(), nullable=False),
                            ("m", pa.map_(pa.string(), pa.list_(pa.field("element", pa.int64(), nullable=False))))])
    values = [{"a": 1, "m": [("k", [1, 2])]}, None, {"a": 3, "m": None}, {"a": 4, "m": [("z", []), ("y", [5])]}]
    decoded = pa.array([None if v is None else
                        {"a": v["a"], "m": None if v["m"] is None else [{"key": k, "value": x} for k, x in v["m"]]}
                        for v in values], avro_arrow._decoded_form(arrow_type))
    expected = pa.array(values, arrow_type)
    for start, length in [(0, 4), (1, 3), (2, 2), (3, 1), (1, 0)]:
        exact = avro_arrow._exact(decoded.slice(start, length), pa.field("x", arrow_type))
        exact.validate(full=True)
        assert exact.type == arrow_type
        assert exact.to_pylist() == expected.slice(start, length).to_pylist()


def test_concatenation_reads_like_the_joined_bytes():
    """The file polars reads the OCF from: its parts end to end, whatever the read sizes and seeks."""
    parts = [b"Obj\x01head", memoryview(bytes(range(256)) * 3)[5:700], b"", b"sync-marker-16by"]
    joined = b"".join(parts)
    for size in (1, 3, 64, 4096):
        reader = io.BufferedReader(avro_arrow._Concatenation(*parts), buffer_size=max(size, 8))
        chunks = []
        while chunk := reader.read(size):
            chunks.append(chunk)
        assert b"".join(chunks) == joined
    raw = avro_arrow._Concatenation(*parts)
    assert raw.seek(-20, io.SEEK_END) == len(joined) - 20
    assert raw.read() == joined[-20:]
    raw.seek(5)
    assert raw.read(10) == joined[5:15]
    assert raw.seek(3, io.SEEK_CUR) == 18 and raw.read(1) == joined[18:19]


def test_zero_records():
    table = decode_avro_records(json.dumps(ALL_TYPES), b"", 0, columns=["l", "s"])
    assert table.num_rows == 0
    assert table.schema == pa.schema([ALL_TYPES_ARROW.field("l"), ALL_TYPES_ARROW.field("s")])


COLOR = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}
STRINGS_MAP = pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string(), nullable=False))
#: Decimals wider than polars' 128 bits: both decoders read their raw bytes, so both decode them.
WIDE_DECIMALS = {
    "decimal256 bytes": (
        {"name": "v", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 5}]},
        pa.field("v", pa.decimal256(40, 5)), lambda rng: Decimal(rng.randrange(-10**40 + 1, 10**40)).scaleb(-5)),
    "decimal256 fixed": (
        {"name": "v", "type": {"type": "fixed", "name": "F20", "size": 20, "logicalType": "decimal",
                               "precision": 45}},
        pa.field("v", pa.decimal256(45, 0), nullable=False), lambda rng: Decimal(rng.randrange(-10**45 + 1, 10**45))),
}
#: Avro features polars' reader cannot decode: (Avro field, Arrow field, value maker).
FALLBACK_FEATURES = {
    "null type": ({"name": "v", "type": "null"}, pa.field("v", pa.null()), lambda rng: None),
    "enum": ({"name": "v", "type": COLOR}, pa.field("v", pa.string(), nullable=False),
             lambda rng: rng.choice(COLOR["symbols"])),
    "nullable enum": ({"name": "v", "type": [COLOR, "null"]}, pa.field("v", pa.string()),
                      lambda rng: rng.choice([None, *COLOR["symbols"]])),
    "enum in maps in arrays": (
        {"name": "v", "type": {"type": "array", "items": {"type": "map", "values": COLOR}}},
        pa.field("v", pa.list_(pa.field("element", STRINGS_MAP, nullable=False)), nullable=False),
        lambda rng: [{f"p{k}": rng.choice(COLOR["symbols"]) for k in range(rng.randrange(3))}
                     for _ in range(rng.randrange(3))]),
    "single-branch union": ({"name": "v", "type": ["string"]}, pa.field("v", pa.string(), nullable=False),
                            lambda rng: rng.choice(WORDS)),
}


@pytest.mark.parametrize("feature", sorted(FALLBACK_FEATURES) + sorted(WIDE_DECIMALS))
def test_features_polars_cannot_decode_itself(feature):
    """Left to fastavro (no fast path for the schema), or, for decimals polars cannot hold, read by both
    decoders as raw bytes and converted alike."""
    avro_field, arrow_field, make = {**FALLBACK_FEATURES, **WIDE_DECIMALS}[feature]
    schema = {"type": "record", "name": "r", "fields": [{"name": "k", "type": "string"}, avro_field]}
    rng = random.Random(3)
    records = [{"k": str(i), "v": make(rng)} for i in range(30)]
    expected = oracle(records, pa.schema([pa.field("k", pa.string(), nullable=False), arrow_field]))
    assert arrow_schema_from_avro(schema) == expected.schema
    payload = encode_payload(schema, records)
    reference, fast = both_decoders(json.dumps(schema), payload, len(records))
    assert (fast is None) == (feature in FALLBACK_FEATURES)
    for table in (decode_avro_records(json.dumps(schema), payload, len(records)), reference, fast or reference):
        assert_tables_identical(table, expected)
    assert records_to_avro_dicts(reference, json.dumps(schema)) == records


def test_invalid_decimal_annotation_is_ignored():
    """Avro: an invalid logical type is ignored (here: 9 digits cannot fit a 2-byte fixed)."""
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "x", "type": {"type": "fixed", "name": "F2", "size": 2, "logicalType": "decimal", "precision": 9}},
        {"name": "y", "type": {"type": "bytes", "logicalType": "decimal", "scale": 2}}]}
    assert arrow_schema_from_avro(schema).types == [pa.binary(), pa.binary()]


@pytest.mark.parametrize("schema, message", [
    ({"type": "record", "name": "r", "fields": [{"name": "v", "type": ["null", "int", "string"]}]}, "field v"),
    ({"type": "record", "name": "r", "fields": [{"name": "outer", "type": {"type": "record", "name": "o", "fields": [
        {"name": "inner", "type": ["int", "long"]}]}}]}, "field outer.inner"),
    ({"type": "record", "name": "r", "fields": [{"name": "xs", "type": {"type": "array", "items": ["null", "int",
                                                                                                  "float"]}}]},
     "field xs.element"),
    ({"type": "record", "name": "node", "fields": [{"name": "next", "type": ["null", "node"]}]}, "recursive"),
    ({"type": "record", "name": "r", "fields": [{"name": "v", "type": "Missing"}]}, "unknown type"),
    ({"type": "array", "items": "int"}, "record"),
])
def test_unsupported_schemas(schema, message):
    with pytest.raises(UnsupportedTableError, match=message):
        arrow_schema_from_avro(json.dumps(schema))
    with pytest.raises(UnsupportedTableError):
        decode_avro_records(json.dumps(schema), b"", 0)


def test_schema_that_is_not_json():
    with pytest.raises(UnsupportedTableError):
        arrow_schema_from_avro("{not json")


# --- damaged blocks -----------------------------------------------------------------------------------------

SMALL = {"type": "record", "name": "r", "fields": [
    {"name": "k", "type": ["null", "string"]}, {"name": "n", "type": "long"},
    {"name": "c", "type": ["null", "double"]}]}
SMALL_RECORDS = [{"k": "key-1", "n": -5, "c": 0.5}, {"k": None, "n": 1 << 40, "c": None}, {"k": "", "n": 0, "c": -1e9}]


def decode_or_corrupt(payload, count, schema=SMALL, path="dir/.f1_001.log.1_0-1-1"):
    """decode_avro_records with the fast decoder forced on (whatever the record count) and with it off: both
    return the same table of the schema, or both raise CorruptFileError naming ``path``."""
    outcomes = []
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(avro_arrow, "FAST_DECODER", fast)
            patch.setattr(avro_arrow, "FAST_MIN_RECORDS", 1)
            try:
                table = decode_avro_records(json.dumps(schema), payload, count, path=path)
            except CorruptFileError as exc:
                assert path in str(exc)
                outcomes.append(exc)
                continue
        table.validate(full=True)
        assert table.schema == arrow_schema_from_avro(schema)
        assert table.num_rows == count
        outcomes.append(table)
    fast_outcome, reference = outcomes
    if isinstance(reference, CorruptFileError):
        assert isinstance(fast_outcome, CorruptFileError), "the fast decoder returned what the reference rejects"
    else:
        assert isinstance(fast_outcome, pa.Table), f"the fast decoder rejects what the reference reads: {fast_outcome}"
        assert_tables_identical(fast_outcome, reference)
    return reference


def test_truncated_payloads():
    payload = encode_payload(SMALL, SMALL_RECORDS)
    for cut in range(len(payload)):
        assert isinstance(decode_or_corrupt(payload[:cut], 3), CorruptFileError), cut


def test_bad_counts():
    payload = encode_payload(SMALL, SMALL_RECORDS)
    for count in (-1, 2, 4, len(payload), 2**31 - 1):
        assert isinstance(decode_or_corrupt(payload, count), CorruptFileError), count
    assert isinstance(decode_or_corrupt(b"", 1), CorruptFileError)
    assert isinstance(decode_or_corrupt(b"\x00\x00\x00\x00junk", 1), CorruptFileError)


def test_bad_lengths():
    first = encode_payload(SMALL, SMALL_RECORDS[:1])
    rest = encode_payload(SMALL, SMALL_RECORDS[1:])
    (length,) = struct.unpack_from(">i", first)
    for bad in (-1, -2**31, length + 1, length + len(rest), 2**31 - 1):
        payload = struct.pack(">i", bad) + first[4:] + rest
        assert isinstance(decode_or_corrupt(payload, 3), CorruptFileError), bad
    # a length too short for its record: the record runs out of bytes
    payload = struct.pack(">i", length - 1) + first[4:-1] + rest
    assert isinstance(decode_or_corrupt(payload, 3), CorruptFileError)


@pytest.mark.parametrize("fast", [True, False])
def test_record_longer_than_its_values_is_corrupt(fast, monkeypatch):
    """Hudi's Java reader decodes each record from its own slice and skips to the next by the length, so it
    would ignore bytes left inside a record's slice; no writer leaves any, so they are damage (the length,
    or the bytes inside, were hit), and both decoders say so instead of one of them reading on."""
    monkeypatch.setattr(avro_arrow, "FAST_DECODER", fast)
    monkeypatch.setattr(avro_arrow, "FAST_MIN_RECORDS", 1)
    first = encode_payload(SMALL, SMALL_RECORDS[:1])
    payload = struct.pack(">i", len(first) - 4 + 2) + first[4:] + b"\x07\x07" + encode_payload(SMALL, SMALL_RECORDS[1:])
    error = decode_or_corrupt(payload, 3)
    assert isinstance(error, CorruptFileError)
    assert f"record 0 is {len(first) - 2} bytes but its values take {len(first) - 4}" in str(error)


def checks_verdict(monkeypatch, plan, payload: bytes, count: int) -> bool | None:
    """Whether the check of polars' reading of ``payload`` accepts it, asserting that the in-place check
    (numpy) and the record-by-record one (fastavro's writer) agree; None when the block structure is corrupt
    or polars declines."""
    view = memoryview(payload)
    try:
        lengths = avro_arrow._record_lengths(view, count, "")
    except CorruptFileError:
        return None
    table = avro_arrow._decode_polars(plan, view, lengths)
    if table is None:
        return None
    answers = []
    for threshold in (0, 10**9):
        monkeypatch.setattr(avro_arrow, "VECTOR_CHECK_MIN_RECORDS", threshold)
        answers.append(avro_arrow._misread(table, plan, view, lengths) is None)
    assert answers[0] == answers[1], payload.hex()
    return answers[0]


def test_vectorized_and_per_record_checks_agree(monkeypatch):
    """The check of a fast result compares the values with the bytes in place with numpy (large blocks) or
    re-encodes record by record with fastavro's writer (small ones): on the same polars results, damaged or
    not, both accept exactly the same."""
    rng = random.Random(5)
    plan = avro_arrow._plan(json.dumps(ALL_TYPES), None)
    good = encode_payload(ALL_TYPES, all_types_records(40, seed=9))
    verdicts = Counter()
    for _ in range(120):
        payload = bytearray(good)
        for _ in range(rng.randrange(0, 3)):
            payload[rng.randrange(len(payload))] ^= 1 << rng.randrange(8)
        verdicts[checks_verdict(monkeypatch, plan, bytes(payload), 40)] += 1
    assert verdicts[True] and verdicts[False], verdicts


@pytest.mark.parametrize("schema, records", [(ALL_TYPES, all_types_records(40, seed=9)),
                                             (ALL_TYPES, all_types_records(7, seed=3)),
                                             (SMALL, SMALL_RECORDS * 10)], ids=["all_types", "few", "small"])
def test_in_place_and_per_record_checks_agree_on_overwritten_bytes(monkeypatch, schema, records):
    """The same with bytes overwritten by those lenient decoders misread (a varint's continuation byte, union
    index 1 or 2, boolean byte 2 or 0xff) as well as flipped, in blocks whose last value ends the block: the
    in-place check reads there past the last whole word."""
    rng = random.Random(len(records))
    plan = avro_arrow._plan(json.dumps(schema), None)
    good = encode_payload(schema, records)
    verdicts = Counter()
    for _ in range(200):
        payload = bytearray(good)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(payload))
            if rng.random() < 0.5:
                payload[at] ^= 1 << rng.randrange(8)
            else:
                payload[at] = rng.choice([0, 1, 2, 4, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        verdicts[checks_verdict(monkeypatch, plan, bytes(payload), len(records))] += 1
    assert verdicts[True] and verdicts[False], verdicts


def test_garbage_records_never_escape_as_other_errors():
    """Right lengths, random bytes inside: a table or CorruptFileError, never another exception."""
    rng = random.Random(11)
    records = all_types_records(5, seed=5)
    good = encode_payload(ALL_TYPES, records)
    for _ in range(150):
        payload = bytearray(good)
        offset = 0
        for _ in range(5):  # damage bytes inside the records, keep the length prefixes
            (length,) = struct.unpack_from(">i", payload, offset)
            for _ in range(rng.randrange(1, 4)):
                if length:
                    payload[offset + 4 + rng.randrange(length)] = rng.randrange(256)
            offset += 4 + length
        decode_or_corrupt(bytes(payload), 5, schema=ALL_TYPES)
    for _ in range(50):  # entirely random records
        chunks = [bytes(rng.randrange(256) for _ in range(rng.randrange(30))) for _ in range(3)]
        payload = b"".join(struct.pack(">i", len(c)) + c for c in chunks)
        decode_or_corrupt(payload, 3, schema=ALL_TYPES)
        decode_or_corrupt(payload, 3)


def test_polars_failure_falls_back_to_fastavro(monkeypatch):
    payload = encode_payload(SMALL, SMALL_RECORDS)

    def broken(*args, **kwargs):
        raise polars.exceptions.PanicException("simulated panic")

    monkeypatch.setattr(polars, "read_avro", broken)
    assert_tables_identical(decode_avro_records(json.dumps(SMALL), payload, 3),
                            oracle(SMALL_RECORDS, arrow_schema_from_avro(SMALL)))


# --- records_to_avro_dicts ----------------------------------------------------------------------------------

def test_round_trip_every_type():
    records = all_types_records(100, seed=21)
    table = oracle(records)
    rows = records_to_avro_dicts(table, json.dumps(ALL_TYPES))
    payload = encode_payload(ALL_TYPES, rows)
    assert payload == encode_payload(ALL_TYPES, records)
    assert_tables_identical(decode_avro_records(json.dumps(ALL_TYPES), payload, len(rows)), table)


def test_round_trip_accepts_other_arrow_layouts():
    """Large strings, extra columns, another column order: the Avro schema decides the output."""
    table = oracle(SMALL_RECORDS, arrow_schema_from_avro(SMALL))
    other = pa.table({"extra": [1, 2, 3], "n": table["n"], "c": table["c"].cast(pa.large_string()),
                      "k": table["k"].cast(pa.large_string())})
    assert records_to_avro_dicts(other, json.dumps(SMALL)) == SMALL_RECORDS


def test_writer_rejects_what_avro_cannot_hold():
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
    table = pa.table({"t": pa.array([1_500], TS)})  # 1.5 ms: not a whole millisecond
    with pytest.raises(ValueError):
        records_to_avro_dicts(table, json.dumps(schema))
    with pytest.raises(ValueError, match="'t'"):
        records_to_avro_dicts(pa.table({"u": [1]}), json.dumps(schema))
