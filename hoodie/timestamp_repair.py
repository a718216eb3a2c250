"""Millisecond timestamps written under a microsecond label, read as Hudi 1.1+ reads them.

Hudi 0.14.1 to 1.0's schema handling (its InternalSchema had one timestamp type, taken as micros) relabelled
``timestamp-millis`` columns as ``timestamp-micros`` in the table schema and in the files, while the values
stayed milliseconds (apache/hudi#13233): read as labelled, 2024-07-10 comes back as 1970-01-20. Hudi 1.1 corrects
the table schema back to millis and its readers repair the older files: a column the table's schema has as
millis that a file labels micros holds milliseconds (apache/hudi PR #14161, ``AvroSchemaRepair``). Micros to
millis is otherwise a lossy change Hudi never makes, so the mismatch itself identifies the affected data.

The table's side travels with the read schema (field metadata :data:`MILLIS`, set by
:meth:`~hudi_streaming.hoodie.table.HudiTable.arrow_schema` from the latest writer schema), so an executor
repairs without the timeline.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

from .logfile.avro_arrow import avro_value_schemas

#: field metadata of a table column whose latest writer schema says timestamp-millis (or local-timestamp-millis)
MILLIS = {b"hudi.timestamp.unit": b"millis"}


def millis_columns(avro_schema: dict | str) -> frozenset[str]:
    """Top-level columns an Avro record schema types as (local-)timestamp-millis."""
    wire, _ = avro_value_schemas(avro_schema if isinstance(avro_schema, str) else json.dumps(avro_schema))
    return frozenset(f.name for f in wire if pa.types.is_timestamp(f.type) and f.type.unit == "ms")


def marked(schema: pa.Schema, millis: frozenset[str]) -> pa.Schema:
    """``schema`` with the ``millis`` columns marked (:data:`MILLIS`)."""
    return pa.schema([f.with_metadata(MILLIS) if f.name in millis else f for f in schema])


def _wanted(schema: pa.Schema) -> list[str]:
    return [f.name for f in schema if f.metadata and f.metadata.get(b"hudi.timestamp.unit") == b"millis"]


def repair_base(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """A base file's rows (as the file types them) with the millis columns the file labels micros repaired."""
    for name in _wanted(schema):
        if name in t.column_names:
            col = t.column(name)
            if pa.types.is_timestamp(col.type) and col.type.unit == "us":
                t = t.set_column(t.schema.get_field_index(name), name, _from_millis(col))
    return t


def repair_block(t: pa.Table, schema: pa.Schema, block_schema_json: str | None) -> pa.Table:
    """A log block's decoded rows with the millis columns its own schema labels micros repaired."""
    wanted = [n for n in _wanted(schema) if n in t.column_names]
    if not wanted or not block_schema_json:
        return t
    wire, _ = avro_value_schemas(block_schema_json)
    for name in wanted:
        i = wire.get_field_index(name)
        if i >= 0 and pa.types.is_timestamp(wire.field(i).type) and wire.field(i).type.unit == "us":
            t = t.set_column(t.schema.get_field_index(name), name, _from_millis(t.column(name)))
    return t


def _from_millis(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """Values stored as milliseconds, read as microseconds, back to microseconds of the same type."""
    return pc.multiply_checked(col.cast(pa.int64()), 1000).cast(col.type)
