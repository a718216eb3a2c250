"""The split consumer: reads a split's changes in a fixed order and delivers a record range of them.

A split always yields the same sequence (the slice reader's order is deterministic and the split names its
exact files and sizes), so a range ``[skip, stop)`` of it is well defined: after a restart the stream reopens
the split and skips exactly the records already delivered. Before skipping, the files are checked to be the
ones planned — a cleaner that removed them would otherwise shift every record.
"""
from __future__ import annotations

import itertools
import logging
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import overload

import pyarrow as pa
import pyarrow.compute as pc

from .._faults import fault_point
from ..errors import DataLossError, DeleteError
from ..hoodie.fs_view import BaseFile, FileSlice, LogFile
from ..hoodie.logfile.format import parse_log_file_name
from ..hoodie.read import read_schema
from ..hoodie.scanner import InstantRange
from ..hoodie.slice_reader import MergeType, Piece, SliceRead, align, read_slice_changes, slice_pieces
from ..hoodie.table import COMMIT_TIME, RECORD_KEY, HudiTable
from ..monitor.split import PriorSlice, Split
from .options import Deletes

log = logging.getLogger(__name__)

CHANGE_TYPE = "_change_type"
INSERT, UPDATE_PRE, UPDATE_POST, DELETE = "insert", "update_preimage", "update_postimage", "delete"


@dataclass(frozen=True)
class SplitRange:
    """Records ``[skip, stop)`` of one split (``stop`` None: to the end)."""

    split: Split
    skip: int
    stop: int | None


def output_schema(table_schema: pa.Schema, columns: list[str] | None) -> pa.Schema:
    """Rows the stream emits: the (projected) table columns, then the change type."""
    fields = [f for f in table_schema if columns is None or f.name in columns or f.name.startswith("_hoodie_")]
    if columns is not None:
        order = {c: i for i, c in enumerate(columns)}
        meta = [f for f in fields if f.name not in order]
        fields = meta + sorted((f for f in fields if f.name in order), key=lambda f: order[f.name])
    return pa.schema(fields + [pa.field(CHANGE_TYPE, pa.string())])


@overload
def file_slice(split: Split, partition: str | None = None, file_id: str | None = None) -> FileSlice: ...
@overload
def file_slice(split: PriorSlice, partition: str, file_id: str) -> FileSlice: ...
def file_slice(split: Split | PriorSlice, partition: str | None = None, file_id: str | None = None) -> FileSlice:
    """The file slice exactly as planned (paths and sizes from the split, not from a new listing); a prior
    slice takes its partition and file id from its split."""
    if isinstance(split, Split):
        partition = split.partition if partition is None else partition
        file_id = split.file_id if file_id is None else file_id
    elif partition is None or file_id is None:
        raise TypeError("the file slice of a prior slice needs the partition and file id of its split")
    base = None
    if split.base_path:
        parts = posixpath.basename(split.base_path).split("_")
        base = BaseFile(split.base_path, file_id, parts[1] if len(parts) > 2 else "", split.base_instant,
                        split.base_size)
    logs = []
    for ref in split.logs:
        parsed = parse_log_file_name(posixpath.basename(ref.path))
        logs.append(LogFile(ref.path, file_id, parsed.instant if parsed else "", parsed.version if parsed else 0,
                            parsed.write_token if parsed else None, ref.size))
    return FileSlice(partition, file_id, split.base_instant, base, logs)


def verify_files(table: HudiTable, split: Split) -> None:
    """The planned files must still exist with at least the planned sizes."""
    for path, size in _files(split):
        problem = _file_problem(table, path, size)
        if problem:
            raise DataLossError(f"{table.url}: {path} of split {split.file_id} (instants "
                                f"{(split.instants or ['snapshot'])[:3]}) {problem}")


def _files(split: Split | PriorSlice) -> list[tuple[str, int]]:
    return ([(split.base_path, split.base_size)] if split.base_path else []) + [(r.path, r.size) for r in split.logs]


def _file_problem(table: HudiTable, path: str, size: int) -> str | None:
    try:
        actual = table.storage.size(path)
    except FileNotFoundError:
        return "was removed before it was read; the cleaner retains too few commits for this stream's lag"
    return f"shrank from {size} to {actual} bytes since it was planned" if actual < size else None


