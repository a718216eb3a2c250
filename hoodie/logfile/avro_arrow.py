"""Avro records of Hudi Avro data blocks -> Arrow tables (the way back, for the writer, is
:mod:`hudi_streaming.writer.avro_encode`).

The merge code concatenates log rows with base-file rows, so a decoded block must come out with exactly the
Arrow types the table's parquet base files (and Spark) have: :func:`arrow_schema_from_avro` is that mapping,
and :func:`decode_avro_records` always returns a table of that schema.

Avro decoding is the reader's bottleneck, so there are two decoders behind one entry point:

* the **reference** decoder: fastavro, one record at a time, then ``pyarrow.Table.from_pylist``. It is slow
  (~0.1M records/s) but simple, and it decides every case the fast decoder cannot.
* the **fast** decoder: the block is rewrapped as an in-memory Avro object-container file (OCF) and decoded by
  polars' native Avro reader (~10x faster). The length prefixes of the records are not stripped: the OCF's
  schema gets an extra leading ``fixed(4)`` field, so each ``int32 length | record`` of the block reads as one
  record of the OCF and the block content is the OCF's data block unchanged (no per-record Python work).

Both decoders read the same *decode schema*, which has the writer schema's binary encoding but is easier to
decode: no properties that do not change the encoding (doc, default, aliases, ``avro.java.string``, ...), no
date/time/timestamp/uuid logical types (both decoders return the raw ints and strings and one set of Arrow
casts makes the target types), and every ``map<V>`` written as ``array<record{key: string, value: V}>`` (the
same bytes; polars cannot decode maps; the entries become a map again at the end, without copying), and every
decimal as its raw bytes (writers differ in how many sign bytes they write, see :mod:`.avro_canonical`;
:func:`_decimals` makes the decimals, for both decoders alike, and polars then reads decimals of any width).

polars releases the GIL while decoding, so a large block is cut into runs of records decoded by parallel
threads. Schemas with features polars cannot decode take the reference decoder for all their blocks: enums
(polars panics on an enum below a union), ``[T]`` single-branch unions, the ``null`` type. Spark-written
Hudi tables have none of these (Hudi writes enums as strings).

The block structure (lengths, record count) is validated before either decoder runs, and neither decoder's
result is trusted: both are lenient about record content (polars reads any union index but the null one as
the value and any boolean byte but 1 as false; fastavro reads a negative union index from the end and any
nonzero boolean as true; neither notices bytes left in a record after its last value), so a result counts
only when its values encode back to exactly the bytes of every record (:mod:`.avro_canonical`). A fast
result that fails that, or any failure of the fast decoder (polars error or panic), hands the block to the
reference decoder, whose result must pass the same check or the block raises
:class:`~hoodie.errors.CorruptFileError`. So the fast path returns exactly what the reference returns, and
neither returns values other than the ones the bytes encode.

polars is imported by the first decode that uses it, not with this module: it costs about 0.35 s and 60 MiB in
each process that imports it, and most of the Python workers PySpark starts for this source (registration,
schema, planning, the driver's calls on a table without log files) never decode a log block. A process that
forks after importing it (PySpark's worker daemon) would also hand its children a polars whose thread pool did
not survive the fork.
"""
from __future__ import annotations

import io
import itertools
import json
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import CorruptFileError, UnsupportedTableError
from ..pools import SharedPool
from .avro_canonical import NotCanonical, check_records, named_types

__all__ = ["arrow_schema_from_avro", "avro_value_schemas", "decode_avro_records", "record_schema_problem",
           "split_records"]

_INT32_BE = struct.Struct(">i")
_UTC_MICROS = pa.timestamp("us", tz="UTC")
# Any 16 bytes do: the sync marker only has to repeat after the single data block of our own OCF.
_OCF_SYNC = b"hoodie-avro-sync"
# Names of the types the decode schema adds; Hudi schemas use other namespaces.
_OWN_NAMESPACE = "hoodie.avro_arrow"
#: Deepest nesting of Avro types a schema may have (Spark and Hudi schemas stay far below).
MAX_NESTING = 64
#: Whether blocks go to the fast decoder first (where polars and the schema allow); False sends every block to
#: the reference decoder, which the tests use to hold the two side by side.
FAST_DECODER = True
#: Below this many records a block takes the reference decoder: polars' fixed cost per call (and that of the
#: vectorized check of its result) outweighs its speed on a few records.
FAST_MIN_RECORDS = 128
#: Below this many records the check of a fast result re-encodes record by record (:func:`_rows_misread`):
#: the vectorized check's cost per numpy call outweighs a few records.
VECTOR_CHECK_MIN_RECORDS = 64
# Below this many records per thread, handing a block to threads costs more than it saves.
_RECORDS_PER_THREAD = 25_000
_WORKERS = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)

