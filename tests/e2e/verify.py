"""What a stream delivered, checked against the table: no duplicate, no loss."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def delivered(out: Path) -> list[dict]:
    """Every delivered row, in batch order, each with its batch id."""
    rows = []
    for folder in sorted(out.glob("batch=*")):
        batch = int(folder.name.split("=")[1])
        files = sorted(folder.glob("*.parquet"))
        if not files:
            continue
        t = pa.concat_tables([pq.read_table(f) for f in files])
        for r in t.to_pylist():
            r["_batch"] = batch
            rows.append(r)
    return rows


def duplicates(rows: list[dict]) -> list:
    """Versions delivered more than once: (key, commit time, change type) must be unique."""
    c = Counter((r["_hoodie_record_key"], r["_hoodie_commit_time"], r["_change_type"]) for r in rows)
    return [k for k, n in c.items() if n > 1]


def apply_upserts(rows: list[dict]) -> dict[str, dict]:
    """The table state a consumer builds by applying upserts and deletes in delivery order."""
    state: dict[str, dict] = {}
    order = sorted(rows, key=lambda r: (r["_batch"], r["_hoodie_commit_time"] or "", r["_change_type"] != "delete"))
    for r in order:
        key = r["_hoodie_record_key"]
        if r["_change_type"] == "delete":
            state.pop(key, None)
        elif r["_change_type"] != "update_preimage":
            state[key] = {k: v for k, v in r.items() if k not in ("_batch", "_change_type")}
    return state


def _plain(v):
    """Spark's parquet output drops the UTC zone of timestamps; compare instants, not representations."""
    if hasattr(v, "tzinfo") and v.tzinfo is not None:
        return v.replace(tzinfo=None) - (v.utcoffset() or v - v)
    return v


def state_differences(state: dict[str, dict], snapshot: pa.Table, ignore=("_hoodie_file_name",)) -> list[str]:
    """Keys whose delivered state differs from the table's snapshot (missing, extra, or other values)."""
    expected = {r["_hoodie_record_key"]: r for r in snapshot.to_pylist()}
    out = [f"missing {k}" for k in sorted(set(expected) - set(state))]
    out += [f"extra {k}" for k in sorted(set(state) - set(expected))]
    for k in sorted(set(expected) & set(state)):
        a = {c: _plain(v) for c, v in expected[k].items() if c not in ignore}
        b = {c: _plain(state[k].get(c)) for c in a}
        if a != b:
            out.append(f"differs {k}: delivered {b} table {a}")
    return out