def _usable_prior(table: HudiTable, split: Split, strict: bool) -> Split:
    """The split, without its prior slice when the cleaner removed that already.

    The prior slice only tells updates from inserts and supplies pre-images and rewrite deletes: when those
    are delivered (``strict``) its loss is data loss; otherwise the rows are labelled inserts, with a warning.
    """
    problems = [f"{path} {p}" for path, size in (_files(split.prior) if split.prior else [])
                if (p := _file_problem(table, path, size))]
    if not problems:
        return split
    if strict:
        raise DataLossError(f"{table.url}: the prior slice of split {split.file_id} (instants "
                            f"{(split.instants or ['snapshot'])[:3]}): {problems[0]}")
    log.warning("%s: DATA LOSS of change details: the prior slice of file group %s is gone (%s); its rows are "
                "delivered as inserts, without pre-images or the deletes of the rewrite", table.url, split.file_id,
                problems[0])
    return split.model_copy(update={"prior": None})


def read_columns(table: HudiTable, schema: pa.Schema) -> pa.Schema:
    """The columns to read for output ``schema``: its table columns plus what merging needs (the driver works
    it out from the timeline, so executors read planned slices without loading it)."""
    return read_schema(table, table.arrow_schema(), schema.names, incremental=True)


def split_changes(table: HudiTable, split: Split, schema: pa.Schema, columns: pa.Schema, deletes: Deletes,
                  changelog: bool = False, merge_type: str = "payload_combine",
                  fail_on_data_loss: bool = True) -> pa.Table:
    """Every change a split delivers, whole: :func:`change_pieces` joined."""
    pieces = list(change_pieces(table, split, schema, columns, deletes, changelog, merge_type, fail_on_data_loss))
    return pa.concat_tables(pieces) if pieces else schema.empty_table()


def change_pieces(table: HudiTable, split: Split, schema: pa.Schema, columns: pa.Schema, deletes: Deletes,
                  changelog: bool = False, merge_type: str = "payload_combine",
                  fail_on_data_loss: bool = True) -> Iterator[pa.Table]:
    """Every change a split delivers (``columns`` read, see :func:`read_columns`), in a fixed order, one piece of
    the slice read at a time (``hoodie.slice_reader.slice_pieces``: a task holds one piece of the base file, not
    the file): per piece pre-images, upserts, then deletes — or, when ``deletes`` is FAIL and the piece deleted
    rows, a :class:`DeleteError` naming the instant (deletes are found unless they are ignored).

    A row is an update when its key was in the file group before the range, an insert otherwise; pre-images
    and the values of deleted keys come from that earlier state (see :func:`_state_before`). Pieces pass through
    ``map``, never a loop variable, so none is kept alive here while the next is read.
    """
    verify_files(table, split)
    split = _usable_prior(table, split, fail_on_data_loss and (deletes is Deletes.EMIT or changelog))
    find_deletes = deletes is not Deletes.IGNORE  # to deliver them, or to stop on them
    if split.replaced_by is not None:
        if find_deletes:
            instant = split.replaced_by

            def removed(piece: Piece) -> pa.Table:
                return _checked(table, split, _with_kind(_at_instant(piece.rows, instant), DELETE, schema), deletes)
            yield from map(removed, slice_pieces(SliceRead(table, columns, split.max_instant), file_slice(split)))
        return
    rng = InstantRange(instants=frozenset(split.instants)) if split.instants is not None else None
    req = SliceRead(table, columns, split.max_instant, rng, MergeType(merge_type), whole_log=True)
    keys_only = read_schema(table, columns, [RECORD_KEY], incremental=True)
    # a rewritten base file drops deleted keys without a trace: they are found against the prior slice
    rewrite_deletes = find_deletes and split.prior is not None

    def changes(rows: pa.Table, deleted: pa.Table | None, before: pa.Table | None) -> pa.Table:
        parts = []
        has_deletes = deleted is not None and deleted.num_rows > 0
        if before is None:
            parts.append(_with_kind(rows, INSERT, schema))
        else:
            before_keys = req.key_array(before)
            existed = pc.is_in(req.key_array(rows), value_set=before_keys)
            if changelog:
                parts.append(_with_kind(_pre_images(req, rows.filter(existed), before, before_keys), UPDATE_PRE,
                                        schema))
            parts.append(_with_kind(rows, pc.if_else(existed, UPDATE_POST, INSERT), schema))
            if has_deletes:
                deleted = _last_known(req, deleted, before)
            if rewrite_deletes:
                gone = _dropped_by_rewrite(split, replace(req, schema=keys_only), before, before_keys)
                deleted = pa.concat_tables([deleted, gone]) if has_deletes else gone
                has_deletes = deleted.num_rows > 0
        if has_deletes:
            parts.append(_with_kind(deleted, DELETE, schema))
        return _checked(table, split, pa.concat_tables(parts), deletes)
    yield from itertools.starmap(changes, _changes_and_earlier_state(split, req, keys_only, find_deletes, changelog,
                                                                     rewrite_deletes))


