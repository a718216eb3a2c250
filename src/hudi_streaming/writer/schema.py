"""The table's Avro schema, derived from the Arrow schema of the data the caller writes.

Hudi records the writer schema without meta fields in ``hoodie.table.create.schema`` and in every commit's
``extraMetadata.schema``; log blocks carry it with the five meta fields first (spec §3.1, §5.5, §7). Types map
the way Spark's ``SchemaConverters`` writes them for Hudi: every field a ``["null", T]`` union with default
null, record name ``<table>_record`` in namespace ``hoodie.<table>``, nested records named after their field.
The Arrow schema that base files and decoded log blocks share is then
:func:`hoodie.logfile.avro_arrow.arrow_schema_from_avro` of this schema, so both always agree.
"""
from __future__ import annotations

import json
import re

import pyarrow as pa

from ..errors import OptionError
from ..hoodie.logfile.avro_arrow import arrow_schema_from_avro

META_FIELDS = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
               "_hoodie_file_name"]
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_name(name: str, where: str) -> str:
    if not _NAME.match(name):
        raise OptionError(f"{where}: {name!r} is not a valid Avro name (letters, digits, underscores)")
    return name


def _decimal_bytes(precision: int) -> int:
    """Spark's ``minBytesForPrecision``: the fewest bytes whose two's complement holds ``precision`` digits."""
    n = 1
    while 2 ** (8 * n - 1) < 10 ** precision:
        n += 1
    return n


def _avro_type(t: pa.DataType, name: str, namespace: str) -> object:
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t) or pa.types.is_uint8(t) \
            or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "long"
    if pa.types.is_float32(t) or pa.types.is_float16(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "bytes"
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise OptionError(f"field {name}: decimal precision {t.precision} > 38 is not supported")
        # as Spark's SchemaConverters names it: "fixed" in a namespace ending with the field's name
        return {"type": "fixed", "name": "fixed", "namespace": f"{namespace}.{name}",
                "size": _decimal_bytes(t.precision), "logicalType": "decimal", "precision": t.precision,
                "scale": t.scale}
    if pa.types.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t):
        # Spark has only microseconds; a column of whole milliseconds keeps its unit (Avro timestamp-millis). A
        # timestamp without a zone is Spark's TIMESTAMP_NTZ, Avro's local-timestamp (as Spark's converter writes it)
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        return {"type": "long", "logicalType": f"timestamp-{unit}" if t.tz else f"local-timestamp-{unit}"}
    if pa.types.is_struct(t):
        inner = f"{namespace}.{name}"
        return {"type": "record", "name": name, "namespace": namespace,
                "fields": [_avro_field(f, inner) for f in t]}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "array", "items": _nullable(_avro_type(t.value_type, f"{name}_element", namespace))}
    if pa.types.is_map(t):
        if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
            raise OptionError(f"field {name}: Avro maps need string keys, not {t.key_type}")
        return {"type": "map", "values": _nullable(_avro_type(t.item_type, f"{name}_value", namespace))}
    if pa.types.is_dictionary(t):
        return _avro_type(t.value_type, name, namespace)
    raise OptionError(f"field {name}: Arrow type {t} has no Avro equivalent in this writer")


def _nullable(avro: object) -> list:
    return ["null", avro]


def _avro_field(f: pa.Field, namespace: str) -> dict:
    name = _check_name(f.name, "field name")
    return {"name": name, "type": _nullable(_avro_type(f.type, name, namespace)), "default": None}


def avro_schema_from_arrow(schema: pa.Schema, table_name: str) -> dict:
    """The writer schema (no meta fields) for data of ``schema`` in table ``table_name``."""
    _check_name(table_name, "table name")
    record = f"{table_name}_record"
    namespace = f"hoodie.{table_name}"
    fields = [f for f in schema if f.name not in META_FIELDS]
    return {"type": "record", "name": record, "namespace": namespace,
            "fields": [_avro_field(f, f"{namespace}.{record}") for f in fields]}


def with_meta_fields(avro: dict) -> dict:
    """The schema of log-block records and base files: the meta fields first (``HoodieAvroUtils.addMetadataFields``)."""
    meta = [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in META_FIELDS]
    rest = [f for f in avro["fields"] if f["name"] not in META_FIELDS]
    return {**avro, "fields": meta + rest}


def schema_text(avro: dict) -> str:
    return json.dumps(avro, separators=(",", ":"))


def parquet_schema(avro: dict) -> pa.Schema:
    """The Arrow schema to write base files of ``avro`` with: :func:`arrow_schema`, except that a top-level
    ``timestamp-millis`` field is written in milliseconds, as parquet-avro writes it (INT64 TIMESTAMP_MILLIS), so
    that a file's column agrees with the ``parquet.avro.schema`` in its footer."""
    schema = arrow_schema(avro)
    for f in avro["fields"]:
        branch = f["type"][-1] if isinstance(f["type"], list) else f["type"]
        if isinstance(branch, dict) and branch.get("logicalType") == "timestamp-millis":
            i = schema.get_field_index(f["name"])
            schema = schema.set(i, schema.field(i).with_type(pa.timestamp("ms", tz="UTC")))
    return schema


def arrow_schema(avro: dict) -> pa.Schema:
    """The Arrow schema base files and decoded log blocks of ``avro`` have (meta fields included if present)."""
    return arrow_schema_from_avro(schema_text(avro))
