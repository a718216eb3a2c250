"""The change feed of a Hudi table: what changed in one file slice over a range of instants, with change types.

These are facts about the table, not about Spark: a row is an update when its key was in the file group before
the range and an insert otherwise; an update's pre-image and a deleted key's last values come from that earlier
state (the base file plus the log blocks older than the range, or — when the range rewrote the base file —
the file group's prior slice); a copy-on-write rewrite deletes the keys it left out without writing a delete
record; and the file groups an insert overwrite replaced lose every row at once.

The stream (``streaming.consumer``), the batch API (:func:`hudi_streaming.read_changes`) and the CLI's ``tail``
all read changes through :func:`change_pieces`. Its output order is fixed — per piece of the slice read,
pre-images, then upserts, then deletes — because a stream resumes a split by skipping the first N rows it
delivered: changing that order changes what an offset means (bump the stream's offset version).
"""
from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataLossError, DeleteError, StateError
from .commit_clock import CommitClock, commit_clock, commit_stamper
from .deletes import Deletes
from .feed_schema import (
    CHANGE_TYPE,
    COMMIT_VERSION,
    DELETE,
    FEED_COLUMNS,
    INSERT,
    UPDATE_POST,
    UPDATE_PRE,
)
from .planned_files import missing_files, verified
from .read import read_schema
from .scanner import InstantRange
from .slice_reader import MergeType, Piece, SliceRead, align, read_slice_changes, slice_pieces
from .split import Split
from .table import COMMIT_TIME, RECORD_KEY, HudiTable

log = logging.getLogger(__name__)


def _usable_prior(table: HudiTable, rng: Split, strict: bool) -> Split:
    """The range, without its prior slice when the cleaner removed that already.

    The prior slice only tells updates from inserts and supplies pre-images and rewrite deletes: when those
    are delivered (``strict``) its loss is data loss; otherwise the rows are labelled inserts, with a warning.
    """
    problems = [f"{path} {p}" for path, p in missing_files(table, rng.prior)]
    if not problems:
        return rng
    if strict:
        raise DataLossError(f"{table.url}: the prior slice of {rng.where}: {problems[0]}")
    log.warning("%s: DATA LOSS of change details: the prior slice of file group %s is gone (%s); its rows are "
                "delivered as inserts, without pre-images or the deletes of the rewrite", table.url,
                rng.slice.file_id, problems[0])
    return replace(rng, prior=None)


def slice_changes(table: HudiTable, rng: Split, schema: pa.Schema, columns: pa.Schema, deletes: Deletes,
                  changelog: bool = False, merge_type: MergeType | str = MergeType.PAYLOAD_COMBINE,
                  fail_on_data_loss: bool = True, clock: CommitClock | None = None) -> pa.Table:
    """Every change of ``rng``, whole: :func:`change_pieces` joined."""
    pieces = list(change_pieces(table, rng, schema, columns, deletes, changelog, merge_type, fail_on_data_loss,
                                clock))
    return pa.concat_tables(pieces) if pieces else schema.empty_table()