_PRIMITIVES = {
    # avro type -> (arrow type, polars can decode it)
    "null": (pa.null(), False),  # polars: "Deserializing type Null is still not implemented"
    "boolean": (pa.bool_(), True),
    "int": (pa.int32(), True),
    "long": (pa.int64(), True),
    "float": (pa.float32(), True),
    "double": (pa.float64(), True),
    "bytes": (pa.binary(), True),
    "string": (pa.string(), True),
}

# Logical types on int/long: (underlying avro type, wire arrow type, target arrow type). The wire type holds the
# raw value in Avro's own unit (a zero-copy cast of the int); the target is what Hudi's readers return, in
# microseconds as Spark has them (in the fixture table_all_data_types Hudi even wrote its timestamp-millis and
# "local" columns as timestamp-micros). A local timestamp (Spark's TIMESTAMP_NTZ) has no zone: Hudi's Spark
# reader returns it as TIMESTAMP_NTZ, and a zone here would make Spark show it shifted by the session's zone.
_LOCAL_MICROS = pa.timestamp("us")
_TEMPORAL = {
    "date": ("int", pa.date32(), pa.date32()),
    "time-millis": ("int", pa.time32("ms"), pa.time32("ms")),
    "time-micros": ("long", pa.time64("us"), pa.time64("us")),
    "timestamp-millis": ("long", pa.timestamp("ms", tz="UTC"), _UTC_MICROS),
    "timestamp-micros": ("long", _UTC_MICROS, _UTC_MICROS),
    "local-timestamp-millis": ("long", pa.timestamp("ms"), _LOCAL_MICROS),
    "local-timestamp-micros": ("long", _LOCAL_MICROS, _LOCAL_MICROS),
}


class _Converted(NamedTuple):
    """One Avro schema node seen from every side that needs it."""

    target: pa.DataType  # what callers get (parquet base file / Spark types)
    wire: pa.DataType  # what the decoders' values are: temporal types in Avro's unit
    raw: pa.DataType  # plain ints for temporal types: what fastavro's writer is given
    nullable: bool  # a union with null
    decode_json: Any  # this node in the decode schema (module docstring)
    polars_ok: bool  # polars' Avro reader decodes this node


def _on_each_side(make: Callable[[str], pa.DataType]) -> tuple[pa.DataType, pa.DataType, pa.DataType]:
    """``(target, wire, raw)`` of a composite type: ``make`` builds it from the named side of its parts."""
    return make("target"), make("wire"), make("raw")


