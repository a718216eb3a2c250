"""Hudi's merge rules, vectorised with Arrow: log records folded per key, then merged onto base rows.

Two steps, as in Hudi (spec §8.1): the *delta merge* folds the log records of one key in log order; the
*final merge* combines the folded record with the key's base-file row. Which version survives depends on the
table: commit-time ordering (newest wins), event-time ordering (largest ordering value wins, ties to the
newer; a "commit-time delete" — ordering value 0, written by SQL ``DELETE`` — beats everything before it), and
the 0.x payload classes of table v6, whose quirks are kept (:class:`MergeRules`).

Ordering values compare in the natural order of their type (numbers and decimals by value, strings by code
point, dates and timestamps by time). A null ordering value compares as its type's zero (0, 0.0, decimal 0,
``""``, 1970-01-01, the epoch): Hudi replaces a null by the default ordering value 0
(``RecordContext.getOrderingValue``), which 1.0 cast to the field's type (``castValue(0, type)`` in
``HoodieBaseFileGroupRecordBuffer``, removed by HUDI-8682; since then only an int field compares it without a
``ClassCastException``). The one exception is table v6's final merge, where a null *stored* value lets the log
record win (``DefaultHoodieRecordPayload.needUpdatingPersistedRecord``: ``persistedOrderingVal == null ||``).

The fold is sequential by nature, but almost every key has one or two versions. So instead of a Python loop
over records, the fold runs one vectorised step per *version rank*: step ``r`` combines the current winner of
every key that has more than ``r`` versions with its ``r``-th version. A merged record is represented by the
index of the record each column comes from, which makes partial updates (a block that carries only some
columns) the same machinery.
"""
from __future__ import annotations

import decimal
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedTableError
from .config import MergeMode
from .scanner import ScanStats, timed


@dataclass(frozen=True)
class MergeRules:
    """How versions of one record combine on one table."""

    mode: MergeMode
    #: table v6: payload-class semantics (a record after a delete-block delete wins; delete-block deletes beat
    #: the base)
    legacy_payload: bool = False
    #: v6 ``OverwriteWithLatestAvroPayload``: the final merge ignores ordering (the log always wins)
    log_always_wins: bool = False

    @property
    def event_time(self) -> bool:
        return self.mode is MergeMode.EVENT_TIME_ORDERING


@dataclass
class LogRecords:
    """All log records of a slice that count, oldest first, aligned to the read schema.

    ``ordering`` holds the ordering value(s) as stored, nulls included (the merge compares a null as its type's
    zero); ``is_delete`` marks deletes (delete blocks, ``_hoodie_is_deleted``, ``_hoodie_operation`` D/-U);
    ``commit_time_delete`` marks deletes carrying the default ordering value (:func:`commit_time_deletes`);
    ``from_delete_block`` marks delete-block deletes (empty payloads);
    ``absent`` maps a column to the rows whose block did not carry it (partial updates); ``instants`` holds
    each record's block instant.
    """

    table: pa.Table
    keys: pa.Array
    ordering: list[pa.Array]
    is_delete: np.ndarray
    commit_time_delete: np.ndarray
    from_delete_block: np.ndarray
    absent: dict[str, np.ndarray] = field(default_factory=dict)
    instants: np.ndarray | None = None

    def __len__(self) -> int:
        return self.table.num_rows

    def where(self, keep: np.ndarray) -> "LogRecords | None":
        """The records where ``keep`` is true, in order (None when none is)."""
        if not keep.any():
            return None
        mask = pa.array(keep)
        return LogRecords(table=self.table.filter(mask), keys=self.keys.filter(mask),
                          ordering=[o.filter(mask) for o in self.ordering], is_delete=self.is_delete[keep],
                          commit_time_delete=self.commit_time_delete[keep],
                          from_delete_block=self.from_delete_block[keep],
                          absent={c: m[keep] for c, m in self.absent.items()},
                          instants=None if self.instants is None else self.instants[keep])


@dataclass
class Folded:
    """One winner per key after the delta merge."""

    keys: pa.Array
    winner: np.ndarray  # record index of the winning version
    column_source: dict[str, np.ndarray]  # per column: record index the value comes from (partial updates)
    first_seen: np.ndarray  # record index of the key's first version (output order of log-only inserts)