def _checked(table: HudiTable, split: Split, changes: pa.Table, deletes: Deletes) -> pa.Table:
    """``changes``, unless they hold deletes the stream may not drop silently (``deletes`` FAIL)."""
    if deletes is not Deletes.FAIL or CHANGE_TYPE not in changes.column_names:
        return changes
    gone = changes.filter(pc.equal(changes.column(CHANGE_TYPE), DELETE))
    if not gone.num_rows:
        return changes
    first = gone.slice(0, 1).to_pylist()[0]
    raise DeleteError(f"{table.url}: instant {first.get(COMMIT_TIME)} deleted {gone.num_rows} row(s) of file group "
                      f"{split.partition}/{split.file_id} (e.g. key {first.get(RECORD_KEY)!r}); this stream neither "
                      "delivers deletes (option emitDeletes=true: rows with _change_type 'delete') nor ignores "
                      "them (option ignoreDeletes=true), so it stops rather than let a sink drift from the table")


def _rewrote_base(split: Split) -> bool:
    return split.base_path is not None and split.instants is not None and split.base_instant in split.instants


def _dropped_by_rewrite(split: Split, keys: SliceRead, before: pa.Table, before_keys: pa.Array) -> pa.Table:
    """Rows of the prior slice whose keys the rewritten slice no longer holds, at the rewriting instant."""
    now = read_slice_changes(replace(keys, instant_range=None), file_slice(split), with_deletes=False)[0]
    return _at_instant(before.filter(pc.invert(pc.is_in(before_keys, value_set=keys.key_array(now)))),
                       split.base_instant)


def _at_instant(rows: pa.Table, instant: str) -> pa.Table:
    """``rows`` with ``instant`` as their commit time (the change they are delivered for)."""
    if COMMIT_TIME not in rows.column_names:
        return rows
    idx = rows.schema.get_field_index(COMMIT_TIME)
    return rows.set_column(idx, rows.schema.field(idx), pa.repeat(pa.scalar(instant), rows.num_rows))


def _changes_and_earlier_state(split: Split, req: SliceRead, keys_only: pa.Schema, find_deletes: bool,
                               changelog: bool, rewrite_deletes: bool
                               ) -> Iterator[tuple[pa.Table, pa.Table | None, pa.Table | None]]:
    """The range's rows, its deletes, and the file group's earlier state (None when nothing came before), in
    pieces where the read allows it.

    A range that did not write the base file decodes every block of the slice (``SliceRead.whole_log``), so the
    earlier state comes from the same pass, piece by piece; so do snapshot splits (nothing came before).
    Otherwise (a range that wrote the base file) the range's rows — no more than the range wrote — are read
    whole, then the earlier state in a second read, made only when the range changed something or its rewrite
    may hide deletes, restricted to the keys it changed unless the rewrite's deletes need every key, and of the
    keys alone unless values are delivered (pre-images, deleted rows).
    """
    fs = file_slice(split)
    if split.instants is None or not _rewrote_base(split):
        assert not rewrite_deletes  # a prior slice comes only with a range that wrote the base file
        yield from slice_pieces(req, fs, with_deletes=find_deletes, with_before=split.instants is not None)
        return
    rows, deleted = read_slice_changes(req, fs, with_deletes=find_deletes)
    has_deletes = deleted is not None and deleted.num_rows > 0
    if not (rows.num_rows or has_deletes or rewrite_deletes):
        yield rows, deleted, None
        return
    values = changelog or has_deletes or rewrite_deletes
    changed = None if rewrite_deletes else pa.concat_arrays(
        [req.key_array(t) for t in (rows, deleted) if t is not None and t.num_rows] or [pa.array([], pa.string())])
    yield rows, deleted, _state_before(split, req if values else replace(req, schema=keys_only), changed)


