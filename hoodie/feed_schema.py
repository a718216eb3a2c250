"""The rows of the change feed: the table's (projected) columns, then the change type and Spark's commit columns.

Its own module because every reader of changes shapes its rows by it — the stream's schema at ``load()``, the
batch API, the CLI — and the planner checks schema changes against it, none of them needing the diff itself.
"""
from __future__ import annotations

import pyarrow as pa

from .read import read_schema
from .table import HudiTable

CHANGE_TYPE = "_change_type"
INSERT, UPDATE_PRE, UPDATE_POST, DELETE = "insert", "update_preimage", "update_postimage", "delete"
#: Spark's (and Delta's) change-feed columns: the order in which commits became visible, and when
COMMIT_VERSION, COMMIT_TIMESTAMP = "_commit_version", "_commit_timestamp"
#: the columns the change feed adds to the table's
FEED_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)


def output_schema(table_schema: pa.Schema, columns: list[str] | None) -> pa.Schema:
    """Rows of the change feed: the (projected) table columns, then the change type and Spark's commit columns."""
    fields = [f for f in table_schema if columns is None or f.name in columns or f.name.startswith("_hoodie_")]
    if columns is not None:
        order = {c: i for i, c in enumerate(columns)}
        meta = [f for f in fields if f.name not in order]
        fields = meta + sorted((f for f in fields if f.name in order), key=lambda f: order[f.name])
    return pa.schema(fields + [pa.field(CHANGE_TYPE, pa.string()), pa.field(COMMIT_VERSION, pa.int64()),
                               pa.field(COMMIT_TIMESTAMP, pa.timestamp("us", tz="UTC"))])


def read_columns(table: HudiTable, schema: pa.Schema) -> pa.Schema:
    """The columns to read for output ``schema``: its table columns plus what merging needs (a stream's driver
    works it out from the timeline, so executors read planned slices without loading it)."""
    return read_schema(table, table.arrow_schema(), schema.names, incremental=True)
