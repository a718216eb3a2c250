"""Vectorised Avro binary encoding of Arrow rows, for the records of log data blocks.

fastavro encodes one Python dict at a time (~40 µs per record of a dozen fields, plus the dicts themselves);
a data block only needs the concatenation of ``int32 length | record`` for every row, and for flat records
that concatenation can be built column by column with numpy and Arrow's binary kernels:

* every field is a ``["null", T]`` union: ``00`` for null, else ``02`` then the value;
* ``int``/``long`` (also dates and timestamps): zig-zag varints; ``float``/``double``: little-endian IEEE;
  ``boolean``: one byte; ``string``/``bytes``: varint length then the bytes.

The row's bytes are the fields joined element-wise (``binary_join_element_wise``), prefixed with the
big-endian record length, and the values buffer of that array is the block payload. Schemas with other
types (decimals, nested records, lists, maps, non-union fields) fall back to fastavro, record by record
(:func:`records_to_avro_dicts`), so the output is the same bytes either way (Avro's binary encoding is unique);
the tests compare both paths.
"""
from __future__ import annotations

import io
import json
from functools import lru_cache
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..hoodie.logfile.avro_arrow import avro_value_schemas

_NULL = pa.scalar(b"\x00", pa.binary())
_EMPTY = pa.scalar(b"", pa.binary())  # a ready scalar: converting b"" each call imports pandas
_SIMPLE = {"int", "long", "float", "double", "boolean", "string", "bytes"}


def _field_kind(avro_type: Any) -> str | None:
    """The primitive of a ``["null", T]`` field this encoder handles, else None."""
    if not (isinstance(avro_type, list) and len(avro_type) == 2 and avro_type[0] == "null"):
        return None
    t = avro_type[1]
    if isinstance(t, dict):
        if t.get("type") == "int" and t.get("logicalType") == "date":
            return "int"
        if t.get("type") == "long" and t.get("logicalType") in ("timestamp-micros", "local-timestamp-micros"):
            return "long"
        return None
    return t if t in _SIMPLE else None


@lru_cache(maxsize=64)
def _plan(schema_json: str) -> tuple[tuple[str, str], ...] | None:
    fields = json.loads(schema_json)["fields"]
    kinds = [(f["name"], _field_kind(f["type"])) for f in fields]
    handled = tuple((name, kind) for name, kind in kinds if kind is not None)
    return handled if len(handled) == len(kinds) else None


def _varints(values: np.ndarray) -> pa.Array:
    """Zig-zag varints of int64 ``values`` as a binary array."""
    v = values.astype(np.int64, copy=False)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64)
    n = len(z)
    nbytes = np.ones(n, np.int64)
    rest = z >> np.uint64(7)
    while rest.any():
        more = rest != 0
        nbytes += more
        rest = rest >> np.uint64(7)
    width = int(nbytes.max()) if n else 1
    shifts = (np.arange(width, dtype=np.uint64) * np.uint64(7))
    groups = ((z[:, None] >> shifts[None, :]) & np.uint64(0x7F)).astype(np.uint8)
    pos = np.arange(width)[None, :]
    groups |= np.where(pos < (nbytes[:, None] - 1), np.uint8(0x80), np.uint8(0))
    data = groups[pos < nbytes[:, None]]
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(nbytes, out=offsets[1:])
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())])


def _fixed(values: np.ndarray, width: int) -> pa.Array:
    """Each element's ``width`` raw bytes (in the array's byte order) as one binary value."""
    n = len(values)
    raw = values.view(np.uint8)
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw.tobytes())])


def _encode_column(col: pa.Array, kind: str) -> pa.Array:
    """The Avro bytes of one ``["null", kind]`` column, row by row."""
    n = len(col)
    valid = pc.is_valid(col)
    if kind in ("string", "bytes"):
        raw = col.cast(pa.binary()) if kind == "string" or not pa.types.is_binary(col.type) else col
        raw = pc.fill_null(raw, _EMPTY)
        lengths = pc.binary_length(raw).to_numpy(zero_copy_only=False)
        value = pc.binary_join_element_wise(_varints(lengths), raw, _EMPTY)
    elif kind in ("int", "long"):
        if pa.types.is_timestamp(col.type) or pa.types.is_date(col.type):
            col = col.cast(pa.int64() if pa.types.is_timestamp(col.type) else pa.int32())
        ints = pc.fill_null(col, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        value = _varints(ints)
    elif kind in ("float", "double"):
        dtype = np.dtype("<f4") if kind == "float" else np.dtype("<f8")
        floats = pc.fill_null(col, 0).to_numpy(zero_copy_only=False).astype(dtype)
        value = _fixed(floats, dtype.itemsize)
    elif kind == "boolean":
        value = _fixed(pc.fill_null(col, False).to_numpy(zero_copy_only=False).astype(np.uint8), 1)
    else:  # pragma: no cover - _plan filters
        raise ValueError(kind)
    present = pc.binary_join_element_wise(_fixed(np.full(n, 2, np.uint8), 1), value, _EMPTY)
    return pc.if_else(valid, present, _NULL)


def encode_records(table: pa.Table, schema_json: str) -> bytes:
    """``int32 big-endian length | Avro record`` for every row of ``table``, concatenated (block payload).

    ``table`` must have a column for every field of the record schema ``schema_json`` (with the Arrow types
    :func:`hoodie.logfile.avro_arrow.arrow_schema_from_avro` gives it).
    """
    n = table.num_rows
    if n == 0:
        return b""
    plan = _plan(schema_json)
    if plan is None:
        return _encode_fastavro(table, schema_json)
    parts = [_encode_column(table.column(name).combine_chunks(), kind) for name, kind in plan]
    rows = pc.binary_join_element_wise(*parts, _EMPTY) if len(parts) > 1 else parts[0]
    lengths = pc.binary_length(rows).to_numpy(zero_copy_only=False).astype(">i4")
    framed = pc.binary_join_element_wise(_fixed(lengths, 4), rows, _EMPTY)
    offsets = np.frombuffer(framed.buffers()[1], np.int32, n + 1, framed.offset * 4)
    return framed.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]]


def _encode_fastavro(table: pa.Table, schema_json: str) -> bytes:
    parsed = _parsed(schema_json)
    out = io.BytesIO()
    for record in records_to_avro_dicts(table, schema_json):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, record)
        body = buf.getvalue()
        out.write(len(body).to_bytes(4, "big"))
        out.write(body)
    return out.getvalue()


def records_to_avro_dicts(table: pa.Table, schema_json: str) -> list[dict]:
    """Rows of ``table`` as dicts that ``fastavro.schemaless_writer`` encodes with ``schema_json``.

    The inverse of :func:`hoodie.logfile.avro_arrow.decode_avro_records`: temporal values become the plain ints
    of their Avro unit (so a timestamp-millis field must not hold sub-millisecond values: ``ValueError``),
    decimals ``Decimal``, maps dicts. The table needs a column for every field of the record; other columns are
    ignored.
    """
    wire, raw_schema = avro_value_schemas(schema_json)
    missing = [name for name in wire.names if name not in table.column_names]
    if missing:
        raise ValueError(f"records_to_avro_dicts: the table has no column(s) {missing!r} of the Avro schema")
    try:
        raw = table.select(wire.names).cast(wire).cast(raw_schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"records_to_avro_dicts: the table does not fit the Avro schema: {exc}") from None
    return raw.to_pylist(maps_as_pydicts="strict")


@lru_cache(maxsize=64)
def _parsed(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))
