"""Encoding log blocks byte-compatible with Hudi's ``HoodieLogFormatWriter`` (spec §5.1, §5.2, §5.5–5.8).

Each function returns the bytes of one whole block (magic to trailing length); a log file is these blocks
concatenated. Header entries are written in the order of the dict given, since Hudi's own order (a Java
``HashMap``) is arbitrary and readers look keys up; the defaults below use the order of Hudi's fixtures,
so the rollback block reproduces a real Hudi file byte for byte.
"""
from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import OptionError
from .format import (
    COMMIT_TIME_DELETE,
    CONTENT_VERSION,
    DECIMAL_WRAPPER_PRECISION,
    DECIMAL_WRAPPER_SCALE,
    DELETE_RECORD_LIST_SCHEMA,
    LOG_FORMAT_VERSION,
    MAGIC,
    ROLLBACK_COMMAND,
    WRAPPER_BY_KIND,
    BlockType,
    HeaderKey,
    Ordering,
)

__all__ = ["COMMIT_TIME_DELETE", "Ordering", "encode_avro_data_block", "encode_block", "encode_delete_block",
           "encode_parquet_data_block", "encode_rollback_block"]

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_DELETE_SCHEMA = fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_DECIMAL_QUANTUM = decimal.Decimal(1).scaleb(-DECIMAL_WRAPPER_SCALE)
#: Fits ``DecimalWrapper``; like Java's ``BigDecimal.setScale(15)`` it refuses to round.
_DECIMAL_CONTEXT = decimal.Context(prec=DECIMAL_WRAPPER_PRECISION, traps=[decimal.Inexact, decimal.InvalidOperation])


def encode_block(block_type: BlockType, header: Mapping[HeaderKey, str], content: bytes,
                 footer: Mapping[int, str] | None = None) -> bytes:
    """Frame ``content`` as one block: magic, block size, version 1, type, header, content, footer, length."""
    block_type = BlockType(block_type)
    if block_type is BlockType.CORRUPT:
        raise ValueError("CORRUPT blocks are made by readers, never written")
    header_bytes = _encode_map(header)
    footer_bytes = _encode_map(footer or {})
    block_size = 4 + 4 + len(header_bytes) + 8 + len(content) + len(footer_bytes) + 8
    return b"".join((MAGIC, _I64.pack(block_size), _I32.pack(LOG_FORMAT_VERSION), _I32.pack(block_type),
                     header_bytes, _I64.pack(len(content)), content, footer_bytes,
                     _I64.pack(block_size + len(MAGIC))))


def encode_avro_data_block(records: Sequence[Mapping[str, Any]], schema_json: str, instant_time: str,
                           extra_header: Mapping[HeaderKey, str] | None = None) -> bytes:
    """An AVRO_DATA block of ``records`` (dicts fastavro can write with ``schema_json``), content version 3."""
    schema = fastavro.parse_schema(json.loads(schema_json))
    parts = [_I32.pack(CONTENT_VERSION), _I32.pack(len(records))]
    for record in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, schema, record)
        parts += (_I32.pack(buf.tell()), buf.getvalue())
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_json, **(extra_header or {})}
    return encode_block(BlockType.AVRO_DATA, header, b"".join(parts))


def encode_parquet_data_block(table: pa.Table, schema_json: str, instant_time: str) -> bytes:
    """A PARQUET_DATA block: ``table`` as a whole gzip parquet file, like Hudi's default parquet block.

    The Avro schema also goes into the file's ``parquet.avro.schema`` metadata, as parquet-avro writes it,
    so Java readers map types the way they do for Hudi-written blocks.
    """
    metadata = {**(table.schema.metadata or {}), b"parquet.avro.schema": schema_json.encode(),
                b"writer.model.name": b"avro"}
    sink = pa.BufferOutputStream()
    pq.write_table(table.replace_schema_metadata(metadata), sink, compression="gzip")
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_json}
    return encode_block(BlockType.PARQUET_DATA, header, sink.getvalue().to_pybytes())


