"""The checkpoint's own records: what a state file and a split segment hold, field by field.

The planner's in-memory objects (``Cursor``, and the format layer's ``Split``) are free to change; users'
checkpoints are not. The state file's own fields are records here (pydantic models that mirror the JSON field
names exactly, refuse unknown fields and have no defaults: every writer of format 2 wrote every field), mapped
one to one onto the cursor (:func:`_exact`). A split has no record class: it is written and read field by field
by one pair of functions (:func:`split_json`, :func:`split_from_json`) in the field order of format 2, but for
``rows`` (a reconcile's deletes, ``streaming.reconcile``), written only when set: a state without such a split is
what every earlier version wrote and reads, and one with it is refused by them as an unknown field. ``est_rows``
may be null: a bound the planner could not take from write stats (``Split.est_rows``); an earlier version, whose
splits all have one, refuses it as not an integer rather than reading it as some number of rows. Either
way a field renamed, added or removed on one side only is refused (:class:`StateError`) instead of being dropped
or defaulted without a word; a field whose *meaning* changes needs a new format version.
"""
from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Callable
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict

from ..errors import StateError
from ..hoodie.fs_view import BaseFile, FileSlice, LogFile
from ..hoodie.logfile.format import parse_log_file_name
from ..hoodie.split import Split
from ..monitor import Cursor

_T = TypeVar("_T")


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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


class Format1StateRecord(_StateHead):
    """The body of a format-1 state file: the pending splits inline."""

    #: each read by :func:`planned_from_json` (its splits may lack ``replaced_by`` and ``prior``)
    splits: list[dict[str, Any]]


def cursor_record(cursor: Cursor) -> CursorRecord:
    return _exact(CursorRecord, cursor, requested=cursor.requested, completion=cursor.completion)


def cursor_of(record: CursorRecord) -> Cursor:
    return _exact(Cursor, record, requested=record.requested, completion=record.completion)


@dataclasses.dataclass(frozen=True)
class PlannedSplit:
    """A split with its place in the stream: offsets count splits by ``seq``; the planning round (one poll of
    the monitor) and how many instants it took are what the instant limits count."""

    seq: int
    round: int
    instants_in_round: int
    split: Split


def planned_json(planned: PlannedSplit) -> dict[str, Any]:
    """One entry of a split segment file."""
    return {"seq": planned.seq, "round": planned.round, "instants_in_round": planned.instants_in_round,
            "split": split_json(planned.split)}


def planned_from_json(data: object, loc: str, *, format1: bool = False) -> PlannedSplit:
    """An entry of a split segment file (or of a format-1 state file's ``splits``: ``format1``) at ``loc``."""
    f = _Fields(data, loc)
    planned = PlannedSplit(seq=f.integer("seq"), round=f.integer("round"),
                           instants_in_round=f.integer("instants_in_round"),
                           split=f.value("split", lambda d, at: split_from_json(d, at, format1=format1)))
    f.done()
    return planned


def split_json(split: Split) -> dict[str, Any]:
    """A split as a checkpoint holds it: the slice's files by path and size (a base file's other fields, and a log
    file's, are its name's), the prior slice as the files and instant it was merged up to."""
    _check_mapped()
    fs, prior = split.slice, split.prior
    return {"partition": fs.partition, "file_id": fs.file_id, "base_instant": fs.base_instant, **_files_json(fs),
            "instants": list(split.instants) if split.instants is not None else None,
            "max_instant": split.max_instant, "replaced_by": split.replaced_by,
            "prior": None if prior is None else {**_files_json(prior, with_instant=True),
                                                  "max_instant": split.prior_max_instant},
            "est_rows": split.est_rows, "est_bytes": split.est_bytes,
            **({"rows": split.rows} if split.rows is not None else {})}


def split_from_json(data: object, loc: str, *, format1: bool = False) -> Split:
    """The split :func:`split_json` wrote, at ``loc`` of its file. Splits of a format-1 file (``format1``) written
    before ``replaced_by`` and ``prior`` existed lack them (absent meant none, as a format-2 writer's ``null``)."""
    _check_mapped()
    f = _Fields(data, loc)
    partition, file_id, base_instant = f.string("partition"), f.string("file_id"), f.string("base_instant")
    fs = _files_of(f, partition, file_id, base_instant, f.optional("base_path", _string), f.integer("base_size"))
    instants = f.optional("instants", _list_of(_string))
    max_instant = f.string("max_instant")
    replaced_by = f.optional("replaced_by", _string, absent_ok=format1)
    prior = f.optional("prior", lambda d, at: _prior_of(d, at, partition, file_id), absent_ok=format1)
    split = Split(fs, max_instant, tuple(instants) if instants is not None else None, replaced_by,
                  prior[0] if prior else None, prior[1] if prior else "", est_rows=f.optional("est_rows", _integer),
                  est_bytes=f.integer("est_bytes"), rows=f.optional("rows", _string, absent_ok=True))
    f.done()
    return split


def _files_json(fs: FileSlice, with_instant: bool = False) -> dict[str, Any]:
    base = fs.base_file
    return {"base_path": base.path if base else None, "base_size": base.size if base else 0,
            **({"base_instant": fs.base_instant} if with_instant else {}),
            "logs": [{"path": lf.path, "size": lf.size} for lf in fs.log_files]}


def _prior_of(data: object, loc: str, partition: str, file_id: str) -> tuple[FileSlice, str]:
    f = _Fields(data, loc)
    base_path, base_size, base_instant = f.optional("base_path", _string), f.integer("base_size"), \
        f.string("base_instant")
    prior = _files_of(f, partition, file_id, base_instant, base_path, base_size), f.string("max_instant")
    f.done()
    return prior


