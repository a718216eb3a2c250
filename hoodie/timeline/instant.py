"""Instants: one action on the timeline, with its requested time, completion time and state.

Two file-name layouts exist. Layout 1 (table v6) keeps ``<ts>.<action>[.requested|.inflight]`` directly in
``.hoodie/``; a completed instant has no completion time in its name, so (as Hudi 1.x does for legacy
instants) the file's modification time stands in for it. Layout 2 (v8/v9) names completed instants
``<requested>_<completion>.<action>``. Instant times compare as strings, never as numbers.

Which names are instants follows Hudi exactly: a name must match the layout's pattern *and* end in one of the
timeline's valid extensions (``ActiveTimelineV1/V2.VALID_EXTENSIONS_IN_ACTIVE_TIMELINE``, applied by
``HoodieTableMetaClient.scanHoodieInstantsFromFileSystem``); Hudi passes over every other file silently. A
reader that did the same would turn a renamed or damaged instant file into a vanished instant (deleted rows
coming back, an incremental range losing its rows) without a word, so :func:`classify_timeline_file` tells
the two kinds of non-instant apart: files Hudi itself writes there (``hoodie.properties``, checksums, temp
files) and files nobody should have put there, which the active timeline reports.
"""
from __future__ import annotations

import enum
import re
import time
from dataclasses import dataclass
from typing import TypeGuard

from ...errors import CorruptFileError


class State(enum.IntEnum):
    """Ordered as Hudi orders them: a later state of the same instant sorts after an earlier one."""

    REQUESTED = 0
    INFLIGHT = 1
    COMPLETED = 2


class Action(str, enum.Enum):
    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    REPLACE_COMMIT = "replacecommit"
    CLUSTERING = "clustering"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    RESTORE = "restore"
    INDEXING = "indexing"
    SCHEMA_COMMIT = "schemacommit"


#: The action a pending action completes as (``compaction`` completes as ``commit``, ...).
COMPLETES_AS = {
    Action.COMPACTION: Action.COMMIT,
    Action.LOG_COMPACTION: Action.DELTA_COMMIT,
    Action.CLUSTERING: Action.REPLACE_COMMIT,
}
#: Actions that write data files a reader must see.
WRITE_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.COMPACTION,
                           Action.LOG_COMPACTION, Action.CLUSTERING})

_V1 = re.compile(r"^(\d+)(\.\w+)(\.\D+)?$")
_V2 = re.compile(r"^(\d+)(?:_(\d+))?(\.\w+)(\.\D+)?$")
_ACTIONS = {a.value: a for a in Action}
_R, _I, _C = State.REQUESTED, State.INFLIGHT, State.COMPLETED
#: (action, state) of every extension ``ActiveTimelineV1.VALID_EXTENSIONS_IN_ACTIVE_TIMELINE`` lists. A
#: commit's inflight file is ``<ts>.inflight`` (handled apart); a savepoint has no requested file; compaction,
#: log compaction and clustering complete as another action, so they have no completed file of their own.
_VALID_V1 = frozenset(
    [(a, s) for a in (Action.COMMIT, Action.DELTA_COMMIT, Action.CLEAN, Action.RESTORE, Action.ROLLBACK,
                      Action.REPLACE_COMMIT, Action.INDEXING, Action.SCHEMA_COMMIT) for s in (_R, _I, _C)
     if (a, s) != (Action.COMMIT, _I)]
    + [(Action.SAVEPOINT, _I), (Action.SAVEPOINT, _C)]
    + [(a, s) for a in (Action.COMPACTION, Action.LOG_COMPACTION) for s in (_R, _I)])
#: ``ActiveTimelineV2.VALID_EXTENSIONS_IN_ACTIVE_TIMELINE`` adds the clustering action's pending files.
_VALID_V2 = _VALID_V1 | {(Action.CLUSTERING, _R), (Action.CLUSTERING, _I)}
_STATE_SUFFIX = {".requested": _R, ".inflight": _I}

#: ``HoodieInstantTimeGenerator``: ``yyyyMMddHHmmssSSS`` (MILLIS_INSTANT_ID_LENGTH 17), and the seconds form
#: ``yyyyMMddHHmmss`` (SECS_INSTANT_ID_LENGTH 14) of tables written before Hudi 0.9, which a requested time of an
#: old instant may still have. Hudi's own check of user-given instants accepts exactly these two lengths
#: (``HoodieSqlCommonUtils.formatQueryInstant``). The metadata table's own service instants of Hudi 0.x append
#: a three-digit suffix to a 17-digit one (``HoodieTableMetadataUtil.createCompactionTimestamp``; 20 digits, as
#: :data:`hoodie.logfile.format.INSTANT_TIME_LENGTHS` accepts in log file names).
_REQUESTED_TIME = re.compile(r"\d{14}(?:\d{3}(?:\d{3})?)?")
#: Completion times exist only in layout 2, which Hudi 1.x writes: always milliseconds.
_COMPLETION_TIME = re.compile(r"\d{17}")


class TimelineFile(enum.Enum):
    """What a file in the timeline folder is, besides an instant."""

    #: written there by Hudi (or the file system under it) and never an instant: passed over in silence
    HUDI_AUXILIARY = "auxiliary"
    #: not an instant file name at all: reported, because it may be a damaged or renamed instant
    UNRECOGNIZED = "unrecognized"


