"""When the instants a read delivers became visible: the rows' ``_commit_version`` and ``_commit_timestamp``.

Its own module because the clock is read where the timeline is (a stream's driver, once per batch; the batch
API, once per planning round) and used where the rows are (tasks, which read no timeline): the two meet only in
:class:`CommitClock`, which travels between them.
"""
from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataLossError
from .feed_schema import COMMIT_TIMESTAMP, COMMIT_VERSION
from .table import COMMIT_TIME, HudiTable


@dataclass(frozen=True)
class CommitClock:
    """When the instants of a range became visible, for the rows' ``_commit_version`` and ``_commit_timestamp``.

    ``completions`` maps requested times to completion times (table versions 8/9; version 6 records no completion
    time, and its writes become visible in requested-time order, so the requested time stands for it). ``zone``
    is the IANA zone the table's timeline writes times in (``hoodie.table.timeline.timezone``: UTC, or LOCAL —
    the writer's zone). Tasks get the clock from the driver, which reads the timeline; they do not.
    """

    completions: Mapping[str, str]
    zone: str = "UTC"

    def stamp(self, completion: str) -> tuple[int, dt.datetime]:
        """The version (the completion time as the number yyyyMMddHHmmssSSS) and the UTC moment of a completion."""
        return _stamp(completion, self.zone)


@functools.lru_cache(maxsize=4096)
def _stamp(completion: str, zone: str) -> tuple[int, dt.datetime]:
    """:meth:`CommitClock.stamp`, parsed once per process: a task stamps every file group it reads with the
    same few instants (``strptime`` per group was a tenth of a small group's read, issue 25)."""
    digits = completion.ljust(17, "0")
    local = dt.datetime.strptime(digits[:14], "%Y%m%d%H%M%S").replace(
        microsecond=int(digits[14:17]) * 1000, tzinfo=ZoneInfo(zone))
    return int(digits), local.astimezone(dt.timezone.utc)


def commit_clock(table: HudiTable, instants: Iterable[str], zone: str) -> CommitClock:
    """The clock of ``instants`` (the requested times of completed writes a read delivers), from the table's
    timeline, reading the archived timeline only for instants the active one no longer holds. One clock serves
    a whole batch (or planning round): the timeline is scanned once, not per range."""
    wanted = set(instants)
    if table.config.version < 8:
        return CommitClock({i: i for i in wanted}, zone)
    # the active timeline's every action: a reconcile's deletes are stamped with the restore's instant
    found = {e.requested_time: e.completion_time for e in table.timeline.active.completed()
             if e.requested_time in wanted and e.completion_time}
    if wanted - found.keys():
        every = table.timeline.completed_writes(include_archived=True)
        found.update({e.requested_time: e.completion_time for e in every
                      if e.requested_time in wanted and e.completion_time})
    missing = sorted(wanted - found.keys())
    if missing:
        raise DataLossError(f"{table.url}: instant {missing[0]} is neither on the active nor on the archived "
                            "timeline; its completion time (the rows' _commit_version) is unknown")
    return CommitClock(found, zone)


def commit_stamper(instants: tuple[str, ...], where: str, clock: CommitClock) -> Callable[[pa.Table], pa.Table]:
    """Sets the commit columns of a piece of the range ``where`` that delivers ``instants``: each row's from its
    commit time; a row whose commit time is not one of them (a snapshot's rows; every row of a table without
    meta fields) gets the range's last instant (the latest completion)."""
    known = [i for i in instants if i in clock.completions]
    if not known:
        raise DataLossError(f"the commit clock has none of the instants {list(instants)[:3]} of {where}")
    last = max(known, key=lambda i: clock.completions[i])
    keys = pa.array(known, pa.string())
    stamps = [clock.stamp(clock.completions[i]) for i in known] + [clock.stamp(clock.completions[last])]
    versions = pa.array([v for v, _ in stamps], pa.int64())
    moments = pa.array([t for _, t in stamps], pa.timestamp("us", tz="UTC"))

    def stamp(rows: pa.Table) -> pa.Table:
        at = (pc.fill_null(pc.index_in(rows.column(COMMIT_TIME), value_set=keys), len(known))
              if COMMIT_TIME in rows.column_names else pa.repeat(pa.scalar(len(known), pa.int32()), rows.num_rows))
        for name, values in ((COMMIT_VERSION, versions), (COMMIT_TIMESTAMP, moments)):
            idx = rows.schema.get_field_index(name)
            rows = rows.set_column(idx, rows.schema.field(idx), values.take(at))
        return rows
    return stamp