def ordering_zero(t: pa.DataType) -> pa.Scalar:
    """The value a null ordering value of type ``t`` compares as (module docstring): its type's zero.

    Built per type, because casting the integer 0 does not fit every type (an int64 cast to decimal(3, 1)
    needs precision 20).
    """
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.scalar(b"", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_decimal(t):
        return pa.scalar(decimal.Decimal(0), t)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return pa.scalar(0, t)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.scalar(0, pa.int32()).cast(t)
    if pa.types.is_temporal(t):  # date64, time64, timestamps, durations: int64 underneath
        return pa.scalar(0, pa.int64()).cast(t)
    raise UnsupportedTableError(f"an ordering field of type {t} has no natural order to merge by")


def fill_ordering(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``col`` (one ordering field) with nulls replaced by the type's zero, as the merge compares it."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return pc.fill_null(arr, ordering_zero(arr.type)) if arr.null_count else arr


def commit_time_deletes(is_delete: np.ndarray, ordering: list[pa.Array]) -> np.ndarray:
    """Which of the data-block deletes (``_hoodie_is_deleted``, ``_hoodie_operation``) are commit-time deletes.

    Hudi 1.x: ``BufferedRecord.isCommitTimeOrderingDelete`` is ``isDelete && orderingValue.equals(0)`` with the
    boxed Integer 0, and a null ordering field becomes that Integer 0 (``RecordContext.getOrderingValue``). So a
    delete whose (single) ordering value is null, or 0 in an int field, wins by commit time; a long 0 is not
    ``Integer.equals``-equal, and several ordering fields make an ``ArrayComparable``, which never is.
    """
    if len(ordering) != 1:
        return np.zeros(len(is_delete), dtype=bool)
    col = ordering[0]
    default = pc.is_null(col)
    if pa.types.is_int32(col.type):
        default = pc.or_(default, pc.fill_null(pc.equal(col, 0), False))
    return is_delete & default.to_numpy(zero_copy_only=False)


def _greater(a: list[pa.Array], b: list[pa.Array]) -> np.ndarray:
    """Lexicographic ``a > b`` over ordering fields, a null comparing as its type's zero."""
    gt = np.zeros(len(a[0]) if a else 0, dtype=bool)
    eq = np.ones_like(gt)
    for x, y in zip(a, b):
        x, y = fill_ordering(x), fill_ordering(y)
        gt |= eq & pc.greater(x, y).to_numpy(zero_copy_only=False)
        eq &= pc.equal(x, y).to_numpy(zero_copy_only=False)
    return gt


def _take(arrays: list[pa.Array], idx: np.ndarray) -> list[pa.Array]:
    return [a.take(pa.array(idx, type=pa.int64())) for a in arrays]


def _keep_newer(rules: MergeRules, log: LogRecords, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Delta merge: does version ``new`` replace the current winner ``old`` (arrays of record indices)?"""
    if not rules.event_time and not rules.legacy_payload:
        return np.ones(len(new), dtype=bool)
    old_gt_new = _greater(_take(log.ordering, old), _take(log.ordering, new))
    new_block, new_ctd = log.from_delete_block[new], log.commit_time_delete[new]
    old_block, old_ctd = log.from_delete_block[old], log.commit_time_delete[old]
    if rules.legacy_payload:
        # 0.x HoodieMergedLogRecordScanner. A delete-block delete (processNextDeletedRecord) keeps the current
        # version only when its ordering value is not Integer 0 and the current one is strictly larger. A data
        # record, ``_hoodie_is_deleted`` ones included, is preCombined (OverwriteWithLatestAvroPayload.preCombine):
        # it replaces an empty-payload (delete-block) version whatever the ordering ("natural order for delete
        # record"), otherwise an equal or smaller one.
        return np.where(new_block, new_ctd | ~old_gt_new, old_block | ~old_gt_new)
    # 1.x BufferedRecordMergerFactory. A delete-block delete (deltaMergeDeleteRecord) never replaces a
    # commit-time delete and otherwise wins unless the current version is strictly larger; any other version,
    # data-block deletes included (shouldKeepNewerRecord), wins when either side is a commit-time delete or
    # when its ordering value is equal or larger.
    block_delete_wins = ~old_ctd & (new_ctd | ~old_gt_new)
    record_wins = new_ctd | old_ctd | ~old_gt_new
    return np.where(new_block, block_delete_wins, record_wins)


def fold_log_records(log: LogRecords, rules: MergeRules) -> Folded:
    """Delta merge: one winner per key, folding each key's versions in log order."""
    n = len(log)
    codes = pc.dictionary_encode(log.keys).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.lexsort((np.arange(n), codes))
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if n else np.array([], np.int64)
    counts = np.diff(np.r_[starts, n])
    winner = order[starts].copy()
    first_seen = winner.copy()
    source = {c: winner.copy() for c in log.absent}
    for r in range(1, int(counts.max()) if n else 0):
        groups = np.flatnonzero(counts > r)
        new = order[starts[groups] + r]
        old = winner[groups]
        keep = _keep_newer(rules, log, old, new)
        winner[groups] = np.where(keep, new, old)
        for col, src in source.items():
            # a partial version supplies only the columns its block carried (a delete supplies all): the winner's
            # carried columns win, a column the winner lacks comes from the loser when the loser carries it
            prev = src[groups]
            new_has = ~log.absent[col][new] | log.is_delete[new]
            prev_has = ~log.absent[col][prev] | log.is_delete[prev]
            takes = np.where(keep, new_has | log.is_delete[prev], ~prev_has & new_has)
            src[groups] = np.where(takes, new, prev)
    keys = log.keys.take(pa.array(winner, type=pa.int64())) if n else log.keys.slice(0, 0)
    return Folded(keys, winner, source, first_seen)


def merge_with_base(base: pa.Table | None, base_keys: pa.Array | None, base_ordering: list[pa.Array] | None,
                    log: LogRecords | None, rules: MergeRules,
                    with_deletes: bool = False) -> tuple[pa.Table, pa.Table | None]:
    """Final merge of a whole base file: :class:`BaseMerge` with the base as its one piece, then the log-only rows.

    Order: base rows the log left alone (file order), then updated rows (file order of the base rows they
    replace), then log-only inserts (first-seen order); deleted base rows are dropped. With ``with_deletes``,
    also the deleted keys (see :meth:`BaseMerge.piece`).
    """
    if log is None or len(log) == 0:
        rows = base if base is not None else pa.table({})
        return rows, (rows.slice(0, 0) if with_deletes else None)
    merge = BaseMerge(log, rules)
    parts = [merge.piece(base, base_keys, base_ordering, with_deletes)] if base is not None else []
    parts.append(merge.tail(with_deletes))
    rows = pa.concat_tables([r for r, _ in parts]) if len(parts) > 1 else parts[0][0]
    if not with_deletes:
        return rows, None
    return rows, pa.concat_tables([d for _, d in parts if d is not None])


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _merge_time(method: _Method) -> _Method:
    """A :class:`BaseMerge` method whose seconds go to the merge's ``stats.merge_seconds``."""
    @functools.wraps(method)
    def timed_method(self: BaseMerge, *args: Any, **kwargs: Any) -> Any:
        with timed(self.stats, "merge_seconds"):
            return method(self, *args, **kwargs)
    return cast(_Method, timed_method)


class BaseMerge:
    """The final merge of one file slice's folded log records onto its base file, one piece of the base at a time.

    A slice reader hands the base file over in pieces (bounded memory whatever the file's size) and then asks
    for the tail, the log records no base row consumed. The log is folded once; ``consumed`` remembers which
    keys a base row has merged with already, because only the first base row of a key merges (Hudi consumes the
    key's log record) and what no base row consumed is a log-only insert or delete.
    """

    def __init__(self, log: LogRecords, rules: MergeRules, stats: ScanStats | None = None):
        self.log, self.rules, self.stats = log, rules, stats
        with timed(stats, "merge_seconds"):
            self.folded = fold_log_records(log, rules)
            self.index = KeyIndex(self.folded.keys)
        self.consumed = np.zeros(len(self.folded.winner), dtype=bool)

    @_merge_time
    def piece(self, base: pa.Table, base_keys: pa.Array | None, base_ordering: list[pa.Array] | None,
              with_deletes: bool = False) -> tuple[pa.Table, pa.Table | None]:
        """The piece's base rows the log left alone (file order), then its updated rows (file order); deleted
        rows are dropped. With ``with_deletes``, also the piece's deleted rows, with the delete's commit time.

        Later duplicates of a key in the base file are returned as they are, as Spark + Hudi do.
        """
        log, folded = self.log, self.folded
        nb = base.num_rows
        matched_rows, slot = np.array([], np.int64), np.array([], np.int64)
        if nb and len(folded.winner):
            assert base_keys is not None
            slots = self.index.slots(base_keys)
            candidates = np.flatnonzero(slots >= 0)
            slots = slots[candidates]
            # a key repeated in the base file merges with its first row only (candidates are in row order)
            first = np.sort(np.unique(slots, return_index=True)[1])
            matched_rows, slot = candidates[first], slots[first]
            fresh = ~self.consumed[slot]  # merged with a row of an earlier piece already
            matched_rows, slot = matched_rows[fresh], slot[fresh]
        self.consumed[slot] = True
        rec = folded.winner[slot]
        log_wins = _log_wins(self.rules, log, rec, base_ordering, matched_rows)
        # per base row: -1 keep the base row, -2 drop it, >= 0 the log record replacing it
        choice = np.full(nb, -1, dtype=np.int64)
        choice[matched_rows] = np.where(log_wins, np.where(log.is_delete[rec], -2, rec), -1)
        replaced = np.flatnonzero(choice >= 0)
        rows = self._rows(base, choice == -1, choice[replaced], replaced)
        if not with_deletes:
            return rows, None
        dropped_at = choice[matched_rows] == -2
        return rows, _at_commits(base.take(pa.array(matched_rows[dropped_at], type=pa.int64())), log,
                                 rec[dropped_at])

    @_merge_time
    def tail(self, with_deletes: bool = False) -> tuple[pa.Table, pa.Table | None]:
        """After the last piece: the log-only inserts (first-seen order) and, with ``with_deletes``, the
        log-only deletes (their delete records)."""
        log, folded = self.log, self.folded
        inserts = np.flatnonzero(~self.consumed & ~log.is_delete[folded.winner])
        inserts = inserts[np.argsort(folded.first_seen[inserts], kind="stable")]
        from_log = folded.winner[inserts].astype(np.int64)
        rows = self._rows(None, np.zeros(0, dtype=bool), from_log, np.full(len(from_log), -1, dtype=np.int64))
        if not with_deletes:
            return rows, None
        log_only = folded.winner[~self.consumed & log.is_delete[folded.winner]].astype(np.int64)
        return rows, _at_commits(log.table.take(pa.array(log_only, type=pa.int64())), log, log_only)

    def _rows(self, base: pa.Table | None, keep: np.ndarray, from_log: np.ndarray,
              replaces: np.ndarray) -> pa.Table:
        """Base rows where ``keep``, then log records ``from_log``, the one at ``i`` replacing base row
        ``replaces[i]`` (-1: an insert)."""
        log, folded = self.log, self.folded
        nb = base.num_rows if base is not None else 0
        if not folded.column_source:
            # untouched base rows are a filter (no copy at all when the log touched none), the rest one take
            changed = log.table.take(pa.array(from_log, type=pa.int64()))
            if base is None:
                return changed
            untouched = base if keep.all() else base.filter(pa.array(keep))
            return pa.concat_tables([untouched, changed])
        # partial updates: each column takes its own source record; a column no version carried keeps the base row
        kept = np.flatnonzero(keep)
        row_src = np.r_[kept, nb + from_log].astype(np.int64)
        base_row = np.r_[kept, replaces].astype(np.int64)
        slot_of_record = np.full(len(log), -1, dtype=np.int64)
        slot_of_record[folded.winner] = np.arange(len(folded.winner))
        is_log = row_src >= nb
        # ``take`` per column over one chunk
        combined = (pa.concat_tables([base, log.table]) if base is not None else log.table).combine_chunks()
        columns = []
        for name in combined.column_names:
            src = row_src.copy()
            if name in folded.column_source:
                cand = folded.column_source[name][slot_of_record[row_src[is_log] - nb]]
                missing = log.absent[name][cand] & ~log.is_delete[cand] & (base_row[is_log] >= 0)
                src[is_log] = np.where(missing, base_row[is_log], nb + cand)
            columns.append(combined.column(name).take(pa.array(src, type=pa.int64())))
        return pa.Table.from_arrays(columns, schema=combined.schema)


class KeyIndex:
    """Looks keys up among distinct ``keys`` (a slice's folded log keys), piece after piece of its base file.

    ``pc.index_in`` hashes its value set again on every call, and once that table outgrows the CPU caches a lookup
    costs a cache miss: against 200k log keys (UUIDs) it took 20 ms per piece of 131,072 base keys, against 100k
    7 ms. So from :attr:`HASHED_FROM` keys on, the keys are hashed once (polars' 64-bit hash) and sorted; a piece's
    keys are hashed, sorted and found with one ``searchsorted`` (about 8 ms a piece, whatever the number of keys),
    and each hit is confirmed by comparing the keys themselves, so a hash collision never makes a false match.
    Fewer keys, null keys, or two of ``keys`` sharing a hash (a true match could hide behind the
    other): ``index_in``.
    """

    #: keys from which the hashed lookup beats ``index_in`` (measured on 2 cores, 1M base rows, UUID keys)
    HASHED_FROM = 1 << 17

    def __init__(self, keys: pa.Array):
        self.keys = keys
        self.order: np.ndarray | None = None  # keys by hash; None: index_in answers
        self.hashes = np.zeros(0, np.uint64)  # the keys' hashes in that order
        hashes = _hashes(keys) if len(keys) >= self.HASHED_FROM else None
        if hashes is not None:
            order = np.argsort(hashes, kind="stable")
            if not (hashes[order][1:] == hashes[order][:-1]).any():
                self.order, self.hashes = order, hashes[order]

    def slots(self, probe: pa.Array) -> np.ndarray:
        """Per value of ``probe``: the index of the equal key, -1 where there is none (a null matches a null)."""
        hashes = _hashes(probe) if self.order is not None else None
        if hashes is None or self.order is None:
            found = pc.index_in(probe, value_set=self.keys)
            return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        out = np.full(len(probe), -1, dtype=np.int64)
        if not len(self.hashes):
            return out
        rows = np.argsort(hashes)  # sorted probes: searchsorted walks the sorted keys in order (cache friendly)
        at = np.minimum(np.searchsorted(self.hashes, hashes[rows]), len(self.hashes) - 1)
        hit = self.hashes[at] == hashes[rows]
        rows, slots = rows[hit], self.order[at[hit]]
        same = pc.equal(probe.take(pa.array(rows)), self.keys.take(pa.array(slots))).to_numpy(zero_copy_only=False)
        out[rows[same]] = slots[same]
        return out


def _hashes(keys: pa.Array) -> np.ndarray | None:
    """64-bit hashes of string ``keys``; None with a null key."""
    if keys.null_count:
        return None
    import polars  # on first use, as the log decoder imports it (see ``logfile.avro_arrow``)

    return polars.Series(keys).hash().to_numpy()


def _at_commits(rows: pa.Table, log: LogRecords, deleting: np.ndarray) -> pa.Table:
    """Deleted rows with the commit time of the log records ``deleting`` them."""
    if "_hoodie_commit_time" in rows.column_names:
        idx = rows.schema.get_field_index("_hoodie_commit_time")
        times = log.table.column("_hoodie_commit_time").take(pa.array(deleting, type=pa.int64()))
        rows = rows.set_column(idx, rows.schema.field(idx), times)
    return rows


def _valid(arr: pa.Array) -> np.ndarray:
    return pc.is_valid(arr).to_numpy(zero_copy_only=False)


def _log_wins(rules: MergeRules, log: LogRecords, rec: np.ndarray, base_ordering: list[pa.Array] | None,
              rows: np.ndarray) -> np.ndarray:
    """Final merge: does the folded log version replace the base row?"""
    if len(rec) == 0:
        return np.zeros(0, dtype=bool)
    if rules.log_always_wins or not (rules.event_time or rules.legacy_payload) or not base_ordering:
        return np.ones(len(rec), dtype=bool)
    stored = _take(base_ordering, rows)
    base_gt_log = _greater(stored, _take(log.ordering, rec))
    if rules.legacy_payload:
        # DefaultHoodieRecordPayload.combineAndGetUpdateValue: an empty (delete-block) payload always deletes;
        # otherwise the stored row stays only when its ordering value is non-null and strictly larger
        # (needUpdatingPersistedRecord)
        return log.from_delete_block[rec] | ~_valid(stored[0]) | ~base_gt_log
    # 1.x EventTimeRecordMerger.finalMerge = shouldKeepNewerRecord(base, log)
    return log.commit_time_delete[rec] | ~base_gt_log