class _SchemaConverter:
    """Walks one Avro schema, resolving named types the way Avro does (full names, inherited namespaces)."""

    def __init__(self) -> None:
        self._named: dict[str, _Converted | None] = {}  # None while the type's own definition is being walked
        self._map_entries = itertools.count()
        self._depth = 0

    def convert(self, node: Any, namespace: str, where: str) -> _Converted:
        """This node, at most :data:`MAX_NESTING` levels deep: every walk over schemas and values here
        (and fastavro's and polars') recurses once per level, and a schema from a damaged or hostile file
        must fail as unsupported, not as a bare ``RecursionError``."""
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                raise UnsupportedTableError(f"Avro schema: types nest deeper than {MAX_NESTING} levels at "
                                            f"{where or 'top level'}")
            return self._convert(node, namespace, where)
        finally:
            self._depth -= 1

    def _convert(self, node: Any, namespace: str, where: str) -> _Converted:
        if isinstance(node, list):
            return self._union(node, namespace, where)
        if isinstance(node, str):
            if node in _PRIMITIVES:
                arrow, polars_ok = _PRIMITIVES[node]
                return _Converted(arrow, arrow, arrow, node == "null", node, polars_ok)
            return self._reference(node, namespace, where)
        if not isinstance(node, dict) or "type" not in node:
            raise UnsupportedTableError(f"Avro schema: invalid type at {where or 'top level'}: {node!r:.200}")
        kind = node["type"]
        if not isinstance(kind, str):  # {"type": {...}}: a wrapped schema
            return self.convert(kind, namespace, where)
        if kind in _PRIMITIVES:
            return self._annotated_primitive(node, kind, namespace, where)
        if kind in ("record", "error"):
            return self._record(node, namespace, where)
        if kind == "enum":
            name = self._define(node, namespace, where)
            # polars panics ("entered unreachable code") on an enum below a union: leave enums to fastavro
            result = _Converted(pa.string(), pa.string(), pa.string(), False,
                                {"type": "enum", "name": name, "symbols": node.get("symbols")}, False)
            self._named[name] = result
            return result
        if kind == "fixed":
            return self._fixed(node, namespace, where)
        if kind == "array":
            item = self.convert(node.get("items"), namespace, f"{where}.element")
            return _Converted(*_on_each_side(lambda side: pa.list_(pa.field("element", getattr(item, side),
                                                                             item.nullable))),
                              False, {"type": "array", "items": item.decode_json}, item.polars_ok)
        if kind == "map":
            return self._map(node, namespace, where)
        return self._reference(kind, namespace, where)

    def _union(self, branches: list, namespace: str, where: str) -> _Converted:
        others = [b for b in branches if b != "null"]
        if len(others) > 1:
            raise UnsupportedTableError(
                f"Avro schema: field {where or '(top level)'} is a union of several non-null types "
                f"{branches!r:.200}; only [\"null\", T] unions have an Arrow/Spark equivalent")
        if not others:
            if len(branches) == 1:
                return self.convert("null", namespace, where)
            raise UnsupportedTableError(f"Avro schema: invalid union at {where}: {branches!r}")
        if len(branches) > 2 or isinstance(others[0], list):
            raise UnsupportedTableError(f"Avro schema: invalid union at {where}: {branches!r:.200}")
        inner = self.convert(others[0], namespace, where)
        # Keep the branch order: the encoded branch index refers to it. polars cannot decode [T] unions.
        decode_json = [b if b == "null" else inner.decode_json for b in branches]
        return inner._replace(nullable=len(branches) == 2, decode_json=decode_json,
                              polars_ok=inner.polars_ok and len(branches) == 2)

    def _map(self, node: dict, namespace: str, where: str) -> _Converted:
        value = self.convert(node.get("values"), namespace, f"{where}.value")
        key = pa.field("key", pa.string(), nullable=False)
        entry = {"type": "record", "name": f"{_OWN_NAMESPACE}.MapEntry{next(self._map_entries)}",
                 "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": value.decode_json}]}
        return _Converted(*_on_each_side(lambda side: pa.map_(key, pa.field("value", getattr(value, side),
                                                                           value.nullable))),
                          False, {"type": "array", "items": entry}, value.polars_ok)

    def _reference(self, name: str, namespace: str, where: str) -> _Converted:
        candidates = [name] if "." in name or not namespace else [f"{namespace}.{name}", name]
        for candidate in candidates:
            if candidate in self._named:
                found = self._named[candidate]
                if found is None:
                    raise UnsupportedTableError(
                        f"Avro schema: recursive type {candidate} at {where} has no Arrow equivalent")
                # The decode schema must refer to the definition, not repeat it (Avro forbids redefinition).
                return found._replace(decode_json=candidate)
        raise UnsupportedTableError(f"Avro schema: unknown type {name!r} at {where or 'top level'}")

    def _define(self, node: dict, namespace: str, where: str) -> str:
        """Full name of the named type ``node``; marks it as being defined."""
        name = node.get("name")
        if not isinstance(name, str) or not name:
            raise UnsupportedTableError(f"Avro schema: named type without a name at {where or 'top level'}")
        node_namespace = node.get("namespace", namespace)
        if "." not in name and node_namespace:
            name = f"{node_namespace}.{name}"
        if name in self._named:
            raise UnsupportedTableError(f"Avro schema: type {name} defined twice (at {where or 'top level'})")
        self._named[name] = None
        return name

    def _record(self, node: dict, namespace: str, where: str) -> _Converted:
        name = self._define(node, namespace, where)
        inner_namespace = name.rpartition(".")[0]
        fields = node.get("fields")
        if not isinstance(fields, list) or not all(isinstance(f, dict) and "name" in f for f in fields):
            raise UnsupportedTableError(f"Avro schema: record {name} has invalid fields")
        converted = [(f["name"], self.convert(f.get("type"), inner_namespace,
                                              f"{where}.{f['name']}" if where else f["name"])) for f in fields]
        result = _Converted(
            *_on_each_side(lambda side: pa.struct([pa.field(n, getattr(c, side), c.nullable) for n, c in converted])),
            False,
            {"type": "record", "name": name, "fields": [{"name": n, "type": c.decode_json} for n, c in converted]},
            all(c.polars_ok for _, c in converted))
        self._named[name] = result
        return result

    def _fixed(self, node: dict, namespace: str, where: str) -> _Converted:
        name = self._define(node, namespace, where)
        size = node.get("size")
        if not isinstance(size, int) or size < 0:
            raise UnsupportedTableError(f"Avro schema: fixed {name} has invalid size {size!r}")
        decode_json: dict = {"type": "fixed", "name": name, "size": size}  # a decimal's raw bytes too
        decimal = _decimal_type(node, max_bytes=size)
        if decimal is None:  # Spark reads a plain fixed as BinaryType
            result = _Converted(pa.binary(), pa.binary(), pa.binary(), False, decode_json, True)
        else:
            result = _Converted(decimal, decimal, decimal, False, decode_json, True)
        self._named[name] = result
        return result

    def _annotated_primitive(self, node: dict, kind: str, namespace: str, where: str) -> _Converted:
        plain = self.convert(kind, namespace, where)
        logical = node.get("logicalType")
        if logical == "decimal" and kind == "bytes":
            decimal = _decimal_type(node, max_bytes=None)
            if decimal is not None:  # decoded as its raw bytes (avro_canonical), converted by _exact
                return _Converted(decimal, decimal, decimal, False, "bytes", True)
        if logical in _TEMPORAL and _TEMPORAL[logical][0] == kind:
            _, wire, target = _TEMPORAL[logical]
            return plain._replace(target=target, wire=wire)
        # uuid (a string), types Spark does not know (timestamp-nanos, duration), misplaced annotations:
        # Avro says to ignore them and use the underlying type.
        return plain