def change_pieces(table: HudiTable, rng: Split, schema: pa.Schema, columns: pa.Schema, deletes: Deletes,
                  changelog: bool = False, merge_type: MergeType | str = MergeType.PAYLOAD_COMBINE,
                  fail_on_data_loss: bool = True, clock: CommitClock | None = None,
                  carryovers: frozenset[str] | None = None, given: pa.Table | None = None) -> Iterator[pa.Table]:
    """Every change of ``rng`` (``columns`` read, see :func:`read_columns`; rows shaped as ``schema``, see
    :func:`output_schema`), in a fixed order, one piece of the slice read at a time (``slice_pieces``: a reader
    holds one piece of the base file, not the file): per piece pre-images (``changelog``), upserts, then
    deletes — or, when ``deletes`` is FAIL and the piece deleted rows, a :class:`DeleteError` naming the
    instant (deletes are found unless they are ignored).

    With ``carryovers`` (a set of column names, maybe empty) an update whose values equal the key's earlier
    values in every delivered column but the meta columns and those named is a carry-over — a writer rewrote the
    record unchanged — and is left out: its post-image (upsert mode) or both images (changelog mode). Spark's
    change feeds call this ``deduplicationMode=dropCarryovers``. The rows left out are the same on every read of
    the range, so record offsets stay exact.

    Each row's ``_commit_version`` and ``_commit_timestamp`` (when ``schema`` has them) say when the write of its
    ``_hoodie_commit_time`` became visible (``clock``; from the table's timeline when None); a snapshot's rows,
    written by many older commits, are delivered as of the snapshot's instant.

    A table without meta fields gives each row the instant of the file or log block that holds it (the slice
    reader's ``commit_times``), carried along here and left out of the rows delivered. A copy-on-write upsert
    rewrites the file group's base file, which then holds the rows it carried over too: on such a table they
    are told apart from the changes by their values (as ``carryovers`` does), since nothing else can tell them —
    so an upsert that rewrote a record unchanged is not delivered either.

    A split with ``rows`` delivers ``given`` (the rows it names) as deletes, and reads no file.

    Pieces pass through ``map``, never a loop variable, so none is kept alive here while the next is read.
    """
    virtual = not table.config.populate_meta_fields
    work = pa.schema([pa.field(COMMIT_TIME, pa.string()), *schema]) if virtual else schema
    if virtual and carryovers is None and rng.prior is not None:
        carryovers = frozenset()
    pieces = _given_deletes(table, rng, work, deletes, given) if rng.rows is not None else \
        verified(table, rng.slice, rng.where, _change_pieces(table, rng, work, columns, deletes, changelog,
                                                             merge_type, fail_on_data_loss, carryovers))
    if COMMIT_VERSION in schema.names:
        clock = clock or commit_clock(table, rng.delivered_instants, table.config.timeline_zone)
        pieces = map(commit_stamper(rng.delivered_instants, rng.where, clock), pieces)
    yield from map(_without_commit_time, pieces) if virtual else pieces


def _given_deletes(table: HudiTable, rng: Split, schema: pa.Schema, deletes: Deletes, given: pa.Table | None
                   ) -> Iterator[pa.Table]:
    if given is None:
        raise StateError(f"{rng.where}: the rows {rng.rows} it delivers were not given")
    if deletes is not Deletes.IGNORE:
        yield _checked(table, rng, _with_kind(given, DELETE, schema), deletes)


def _without_commit_time(piece: pa.Table) -> pa.Table:
    return piece.drop_columns([COMMIT_TIME])


