"""Comparing our Arrow output with Spark's gold parquet output: same columns, same types, same multiset of rows.

Spark wrote the gold files, so a few physical types differ from what the reader returns while meaning the
same thing; :func:`normalise_gold` maps exactly those (and nothing else), so every other type difference fails.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def read_gold(folder: Path) -> pa.Table:
    files = sorted(folder.glob("*.parquet"))
    assert files, f"no gold parquet in {folder}"
    return pa.concat_tables([pq.read_table(f) for f in files])


def _spark_equivalent(t: pa.DataType) -> pa.DataType:
    """The type our reader returns for a type Spark wrote into a gold file."""
    if pa.types.is_timestamp(t) and t.tz is None and t.unit == "ns":
        # Spark writes TimestampType as INT96, which pyarrow reads as naive nanoseconds (UTC instants); a naive
        # microsecond column is TIMESTAMP_NTZ (INT64, isAdjustedToUTC=false), zone-less on both sides
        return pa.timestamp("us", tz="UTC")
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", _spark_equivalent(t.value_type), t.value_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _spark_equivalent(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_type, pa.field("value", _spark_equivalent(t.item_type), t.item_field.nullable))
    return t


def normalise_gold(gold: pa.Table) -> pa.Table:
    return gold.cast(pa.schema([pa.field(f.name, _spark_equivalent(f.type)) for f in gold.schema]))


def _canonical(t: pa.Table) -> pa.Table:
    """Strip nullability flags and nested field names that carry no data."""
    def strip(tp: pa.DataType) -> pa.DataType:
        if pa.types.is_list(tp):
            return pa.list_(strip(tp.value_type))
        if pa.types.is_struct(tp):
            return pa.struct([pa.field(f.name, strip(f.type)) for f in tp])
        if pa.types.is_map(tp):
            return pa.map_(strip(tp.key_type), strip(tp.item_type))
        return tp
    return t.cast(pa.schema([pa.field(f.name, strip(f.type)) for f in t.schema]))


def _row_key(row: dict) -> str:
    return json.dumps(row, sort_keys=True, default=repr)


def assert_same_rows(ours: pa.Table, gold: pa.Table, what: str) -> None:
    gold = _canonical(normalise_gold(gold))
    assert set(gold.column_names) <= set(ours.column_names), \
        f"{what}: gold columns {gold.column_names} not all in ours {ours.column_names}"
    ours = _canonical(ours.select(gold.column_names))
    for g, o in zip(gold.schema, ours.schema):
        assert g.type == o.type, f"{what}: column {g.name}: ours {o.type}, Spark {g.type}"
    assert ours.num_rows == gold.num_rows, f"{what}: {ours.num_rows} rows, Spark returned {gold.num_rows}"
    a = Counter(_row_key(r) for r in ours.to_pylist())
    b = Counter(_row_key(r) for r in gold.to_pylist())
    missing, extra = b - a, a - b
    assert not missing and not extra, \
        f"{what}: rows differ\n  missing: {list(missing)[:3]}\n  unexpected: {list(extra)[:3]}"
