"""The active timeline: every instant file in the timeline folder, folded to one entry per instant.

A write goes requested → inflight → completed and each transition adds a file, so one instant has up to
three files. The reader needs, per instant, its latest state, whether it was a compaction / log compaction /
clustering (a completed compaction is a plain ``commit`` file; only its ``compaction.requested`` plan tells),
and, lazily, the metadata of completed instants.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, cast

from ...errors import CorruptFileError, DataLossError
from ..config import TableConfig
from ..storage import Storage
from .instant import (
    COMPLETES_AS,
    WRITE_ACTIONS,
    Action,
    Instant,
    State,
    TimelineFile,
    classify_timeline_file,
    is_instant_time,
    parse_instant_file,
)
from .metadata import CommitMetadata, decode_metadata_bytes, parse_commit_metadata, parse_writer_schema

log = logging.getLogger(__name__)
#: what a decoder makes of a timeline file
_D = TypeVar("_D")

#: (timeline folder URL, file name) of every unrecognized timeline file already warned about: a stream reloads
#: the timeline every poll, and one warning per file per process says it without flooding the driver log.
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()
#: one timeline file decoded at a time (see ``ActiveTimeline._decode``)
_decoding = threading.Lock()


def _warn_unrecognized(folder_url: str, name: str) -> None:
    with _warned_lock:
        if (folder_url, name) in _warned:
            return
        _warned.add((folder_url, name))
    log.warning("%s/%s: not an instant file name, and not a file Hudi keeps in the timeline folder; ignored as "
                "Hudi ignores it, but if it is a damaged or renamed instant file, that instant is missing from "
                "the timeline", folder_url, name)


@dataclass(frozen=True)
class TimelineEntry:
    """One instant folded over its state files."""

    instant: Instant  # the latest state
    #: the pending action it was planned as (compaction, logcompaction, clustering), when there was a plan
    planned_as: Action | None
    files: tuple[str, ...]

    @property
    def requested_time(self) -> str:
        return self.instant.requested_time

    @property
    def completion_time(self) -> str | None:
        return self.instant.completion_time

    @property
    def action(self) -> Action:
        """The action as it completes (``commit`` for a compaction)."""
        return self.instant.comparable_action

    @property
    def is_completed(self) -> bool:
        return self.instant.is_completed

    @property
    def is_compaction(self) -> bool:
        return self.planned_as is Action.COMPACTION

    @property
    def is_log_compaction(self) -> bool:
        return self.planned_as is Action.LOG_COMPACTION

    @property
    def is_write(self) -> bool:
        return self.action in WRITE_ACTIONS

    def __str__(self) -> str:
        return str(self.instant)


@dataclass(frozen=True)
class _WriterSchema:
    """What :meth:`ActiveTimeline.writer_schema` decoded of a commit-metadata file: its writer schema alone."""

    schema: str | None


class ActiveTimeline:
    """The instants of ``.hoodie/`` (layout 1) or ``.hoodie/timeline/`` (layout 2), in requested-time order."""

    def __init__(self, storage: Storage, config: TableConfig, entries: list[TimelineEntry],
                 decoded: dict[str, object] | None = None, unrecognized: tuple[str, ...] = ()):
        self.storage = storage
        self.config = config
        #: names of the files in the timeline folder that are neither instants nor Hudi's own (each logged once)
        self.unrecognized_files = unrecognized
        self.entries = sorted(entries, key=lambda e: e.instant.sort_key())
        # a savepoint shares its instant time with the write it pins: the write is what readers look up
        self._by_time = {e.requested_time: e for e in sorted(self.entries, key=lambda e: e.is_write)}
        self._savepoints = {e.requested_time for e in self.entries if e.action is Action.SAVEPOINT}
        #: timeline file name → decoded content; instant files never change once written, so a reloaded
        #: timeline keeps what the previous one decoded (a stream reloads every poll)
        self._decoded: dict[str, object] = decoded if decoded is not None else {}

    @classmethod
    def load(cls, storage: Storage, config: TableConfig,
             previous: "ActiveTimeline | None" = None) -> "ActiveTimeline":
        folder = config.timeline_dir
        folder_url = f"{storage.url}/{folder}"
        # the folders the config puts in the timeline folder: the archive (layout 1), the LSM history (layout 2)
        subfolders = frozenset({config.archive_folder if config.timeline_layout == 1 else config.history_path})
        groups: dict[tuple[str, str], list[tuple[Instant, str]]] = {}  # (instant, its file name)
        unrecognized = []
        for info in storage.list_dir(folder):
            name = info.path.rsplit("/", 1)[-1]
            inst = parse_instant_file(name, config.timeline_layout, info.mtime, folder_url)
            if inst is None:
                if classify_timeline_file(name, config.timeline_layout, subfolders) is TimelineFile.UNRECOGNIZED:
                    unrecognized.append(name)
                    _warn_unrecognized(folder_url, name)
                continue
            groups.setdefault((inst.requested_time, inst.comparable_action.value), []).append((inst, name))
        entries = []
        for states in groups.values():
            states.sort(key=lambda s: s[0].state)
            planned = next((i.action for i, _ in states if i.action in COMPLETES_AS), None)
            entries.append(TimelineEntry(states[-1][0], planned, tuple(name for _, name in states)))
        kept = None
        if previous is not None:  # keep what still names a listed file: archived or rolled-back ones drop out
            listed = {f"{config.timeline_dir}/{name}" for e in entries for name in e.files}
            kept = {rel: value for rel, value in previous._decoded.items() if rel in listed}
        return cls(storage, config, entries, kept, tuple(sorted(unrecognized)))

    # -- queries ---------------------------------------------------------------------------------------------
    def get(self, requested_time: str) -> TimelineEntry | None:
        return self._by_time.get(requested_time)

    def completed(self) -> list[TimelineEntry]:
        return [e for e in self.entries if e.is_completed]

    def pending(self) -> list[TimelineEntry]:
        return [e for e in self.entries if not e.is_completed]

    def completed_writes(self) -> list[TimelineEntry]:
        """Completed commit, deltacommit and replacecommit instants (compactions and clusterings included)."""
        return [e for e in self.entries if e.is_completed and e.is_write]

    def pending_compactions(self) -> list[TimelineEntry]:
        return [e for e in self.entries if not e.is_completed and e.instant.action is Action.COMPACTION]

    def pending_writes(self) -> list[TimelineEntry]:
        return [e for e in self.entries if not e.is_completed and e.is_write]

    def first_write_time(self) -> str | None:
        """Requested time of the first write not pinned by a savepoint: older instants count as archived.

        The archiver keeps savepointed commits on the active timeline while archiving what lies around them,
        so they do not mark where the active timeline starts (Hudi's ``getFirstNonSavepointCommit``).
        """
        writes = [e for e in self.entries if e.is_write and e.requested_time not in self._savepoints]
        return writes[0].requested_time if writes else None

    # -- content ---------------------------------------------------------------------------------------------
    def _file(self, entry: TimelineEntry, state: State) -> str | None:
        for name in entry.files:
            inst = parse_instant_file(name, self.config.timeline_layout)
            if inst is not None and inst.state is state:
                return f"{self.config.timeline_dir}/{name}"
        return None

    def _completed_file(self, requested_time: str) -> str:
        entry = self._by_time.get(requested_time)
        rel = self._file(entry, State.COMPLETED) if entry is not None and entry.is_completed else None
        if rel is None:  # rolled back or restored away since the caller saw it complete
            raise DataLossError(f"{self.storage.url}: instant {requested_time} is not a completed instant on the "
                                "active timeline (rolled back or restored since it was listed?)")
        return rel

    def commit_metadata(self, requested_time: str) -> CommitMetadata:
        """Metadata of a completed write instant."""
        return self._decode(self._completed_file(requested_time), parse_commit_metadata)

    def writer_schema(self, requested_time: str) -> str | None:
        """The writer schema of a completed write instant: from its metadata when that is decoded already, else
        the schema alone (:func:`.metadata.parse_writer_schema`, kept as a :class:`_WriterSchema` until the whole
        metadata is asked for)."""
        rel = self._completed_file(requested_time)
        cached = self._decoded.get(rel)
        if isinstance(cached, CommitMetadata):
            return cached.writer_schema
        if not isinstance(cached, _WriterSchema):
            cached = self._decoded[rel] = _WriterSchema(
                parse_writer_schema(self.storage.read_bytes(rel), f"{self.storage.url}/{rel}"))
        return cached.schema

    def plan(self, requested_time: str) -> dict:
        """The decoded plan of a requested instant (compaction plan, clustering plan, cleaner plan, ...)."""
        entry = self._by_time.get(requested_time)
        rel = self._file(entry, State.REQUESTED) if entry else None
        if rel is None:
            return {}
        return self._decode(rel, decode_metadata_bytes)

    def _decode(self, rel: str, decode: Callable[[bytes, str], _D]) -> _D:
        """``decode`` of a timeline file, decoded once: each file is read with one decoder only.

        Callers read several files at once (threads: each read is a round trip to an object store), but one file
        is decoded at a time: decoding holds the GIL anyway, and a wide table's commit decodes into a dict per
        file group before its write stats are built (15 MiB at 10,000 file groups), so two decodes at once
        doubled the driver's peak."""
        if rel not in self._decoded or isinstance(self._decoded[rel], _WriterSchema):  # only its schema so far
            data = self.storage.read_bytes(rel)
            with _decoding:
                if rel not in self._decoded or isinstance(self._decoded[rel], _WriterSchema):
                    self._decoded[rel] = decode(data, f"{self.storage.url}/{rel}")
        return cast(_D, self._decoded[rel])

    def is_clustering(self, entry: TimelineEntry) -> bool:
        """Clustering vs insert overwrite: layout 2 has a ``clustering`` plan; layout 1 only the operation type."""
        if entry.planned_as is Action.CLUSTERING:
            return True
        if entry.action is not Action.REPLACE_COMMIT or not entry.is_completed:
            return False
        return (self.commit_metadata(entry.requested_time).operation_type or "").upper() == "CLUSTER"

    def compaction_operations(self, requested_time: str) -> list[dict]:
        """The ``HoodieCompactionOperation`` records of a compaction plan (each checked: readers index by them)."""
        ops = self.plan(requested_time).get("operations") or []
        where = self._plan_file(requested_time)
        if not isinstance(ops, list):
            raise CorruptFileError(f"{where}: compaction plan has no operation list")
        for i, op in enumerate(ops):
            if not isinstance(op, dict) or not all(isinstance(op.get(k), (str, type(None)))
                                                   for k in ("fileId", "partitionPath")):
                raise CorruptFileError(f"{where}: compaction operation {i} is not a record with string fileId "
                                       "and partitionPath")
        return ops

    def earliest_retained(self, clean_time: str) -> str | None:
        """The earliest instant a clean's plan retains (``HoodieCleanerPlan.earliestInstantToRetain``), if any."""
        earliest = self.plan(clean_time).get("earliestInstantToRetain")
        if earliest is None:
            return None
        stamp = earliest.get("timestamp") if isinstance(earliest, dict) else earliest
        if stamp is None or is_instant_time(stamp):
            return stamp
        raise CorruptFileError(f"{self._plan_file(clean_time)}: earliestInstantToRetain is not an instant: "
                               f"{str(earliest)[:80]!r}")

    def undone_instants(self, entry: TimelineEntry) -> list[str]:
        """The instants a completed rollback or restore undid (``HoodieRollbackMetadata.commitsRollback`` and
        ``instantsRollback``; a restore's ``instantsToRollback`` and the rollbacks it ran), sorted."""
        if entry.action not in (Action.ROLLBACK, Action.RESTORE) or not entry.is_completed:
            return []
        rel = self._file(entry, State.COMPLETED)
        if rel is None:
            return []
        where = f"{self.storage.url}/{rel}"
        md = self._decode(rel, decode_metadata_bytes)
        found: list[object] = list(md.get("commitsRollback") or [])
        found += list(md.get("instantsRollback") or []) + list(md.get("instantsToRollback") or [])
        for rollbacks in (md.get("hoodieRestoreMetadata") or {}).values():
            for rb in rollbacks if isinstance(rollbacks, list) else []:
                found += list(rb.get("commitsRollback") or []) if isinstance(rb, dict) else []
        out = set()
        for item in found:
            stamp = item.get("commitTime") if isinstance(item, dict) else item
            if not isinstance(stamp, str) or not is_instant_time(stamp):
                raise CorruptFileError(f"{where}: a rolled-back instant is not an instant time: {str(item)[:80]!r}")
            out.add(stamp)
        return sorted(out)

    def restored_savepoint(self, entry: TimelineEntry) -> str | None:
        """The savepoint a restore went back to (its plan's ``savepointToRestoreTimestamp``), when it says."""
        stamp = self.plan(entry.requested_time).get("savepointToRestoreTimestamp")
        return stamp if isinstance(stamp, str) and is_instant_time(stamp) else None

    def _plan_file(self, requested_time: str) -> str:
        """URL of the requested file holding an instant's plan, for errors about its content."""
        entry = self._by_time.get(requested_time)
        rel = self._file(entry, State.REQUESTED) if entry is not None else None
        return f"{self.storage.url}/{rel or f'{self.config.timeline_dir}/{requested_time}'}"
