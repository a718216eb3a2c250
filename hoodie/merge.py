"""Hudi's merge rules, vectorised with Arrow: log records folded per key, then merged onto base rows.

Two steps, as in Hudi (spec §8.1): the *delta merge* folds the log records of one key in log order; the
*final merge* combines the folded record with the key's base-file row. Which version survives depends on the
table: commit-time ordering (newest wins), event-time ordering (largest ordering value wins, ties to the
newer; a "commit-time delete" — ordering value 0, written by SQL ``DELETE`` — beats everything before it), and
the 0.x payload classes of table v6, whose quirks are kept (:class:`MergeRules`).

The fold is sequential by nature, but almost every key has one or two versions. So instead of a Python loop
over records, the fold runs one vectorised step per *version rank*: step ``r`` combines the current winner of
every key that has more than ``r`` versions with its ``r``-th version. A merged record is represented by the
index of the record each column comes from, which makes partial updates (a block that carries only some
columns) the same machinery.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .config import MergeMode


@dataclass(frozen=True)
class MergeRules:
    """How versions of one record combine on one table."""

    mode: MergeMode
    #: table v6: payload-class semantics (a record after any delete wins; delete-block deletes beat the base)
    legacy_payload: bool = False
    #: v6 ``OverwriteWithLatestAvroPayload``: the final merge ignores ordering (the log always wins)
    log_always_wins: bool = False

    @property
    def event_time(self) -> bool:
        return self.mode is MergeMode.EVENT_TIME_ORDERING


@dataclass
class LogRecords:
    """All log records of a slice that count, oldest first, aligned to the read schema.

    ``ordering`` holds the ordering value(s) with nulls replaced by the type's default; ``is_delete`` marks
    deletes (delete blocks, ``_hoodie_is_deleted``, ``_hoodie_operation`` D/-U); ``commit_time_delete`` marks
    deletes carrying the default ordering value; ``from_delete_block`` marks empty-payload deletes (v6);
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


def _greater(a: list[pa.Array], b: list[pa.Array]) -> np.ndarray:
    """Lexicographic ``a > b`` over ordering fields."""
    gt = np.zeros(len(a[0]) if a else 0, dtype=bool)
    eq = np.ones_like(gt)
    for x, y in zip(a, b):
        gt |= eq & pc.fill_null(pc.greater(x, y), False).to_numpy(zero_copy_only=False)
        eq &= pc.fill_null(pc.equal(x, y), False).to_numpy(zero_copy_only=False)
    return gt


def _take(arrays: list[pa.Array], idx: np.ndarray) -> list[pa.Array]:
    return [a.take(pa.array(idx, type=pa.int64())) for a in arrays]


