"""The split consumer: delivers a record range of a split's changes, in mini-batches cast to Spark's schema.

What a split's changes are — change types, pre-images, deletes, in a fixed order — is the format layer's
(``hoodie.changes``). A split always yields the same sequence (that order is deterministic and the split names
its exact files and sizes), so a range ``[skip, stop)`` of it is well defined: after a restart the stream reopens
the split and skips exactly the records already delivered.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from .._faults import fault_point
from ..hoodie.changes import change_pieces
from ..hoodie.commit_clock import CommitClock
from ..hoodie.deletes import Deletes
from ..hoodie.slice_reader import MergeType
from ..hoodie.split import Split
from ..hoodie.table import HudiTable


@dataclass(frozen=True)
class SplitRange:
    """Records ``[skip, stop)`` of one split (``stop`` None: to the end)."""

    split: Split
    skip: int
    stop: int | None


def consume(table: HudiTable, ranges: list[SplitRange], schema: pa.Schema, columns: pa.Schema, target: pa.Schema,
            *, deletes: Deletes, changelog: bool, merge_type: MergeType | str, mini_batch: int,
            fail_on_data_loss: bool = True, clock: CommitClock | None = None,
            carryovers: frozenset[str] | None = None, rows_of: Callable[[str], pa.Table] | None = None
            ) -> Iterator[pa.RecordBatch]:
    """Record batches of at most ``mini_batch`` rows for each range, in order, cast to ``target``, handed on as
    each piece of the split is read (a range that ends early stops reading there). A task hands Spark these
    batches :func:`coalesced`.

    A piece's batches are slices of it, so neither the piece nor a batch stays referenced here once handed on
    (``del``, :func:`_batches`): a task holds one piece of the split while the next is read, not two.
    ``rows_of`` reads the rows a split names (``Split.rows``: a reconcile's deletes)."""
    for r in ranges:
        pos = 0
        given = rows_of(r.split.rows) if rows_of is not None and r.split.rows is not None else None
        for changes in change_pieces(table, r.split, schema, columns, deletes, changelog, merge_type,
                                     fail_on_data_loss, clock, carryovers, given):
            end = pos + changes.num_rows
            lo, hi = max(r.skip, pos), (end if r.stop is None else min(r.stop, end))
            if lo < hi:
                yield from _batches(changes.slice(lo - pos, hi - lo), mini_batch, target)
            del changes
            pos = end
            if r.stop is not None and pos >= r.stop:
                break


def _batches(rows: pa.Table, mini_batch: int, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    """``rows`` as record batches of at most ``mini_batch`` rows cast to ``target``; the last batch handed on is
    released with this generator when it ends (a loop variable of :func:`consume` would keep it, and with it
    the piece, alive)."""
    for batch in rows.to_batches(max_chunksize=mini_batch):
        yield batch.cast(target) if batch.schema != target else batch


def coalesced(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """``batches`` in their order, consecutive ones of fewer than ``rows`` rows joined into batches of at most
    ``rows`` rows (empty ones left out): what a task hands Spark.

    Spark pays for every batch a task hands it (an Arrow message the worker writes and the JVM reads into
    rows), and :func:`consume` yields a batch or more per piece of each file group: on issue 25's wide table
    (15 file groups of 20 rows per task) that was 30 batches of ~10 rows per task, now one. Rows are neither
    reordered nor split, so a task delivers the same sequence (per-key and changelog order hold).

    The batches held here while more arrive are fewer than ``rows`` rows in all; one that is a slice of a
    larger piece is copied when held (:func:`_owned`), so that no piece stays alive while the next is read.
    """
    held: list[pa.RecordBatch] = []
    n = 0
    for batch in batches:
        if held and n + batch.num_rows > rows:
            yield _joined(held)
            fault_point("consumer.read")
            held, n = [], 0
        if batch.num_rows >= rows:
            yield batch
            fault_point("consumer.read")
        elif batch.num_rows:
            held.append(_owned(batch))
            n += batch.num_rows
        del batch  # not kept alive by the loop while the next batch is read
    if held:
        yield _joined(held)
        fault_point("consumer.read")


#: bytes of a larger piece that a held batch may keep alive without being copied (see :func:`_owned`)
_SLICE_SLACK = 1 << 20


def _owned(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch``, copied when it is a slice of a much larger piece: its buffers hold over twice its own bytes
    and a MiB more (a slice of a small piece, e.g. a file group's updated rows, is not worth a copy)."""
    if batch.get_total_buffer_size() <= 2 * batch.nbytes + _SLICE_SLACK:
        return batch
    return pa.RecordBatch.from_arrays([pa.concat_arrays([c]) for c in batch.columns], schema=batch.schema)


def _joined(held: list[pa.RecordBatch]) -> pa.RecordBatch:
    """``held`` as one batch (one is handed on as is)."""
    if len(held) == 1:
        return held[0]
    return pa.Table.from_batches(held).combine_chunks().to_batches()[0]
