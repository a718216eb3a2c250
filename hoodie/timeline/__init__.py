"""The table's timeline: instants (active and archived) and the metadata each completed instant carries.

:class:`Timeline` is what the rest of the code asks; it hides where an instant lives (active folder or
archive) and answers the questions the file-system view, the scanner and the monitor need.
"""
from __future__ import annotations

from ..config import TableConfig
from ..storage import Storage
from .active import ActiveTimeline, TimelineEntry
from .instant import Action, Instant, State
from .metadata import CommitMetadata

__all__ = ["Timeline", "TimelineEntry", "Action", "Instant", "State", "CommitMetadata"]


class Timeline:
    """Active timeline plus the archived instants before it."""

    def __init__(self, storage: Storage, config: TableConfig, active: ActiveTimeline):
        self.storage = storage
        self.config = config
        self.active = active
        self._first_write = active.first_write_time()

    @classmethod
    def load(cls, storage: Storage, config: TableConfig) -> "Timeline":
        return cls(storage, config, ActiveTimeline.load(storage, config))

    # -- instants --------------------------------------------------------------------------------------------
    @property
    def entries(self) -> list[TimelineEntry]:
        return self.active.entries

    def completed_writes(self) -> list[TimelineEntry]:
        return self.active.completed_writes()

    def latest_write_time(self) -> str | None:
        writes = self.completed_writes()
        return writes[-1].requested_time if writes else None

    def is_archived(self, instant_time: str) -> bool:
        """Older than the first write instant still on the active timeline: completed and archived."""
        return self._first_write is not None and instant_time < self._first_write

    def is_committed(self, instant_time: str) -> bool:
        """A completed write instant, on the active timeline or archived before it."""
        e = self.active.get(instant_time)
        if e is not None:
            return e.is_completed and e.is_write
        return self.is_archived(instant_time)

    def completion_time(self, instant_time: str) -> str | None:
        """Completion time of a completed write; None when pending or unknown (rolled back)."""
        e = self.active.get(instant_time)
        if e is not None:
            return e.completion_time if e.is_completed else None
        # archived: completed before every active instant; its requested time is the best lower bound known
        return instant_time if self.is_archived(instant_time) else None

    # -- metadata --------------------------------------------------------------------------------------------
    def commit_metadata(self, instant_time: str) -> CommitMetadata:
        return self.active.commit_metadata(instant_time)

    def pending_compaction_times(self) -> set[str]:
        return {e.requested_time for e in self.active.pending_compactions()}

    def pending_compaction_operations(self) -> list[tuple[str, str, str]]:
        """(compaction instant, partition, fileId) of every file group with a pending compaction."""
        out = []
        for e in self.active.pending_compactions():
            for op in self.active.compaction_operations(e.requested_time):
                out.append((e.requested_time, op.get("partitionPath") or "", op.get("fileId")))
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
