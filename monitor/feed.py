"""The change feed of an instant range as one batch: planned as a stream plans it, read by ``hoodie.changes``.

:class:`ChangeFeed` is what ``hudi_streaming.read.read_changes`` (Delta's ``table_changes()`` for a Hudi table:
what changed between two instants, with change types) reads. It gives the rows a stream would deliver for that
range, because it plans the same rounds with the
same planner (:class:`StreamMonitor`: a round per planning step, cut before a compaction, clustering or insert
overwrite; one instant per round in changelog mode) and reads each split through the same
:func:`hoodie.changes.change_pieces`. The batch reader (``spark.read`` with a range) and the CLI's ``read
--changes`` and ``tail`` use it too.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Literal

import pyarrow as pa

from ..errors import HudiStreamingError
from ..hoodie.changes import change_pieces
from ..hoodie.commit_clock import commit_clock
from ..hoodie.deletes import Deletes
from ..hoodie.feed_schema import output_schema, read_columns
from ..hoodie.filters import Filter, PartitionPruner
from ..hoodie.split import Split
from ..hoodie.table import HudiTable
from .monitor import Cursor, MonitorOptions, Plan, StreamMonitor

DeletesArg = Literal["emit", "ignore", "fail"]
#: partition field → the values to read
Partitions = Mapping[str, "str | list[str]"]


class ChangeFeed:
    """A table's change feed, round by round as a stream plans it, without a state of its own: where it stands
    (the cursor and the writes it has accounted for, so a write that becomes visible late is still read) lives
    here while it runs. ``read_changes`` reads one range with it; the CLI's ``tail`` follows a live table."""

    def __init__(self, table: HudiTable, *, changelog: bool, deletes: Deletes, columns: list[str] | None = None,
                 partition_filter: Partitions | None = None, end: str | None = None, zone: str | None = None,
                 carryovers: frozenset[str] | None = None, filters: Filter | None = None):
        """``filters`` leaves out the splits of partitions that cannot hold a matching row (their rows are not
        filtered here)."""
        self.table = table
        #: the zone the table's instant times are read in (``TableConfig.timeline_zone`` when None)
        self.zone = zone or table.config.timeline_zone
        self.changelog, self.deletes, self.carryovers = changelog, deletes, carryovers
        #: the rows' schema: the (projected) table columns, meta columns and the change type
        self.schema = output_schema(table.arrow_schema(), columns)
        self._read = read_columns(table, self.schema)
        wanted = {k: [v] if isinstance(v, str) else list(v) for k, v in (partition_filter or {}).items()}
        self.monitor = StreamMonitor(table, MonitorOptions(ending_instant=end, partition_filter=wanted or None,
                                                           replaced_as_deletes=deletes is not Deletes.IGNORE,
                                                           changelog=changelog))
        pruner = PartitionPruner(table, filters, self.schema) if filters is not None else None
        self._pruner = pruner if pruner is not None and pruner.used else None
        self.cursor: Cursor | None = None
        self._known: dict[str, str] | None = None
        self._floor: str | None = None

    def _at(self, cursor: Cursor | None) -> None:
        self.cursor = cursor
        self._known = self.monitor.accounted(cursor) if self.monitor.v8 else None

    def start_after(self, instant: str | None) -> None:
        """Read from the write after ``instant`` (None: from the table's first write)."""
        self._at(None if instant is None else self.monitor.cursor_at(instant, exclusive=True))

    def start_at(self, instant: str) -> None:
        """Read from ``instant`` on, inclusive (a stream's ``startingInstant``)."""
        self._floor = instant
        self._at(self.monitor.cursor_at(instant))

    def start_latest(self) -> None:
        """Read only writes that complete from now on."""
        self._at(self.monitor.latest_cursor())

    def snapshot(self) -> tuple[Cursor | None, pa.Table]:
        """The whole table as of its latest completed write, every row an insert (a stream started at
        ``earliest`` delivers this first), and that write; the feed then reads from the write after it."""
        plan = self.monitor.plan_snapshot()
        self._at(plan.cursor)
        return plan.cursor, self._rows(plan.splits)

    def rounds(self, *, wait_for_pending: bool = False) -> Iterator[tuple[Plan, pa.Table]]:
        """Each planning round's plan and changes (see :meth:`plans`)."""
        return ((plan, self._rows(plan.splits)) for plan in self.plans(wait_for_pending=wait_for_pending))

    def plans(self, *, wait_for_pending: bool = False) -> Iterator[Plan]:
        """Each planning round, until no completed write is left (up to ``end``).

        On table version 6 a pending write holds back the writes after it (their order is not final until it
        completes): they are left for a later call with ``wait_for_pending``, refused otherwise.
        """
        self.table.reload()
        while True:
            plan = self.monitor.plan_next(self.cursor, 1 if self.changelog else None, known=self._known,
                                          floor=self._floor)
            if not plan.instants:
                if plan.blocked_by is not None and not wait_for_pending and \
                        self.monitor.completed_after(self.cursor, from_first=True)[0]:
                    raise HudiStreamingError(f"{self.table.url}: instant {plan.blocked_by} is still pending; the "
                                             "writes after it are not final on table version 6 — read up to an "
                                             "instant before it, or once it completes")
                return
            if self._known is not None:
                self._known.update({e.requested_time: e.completion_time or "" for e in plan.instants})
            self.cursor = plan.cursor
            if self._pruner is not None:
                plan.splits = [s for s in plan.splits if self._pruner.may_match(s.partition)]
            yield plan

    def _rows(self, splits: list[Split]) -> pa.Table:
        clock = commit_clock(self.table, (i for split in splits for i in split.delivered_instants), self.zone)
        parts = [piece for split in splits for piece in change_pieces(
            self.table, split, self.schema, self._read, self.deletes, self.changelog, clock=clock,
            carryovers=self.carryovers)]
        return pa.concat_tables(parts) if parts else self.schema.empty_table()


