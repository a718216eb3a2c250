"""The source's progress report: what ``query.lastProgress`` shows of the stream (Spark shows it as the source's
latestOffset), and how close Hudi's cleaner is to files the stream still needs.

Apart from the driver because it reads the stream's state and the timeline without changing either: a report
is computed when Spark asks for one and never feeds back into planning.
"""
from __future__ import annotations

import datetime
import logging
from typing import TypedDict

from ..hoodie.storage import storage_retries
from ..hoodie.table import HudiTable
from ..hoodie.timeline import TimelineEntry
from ..monitor.monitor import Cursor, StreamMonitor
from ..state import PlannedSplit, StreamState
from .admission import BatchSummary
from .offsets import canonical

log = logging.getLogger(__name__)


class SourceMetrics(TypedDict):
    """The source's progress report (:func:`source_metrics`), as ``query.lastProgress`` shows it."""

    cursor: str | None
    latestInstant: str | None
    lagInstants: int
    lagSeconds: float | None
    pendingSplits: int
    pendingRowsEstimate: int
    pendingUnboundedSplits: int
    pendingBytesEstimate: int
    lastBatch: BatchSummary | dict
    lateInstants: int
    cleanRetainsFrom: str | None
    retentionHeadroomInstants: int | None
    blockedByPendingInstant: str | None
    #: the driver process's retried object-store requests (botocore's and the storage layer's), since it started
    storageRetries: int


def source_metrics(table: HudiTable, monitor: StreamMonitor, state: StreamState, floor: str | None,
                   last_batch: BatchSummary | dict, blocked_by: str | None) -> SourceMetrics:
    """Progress a user reads in ``query.lastProgress``: of the stream whose ``state`` ``monitor`` plans (from
    the instant ``floor``), the last batch it admitted and the pending instant it waits for (``blocked_by``).

    Row "estimates" are upper bounds (the splits' ``est_rows``), byte ones the exact sizes of the files the
    splits read; ``lastBatch`` is described at :func:`.admission.admit`. ``pendingRowsEstimate`` counts the
    splits whose bound is known; ``pendingUnboundedSplits`` is how many are not bounded yet (a snapshot's, or whole
    slices write stats could not bound, that no row limit has needed: their rows are in no estimate).
    """
    st = state
    pending = st.pending_from(st.committed_seq)
    behind, _ = monitor.completed_after(st.cursor, known=st.known, floor=floor)
    latest = monitor.cursor_of(behind[-1]) if behind else st.cursor
    retains_from, headroom = retention(table, pending, behind)
    report = SourceMetrics(cursor=st.cursor.requested if st.cursor else None,
                           latestInstant=latest.requested if latest else None,
                           lagInstants=len(behind),
                           lagSeconds=seconds_between(st.cursor, latest),
                           pendingSplits=len(pending),
                           pendingRowsEstimate=sum(p.split.est_rows or 0 for p in pending),
                           pendingUnboundedSplits=sum(p.split.est_rows is None for p in pending),
                           pendingBytesEstimate=sum(p.split.est_bytes for p in pending),
                           lastBatch=last_batch,
                           lateInstants=st.late_instants,
                           cleanRetainsFrom=retains_from, retentionHeadroomInstants=headroom,
                           blockedByPendingInstant=blocked_by, storageRetries=storage_retries())
    return canonical(report)


def retention(table: HudiTable, pending: list[PlannedSplit], unplanned: list[TimelineEntry]
              ) -> tuple[str | None, int | None]:
    """How close the cleaner is to files this stream still needs (Hudi has no reader lease to hold it off).

    (``cleanRetainsFrom``, ``retentionHeadroomInstants``): the newest clean's earliest retained instant, and
    writes the newest clean retained minus writes since the oldest instant
    the stream still reads (a pending split's, or the first completed one not yet planned) — at 0 or
    below, the next clean of the same policy may remove them, and a warning is logged while the data is
    still there. A stream that has caught up needs only the newest slices, which every clean keeps.
    """
    clean = table.timeline.clean_retention()
    if clean is None:
        return None, None
    retains_from, kept = clean
    needed = [min(p.split.instants or [p.split.max_instant]) for p in pending]
    needed += [e.requested_time for e in unplanned]
    if not needed:
        return retains_from, kept
    oldest = min(needed)
    since = sum(1 for e in table.timeline.completed_writes() if e.requested_time >= oldest)
    headroom = kept - since
    if headroom <= 0:
        log.warning("hudi_streaming: %s: the cleaner keeps the last %d writes (from %s); this stream still reads "
                    "from %s, %d writes back: the next clean may remove files it needs", table.url, kept,
                    retains_from, oldest, since)
    return retains_from, headroom


def seconds_between(a: Cursor | None, b: Cursor | None) -> float | None:
    """Time between two instants (completion times where known), from their yyyyMMddHHmmssSSS strings."""
    if a is None or b is None:
        return None
    def parse(c: Cursor) -> datetime.datetime:
        t = (c.completion or c.requested)[:17].ljust(17, "0")
        return datetime.datetime.strptime(t[:14], "%Y%m%d%H%M%S") + datetime.timedelta(milliseconds=int(t[14:]))
    try:
        return round((parse(b) - parse(a)).total_seconds(), 3)
    except ValueError:
        return None
