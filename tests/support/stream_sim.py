"""Driving the stream reader's driver side the way Spark does, without Spark (fast, deterministic tests).

Spark's loop per micro-batch: ``latestOffset(start, limit)`` → ``partitions(start, end)`` → executors
``read()`` each partition → ``commit(end)``. :func:`run_batches` does exactly that with the real reader
classes, so the offset arithmetic, state files and split consumer are the production code paths.
"""
from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.streaming.datasource import ReadAllAvailable

from hudi_streaming.streaming.options import parse_options
from hudi_streaming.streaming.schema import source_schema
from hudi_streaming.streaming.source import HudiStreamReader


def make_reader(table: str, state: str, **options: str) -> HudiStreamReader:
    opts = parse_options({"path": table, "stateLocation": state, **options})
    return HudiStreamReader(opts, from_arrow_schema(source_schema(opts)))


def run_batches(reader: HudiStreamReader, start: dict | None = None, limit=None, max_batches: int = 1000,
                available_now: bool = False, into: list | None = None) -> list[pa.Table]:
    """Micro-batches until the reader reports no new data; returns each batch's rows (appended to ``into`` as
    each batch commits, when given: a test then keeps what a stream delivered before it failed)."""
    if available_now:
        reader.prepareForTriggerAvailableNow()
    limit = limit or reader.getDefaultReadLimit() or ReadAllAvailable()
    start = start or reader.initialOffset()
    batches = into if into is not None else []
    reader._last_offset = start  # the last committed offset, for tests that continue after new instants
    for _ in range(max_batches):
        end = reader.latestOffset(start, limit)
        if end == start:
            break
        parts = reader.partitions(start, end)
        rows = [b for p in parts for b in reader.read(p)]
        batches.append(pa.Table.from_batches(rows) if rows else None)
        reader.commit(end)
        start = reader._last_offset = end
    return batches


def resume(reader: HudiStreamReader, **kwargs) -> list[pa.Table]:
    """Continue a stream after the table changed: poll at once (not after the idle interval) from where it was."""
    reader.driver._last_poll = 0.0
    return run_batches(reader, start=reader._last_offset, **kwargs)


def as_read(parts: list) -> list:
    """Tasks as they read: each range's split without its row bound. A bound the driver read for a row limit
    (``StreamDriver._read_bounds``) stays in that driver's memory, so a restarted driver's tasks for the same
    batch carry none; the bound only decides where a batch ends, and the ranges, files and records are what
    must be the same."""
    return [replace(p, ranges=[replace(r, split=replace(r.split, est_rows=None)) for r in p.ranges]) for p in parts]