def _files_of(f: _Fields, partition: str, file_id: str, base_instant: str, base_path: str | None,
              base_size: int) -> FileSlice:
    """The file slice of a split or prior slice exactly as planned: paths and sizes from the checkpoint, the
    write token, log versions and instants from the file names (as the file system view parses them)."""
    base = None
    if base_path:
        parts = posixpath.basename(base_path).split("_")
        base = BaseFile(base_path, file_id, parts[1] if len(parts) > 2 else "", base_instant, base_size)
    logs = []
    for path, size in f.value("logs", _list_of(_log_of)):
        parsed = parse_log_file_name(posixpath.basename(path))
        logs.append(LogFile(path, file_id, parsed.instant if parsed else "", parsed.version if parsed else 0,
                            parsed.write_token if parsed else None, size))
    return FileSlice(partition, file_id, base_instant, base, logs)


def _log_of(data: object, loc: str) -> tuple[str, int]:
    f = _Fields(data, loc)
    log = f.string("path"), f.integer("size")
    f.done()
    return log


class _Fields:
    """One JSON object of a checkpoint, read field by field: a field missing, of another type, or left unread
    (unknown to this version) is refused with where it is, e.g. ``0.split.prior.logs.0.offset: Extra inputs are
    not permitted`` (pydantic's words, as for the state file's records)."""

    def __init__(self, data: object, loc: str):
        if not isinstance(data, dict):
            raise StateError(f"{loc}: Input should be a valid dictionary")
        self.data: dict[str, object] = data
        self.loc = loc
        self.read: set[str] = set()

    def value(self, name: str, parse: Callable[[object, str], _T]) -> _T:
        if name not in self.data:
            raise StateError(f"{self.loc}.{name}: Field required")
        self.read.add(name)
        return parse(self.data[name], f"{self.loc}.{name}")

    def optional(self, name: str, parse: Callable[[object, str], _T], absent_ok: bool = False) -> _T | None:
        """A field that may be null (and, with ``absent_ok``, absent)."""
        if absent_ok and name not in self.data:
            return None
        return self.value(name, lambda d, at: None if d is None else parse(d, at))

    def string(self, name: str) -> str:
        return self.value(name, _string)

    def integer(self, name: str) -> int:
        return self.value(name, _integer)

    def done(self) -> None:
        extra = [k for k in self.data if k not in self.read]
        if extra:
            raise StateError(f"{self.loc}.{extra[0]}: Extra inputs are not permitted")


def _string(data: object, loc: str) -> str:
    if not isinstance(data, str):
        raise StateError(f"{loc}: Input should be a valid string")
    return data


def _integer(data: object, loc: str) -> int:
    if not isinstance(data, int) or isinstance(data, bool):
        raise StateError(f"{loc}: Input should be a valid integer")
    return data


def _list_of(item: Callable[[object, str], _T]) -> Callable[[object, str], list[_T]]:
    def parse(data: object, loc: str) -> list[_T]:
        if not isinstance(data, list):
            raise StateError(f"{loc}: Input should be a valid list")
        return [item(d, f"{loc}.{i}") for i, d in enumerate(data)]
    return parse


#: the fields of the classes a split's record maps, as :func:`split_json` and :func:`split_from_json` know them (a
#: base or log file's other fields come from its name): a field added, renamed or removed in one of them would
#: otherwise vanish from checkpoints or come back defaulted
_SPLIT_FIELDS = (("slice", "max_instant", "instants", "replaced_by", "prior", "prior_max_instant", "est_rows",
                  "est_bytes", "rows"),
                 ("partition", "file_id", "base_instant", "base_file", "log_files"),  # FileSlice
                 ("path", "file_id", "write_token", "instant", "size"),  # BaseFile
                 ("path", "file_id", "instant", "version", "write_token", "size"))  # LogFile


def _check_mapped() -> None:
    """Refuses to write or read a split when its classes' fields are no longer those its record maps (checked
    once per set of classes: a load reads every split)."""
    classes = (Split, FileSlice, BaseFile, LogFile)
    if classes in _MAPPED_CLASSES:
        return
    for cls, mapped in zip(classes, _SPLIT_FIELDS):
        names = tuple(f.name for f in dataclasses.fields(cls))
        if names != mapped:
            raise StateError(f"state/records.py: {cls.__name__} ({', '.join(names)}) is not what a split's record "
                             f"maps ({', '.join(mapped)}); map the changed field in split_json and split_from_json")
    _MAPPED_CLASSES.add(classes)


#: the classes :func:`_check_mapped` found to be what a split's record maps
_MAPPED_CLASSES: set[tuple[type, ...]] = set()


def _exact(target: type[_T], source: object, **values: Any) -> _T:
    """``target(**values)``, refused unless ``values`` sets every field of ``target`` and ``source``'s class has as
    many fields: the mapping is one to one, and the planner's models ignore unknown keyword arguments and default
    missing ones, so a field renamed, added or removed on one side only would otherwise vanish silently. Each
    converter always passes the same names, so a pair of classes is checked once (a load converts every split)."""
    pair = (target, type(source))
    if pair not in _MAPPED:
        fields, source_fields = _field_names(target), _field_names(type(source))
        if set(values) != set(fields) or len(source_fields) != len(values):
            raise StateError(f"state/records.py: {type(source).__name__} ({', '.join(source_fields)}) does not map "
                             f"one to one onto {target.__name__} ({', '.join(fields)}); map the changed field in its "
                             "converter")
        _MAPPED.add(pair)
    return target(**values)


def _field_names(cls: type) -> list[str]:
    """A record's (pydantic) or an in-memory class's (dataclass) field names."""
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return list(cast(type[BaseModel], cls).model_fields)


#: (target, source class) pairs whose converter was found to map one to one
_MAPPED: set[tuple[type, type]] = set()