def _change_pieces(table: HudiTable, rng: Split, schema: pa.Schema, columns: pa.Schema, deletes: Deletes,
                   changelog: bool, merge_type: MergeType | str, fail_on_data_loss: bool,
                   carryovers: frozenset[str] | None) -> Iterator[pa.Table]:
    rng = _usable_prior(table, rng, fail_on_data_loss and (deletes is Deletes.EMIT or changelog))
    find_deletes = deletes is not Deletes.IGNORE  # to deliver them, or to stop on them
    if rng.replaced_by is not None:
        if find_deletes:
            instant = rng.replaced_by

            def removed(piece: Piece) -> pa.Table:
                return _checked(table, rng, _with_kind(_at_instant(piece.rows, instant), DELETE, schema), deletes)
            yield from map(removed, slice_pieces(SliceRead(table, columns, rng.max_instant), rng.slice))
        return
    window = InstantRange(instants=frozenset(rng.instants)) if rng.instants is not None else None
    req = SliceRead(table, columns, rng.max_instant, window, MergeType(merge_type), whole_log=True)
    keys_only = read_schema(table, columns, [RECORD_KEY], incremental=True)
    # a rewritten base file drops deleted keys without a trace: they are found against the prior slice
    rewrite_deletes = find_deletes and rng.prior is not None

    def changes(rows: pa.Table, deleted: pa.Table | None, before: pa.Table | None) -> pa.Table:
        parts = []
        has_deletes = deleted is not None and deleted.num_rows > 0
        if before is None:
            parts.append(_with_kind(rows, INSERT, schema))
        else:
            before_keys = req.key_array(before)
            existed = pc.is_in(req.key_array(rows), value_set=before_keys)
            if carryovers is not None:  # an update that changed no delivered value is no change
                rows = rows.filter(pc.invert(_unchanged(req, rows, existed, before, before_keys,
                                                         _compared(schema, carryovers))))
                existed = pc.is_in(req.key_array(rows), value_set=before_keys)
            if changelog:
                parts.append(_with_kind(_pre_images(req, rows.filter(existed), before, before_keys), UPDATE_PRE,
                                        schema))
            parts.append(_with_kind(rows, pc.if_else(existed, UPDATE_POST, INSERT), schema))
            if has_deletes:
                deleted = _last_known(req, deleted, before)
            if rewrite_deletes:
                gone = _dropped_by_rewrite(rng, replace(req, schema=keys_only), before, before_keys)
                deleted = pa.concat_tables([deleted, gone]) if has_deletes else gone
                has_deletes = deleted.num_rows > 0
        if has_deletes:
            parts.append(_with_kind(deleted, DELETE, schema))
        return _checked(table, rng, pa.concat_tables(parts), deletes)
    yield from itertools.starmap(changes, _changes_and_earlier_state(
        rng, req, keys_only, find_deletes, changelog or carryovers is not None, rewrite_deletes))


def _compared(schema: pa.Schema, ignored: frozenset[str]) -> list[str]:
    """The columns a carry-over is judged by: every delivered column but Hudi's meta columns, the feed's own
    and ``ignored``."""
    return [n for n in schema.names if not n.startswith("_hoodie_") and n not in FEED_COLUMNS and n not in ignored]


def _unchanged(req: SliceRead, rows: pa.Table, existed: pa.Array, before: pa.Table, before_keys: pa.Array,
               columns: list[str]) -> pa.Array:
    """Per row: its key existed before and its values in ``columns`` equal the earlier ones (nulls equal nulls)."""
    found = pc.index_in(req.key_array(rows), value_set=before_keys)
    earlier = before.take(pc.fill_null(found, 0)) if before.num_rows else None
    same = pc.and_(existed, pc.is_valid(found))
    for name in columns:
        if earlier is None or not pc.any(same).as_py():
            break
        new = rows.column(name) if name in rows.column_names else pa.nulls(rows.num_rows)
        old = earlier.column(name) if name in earlier.column_names else pa.nulls(rows.num_rows)
        same = pc.and_(same, _equal(new, old))
    return pc.fill_null(same, False)