def _decimal_type(node: dict, max_bytes: int | None) -> pa.DataType | None:
    """The Arrow decimal for a ``decimal`` logical type, or None when the annotation is absent or invalid
    (the Avro spec says an invalid logical type is ignored and the underlying type used)."""
    if node.get("logicalType") != "decimal":
        return None
    precision, scale = node.get("precision"), node.get("scale", 0)
    if not isinstance(precision, int) or not isinstance(scale, int) or not 0 <= scale <= precision or precision < 1:
        return None
    if max_bytes is not None and (max_bytes < 1 or precision > len(str(2 ** (8 * max_bytes - 1) - 1)) - 1):
        return None  # the fixed cannot hold that many digits
    if precision > 76:
        raise UnsupportedTableError(f"Avro schema: decimal precision {precision} is beyond Arrow's 76 digits")
    return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)


def _decoded_form(arrow_type: pa.DataType) -> pa.DataType:
    """``arrow_type`` as the decoders build it: every map as the list of its key/value structs (the decode
    schema's arrays), every decimal as its raw two's complement bytes, and every nested field nullable,
    because polars puts nulls in the fields of a null struct even where the field cannot be null.
    :func:`_exact` makes the exact type again."""
    if pa.types.is_decimal(arrow_type):
        return pa.binary()
    if pa.types.is_map(arrow_type):
        entries = pa.struct([pa.field("key", _decoded_form(arrow_type.key_type)),
                             pa.field("value", _decoded_form(arrow_type.item_type))])
        return pa.list_(pa.field("element", entries))
    if pa.types.is_list(arrow_type):
        return pa.list_(pa.field("element", _decoded_form(arrow_type.value_type)))
    if pa.types.is_struct(arrow_type):
        return pa.struct([pa.field(f.name, _decoded_form(f.type)) for f in arrow_type])
    return arrow_type


def _exact(array: pa.Array, field: pa.Field) -> pa.Array:
    """``array``, of ``_decoded_form(field.type)``, rebuilt as ``field.type``: maps from their entries, and no
    nulls in fields that cannot be null (those are below null structs, where any value does). Zero-copy but
    for validity bitmaps."""
    arrow_type = field.type
    if pa.types.is_decimal(arrow_type):
        return _decimals(array, arrow_type)
    mask = array.is_null() if field.nullable and array.null_count else None
    if pa.types.is_struct(arrow_type):
        return pa.StructArray.from_arrays([_exact(array.field(i), f) for i, f in enumerate(arrow_type)],
                                          fields=list(arrow_type), mask=mask)
    if pa.types.is_map(arrow_type):
        offsets, entries = _list_parts(array)
        return pa.MapArray.from_arrays(offsets, _exact(entries.field(0), arrow_type.key_field),
                                       _exact(entries.field(1), arrow_type.item_field), type=arrow_type, mask=mask)
    if pa.types.is_list(arrow_type):
        offsets, values = _list_parts(array)
        return pa.ListArray.from_arrays(offsets, _exact(values, arrow_type.value_field), type=arrow_type, mask=mask)
    if array.null_count and not field.nullable:
        return pa.Array.from_buffers(arrow_type, len(array), [None, *array.buffers()[1:]], offset=array.offset)
    return array


def _decimals(array: pa.Array, decimal_type: pa.DataType) -> pa.Array:
    """Avro decimals (big-endian two's complement bytes of the unscaled value, of any length) as
    ``decimal_type``; ``ValueError`` for an empty value (Java's ``BigInteger`` refuses it) or one beyond the
    type's precision."""
    width = decimal_type.byte_width
    data, lengths = _binary_parts(array)
    present = array.is_valid().to_numpy(zero_copy_only=False)
    if (lengths[present] == 0).any():
        raise ValueError("a decimal of no bytes")
    rows = np.repeat(np.arange(len(array)), lengths)
    starts = np.cumsum(lengths) - lengths
    column = np.repeat(lengths - 1 + starts, lengths) - np.arange(len(data))  # byte j of a value: column L-1-j
    negative = np.zeros(len(array), bool)
    negative[lengths > 0] = data[starts[lengths > 0]] >= 0x80
    out = np.zeros((len(array), width), np.uint8)
    out[negative] = 0xFF
    inside = column < width
    if not inside.all():  # longer than the type: only sign-extension bytes may be left out
        extension = np.where(negative[rows[~inside]], 0xFF, 0)
        if (data[~inside] != extension).any():
            raise ValueError(f"a decimal of more than {width} bytes")
    out[rows[inside], column[inside]] = data[inside]
    if (negative != (out[:, -1] >= 0x80))[present].any():
        raise ValueError(f"a decimal of more than {width} bytes")
    decimals = pa.Array.from_buffers(decimal_type, len(array), [None, pa.py_buffer(out)])
    if array.null_count:
        decimals = pc.if_else(array.is_valid(), decimals, pa.scalar(None, decimal_type))
    decimals.validate(full=True)  # ArrowInvalid (a ValueError) for a value beyond the precision
    return decimals