def _keep_newer(rules: MergeRules, log: LogRecords, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Delta merge: does version ``new`` replace the current winner ``old`` (arrays of record indices)?"""
    if not rules.event_time and not rules.legacy_payload:
        return np.ones(len(new), dtype=bool)
    old_gt_new = _greater(_take(log.ordering, old), _take(log.ordering, new))
    new_del, new_ctd = log.is_delete[new], log.commit_time_delete[new]
    old_del, old_ctd = log.is_delete[old], log.commit_time_delete[old]
    if rules.legacy_payload:
        # preCombine: a record replaces a delete ("natural order for delete record") or an equal/smaller one;
        # a delete loses only to a strictly larger ordering value, and never when it is a commit-time delete
        return np.where(new_del, new_ctd | ~old_gt_new, old_del | ~old_gt_new)
    # 1.x BufferedRecordMerger: commit-time deletes win both ways; otherwise ties go to the newer version
    record_wins = old_ctd | ~old_gt_new
    delete_wins = ~old_ctd & (new_ctd | ~old_gt_new)
    return np.where(new_del, delete_wins, record_wins)


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
    """Final merge: base rows the log left alone (file order), then updated rows (file order of the base rows
    they replace), then log-only inserts (first-seen order); deleted base rows are dropped.

    Only the first base row of a key is merged (Hudi consumes the key's log record); later duplicates of the
    key in the base file are returned as they are, as Spark + Hudi do. With ``with_deletes``, also the deleted
    keys: their last known values (the base row, else the delete record) carrying the delete's commit time.
    """
    if log is None or len(log) == 0:
        rows = base if base is not None else pa.table({})
        return rows, (rows.slice(0, 0) if with_deletes else None)
    folded = fold_log_records(log, rules)
    nb = base.num_rows if base is not None else 0
    matched_rows, slot = np.array([], np.int64), np.array([], np.int64)
    if nb:
        found = pc.index_in(base_keys, value_set=folded.keys)
        candidates = np.flatnonzero(_valid(found))
        slots = pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)[candidates]
        # a key repeated in the base file merges with its first row only (candidates are in row order)
        first = np.sort(np.unique(slots, return_index=True)[1])
        matched_rows, slot = candidates[first], slots[first]
    rec = folded.winner[slot]
    log_wins = _log_wins(rules, log, rec, base_ordering, matched_rows)
    # per base row: -1 keep the base row, -2 drop it, >= 0 the log record replacing it
    choice = np.full(nb, -1, dtype=np.int64)
    choice[matched_rows] = np.where(log_wins, np.where(log.is_delete[rec], -2, rec), -1)
    consumed = np.zeros(len(folded.winner), dtype=bool)
    consumed[slot] = True
    inserts = np.flatnonzero(~consumed & ~log.is_delete[folded.winner])
    inserts = inserts[np.argsort(folded.first_seen[inserts], kind="stable")]
    kept = np.flatnonzero(choice == -1)
    replaced = np.flatnonzero(choice >= 0)
    from_log = np.r_[choice[replaced], folded.winner[inserts]].astype(np.int64)
    # base and log stay two chunks: a concatenated copy would be one more full pass over the base rows
    combined = pa.concat_tables([base, log.table]) if base is not None else log.table
    deleted = _deleted_rows(combined, nb, choice, matched_rows, rec, log, folded, consumed) if with_deletes else None
    if not folded.column_source:
        # untouched base rows are a filter (no copy at all when the log touched none), the rest one take
        changed = log.table.take(pa.array(from_log, type=pa.int64()))
        if base is None:
            return changed, deleted
        untouched = base if len(kept) == nb else base.filter(pa.array(choice == -1))
        return pa.concat_tables([untouched, changed]), deleted
    # partial updates: each column takes its own source record; a column no version carried keeps the base row
    row_src = np.r_[kept, nb + from_log].astype(np.int64)
    base_row = np.r_[kept, replaced, np.full(len(inserts), -1)].astype(np.int64)
    slot_of_record = np.full(len(log), -1, dtype=np.int64)
    slot_of_record[folded.winner] = np.arange(len(folded.winner))
    is_log = row_src >= nb
    combined = combined.combine_chunks()  # ``take`` per column over one chunk
    columns = []
    for name in combined.column_names:
        src = row_src.copy()
        if name in folded.column_source:
            cand = folded.column_source[name][slot_of_record[row_src[is_log] - nb]]
            missing = log.absent[name][cand] & ~log.is_delete[cand] & (base_row[is_log] >= 0)
            src[is_log] = np.where(missing, base_row[is_log], nb + cand)
        columns.append(combined.column(name).take(pa.array(src, type=pa.int64())))
    return pa.Table.from_arrays(columns, schema=combined.schema), deleted


def _deleted_rows(combined: pa.Table, nb: int, choice: np.ndarray, matched_rows: np.ndarray, rec: np.ndarray,
                  log: LogRecords, folded: Folded, consumed: np.ndarray) -> pa.Table:
    """Deleted keys with their last known values and the commit time of the delete."""
    dropped_at = choice[matched_rows] == -2
    dropped = matched_rows[dropped_at]
    base_rows = combined.take(pa.array(dropped, type=pa.int64()))
    log_only = folded.winner[~consumed & log.is_delete[folded.winner]]
    deleting = np.r_[rec[dropped_at], log_only].astype(np.int64)
    rows = pa.concat_tables([base_rows, combined.take(pa.array(nb + log_only, type=pa.int64()))])
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
    base_gt_log = _greater(_take(base_ordering, rows), _take(log.ordering, rec))
    if rules.legacy_payload:
        # combineAndGetUpdateValue: an empty (delete-block) payload always deletes; otherwise keep the base
        # only when its ordering value is strictly larger
        return log.from_delete_block[rec] | ~base_gt_log
    return log.commit_time_delete[rec] | ~base_gt_log
