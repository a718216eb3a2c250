"""Comparing our reader's answer with hudi-rs's (Apache Hudi's Rust reader, PyPI ``hudi``), the test-only second
oracle: shared by the hudi-rs oracle (``tests/oracle/test_hudi_rs_oracle.py``, whose docstring says which
differences are allowed and why) and the archived-timeline tests."""
from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa


def rs_table(batches: list[pa.RecordBatch], table) -> pa.Table:
    """hudi-rs's batches as one table; a read with no batch gets the table's (latest) schema, as hudi-rs reads."""
    if batches:
        return pa.Table.from_batches(batches)
    meta = table.hudi_options().get("hoodie.populate.meta.fields", "true").lower() != "false"
    return (table.get_schema_with_meta_fields() if meta else table.get_schema()).empty_table()


_STRINGS = {pa.string(), pa.large_string(), pa.string_view()}
_BINARIES = {pa.binary(), pa.large_binary(), pa.binary_view()}
_UTC = {None, "UTC", "+00:00", "Etc/UTC", "Z"}


def same_meaning(rs: pa.DataType, ours: pa.DataType) -> bool:
    """Whether hudi-rs's type ``rs`` holds values meaning exactly what ours holds in ``ours``.

    Allowed differences, and only these: nullability flags; dictionary encoding; string / binary offset widths
    and views; timestamp units (the cast to ours must then be lossless, which the cast checks) and naive vs UTC
    time zone (both are UTC instants here); list offset widths and the names of list items and map entries.
    """
    if rs == ours:
        return True
    if pa.types.is_dictionary(rs):
        return same_meaning(rs.value_type, ours)
    if (rs in _STRINGS and ours in _STRINGS) or (rs in _BINARIES and ours in _BINARIES):
        return True
    if pa.types.is_timestamp(rs) and pa.types.is_timestamp(ours):
        return rs.tz in _UTC and ours.tz in _UTC
    lists = (pa.types.is_list, pa.types.is_large_list, pa.types.is_list_view, pa.types.is_large_list_view)
    if any(f(rs) for f in lists) and any(f(ours) for f in lists):
        return same_meaning(rs.value_type, ours.value_type)
    if pa.types.is_fixed_size_list(rs) and pa.types.is_fixed_size_list(ours):
        return rs.list_size == ours.list_size and same_meaning(rs.value_type, ours.value_type)
    if pa.types.is_map(rs) and pa.types.is_map(ours):
        return same_meaning(rs.key_type, ours.key_type) and same_meaning(rs.item_type, ours.item_type)
    if pa.types.is_struct(rs) and pa.types.is_struct(ours):
        return ([f.name for f in rs] == [f.name for f in ours]
                and all(same_meaning(a.type, b.type) for a, b in zip(rs, ours)))
    return False


def hudi_promotes(old: pa.DataType, new: pa.DataType) -> bool:
    """A type promotion Hudi's schema evolution allows whose value conversion pyarrow's cast reproduces exactly
    (integers widen; integers, dates and binaries become their decimal / ISO / UTF-8 text; float -> double)."""
    text = new in _STRINGS
    if old in (pa.int8(), pa.int16(), pa.int32()):
        return new in (pa.int64(), pa.float64()) or text
    if old == pa.int64():
        return text
    if old == pa.float32():
        return new == pa.float64()
    if old == pa.date32() or old in _BINARIES:
        return text
    if old in _STRINGS:
        return new in _BINARIES
    return False


def _row_key(row: dict) -> str:
    return json.dumps(row, sort_keys=True, default=repr)


def assert_same_as_hudi_rs(ours: pa.Table, rs: pa.Table, what: str, *, latest: pa.Schema | None = None) -> None:
    """Same multiset of rows over the common columns, types equal up to :func:`same_meaning`.

    Without ``latest`` (a latest snapshot, whose schema both take from the latest commit) both must have the same
    columns in the same order. With ``latest``, the schema of hudi-rs's latest snapshot (a time-travel read, see
    the module docstring), a column only one side has must be all null on that side, and a column whose type in
    ours Hudi promoted to hudi-rs's type, the latest schema's, is compared after promoting ours.
    """
    same_columns = latest is None
    if same_columns:
        assert ours.column_names == rs.column_names, \
            f"{what}: columns differ\n  ours:    {ours.column_names}\n  hudi-rs: {rs.column_names}"
    common = [c for c in ours.column_names if c in rs.column_names]
    for side, t, other in (("ours", ours, rs), ("hudi-rs", rs, ours)):
        for c in t.column_names:
            if c not in other.column_names:
                assert t.column(c).null_count == t.num_rows, \
                    f"{what}: column {c!r} only in {side}'s answer, and not all null there"
    bad, promoted = [], {}
    for c in common:
        o_t, r_t = ours.schema.field(c).type, rs.schema.field(c).type
        if same_meaning(r_t, o_t):
            continue
        if (latest is not None and c in latest.names and latest.field(c).type == r_t
                and hudi_promotes(o_t, r_t)):
            promoted[c] = r_t
        else:
            bad.append(f"{c}: ours {o_t}, hudi-rs {r_t}")
    assert not bad, f"{what}: column types differ:\n  " + "\n  ".join(bad)
    if promoted:
        what += f" (ours promoted to the latest schema: {', '.join(f'{c} -> {o}' for c, o in promoted.items())})"
        ours = pa.table({c: ours.column(c).cast(promoted[c]) if c in promoted else ours.column(c) for c in common})
    assert ours.num_rows == rs.num_rows, f"{what}: ours has {ours.num_rows} rows, hudi-rs {rs.num_rows}"
    if not common:
        return
    rs = pa.table({c: rs.column(c).cast(ours.schema.field(c).type) for c in common})  # safe casts: lossless only
    a = Counter(_row_key(r) for r in ours.select(common).to_pylist())
    b = Counter(_row_key(r) for r in rs.to_pylist())
    missing, extra = b - a, a - b
    assert not missing and not extra, (
        f"{what}: rows differ ({sum(missing.values())} of hudi-rs's rows missing from ours, "
        f"{sum(extra.values())} of ours not in hudi-rs's)\n"
        f"  missing: {list(missing)[:3]}\n  unexpected: {list(extra)[:3]}")