def _binary_parts(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of a binary array (any layout) end to end, and each value's length."""
    array = array.cast(pa.large_binary())
    offsets = np.frombuffer(array.buffers()[1], np.int64, len(array) + 1, array.offset * 8)
    data = array.buffers()[2]
    values = np.frombuffer(data, np.uint8)[offsets[0]:offsets[-1]] if data is not None else np.empty(0, np.uint8)
    return values, np.diff(offsets)


def _list_parts(array: pa.ListArray) -> tuple[pa.Array, pa.Array]:
    """Offsets from 0 and the values they index, of a list array that may be a slice (``from_arrays`` with a
    mask takes no sliced offsets)."""
    offsets = array.offsets
    first = offsets[0].as_py()
    if array.offset == 0 and first == 0:
        return offsets, array.values
    return pc.subtract(offsets, pa.scalar(first, offsets.type)), array.values.slice(first, offsets[-1].as_py() - first)


def _polars_schema(decode_json: dict) -> dict:
    """The decode schema as polars' Avro reader takes it. polars cannot resolve references to named types,
    so each reference becomes a copy of the definition, and every named type gets a fresh name so that the
    copies do not clash (names do not change the encoding)."""
    definitions: dict[str, dict] = {}
    fresh_names = itertools.count()

    def copy(node: Any) -> Any:
        if isinstance(node, str):
            return copy(definitions[node]) if node in definitions else node
        if isinstance(node, list):
            return [copy(branch) for branch in node]
        if "name" in node:  # record, enum, fixed; the decode schema names them by full name
            definitions.setdefault(node["name"], node)
            node = dict(node, name=f"{_OWN_NAMESPACE}.T{next(fresh_names)}")
        else:
            node = dict(node)
        if "fields" in node:
            node["fields"] = [dict(field, type=copy(field["type"])) for field in node["fields"]]
        if "items" in node:
            node["items"] = copy(node["items"])
        return node

    return copy(decode_json)


def avro_long(value: int) -> bytes:
    """Avro's variable-length zig-zag encoding of a long."""
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def avro_bytes(value: bytes) -> bytes:
    return avro_long(len(value)) + value


@dataclass(frozen=True)
class _Plan:
    """Everything derived from one (writer schema, projection), computed once: see :func:`_plan`."""

    columns: tuple[str, ...]  # the requested top-level fields, in output order
    target: pa.Schema  # the result
    wire: pa.Schema  # what decoded values are (see _Converted.wire)
    raw: pa.Schema  # wire with ints for temporal types (the writer's input)
    decoded: pa.Schema  # _decoded_form of wire: what both decoders' values are cast to first
    staged: pa.Schema  # _decoded_form of target: the casts end here, _exact finishes
    whole: pa.Schema  # ``decoded`` of every field: a decode is proven on all of them, then projected
    whole_raw: pa.Schema  # ``whole`` with ints for temporal types: values as fastavro's writer takes them
    field_types: tuple  # the decode schema's type of every field, for avro_canonical
    named: dict  # full name -> definition of the decode schema's named types
    fastavro_schema: Any  # the parsed decode schema
    ocf_header: bytes | None  # OCF header for polars (decode schema + length-prefix field); None: no fast path
    prefix_field: str  # name of the fixed(4) field that swallows each record's length prefix


@lru_cache(maxsize=256)
def _plan(schema_json: str, columns: tuple[str, ...] | None) -> _Plan:
    try:
        schema = json.loads(schema_json)
    except (ValueError, RecursionError) as exc:
        raise UnsupportedTableError(f"Avro schema is not valid JSON: {exc}") from None
    record = _SchemaConverter().convert(schema, "", "")
    if not pa.types.is_struct(record.target) or not isinstance(record.decode_json, dict):
        raise UnsupportedTableError(f"Avro schema: the top-level type must be a record, not {schema!r:.200}")
    decode_json = record.decode_json
    try:
        fastavro_schema = fastavro.parse_schema(decode_json)
    except Exception as exc:  # fastavro's SchemaParseException, or a KeyError on a malformed schema
        raise UnsupportedTableError(f"Avro schema rejected: {type(exc).__name__}: {exc}") from None

    fields = [f["name"] for f in decode_json["fields"]]
    if columns is None:
        columns = tuple(fields)
    elif len(set(columns)) != len(columns) or not set(columns) <= set(fields):
        raise ValueError(f"columns {list(columns)!r} must be distinct fields of the record {fields!r}")

    prefix_field = "_hoodie_record_length"
    while prefix_field in fields:
        prefix_field += "_"
    ocf_header = None
    if record.polars_ok:  # polars infers its schema from every field, projected or not
        ocf_schema = _polars_schema(dict(decode_json, fields=[
            {"name": prefix_field, "type": {"type": "fixed", "name": "RecordLength", "size": 4}},
            *decode_json["fields"]]))
        meta = {"avro.schema": json.dumps(ocf_schema).encode(), "avro.codec": b"null"}
        ocf_header = (b"Obj\x01" + avro_long(len(meta))
                      + b"".join(avro_bytes(k.encode()) + avro_bytes(v) for k, v in meta.items())
                      + avro_long(0) + _OCF_SYNC)

    def projected(struct_type: pa.StructType, form: Callable[[pa.DataType], pa.DataType] = lambda t: t) -> pa.Schema:
        return pa.schema([field.with_type(form(field.type)) for field in map(struct_type.field, columns)])

    whole = pa.schema([field.with_type(_decoded_form(field.type)) for field in record.wire])
    whole_raw = pa.schema([field.with_type(_decoded_form(field.type)) for field in record.raw])
    return _Plan(columns, projected(record.target), projected(record.wire), projected(record.raw),
                 projected(record.wire, _decoded_form), projected(record.target, _decoded_form), whole, whole_raw,
                 tuple(f["type"] for f in decode_json["fields"]), named_types(decode_json),
                 fastavro_schema, ocf_header, prefix_field)


@lru_cache(maxsize=256)
def record_schema_problem(schema_json: str) -> str | None:
    """Why ``schema_json`` is not an Avro record schema (what every SCHEMA header holds), or None.

    Validity only, as Avro defines it (fastavro parses it); whether the schema has an Arrow equivalent is
    :func:`arrow_schema_from_avro`'s question, and a valid schema without one is unsupported, not damaged.
    """
    try:
        schema = json.loads(schema_json)
    except (ValueError, RecursionError) as exc:
        return f"not JSON: {exc}"
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return "the top-level type is not a record"
    try:
        fastavro.parse_schema(schema)
    except Exception as exc:  # SchemaParseException, UnknownType, a KeyError on a malformed node, RecursionError
        return f"{type(exc).__name__}: {exc}"
    return None


def arrow_schema_from_avro(schema: str | dict) -> pa.Schema:
    """The Arrow schema of records written with Avro ``schema``: the types Hudi's parquet base files hold.

    A field is nullable exactly when its Avro type is a union with null (parquet-avro writes the others as
    ``required``, e.g. ``ts`` in the fixture table_duplicate_keys). Raises
    :class:`~hoodie.errors.UnsupportedTableError` for schemas without an Arrow equivalent (unions of several
    non-null types, recursive records) or that are not valid Avro.
    """
    return _plan(schema if isinstance(schema, str) else json.dumps(schema), None).target


def avro_value_schemas(schema_json: str) -> tuple[pa.Schema, pa.Schema]:
    """``(wire, raw)``: the Arrow schemas an encoder of records with Avro ``schema_json`` casts a table of
    :func:`arrow_schema_from_avro`'s schema to, every field of the record in order
    (:func:`hudi_streaming.writer.avro_encode.records_to_avro_dicts`). ``wire`` holds temporal values in Avro's own unit
    (a timestamp-millis field as ``timestamp[ms]``), ``raw`` the same values as the plain ints Avro writes."""
    plan = _plan(schema_json, None)
    return plan.wire, plan.raw


def decode_avro_records(schema_json: str, payload: bytes | memoryview, count: int, *,
                        columns: list[str] | None = None, path: str = "", lengths: list[int] | None = None) -> pa.Table:
    """Decode the ``count`` length-prefixed records of an Avro data block (the content after the count).

    ``lengths``: the records' lengths when the caller has split this very payload already (:func:`split_records`,
    a Python loop over the records that costs about as much as the fast decode of a small schema).

    Returns a table of ``arrow_schema_from_avro(schema_json)`` restricted to ``columns`` (distinct top-level
    fields of the record, in that order, else ``ValueError``); projection spares the fast decoder building the
    other columns. A bad block structure (a negative length, one past the end, bytes left after ``count``
    records) or an undecodable record raises ``CorruptFileError`` naming ``path``.
    """
    try:
        plan = _plan(schema_json, None if columns is None else tuple(columns))
    except UnsupportedTableError as exc:
        raise UnsupportedTableError(f"{path}: {exc}" if path else str(exc)) from None
    view = memoryview(payload).cast("B")
    lengths = _record_lengths(view, count, path) if lengths is None else lengths
    if not plan.columns:  # nothing to decode (a row count); a table without columns keeps its rows this way
        return pa.table({"rows": pa.nulls(count)}).select([])
    table = None
    if FAST_DECODER and plan.ocf_header is not None and count >= FAST_MIN_RECORDS:
        table = _decode_polars(plan, view, lengths)
        if table is not None and _misread(table, plan, view, lengths) is not None:
            table = None  # the reference decoder decides: it raises, or reads what polars misread
    if table is None:
        table = _decode_fastavro(plan, view, lengths, path)
    return _to_target(table.select(list(plan.columns)), plan, path)


def split_records(view: memoryview, count: int | None) -> list[int]:
    """The lengths of the ``count`` length-prefixed records that must fill ``view`` exactly (``None``: as many
    as there are, for content version 1); ``ValueError`` saying what does not fit.

    The lengths form a chain (each says where the next record starts), so this is a sequential Python loop
    (~0.15 µs a record, kept minimal: the checks run once, after it), and it lets both decoders trust the
    structure.
    """
    size = len(view)
    if count is not None and not 0 <= 4 * count <= size:  # also bounds what polars allocates for the records
        raise ValueError(f"record count {count} is impossible for {size} bytes of records")
    lengths: list[int] = []
    append = lengths.append
    unpack = _INT32_BE.unpack_from
    offset = 0
    try:
        for _ in itertools.repeat(None) if count is None else range(count):
            if count is None and offset == size:
                break
            (length,) = unpack(view, offset)
            append(length)
            if length < 0:
                break
            offset += 4 + length
    except struct.error:  # the next length would start past the end
        pass
    if (count is None or len(lengths) == count) and offset == size and min(lengths, default=0) >= 0:
        return lengths
    negative = next((i for i, length in enumerate(lengths) if length < 0), None)
    if negative is not None:
        problem = f"record {negative} has length {lengths[negative]}"
    elif offset < size:
        problem = f"{size - offset} bytes are left after the records"
    else:
        problem = f"record {len(lengths) - 1} runs past the end"
    raise ValueError(f"the lengths of the {len(lengths) if count is None else count} records do not fit the "
                     f"{size} bytes: {problem}")


def _record_lengths(view: memoryview, count: int, path: str) -> list[int]:
    """:func:`split_records` for the decoders, failing with a :class:`CorruptFileError` naming ``path``."""
    try:
        return split_records(view, count)
    except ValueError as e:
        raise CorruptFileError(f"{path}: Avro data block: {e}") from None


def _misread(table: pa.Table, plan: _Plan, view: memoryview, lengths: list[int]) -> str | None:
    """Why ``table`` (every field, of ``plan.whole``) is not what the records' bytes hold, or None.

    A decode is right exactly when its values encode back to the very bytes of each record
    (:mod:`.avro_canonical`, which compares the values with the bytes in place): that catches what a lenient
    decoder lets through, an invalid union index or boolean byte, a record whose bytes go on after its last
    value, and invalid UTF-8 besides.
    """
    try:
        table.validate(full=True)
        if table.num_rows < VECTOR_CHECK_MIN_RECORDS:  # numpy's cost per call outweighs a few records
            return _rows_misread(table.cast(plan.whole_raw).to_pylist(), plan, view, lengths)
        expected = np.asarray(lengths, np.int64)
        sizes = check_records([column.combine_chunks() for column in table.columns], list(plan.field_types),
                              plan.named, view, np.cumsum(expected + 4) - expected)
    except (NotCanonical, pa.ArrowException, ValueError) as exc:
        return f"Avro records do not decode to valid values: {exc}"
    if not np.array_equal(sizes, expected):
        record = int(np.flatnonzero(sizes != expected)[0])
        return _not_as_written(record, lengths[record], int(sizes[record]))
    return None


def _rows_misread(rows: list[Any], plan: _Plan, view: memoryview, lengths: list[int]) -> str | None:
    """:func:`_misread` of decoded rows, one record at a time with fastavro's writer (the same rule)."""
    again = io.BytesIO()
    offset = 0
    for i, (row, length) in enumerate(zip(rows, lengths)):
        start = offset + 4
        offset = start + length
        again.seek(0)
        again.truncate()
        try:
            fastavro.schemaless_writer(again, plan.fastavro_schema, row)
        except Exception as exc:  # a value the schema cannot hold (an enum symbol, a wrong type)
            return f"Avro record {i} does not decode to valid values: {type(exc).__name__}: {exc}"
        if again.getbuffer() != view[start:offset]:
            return _not_as_written(i, length, again.tell())
    return None


def _not_as_written(record: int, length: int, encoded: int) -> str:
    """What is wrong with a record whose values encode to ``encoded`` bytes other than its ``length``."""
    if encoded != length:
        return f"Avro record {record} is {length} bytes but its values take {encoded} (bytes after its last value)"
    return (f"Avro record {record} is not encoded as Avro writes its values (an invalid union index or boolean, "
            f"an overlong number, ...)")


def _decode_fastavro(plan: _Plan, view: memoryview, lengths: list[int], path: str) -> pa.Table:
    """Reference decoder: each record from its own slice, as Hudi's Java reader does; ``plan.whole`` types.

    fastavro is lenient where the bytes are not what a writer makes (module docstring), so each record must
    also encode back to exactly its bytes (the rule of :mod:`.avro_canonical`, with fastavro's writer).
    """
    read = fastavro.schemaless_reader
    schema = plan.fastavro_schema
    rows = []
    offset = 0
    for i, length in enumerate(lengths):
        start = offset + 4
        offset = start + length
        try:
            rows.append(read(io.BytesIO(view[start:offset]), schema, None))
        except Exception as exc:  # fastavro raises EOFError, IndexError, UnicodeDecodeError, ValueError, ...
            raise CorruptFileError(f"{path}: Avro record {i} does not decode: {type(exc).__name__}: {exc}") from None
    problem = _rows_misread(rows, plan, view, lengths)
    if problem is not None:
        raise CorruptFileError(f"{path}: {problem}")
    try:
        return pa.Table.from_pylist(rows, schema=plan.whole)
    except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:  # e.g. an int beyond 32 bits
        raise CorruptFileError(f"{path}: Avro records do not fit their schema: {exc}") from None


def _decode_polars(plan: _Plan, view: memoryview, lengths: list[int]) -> pa.Table | None:
    """Fast decoder (module docstring): every field, of ``plan.whole``'s types, or None if polars cannot do it
    (a value that does not cast to them included).

    polars releases the GIL while it decodes, so a large block is cut into a few runs of records decoded in
    parallel threads.
    """
    parts = min(_WORKERS, len(lengths) // _RECORDS_PER_THREAD) or 1
    if parts == 1:
        return _decode_polars_run(plan, view, lengths)
    runs = []
    offset = 0
    for i in range(parts):
        run = lengths[len(lengths) * i // parts:len(lengths) * (i + 1) // parts]
        end = offset + 4 * len(run) + sum(run)
        runs.append((view[offset:end], run))
        offset = end
    tables = list(_POOL.executor().map(lambda run: _decode_polars_run(plan, *run), runs))
    return None if any(table is None for table in tables) else pa.concat_tables(tables)


def _decode_polars_run(plan: _Plan, view: memoryview, lengths: list[int]) -> pa.Table | None:
    """Decode one run of whole records (``view``, of the ``lengths``) as a one-block OCF."""
    import polars  # on first use (module docstring)

    if plan.ocf_header is None:  # no fast path for this schema (callers do not ask then)
        return None
    ocf = _Concatenation(plan.ocf_header + avro_long(len(lengths)) + avro_long(len(view)), view, _OCF_SYNC)
    try:
        frame = polars.read_avro(io.BufferedReader(ocf))
        table = frame.to_arrow(compat_level=polars.CompatLevel.newest())  # string views: the cheapest export
        del frame
        # cast here, once: the proof and the target both take plan.whole's types (the projection of it is
        # plan.decoded, so _to_target casts nothing more)
        return table.select(plan.whole.names).cast(plan.whole) if table.num_rows == len(lengths) else None
    except (Exception, polars.exceptions.PanicException):  # a panic is a BaseException
        return None


class _Concatenation(io.RawIOBase):
    """A read-only file of some byte strings end to end, for polars to read the OCF without our joining its
    parts into one more copy of the block first (polars reads it into memory all the same)."""

    def __init__(self, *parts: bytes | memoryview):
        self._parts = [memoryview(part).cast("B") for part in parts]
        self._size = sum(map(len, self._parts))
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: Any) -> int:
        out = memoryview(buffer).cast("B")
        done = 0
        part_start = 0
        for part in self._parts:
            skip = self._position - part_start
            part_start += len(part)
            if 0 <= skip < len(part) and done < len(out):
                n = min(len(part) - skip, len(out) - done)
                out[done:done + n] = part[skip:skip + n]
                done += n
                self._position += n
        return done


#: the decoding threads, started on first use
_POOL = SharedPool(_WORKERS, "hoodie-avro")


def _to_target(table: pa.Table, plan: _Plan, path: str) -> pa.Table:
    """Decoded values (``plan.decoded``, or polars' large/dictionary variants of it) as the target schema.

    Decimals become decimals here (:func:`_decimals`), so a value beyond its precision fails here for both
    decoders alike."""
    try:
        if table.schema != plan.decoded:
            table = table.cast(plan.decoded)
        if plan.staged != plan.decoded:
            table = table.cast(plan.staged)
        return pa.Table.from_arrays(
            [column if staged.type == field.type
             else pa.chunked_array([_exact(chunk, field) for chunk in column.chunks], field.type)
             for column, staged, field in zip(table.columns, plan.staged, plan.target)], schema=plan.target)
    except (pa.ArrowInvalid, ValueError) as exc:  # a timestamp-millis beyond timestamp[us], a decimal's precision
        raise CorruptFileError(f"{path}: Avro values out of range for their Arrow type: {exc}") from None