#: Folders of ``.hoodie/`` (``HoodieTableMetaClient``: AUXILIARYFOLDER_NAME, TEMPFOLDER_NAME, HEARTBEAT_FOLDER_NAME,
#: METADATA_TABLE_FOLDER_PATH, SCHEMA_FOLDER_NAME, BUCKET_INDEX_METAFOLDER_NAME, INDEX_DEFINITION_FOLDER_NAME,
#: LOCKS_FOLDER_NAME; plus the archive and the layout-2 timeline folder, named by the table config). Listings
#: leave folders out; these names matter on stores that keep an empty folder as a zero-byte object.
_HOODIE_FOLDERS = frozenset({".aux", ".temp", ".heartbeat", "metadata", ".schema", ".bucket_index", ".index_defs",
                             ".locks"})
#: ``FileSystemBasedLockProvider.LOCK_FILE_NAME``: its lock file lives in ``.hoodie/`` unless configured elsewhere.
_LOCK_FILE = "lock"
#: Names any layout's timeline folder may hold besides instants: ``HoodieStorage.TMP_PATH_POSTFIX`` (an instant
#: file written through a temp file that a crash left unrenamed; Hudi never reads it), Hadoop's checksum files
#: (``ChecksumFileSystem``: ``.<name>.crc``), Hadoop/EMR folder markers (``<folder>_$folder$``), and this
#: package's own writer's temp files (``Storage.write_bytes_atomic``: ``.hoodie-streaming-tmp-<uuid hex>``).
_AUXILIARY = re.compile(r"^(?:.+\.tmp|\..+\.crc|.+_\$folder\$|\.hoodie-streaming-tmp-[0-9a-f]{32})$")


@dataclass(frozen=True)
class Instant:
    """One state of one instant, as given by one timeline file."""

    requested_time: str
    action: Action
    state: State
    completion_time: str | None = None
    file_name: str | None = None
    #: completion time taken from the file's modification time (layout 1), not from its name
    legacy: bool = False

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def comparable_action(self) -> Action:
        return COMPLETES_AS.get(self.action, self.action)

    def sort_key(self) -> tuple:
        """Hudi's requested-time comparator: requested time, comparable action, state."""
        return (self.requested_time, self.comparable_action.value, int(self.state))

    def __str__(self) -> str:
        done = f"->{self.completion_time}" if self.completion_time else ""
        return f"[{self.requested_time}{done}__{self.action.value}__{self.state.name}]"


def is_instant_time(value: object) -> TypeGuard[str]:
    """A requested time as Hudi writes them (17 digits, or 14 on tables from before Hudi 0.9)."""
    return isinstance(value, str) and _REQUESTED_TIME.fullmatch(value) is not None


def is_completion_time(value: object) -> TypeGuard[str]:
    """A completion time as Hudi 1.x writes them (17 digits)."""
    return isinstance(value, str) and _COMPLETION_TIME.fullmatch(value) is not None


def mtime_to_instant(mtime: float | None) -> str | None:
    """A file modification time (epoch seconds) formatted like an instant time, in UTC, to milliseconds."""
    if mtime is None:
        return None
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(mtime)) + f"{int((mtime % 1) * 1000):03d}"


def parse_instant_file(name: str, layout: int, mtime: float | None = None, where: str = "") -> Instant | None:
    """The instant a timeline file stands for, or None when the name is not an instant file name.

    A name Hudi takes for an instant but whose requested or completion time is not an instant time (``2025``
    would sort among the instants as if it were years old) is a :class:`CorruptFileError` naming the file
    (``where`` is the folder it is in), not an instant and not something to pass over.
    """
    m = (_V1 if layout == 1 else _V2).match(name)
    if not m:
        return None
    if layout == 1:
        ts, completion, act, st = m.group(1), None, m.group(2), m.group(3)
    else:
        ts, completion, act, st = m.group(1), m.group(2), m.group(3), m.group(4)
    if act == ".inflight" and st is None:  # `<ts>.inflight` is a commit's inflight file
        action, state = Action.COMMIT, State.INFLIGHT
    else:
        found = _ACTIONS.get(act[1:])
        state_or_none = State.COMPLETED if st is None else _STATE_SUFFIX.get(st)
        if found is None or state_or_none is None or (found, state_or_none) not in (_VALID_V1 if layout == 1
                                                                                   else _VALID_V2):
            return None
        action, state = found, state_or_none
    path = f"{where}/{name}" if where else name
    if not is_instant_time(ts):
        raise CorruptFileError(f"{path}: requested time {ts!r} is not an instant time "
                               "(yyyyMMddHHmmssSSS, or yyyyMMddHHmmss on old tables)")
    if state is not State.COMPLETED:  # Hudi ignores a completion time in a pending file's name
        return Instant(ts, action, state, file_name=name)
    if completion is not None and not is_completion_time(completion):
        raise CorruptFileError(f"{path}: completion time {completion!r} is not an instant time (yyyyMMddHHmmssSSS)")
    legacy = completion is None
    return Instant(ts, action, state, completion or mtime_to_instant(mtime), file_name=name, legacy=legacy)


def classify_timeline_file(name: str, layout: int, folders: frozenset[str] = frozenset()) -> TimelineFile:
    """What a file of the timeline folder that :func:`parse_instant_file` did not take is.

    ``folders`` are the folder names the table config places there (the archive, layout 2's timeline). Layout
    1's timeline folder is ``.hoodie/`` itself, which also holds the table's properties and lock files.
    """
    if _AUXILIARY.match(name) or name in folders:
        return TimelineFile.HUDI_AUXILIARY
    if layout == 1 and (name.startswith("hoodie.properties") or name == _LOCK_FILE or name in _HOODIE_FOLDERS):
        return TimelineFile.HUDI_AUXILIARY
    return TimelineFile.UNRECOGNIZED
