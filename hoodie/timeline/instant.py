"""Instants: one action on the timeline, with its requested time, completion time and state.

Two file-name layouts exist. Layout 1 (table v6) keeps ``<ts>.<action>[.requested|.inflight]`` directly in
``.hoodie/``; a completed instant has no completion time in its name, so (as Hudi 1.x does for legacy
instants) the file's modification time stands in for it. Layout 2 (v8/v9) names completed instants
``<requested>_<completion>.<action>``. Instant times compare as strings, never as numbers.
"""
from __future__ import annotations

import enum
import re
import time
from dataclasses import dataclass


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


def mtime_to_instant(mtime: float | None) -> str | None:
    """A file modification time (epoch seconds) formatted like an instant time, in UTC, to milliseconds."""
    if mtime is None:
        return None
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(mtime)) + f"{int((mtime % 1) * 1000):03d}"


def parse_instant_file(name: str, layout: int, mtime: float | None = None) -> Instant | None:
    """The instant a timeline file stands for, or None when the file is not a timeline file."""
    if layout == 1:
        m = _V1.match(name)
        if not m:
            return None
        ts, completion, act, st = m.group(1), None, m.group(2)[1:], m.group(3)
    else:
        m = _V2.match(name)
        if not m:
            return None
        ts, completion, act, st = m.group(1), m.group(2), m.group(3)[1:], m.group(4)
    if act == "inflight" and st is None:  # `<ts>.inflight` is a commit's inflight file
        return Instant(ts, Action.COMMIT, State.INFLIGHT, file_name=name)
    action = _ACTIONS.get(act)
    if action is None:
        return None
    if st is None:
        legacy = completion is None
        completion = completion or mtime_to_instant(mtime)
        return Instant(ts, action, State.COMPLETED, completion, file_name=name, legacy=legacy)
    try:
        state = State[st[1:].upper()]
    except KeyError:
        return None
    return Instant(ts, action, state, file_name=name)
