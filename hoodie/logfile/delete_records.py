"""A DELETE block as rows of the table: the deleted keys with their partition path and ordering value, typed as
the table's columns, so that the merge takes them as log records like any other.

:func:`~hoodie.logfile.blocks.decode_delete_block` decodes the block's content; this module lays it over the
columns a read asks for. An ordering value comes as the Java value Hudi wrapped (``wrapValueIntoAvro``) and
becomes the ordering field's type, so the merge compares it with the records' values in that type's order.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from ...errors import InvalidTableContentError
from ..table import COMMIT_TIME, PARTITION_PATH, RECORD_KEY
from .blocks import decode_delete_block
from .format import LogBlock

__all__ = ["delete_rows"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def delete_rows(block: LogBlock, schema: pa.Schema, record_key_fields: Sequence[str],
                ordering_fields: Sequence[str], avro_schema: Callable[[], dict | None]) -> tuple[pa.Table, np.ndarray]:
    """A delete block as rows: key, partition path and ordering value set, as far as ``schema`` has those columns
    (its other columns are left out: the caller aligns the rows to ``schema``), and per row whether the delete
    wins by commit time (no ordering value, or Hudi's IntWrapper 0).

    ``record_key_fields`` and ``ordering_fields`` are the table's; ``avro_schema`` gives the table's Avro schema,
    asked only when a timestamp ordering field's unit is needed (see :func:`_raw_timestamps`).
    """
    dr = decode_delete_block(block)
    n = len(dr.record_keys)
    cols = {}
    if RECORD_KEY in schema.names:
        cols[RECORD_KEY] = pa.array(dr.record_keys, pa.string())
    if PARTITION_PATH in schema.names:
        cols[PARTITION_PATH] = pa.array(dr.partition_paths, pa.string())
    if COMMIT_TIME in schema.names:
        cols[COMMIT_TIME] = pa.array([block.instant_time] * n, pa.string())
    if len(record_key_fields) == 1 and record_key_fields[0] in schema.names and RECORD_KEY not in cols:
        f = schema.field(record_key_fields[0])
        cols[f.name] = pa.array(dr.record_keys, pa.string()).cast(f.type)
    for name in ordering_fields[:1]:
        if name in schema.names:
            ftype = schema.field(name).type
            values = [None if is_ct else v for v, is_ct in zip(dr.ordering_values, dr.ordering_is_commit_time)]
            if pa.types.is_timestamp(ftype) and any(kind in ("int", "long") for kind in dr.ordering_kinds):
                values = _raw_timestamps(values, dr.ordering_kinds, _avro_timestamp_unit(avro_schema(), name))
            cols[name] = _delete_ordering(block, name, values, ftype)
    rows = pa.table(cols) if cols else pa.table({"_": pa.nulls(n)})
    return rows, np.asarray(dr.ordering_is_commit_time, dtype=bool)


def _raw_timestamps(values: list, kinds: list[str | None], unit: str) -> list:
    """Delete ordering values of a timestamp field as datetimes: an Int/LongWrapper holds the raw Avro long in
    the field's own unit. That is what Hudi writes by default: ``HoodieAvroUtils.convertValueForAvroLogicalTypes``
    turns a timestamp into ``java.sql.Timestamp`` (TimestampMicrosWrapper) only with
    ``consistentLogicalTimestampEnabled``, and otherwise leaves the record's Long as it is."""
    step = dt.timedelta(milliseconds=1) if unit == "ms" else dt.timedelta(microseconds=1)
    return [_EPOCH + v * step if kind in ("int", "long") and v is not None else v for v, kind in zip(values, kinds)]


def _avro_timestamp_unit(avro: dict | None, name: str) -> str:
    """``"ms"`` or ``"us"``: the unit of timestamp field ``name`` in the Avro schema ``avro``."""
    for f in (avro or {}).get("fields", []):
        if f.get("name") == name:
            branches = f["type"] if isinstance(f["type"], list) else [f["type"]]
            logical = next((b.get("logicalType", "") for b in branches if isinstance(b, dict)), "")
            return "ms" if logical.endswith("millis") else "us"
    return "us"


def _delete_ordering(block: LogBlock, name: str, values: list, ftype: pa.DataType) -> pa.Array:
    """A delete block's ordering values as the ordering field's type, so that the merge compares them with the
    records' values in that type's order (Hudi compares the unwrapped Java values with the records').

    The cast is a safe one: a value the field cannot hold (a decimal past its precision, a timestamp finer than
    its unit, an int64 past int32) is an error naming the block, never a rounded or wrapped value.
    """
    try:
        return pa.array(values).cast(ftype)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise InvalidTableContentError(f"{block.where()}: delete ordering values of {name!r} do not fit its type "
                                       f"{ftype}: {e}") from None