def _state_before(split: Split, req: SliceRead, only: pa.Array | None) -> pa.Table | None:
    """The file group as it was just before the split's range, read a piece at a time and kept only for the keys
    ``only`` (all when None): its base file, unless the range wrote it, merged with the log blocks of instants
    outside the range (all older: the range holds the newest instants).

    When the range wrote a new base file, the state before is the split's prior slice (the planner names it:
    copy-on-write updates, inserts into small files), or nothing for a new file group. None for a snapshot
    split (nothing came before) and for a new file group.
    """
    if split.instants is None:
        return None
    if _rewrote_base(split):
        if split.prior is None:
            return None
        before = SliceRead(req.table, req.schema, split.prior.max_instant, None, req.merge_type)
        fs = file_slice(split.prior, split.partition, split.file_id)
    else:
        before = SliceRead(req.table, req.schema, split.max_instant, None, req.merge_type,
                           without_instants=frozenset(split.instants))
        fs = file_slice(split)
    parts = [p.rows if only is None else p.rows.filter(pc.is_in(req.key_array(p.rows), value_set=only))
             for p in slice_pieces(before, fs)]
    return pa.concat_tables(parts) if parts else req.schema.empty_table()


def _pre_images(req: SliceRead, updated: pa.Table, before: pa.Table, before_keys: pa.Array) -> pa.Table:
    """The earlier rows of the ``updated`` keys, in the earlier state's order, each carrying the commit time of
    the update it precedes (every emitted row's ``_hoodie_commit_time`` is the instant of its change)."""
    found = pc.index_in(before_keys, value_set=req.key_array(updated))
    return _at_commit_of(before.filter(pc.is_valid(found)), updated, pc.drop_null(found))


def _last_known(req: SliceRead, deleted: pa.Table, before: pa.Table) -> pa.Table:
    """Deleted keys carry their values from the state before the range where it has them (the merge alone
    knows only the base row or the delete record), with the commit time of the delete."""
    found = pc.index_in(req.key_array(deleted), value_set=req.key_array(before))
    known = pc.is_valid(found)
    if not pc.any(known).as_py():
        return deleted
    values = _at_commit_of(before.take(pc.drop_null(found)), deleted.filter(known))
    return pa.concat_tables([values, deleted.filter(pc.invert(known))])


def _at_commit_of(rows: pa.Table, changes: pa.Table, change_of_row: pa.Array | None = None) -> pa.Table:
    """``rows`` with the commit time of ``changes[change_of_row[i]]`` for row ``i`` (of ``changes[i]`` when
    ``change_of_row`` is None)."""
    if COMMIT_TIME not in rows.column_names:
        return rows
    times = changes.column(COMMIT_TIME)
    idx = rows.schema.get_field_index(COMMIT_TIME)
    return rows.set_column(idx, rows.schema.field(idx), times if change_of_row is None else times.take(change_of_row))


def _with_kind(rows: pa.Table, kinds: str | pa.Array, schema: pa.Schema) -> pa.Table:
    """``rows`` aligned to ``schema`` with their change type: one for all, or one per row."""
    if isinstance(kinds, str):
        kinds = pa.repeat(pa.scalar(kinds, pa.string()), rows.num_rows)
    return align(rows.append_column(CHANGE_TYPE, kinds), schema)


def consume(table: HudiTable, ranges: list[SplitRange], schema: pa.Schema, columns: pa.Schema, target: pa.Schema,
            *, deletes: Deletes, changelog: bool, merge_type: str, mini_batch: int,
            fail_on_data_loss: bool = True) -> Iterator[pa.RecordBatch]:
    """Record batches of at most ``mini_batch`` rows for each range, in order, cast to ``target``, handed on as
    each piece of the split is read (a range that ends early stops reading there).

    A piece's batches are slices of it, so neither the piece nor a batch stays referenced here once handed on
    (``del``, :func:`_batches`): a task holds one piece of the split while the next is read, not two."""
    for r in ranges:
        pos = 0
        for changes in change_pieces(table, r.split, schema, columns, deletes, changelog, merge_type,
                                     fail_on_data_loss):
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
        fault_point("consumer.read")