def encode_delete_block(keys: Sequence[str], partitions: Sequence[str | None], ordering_values: Sequence[Any],
                        instant_time: str, extra_header: Mapping[HeaderKey, str] | None = None) -> bytes:
    """A DELETE block, content version 3 (Avro ``HoodieDeleteRecordList`` with wrapped ordering values).

    Ordering values are wrapped as Hudi's ``wrapValueIntoAvro`` does for the matching Java type: ``bool`` →
    BooleanWrapper, ``int`` → LongWrapper, ``float`` → DoubleWrapper, ``str``, ``bytes``, ``Decimal``,
    ``date``, ``datetime`` (naive = UTC), ``time``, a sequence → ArrayWrapper, ``None`` → null. Pass
    :data:`COMMIT_TIME_DELETE` for a delete without ordering (IntWrapper 0), or an :class:`Ordering` to pick
    the wrapper, e.g. ``Ordering("int", v)`` for an int32 ordering field.
    """
    if not len(keys) == len(partitions) == len(ordering_values):
        raise ValueError(f"{len(keys)} keys, {len(partitions)} partitions, {len(ordering_values)} ordering values")
    records = [{"recordKey": key, "partitionPath": partition, "orderingVal": _wrap(value)}
               for key, partition, value in zip(keys, partitions, ordering_values)]
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _DELETE_SCHEMA, {"deleteRecordList": records})
    payload = buf.getvalue()
    content = _I32.pack(CONTENT_VERSION) + _I32.pack(len(payload)) + payload
    return encode_block(BlockType.DELETE, {HeaderKey.INSTANT_TIME: instant_time, **(extra_header or {})}, content)


def encode_rollback_block(instant_time: str, target_instant_time: str) -> bytes:
    """A COMMAND block rolling back ``target_instant_time``, written by the rollback ``instant_time``."""
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND,
              HeaderKey.TARGET_INSTANT_TIME: target_instant_time}
    return encode_block(BlockType.COMMAND, header, b"")


def _encode_map(entries: Mapping[HeaderKey, str] | Mapping[int, str]) -> bytes:
    """``HoodieLogBlock.getLogMetadataBytes``: int32 count, then int32 key, int32 length, UTF-8 value each."""
    parts = [_I32.pack(len(entries))]
    for key, value in entries.items():
        raw = value.encode("utf-8")
        parts += (_I32.pack(int(key)), _I32.pack(len(raw)), raw)
    return b"".join(parts)


def _as_ordering(value: Any) -> Ordering:
    """The wrapper Hudi would pick for a Java value of the type ``value`` maps to."""
    if isinstance(value, Ordering):
        return value
    if isinstance(value, bool):  # before int: bool is an int
        return Ordering("boolean", value)
    for kind, types in (("long", int), ("double", float), ("string", str), ("bytes", (bytes, bytearray)),
                        ("decimal", decimal.Decimal), ("timestamp_micros", dt.datetime), ("date", dt.date),
                        ("time_micros", dt.time), ("array", (list, tuple))):
        if isinstance(value, types):  # datetime before date: datetime is a date
            return Ordering(kind, value)
    raise OptionError(f"no Hudi ordering value wrapper for {type(value).__name__}: {value!r}")


def _wrap(value: Any) -> tuple[str, dict] | None:
    """``value`` as the fastavro union branch ``(wrapper record name, {field: avro value})``, or ``None``."""
    if value is None:
        return None
    ordering = _as_ordering(value)
    name = WRAPPER_BY_KIND[ordering.kind].full_name
    if ordering.kind == "array":
        return name, {"wrappedValues": [_wrap(v) for v in ordering.value]}
    return name, {"value": _avro_value(ordering)}


def _avro_value(ordering: Ordering) -> Any:
    """The Avro-level value of one scalar wrapper, range-checked like the Java type it stands for."""
    kind, value = ordering.kind, ordering.value
    if kind == "int" and not -2**31 <= value < 2**31:
        raise OptionError(f"ordering value {value} does not fit IntWrapper (int32)")
    if kind == "long" and not -2**63 <= value < 2**63:
        raise OptionError(f"ordering value {value} does not fit LongWrapper (int64)")
    if kind == "date":
        return (value - _EPOCH_DATE).days
    if kind == "timestamp_micros":
        aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
        return (aware - _EPOCH) // dt.timedelta(microseconds=1)
    if kind == "decimal":
        try:
            return decimal.Decimal(value).quantize(_DECIMAL_QUANTUM, context=_DECIMAL_CONTEXT)
        except decimal.DecimalException:
            raise OptionError(f"ordering value {value} does not fit DecimalWrapper "
                             f"decimal({DECIMAL_WRAPPER_PRECISION},{DECIMAL_WRAPPER_SCALE})") from None
    return value
