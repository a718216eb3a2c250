"""What a stream delivered, checked against the table: no duplicate, no loss."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def delivered(out: Path) -> list[dict]:
    """Every row of an overwriting sink (a folder ``batch=<id>`` per batch), in batch order, each with its batch
    id in ``_batch``."""
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


def appended(out: Path) -> list[dict]:
    """Every row an appending sink wrote into one folder (the batch id in its ``_batch`` column), in batch order."""
    files = sorted(out.glob("*.parquet"))
    rows = pa.concat_tables([pq.read_table(f) for f in files]).to_pylist() if files else []
    return sorted(rows, key=lambda r: r["_batch"])


def change_feed(steps) -> list[tuple]:
    """The changelog the load generator's steps make, from its own record of what it wrote (no reader):
    ``(key, change type, commit instant, ts)`` for every insert, update (pre- and post-image) and delete."""
    present: dict[str, int] = {}
    expected = []
    for s in steps:
        for r in s.data.to_pylist():
            key = r["key"]  # key numbers are unique across partitions
            if s.kind == "delete":
                if key in present:
                    expected.append((key, "delete", s.instant, present.pop(key)))
            else:
                if key in present:
                    expected.append((key, "update_preimage", s.instant, present[key]))
                expected.append((key, "update_postimage" if key in present else "insert", s.instant, r["ts"]))
                present[key] = r["ts"]
    return expected


def feed(rows: list[dict]) -> list[tuple]:
    """Delivered rows as change-feed entries, comparable with :func:`change_feed`."""
    return [(r["key"], r["_change_type"], r["_hoodie_commit_time"], r["ts"]) for r in rows]


def feed_differences(expected: list[tuple], rows: list[dict]) -> dict[str, list]:
    """Entries delivered more often than written (``duplicated``), less often (``lost``), never written
    (``unexpected``); all empty when the stream delivered each change exactly once."""
    want, got = Counter(expected), Counter(feed(rows))
    return {"duplicated": sorted(k for k, n in got.items() if k in want and n > want[k]),
            "lost": sorted(k for k in want if got[k] < want[k]),
            "unexpected": sorted(k for k in got if k not in want)}


def duplicates(rows: list[dict]) -> list:
    """Versions delivered more than once: (key, commit time, change type) must be unique."""
    c = Counter((r["_hoodie_record_key"], r["_hoodie_commit_time"], r["_change_type"]) for r in rows)
    return [k for k, n in c.items() if n > 1]


def record_key(row: dict, key_fields: list[str] | None = None) -> str:
    """A row's record key: ``_hoodie_record_key``, or on a table without meta fields its key fields' values."""
    return row["_hoodie_record_key"] if key_fields is None else ",".join(str(row[f]) for f in key_fields)


def apply_upserts(rows: list[dict], key_fields: list[str] | None = None) -> dict[str, dict]:
    """The table state a consumer builds by applying upserts and deletes in delivery order (within a batch, in
    commit order: ``_hoodie_commit_time``, or ``_commit_version`` on a table without meta fields)."""
    state: dict[str, dict] = {}

    def commit(r: dict) -> str:
        return r.get("_hoodie_commit_time") or f"{r.get('_commit_version') or 0:020d}"
    order = sorted(rows, key=lambda r: (r["_batch"], commit(r), r["_change_type"] != "delete"))
    for r in order:
        key = record_key(r, key_fields)
        if r["_change_type"] == "delete":
            state.pop(key, None)
        elif r["_change_type"] != "update_preimage":
            state[key] = {k: v for k, v in r.items() if k not in ("_batch", "_change_type")}
    return state


def _plain(v):
    """Spark's parquet output drops the UTC zone of timestamps; compare instants, not representations. A map
    (Arrow gives its entries as a list of pairs) compares as a set of entries: its order carries no meaning, and
    readers differ in it."""
    if hasattr(v, "tzinfo") and v.tzinfo is not None:
        return v.replace(tzinfo=None) - (v.utcoffset() or v - v)
    if isinstance(v, list) and v and all(isinstance(e, tuple) for e in v):
        return sorted(v, key=repr)
    return v


def state_differences(state: dict[str, dict], snapshot: pa.Table, ignore=("_hoodie_file_name",),
                      key_fields: list[str] | None = None) -> list[str]:
    """Keys whose delivered state differs from the table's snapshot (missing, extra, or other values)."""
    expected = {record_key(r, key_fields): r for r in snapshot.to_pylist()}
    out = [f"missing {k}" for k in sorted(set(expected) - set(state))]
    out += [f"extra {k}" for k in sorted(set(state) - set(expected))]
    for k in sorted(set(expected) & set(state)):
        a = {c: _plain(v) for c, v in expected[k].items() if c not in ignore}
        b = {c: _plain(state[k].get(c)) for c in a}
        if a != b:
            out.append(f"differs {k}: delivered {b} table {a}")
    return out
