"""The table's timeline: instants (active and archived) and the metadata each completed instant carries.

:class:`Timeline` is what the rest of the code asks; it hides where an instant lives (active folder or
archive) and answers the questions the file-system view, the scanner and the monitor need.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import DataLossError
from ..config import TableConfig
from ..storage import Storage
from .active import ActiveTimeline, TimelineEntry
from .archived import ArchivedTimeline
from .instant import Action, Instant, State
from .metadata import CommitMetadata

__all__ = ["Timeline", "TimelineEntry", "Action", "Instant", "State", "CommitMetadata", "CommitCheck"]


@dataclass(frozen=True)
class CommitCheck:
    """Which write instants are committed, as data: small and picklable, so a v6 reader on another machine
    can skip the blocks of failed writes without listing the timeline itself.

    Committed: a completed write on the active timeline, or an instant older than the active timeline's first
    write (archived, and only completed instants are archived).
    """

    active: frozenset[str]  # every instant time on the active timeline
    completed_writes: frozenset[str]
    first_write: str | None

    def __call__(self, instant_time: str) -> bool:
        if instant_time in self.active:
            return instant_time in self.completed_writes
        return self.first_write is not None and instant_time < self.first_write


class Timeline:
    """Active timeline plus the archived instants before it."""

    def __init__(self, storage: Storage, config: TableConfig, active: ActiveTimeline):
        self.storage = storage
        self.config = config
        self.active = active
        self.archived = ArchivedTimeline(storage, config)
        self._first_write = active.first_write_time()
        self._archived_writes: dict[str, TimelineEntry] | None = None
        self._commit_check: CommitCheck | None = None

    @classmethod
    def load(cls, storage: Storage, config: TableConfig, previous: "Timeline | None" = None) -> "Timeline":
        """Load the timeline; ``previous`` (an earlier load of the same table) lends what it already decoded."""
        return cls(storage, config, ActiveTimeline.load(storage, config, previous.active if previous else None))

    # -- instants --------------------------------------------------------------------------------------------
    @property
    def unrecognized_files(self) -> tuple[str, ...]:
        """Files of the timeline folder that are neither instants nor files Hudi keeps there (each is logged
        once per process); their count belongs in a reader's metrics, since any of them may be a lost instant."""
        return self.active.unrecognized_files

    @property
    def entries(self) -> list[TimelineEntry]:
        return self.active.entries

    def completed_writes(self, include_archived: bool = False) -> list[TimelineEntry]:
        """Completed writes in requested-time order; archived ones first when asked for (read lazily)."""
        active = self.active.completed_writes()
        if not include_archived:
            return active
        older = [e for t, e in self._archived().items()
                 if self.active.get(t) is None and (self._first_write is None or t < self._first_write)]
        return sorted(older + active, key=lambda e: e.instant.sort_key())

    def _archived(self) -> dict[str, TimelineEntry]:
        if self._archived_writes is None:
            self._archived_writes = {
                a.requested_time: TimelineEntry(Instant(a.requested_time, a.action, State.COMPLETED,
                                                        a.completion_time or a.requested_time), None, ())
                for a in self.archived.instants if a.is_write}
        return self._archived_writes

    def latest_write_time(self) -> str | None:
        writes = self.completed_writes()
        return writes[-1].requested_time if writes else None

    def is_archived(self, instant_time: str) -> bool:
        """Older than the first write instant still on the active timeline: completed and archived."""
        return self._first_write is not None and instant_time < self._first_write

    def is_committed(self, instant_time: str) -> bool:
        """A completed write instant, on the active timeline or archived before it."""
        return self.commit_check()(instant_time)

    def commit_check(self) -> CommitCheck:
        if self._commit_check is None:
            entries = self.active.entries
            done = frozenset(e.requested_time for e in entries if e.is_completed and e.is_write)
            self._commit_check = CommitCheck(frozenset(e.requested_time for e in entries), done, self._first_write)
        return self._commit_check

    def completion_time(self, instant_time: str) -> str | None:
        """Completion time of a completed write; None when pending or unknown (rolled back)."""
        e = self.active.get(instant_time)
        if e is not None:
            return e.completion_time if e.is_completed else None
        if not self.is_archived(instant_time):
            return None
        archived = self._archived().get(instant_time)
        # an archived instant completed before every active one; its requested time is a lower bound
        return archived.completion_time if archived is not None else instant_time

    # -- metadata --------------------------------------------------------------------------------------------
    def commit_metadata(self, instant_time: str) -> CommitMetadata:
        """Metadata of a completed write, wherever it lives (active first, then the archive)."""
        if self.active.get(instant_time) is not None or not self.is_archived(instant_time):
            return self.active.commit_metadata(instant_time)
        archived = self.archived.write(instant_time)
        if archived is not None:
            return self.archived.commit_metadata(archived)
        raise DataLossError(f"{self.storage.url}: instant {instant_time} is older than the active timeline but not "
                            f"in the archive ({self.config.archive_dir}); its commit metadata is gone")

    def writer_schema(self, instant_time: str) -> str | None:
        """The writer schema of a completed write (:meth:`commit_metadata`'s), decoding no more than it on the
        active timeline (:meth:`.active.ActiveTimeline.writer_schema`)."""
        if self.active.get(instant_time) is not None or not self.is_archived(instant_time):
            return self.active.writer_schema(instant_time)
        return self.commit_metadata(instant_time).writer_schema

    def pending_compaction_times(self) -> set[str]:
        return {e.requested_time for e in self.active.pending_compactions()}

    def pending_compaction_operations(self) -> list[tuple[str, str, str]]:
        """(compaction instant, partition, fileId) of every file group with a pending compaction."""
        out = []
        for e in self.active.pending_compactions():
            for op in self.active.compaction_operations(e.requested_time):
                file_id = op.get("fileId")
                if file_id is not None:  # an operation without one names no file group
                    out.append((e.requested_time, op.get("partitionPath") or "", file_id))
        return out

    def replaced_file_groups(self, max_instant: str) -> set[tuple[str, str]]:
        """(partition, fileId) replaced by completed replace commits requested at or before ``max_instant``."""
        out: set[tuple[str, str]] = set()
        for e in self.completed_writes():
            if e.action is Action.REPLACE_COMMIT and e.requested_time <= max_instant:
                md = self.commit_metadata(e.requested_time)
                for part, ids in md.partition_to_replace_file_ids.items():
                    out.update((part, fid) for fid in ids)
        return out

    def is_clustering(self, entry: TimelineEntry) -> bool:
        return self.active.is_clustering(entry)

    def clean_retention(self) -> tuple[str, int] | None:
        """What the newest completed clean kept: (earliest instant to retain, writes retained from it on).

        A reader positioned before that instant may already miss files; with the cleaner's KEEP_LATEST_COMMITS
        policy the next clean keeps about as many writes again. None when no clean says (never cleaned, or a
        policy without an earliest instant, such as KEEP_LATEST_FILE_VERSIONS).
        """
        cleans = [e for e in self.active.completed() if e.action is Action.CLEAN]
        if not cleans:
            return None
        earliest = self.active.earliest_retained(cleans[-1].requested_time)
        if not earliest:
            return None
        kept = [e for e in self.active.completed_writes() if earliest <= e.requested_time < cleans[-1].requested_time]
        return earliest, len(kept)