def _equal(a: pa.ChunkedArray | pa.Array, b: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Element-wise equality where two nulls are equal; nested values are compared as Python values."""
    if pa.types.is_nested(a.type) or a.type != b.type:
        return pa.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist())], pa.bool_())
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    return pc.or_(pc.fill_null(pc.equal(a, b), False), both_null)


def _checked(table: HudiTable, rng: Split, changes: pa.Table, deletes: Deletes) -> pa.Table:
    """``changes``, unless they hold deletes the reader may not drop silently (``deletes`` FAIL)."""
    if deletes is not Deletes.FAIL or CHANGE_TYPE not in changes.column_names:
        return changes
    gone = changes.filter(pc.equal(changes.column(CHANGE_TYPE), DELETE))
    if not gone.num_rows:
        return changes
    first = gone.slice(0, 1).to_pylist()[0]
    raise DeleteError(f"{table.url}: instant {first.get(COMMIT_TIME)} deleted {gone.num_rows} row(s) of file group "
                      f"{rng.slice.partition}/{rng.slice.file_id} (e.g. key {first.get(RECORD_KEY)!r}); this stream "
                      "neither delivers deletes (option emitDeletes=true: rows with _change_type 'delete') nor "
                      "ignores them (option ignoreDeletes=true), so it stops rather than let a sink drift from the "
                      "table")


def _dropped_by_rewrite(rng: Split, keys: SliceRead, before: pa.Table, before_keys: pa.Array) -> pa.Table:
    """Rows of the prior slice whose keys the rewritten slice no longer holds, at the rewriting instant."""
    now = read_slice_changes(replace(keys, instant_range=None), rng.slice, with_deletes=False)[0]
    return _at_instant(before.filter(pc.invert(pc.is_in(before_keys, value_set=keys.key_array(now)))),
                       rng.slice.base_instant)


def _at_instant(rows: pa.Table, instant: str) -> pa.Table:
    """``rows`` with ``instant`` as their commit time (the change they are delivered for)."""
    if COMMIT_TIME not in rows.column_names:
        return rows
    idx = rows.schema.get_field_index(COMMIT_TIME)
    return rows.set_column(idx, rows.schema.field(idx), pa.repeat(pa.scalar(instant), rows.num_rows))


def _changes_and_earlier_state(rng: Split, req: SliceRead, keys_only: pa.Schema, find_deletes: bool,
                               need_values: bool, rewrite_deletes: bool
                               ) -> Iterator[tuple[pa.Table, pa.Table | None, pa.Table | None]]:
    """The range's rows, its deletes, and the file group's earlier state (None when nothing came before), in
    pieces where the read allows it.

    A range that did not write the base file decodes every block of the slice (``SliceRead.whole_log``), so the
    earlier state comes from the same pass, piece by piece; so do snapshot ranges (nothing came before).
    Otherwise (a range that wrote the base file) the range's rows — no more than the range wrote — are read
    whole, then the earlier state in a second read, made only when the range changed something or its rewrite
    may hide deletes, restricted to the keys it changed unless the rewrite's deletes need every key, and of the
    keys alone unless values are needed (``need_values``: pre-images, carry-over checks; deleted rows).
    """
    if rng.instants is None or not rng.rewrote_base:
        assert not rewrite_deletes  # a prior slice comes only with a range that wrote the base file
        yield from slice_pieces(req, rng.slice, with_deletes=find_deletes, with_before=rng.instants is not None)
        return
    rows, deleted = read_slice_changes(req, rng.slice, with_deletes=find_deletes)
    has_deletes = deleted is not None and deleted.num_rows > 0
    if not (rows.num_rows or has_deletes or rewrite_deletes):
        yield rows, deleted, None
        return
    values = need_values or has_deletes or rewrite_deletes
    changed = None if rewrite_deletes else pa.concat_arrays(
        [req.key_array(t) for t in (rows, deleted) if t is not None and t.num_rows] or [pa.array([], pa.string())])
    yield rows, deleted, _state_before(rng, req if values else replace(req, schema=keys_only), changed)


def _state_before(rng: Split, req: SliceRead, only: pa.Array | None) -> pa.Table | None:
    """The file group as it was just before the range, read a piece at a time and kept only for the keys
    ``only`` (all when None): its base file, unless the range wrote it, merged with the log blocks of instants
    outside the range (all older: the range holds the newest instants).

    When the range wrote a new base file, the state before is the prior slice (the planner names it:
    copy-on-write updates, inserts into small files), or nothing for a new file group. None for a snapshot
    (nothing came before) and for a new file group.
    """
    if rng.instants is None:
        return None
    if rng.rewrote_base:
        if rng.prior is None:
            return None
        before = SliceRead(req.table, req.schema, rng.prior_max_instant, None, req.merge_type)
        fs = rng.prior
    else:
        before = SliceRead(req.table, req.schema, rng.max_instant, None, req.merge_type,
                           without_instants=frozenset(rng.instants))
        fs = rng.slice
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
