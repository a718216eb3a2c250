"""The checkpoint's own record types: what a state file and a split segment hold, field by field.

The planner's in-memory classes (``monitor``'s ``Split``, ``PriorSlice``, ``LogRef`` and ``Cursor``) are free to
change; users' checkpoints are not. So the state files are read and written through these records, which
mirror the JSON field names of format version 2 exactly, refuse unknown fields and have no defaults (every
writer of format 2 wrote every field), and explicit converters map them to and from the planner's objects. A
field the planner renames, adds or removes no longer maps one to one and is refused (:func:`_exact`) instead of
being dropped or defaulted without a word. A field whose *meaning* changes needs a new format version.
"""
from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from ..errors import StateError
from ..monitor import Cursor, Split
from ..monitor.split import LogRef, PriorSlice

_M = TypeVar("_M", bound=BaseModel)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LogRecord(_Record):
    path: str
    size: int


class PriorSliceRecord(_Record):
    base_path: str | None
    base_size: int
    base_instant: str
    logs: list[LogRecord]
    max_instant: str


class SplitRecord(_Record):
    partition: str
    file_id: str
    base_instant: str
    base_path: str | None
    base_size: int
    logs: list[LogRecord]
    instants: list[str] | None
    max_instant: str
    replaced_by: str | None
    prior: PriorSliceRecord | None
    est_rows: int
    est_bytes: int


class PlannedSplitRecord(_Record):
    """One entry of a split segment file (format 2) or of a format-1 state file's ``splits``."""

    seq: int
    round: int
    instants_in_round: int
    split: SplitRecord


class CursorRecord(_Record):
    requested: str
    completion: str | None


class SegmentRecord(_Record):
    """A split segment file a state file names, with the sequences it holds and its SHA-256."""

    name: str
    first: int
    last: int
    sha256: str


class _StateHead(_Record):
    table_url: str
    table_name: str
    cursor: CursorRecord | None
    started: bool
    next_seq: int
    next_round: int
    committed_seq: int


class Format2StateRecord(_StateHead):
    """The body of a format-2 state file: the splits live in the segments it names."""

    segments: list[SegmentRecord]


class RowRulesRecord(_Record):
    """What decides which rows a split yields, and so what a record offset inside a split counts: the query's
    options of the same names, as the user sets them. ``columns`` matters only when carry-overs are dropped (they
    are judged by the delivered columns); ``carryover_ignore_columns`` is sorted."""

    read_mode: str  # readMode: upsert | changelog
    deletes: str  # emit (emitDeletes) | ignore (ignoreDeletes) | fail (neither)
    merge_type: str  # mergeType
    deduplication_mode: str  # deduplicationMode: none | dropCarryovers
    carryover_ignore_columns: list[str]
    columns: list[str] | None


class Format3StateRecord(Format2StateRecord):
    """The body of a format-3 state file: format 2, plus who the state belongs to and what it has accounted for.

    ``stream_id`` is carried in every offset the source returns, so a Spark checkpoint and a state folder that
    do not belong together are told apart. ``known_instants`` (table v8/v9; ``None`` on v6, whose instants are
    taken in requested-time order and cannot be late) maps the requested time of every completed write still in
    the active timeline that the stream has planned or that its start position covered to its completion time:
    an instant completed at or before the cursor that is not in it is *late* and is planned still.
    """

    stream_id: str
    known_instants: dict[str, str] | None
    late_instants: int


class StateRecord(Format3StateRecord):
    """The body of a format-4 state file: format 3, plus the row rules the stream's offsets were counted under
    (null: none recorded — a state written by a tool, not by a query; a query records its own)."""

    row_rules: RowRulesRecord | None


class Format1SplitRecord(SplitRecord):
    """A split of a format-1 file: those written before ``replaced_by`` and ``prior`` existed lack them (absent
    meant none, as it does for a format-2 writer's ``null``)."""

    replaced_by: str | None = None
    prior: PriorSliceRecord | None = None


class Format1PlannedSplitRecord(PlannedSplitRecord):
    split: Format1SplitRecord


class Format1StateRecord(_StateHead):
    """The body of a format-1 state file: the pending splits inline."""

    splits: list[Format1PlannedSplitRecord]


def cursor_record(cursor: Cursor) -> CursorRecord:
    return _exact(CursorRecord, cursor, requested=cursor.requested, completion=cursor.completion)


def cursor_of(record: CursorRecord) -> Cursor:
    return _exact(Cursor, record, requested=record.requested, completion=record.completion)


def split_record(split: Split) -> SplitRecord:
    return _exact(SplitRecord, split, partition=split.partition, file_id=split.file_id,
                  base_instant=split.base_instant, base_path=split.base_path, base_size=split.base_size,
                  logs=[_log_record(lf) for lf in split.logs], instants=split.instants,
                  max_instant=split.max_instant, replaced_by=split.replaced_by,
                  prior=_prior_record(split.prior) if split.prior is not None else None,
                  est_rows=split.est_rows, est_bytes=split.est_bytes)


def split_of(record: SplitRecord) -> Split:
    return _exact(Split, record, partition=record.partition, file_id=record.file_id,
                  base_instant=record.base_instant, base_path=record.base_path, base_size=record.base_size,
                  logs=[_log_of(lf) for lf in record.logs], instants=record.instants,
                  max_instant=record.max_instant, replaced_by=record.replaced_by,
                  prior=_prior_of(record.prior) if record.prior is not None else None,
                  est_rows=record.est_rows, est_bytes=record.est_bytes)


def _prior_record(prior: PriorSlice) -> PriorSliceRecord:
    return _exact(PriorSliceRecord, prior, base_path=prior.base_path, base_size=prior.base_size,
                  base_instant=prior.base_instant, logs=[_log_record(lf) for lf in prior.logs],
                  max_instant=prior.max_instant)


def _prior_of(record: PriorSliceRecord) -> PriorSlice:
    return _exact(PriorSlice, record, base_path=record.base_path, base_size=record.base_size,
                  base_instant=record.base_instant, logs=[_log_of(lf) for lf in record.logs],
                  max_instant=record.max_instant)


def _log_record(log: LogRef) -> LogRecord:
    return _exact(LogRecord, log, path=log.path, size=log.size)


def _log_of(record: LogRecord) -> LogRef:
    return _exact(LogRef, record, path=record.path, size=record.size)


def _exact(target: type[_M], source: BaseModel, **values: Any) -> _M:
    """``target(**values)``, refused unless ``values`` sets every field of ``target`` and ``source``'s class has as
    many fields: the mapping is one to one, and the planner's models ignore unknown keyword arguments and default
    missing ones, so a field renamed, added or removed on one side only would otherwise vanish silently. Each
    converter always passes the same names, so a pair of classes is checked once (a load converts every split)."""
    pair = (target, type(source))
    if pair not in _MAPPED:
        fields, source_fields = target.model_fields, type(source).model_fields
        if values.keys() != fields.keys() or len(source_fields) != len(values):
            raise StateError(f"state/records.py: {type(source).__name__} ({', '.join(source_fields)}) does not map "
                             f"one to one onto {target.__name__} ({', '.join(fields)}); map the changed field in its "
                             "converter")
        _MAPPED.add(pair)
    return target(**values)


#: (target, source class) pairs whose converter was found to map one to one
_MAPPED: set[tuple[type, type]] = set()
