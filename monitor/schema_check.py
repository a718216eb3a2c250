"""Schema changes between the stream's schema and an instant's writer schema.

Spark fixes a streaming query's schema when the query starts. An instant written with another schema is
either compatible — columns added, or a type widened without loss — and then delivered in the stream's
schema if the user allowed it (added columns are left out, widened values cast back and checked), or
incompatible (a column dropped, renamed, or narrowed), and the stream stops with the instant and the change
named: the user restarts the query, which picks up the new schema.
"""
from __future__ import annotations

import functools
import json

import pyarrow as pa

from ..errors import SchemaChangeError
from ..hoodie.feed_schema import FEED_COLUMNS
from ..hoodie.logfile.avro_arrow import arrow_schema_from_avro
from ..hoodie.table import META_COLUMNS
from ..hoodie.vectors import with_vectors

_WIDENINGS = {
    (pa.int32(), pa.int64()), (pa.int32(), pa.float32()), (pa.int32(), pa.float64()),
    (pa.int64(), pa.float32()), (pa.int64(), pa.float64()), (pa.float32(), pa.float64()),
    (pa.string(), pa.binary()), (pa.binary(), pa.string()),
}


def _widens(old: pa.DataType, new: pa.DataType) -> bool:
    if (old, new) in _WIDENINGS:
        return True
    if pa.types.is_decimal(old) and pa.types.is_decimal(new):
        return new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
    return False


@functools.lru_cache(maxsize=256)
def _data_fields(schema_json: str) -> dict[str, pa.DataType]:
    avro = json.loads(schema_json)
    schema = with_vectors(arrow_schema_from_avro(avro), avro)
    return {f.name: f.type for f in schema if f.name not in META_COLUMNS}


def schema_changes(reference: pa.Schema, schema_json: str, projected: bool = False,
                   from_path: frozenset[str] = frozenset()) -> tuple[list[str], list[str]]:
    """(compatible, incompatible) differences of an instant's writer schema from the stream's schema. A stream
    that reads a projection (``projected``) reads only its columns: a column added to the table is none of them.
    Columns ``from_path`` (partition columns the writer drops from its files, filled from the partition path)
    are never missing from a writer schema that leaves them out."""
    new = _data_fields(schema_json)
    old = {f.name: f.type for f in reference if f.name not in META_COLUMNS and f.name not in FEED_COLUMNS}
    compatible: list[str] = []
    incompatible: list[str] = []
    for name, t in old.items():
        if name not in new and name not in from_path:
            incompatible.append(f"column {name} was dropped")
        elif name in new and new[name] != t:
            (compatible if _widens(t, new[name]) else incompatible).append(f"column {name}: {t} -> {new[name]}")
    if not projected:
        compatible += [f"column {name} ({t}) was added" for name, t in new.items() if name not in old]
    return compatible, incompatible


def check_instant_schema(reference: pa.Schema, schema_json: str | None, instant: str, table_url: str,
                         allow_compatible: bool, projected: bool = False,
                         from_path: frozenset[str] = frozenset()) -> list[str]:
    """Raise :class:`SchemaChangeError` unless the instant's schema can be delivered; return what was allowed."""
    if not schema_json:
        return []
    compatible, incompatible = schema_changes(reference, schema_json, projected, from_path)
    if incompatible or (compatible and not allow_compatible):
        changes = "; ".join(incompatible + compatible)
        hint = ("restart the query to read with the new schema" if incompatible else
                "restart the query to read with the new schema, or set allowSchemaChanges=true to keep "
                "delivering the current columns")
        raise SchemaChangeError(f"{table_url}: instant {instant} changes the table schema ({changes}); {hint}")
    return compatible
