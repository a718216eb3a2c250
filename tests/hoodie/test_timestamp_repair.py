"""Millisecond timestamps written under a microsecond label (Hudi 0.14.1-1.0, apache/hudi#13233), repaired as
Hudi 1.1+ reads them once the table's schema says millis again (apache/hudi PR #14161).

The table: the project's writer writes a version-6 MERGE_ON_READ table whose ``at`` column holds millisecond
values under Avro's and parquet's microsecond label — in the base file and in a log block, as the affected
Hudi versions did — and then the latest commit's schema is set to timestamp-millis, as Hudi 1.1's corrected
writer records it. Read as labelled, 2024-07-10 would come back as 1970-01-20.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_streaming import read_changes, read_table
from hudi_streaming.writer import create_table

MS = 1_720_631_224_939  # 2024-07-10T17:07:04.939Z, in milliseconds
WHEN = dt.datetime(2024, 7, 10, 17, 7, 4, 939000, tzinfo=dt.timezone.utc)
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("at", pa.timestamp("us", tz="UTC"))])


def _mislabelled(keys: list[str], ts: int) -> pa.Table:
    """Millisecond numbers in a microsecond column: what the affected writers put in their files."""
    at = pa.array([MS] * len(keys), pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    return pa.table({"id": keys, "ts": [ts] * len(keys), "at": at}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    url = tmp_path / "t"
    w = create_table(str(url), "t", SCHEMA, record_key="id", ordering_field="ts", table_type="MERGE_ON_READ",
                     version=6)
    w.upsert(_mislabelled(["a", "b"], 1))  # a base file
    last = w.upsert(_mislabelled(["b", "c"], 2))  # a log block (b) and its file group's inserts
    commit = url / ".hoodie" / f"{last}.deltacommit"
    text = commit.read_text()
    assert '\\"logicalType\\":\\"timestamp-micros\\"' in text
    millis = text.replace('\\"logicalType\\":\\"timestamp-micros\\"', '\\"logicalType\\":\\"timestamp-millis\\"')
    commit.write_text(millis)
    return url


def test_a_millis_table_schema_repairs_micros_labelled_files(table):
    rows = read_table(str(table), columns=["id", "at"]).to_pylist()
    assert sorted((r["id"], r["at"]) for r in rows) == [("a", WHEN), ("b", WHEN), ("c", WHEN)]
    changes = read_changes(str(table), columns=["id", "at"])
    assert {r["at"] for r in changes.to_pylist()} == {WHEN}


def test_files_labelled_as_the_table_says_are_left_alone(tmp_path):
    """Without the table's millis label nothing is repaired: the same files read as labelled."""
    url = tmp_path / "t"
    w = create_table(str(url), "t", SCHEMA, record_key="id", ordering_field="ts", table_type="MERGE_ON_READ",
                     version=6)
    w.upsert(_mislabelled(["a"], 1))
    (row,) = read_table(str(url), columns=["at"]).to_pylist()
    assert row["at"] == dt.datetime(1970, 1, 20, 21, 57, 11, 224939, tzinfo=dt.timezone.utc)
