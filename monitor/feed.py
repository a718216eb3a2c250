"""The change feed of an instant range as one batch: planned as a stream plans it, read by ``hoodie.changes``.

``read_changes`` is Delta's ``table_changes()`` for a Hudi table: what changed between two instants, with change
types. It returns the rows a stream would deliver for that range, because it plans the same rounds with the
same planner (:class:`StreamMonitor`: a round per planning step, cut before a compaction, clustering or insert
overwrite; one instant per round in changelog mode) and reads each split through the same
:func:`hoodie.changes.change_pieces`. The batch reader (``spark.read`` with a range) and the CLI's ``read
--changes`` and ``tail`` use it too.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Literal

import pyarrow as pa

from ..errors import HudiStreamingError, OptionError
from ..hoodie.changes import change_pieces
from ..hoodie.commit_clock import commit_clock
from ..hoodie.config import is_zone
from ..hoodie.deletes import Deletes
from ..hoodie.feed_schema import output_schema, read_columns
from ..hoodie.filters import Filter, FilterArg, PartitionPruner, filter_rows, pushed_filters
from ..hoodie.split import Split
from ..hoodie.table import HudiTable
from ..hoodie.timeline.instant import is_instant_time
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


def read_changes(url: str, start: str | None = None, end: str | None = None, *, changelog: bool = False,
                 deletes: DeletesArg = "emit", columns: list[str] | None = None,
                 partition_filter: Partitions | None = None, filters: FilterArg | None = None,
                 drop_carryovers: bool = False, carryover_ignore_columns: list[str] | None = None,
                 timeline_zone: str | None = None, storage_options: dict | None = None,
                 metadata_enable: bool = True) -> pa.Table:
    """What changed in the Hudi table at ``url`` after instant ``start`` up to instant ``end``, with change types.

    The rows are those a stream started just after ``start`` with ``endingInstant=end`` delivers, in its order:
    the table's columns, Hudi's ``_hoodie_*`` meta columns, ``_change_type`` (``insert``, ``update_postimage``,
    ``update_preimage``, ``delete``), ``_commit_version`` and ``_commit_timestamp`` (when the change's commit
    became visible: Delta's change data feed columns of those names).

    Parameters:
        url: the table's root folder (local path or fsspec URL such as ``s3://bucket/table``).
        start: exclusive lower bound, an instant time ``yyyyMMddHHmmss[SSS]`` (a completion time on table
            versions 8/9, a requested time on 6); None reads from the table's first write.
        end: inclusive upper bound, likewise; None reads up to the latest completed write.
        changelog: every version of a key, one instant at a time, updates as a pre-image and a post-image row
            (the stream's ``readMode=changelog``); otherwise the latest state of each key changed per planning
            round (``readMode=upsert``).
        deletes: ``"emit"`` delivers deletes as rows with ``_change_type`` ``delete`` and the key's last values;
            ``"ignore"`` drops them; ``"fail"`` raises :class:`DeleteError` at the first delete.
        columns: the table columns to return (meta columns and ``_change_type`` always come along).
        partition_filter: partition field → the value or values to read.
        filters: the rows to return, in ``read_table``'s forms (pyarrow DNF or Expression), on the returned
            columns: the rows that match, as pyarrow filters them; partitions that cannot hold a match are not
            read. A pre-image and its post-image are filtered each on its own values, as a query's
            WHERE on the change feed filters them.
        drop_carryovers: leave out updates whose values equal the key's earlier values in every returned column
            but the ``_hoodie_*`` meta columns and ``carryover_ignore_columns`` (a writer that rewrote a record
            unchanged): both images in changelog mode, the row in upsert mode (Spark's
            ``deduplicationMode=dropCarryovers``).
        timeline_zone: the IANA zone the writer wrote instant times in, for ``_commit_timestamp``, on a table
            whose timeline is LOCAL (Hudi's default: the writer's zone, which the table does not record); this
            process's zone when None. A UTC timeline is read in UTC, and another zone given for it is refused.
        storage_options: fsspec options for the table's store.
        metadata_enable: take the file listings from the table's metadata table where it can serve them (Hudi's
            ``hoodie.metadata.enable``); False lists the store.

    Raises :class:`OptionError` for a bad argument (an unknown column, a malformed instant, an unknown
    ``deletes`` value), :class:`DataLossError` when the cleaner already removed files the range needs.
    """
    for name, value in (("start", start), ("end", end)):
        if value is not None and not is_instant_time(value):
            raise OptionError(f"read_changes: {name}={value!r} is not an instant time (yyyyMMddHHmmss[SSS])")
    try:
        mode = Deletes(deletes)
    except ValueError:
        raise OptionError(f"read_changes: deletes={deletes!r}; use 'emit', 'ignore' or 'fail'") from None
    table = HudiTable(url, storage_options, metadata_enable=metadata_enable)
    unknown = [f for f in partition_filter or {} if f not in table.config.partition_fields]
    if unknown:
        raise OptionError(f"read_changes: partition_filter names {', '.join(unknown)}, not a partition field of "
                          f"{table.url} (its partition fields: {', '.join(table.config.partition_fields) or 'none'})")
    full = table.arrow_schema()
    unknown = [c for c in [*(columns or []), *(carryover_ignore_columns or [])] if c not in full.names]
    if unknown:
        raise OptionError(f"read_changes: {table.url} has no column {', '.join(unknown)}; its columns: "
                          f"{', '.join(n for n in full.names if not n.startswith('_hoodie_'))}")
    if timeline_zone is not None and not is_zone(timeline_zone):
        raise OptionError(f"read_changes: timeline_zone={timeline_zone!r} is not an IANA time zone name")
    zone = table.config.reading_zone(timeline_zone, "read_changes: timeline_zone")
    schema = output_schema(full, columns)
    pushed = pushed_filters(filters, schema, "read_changes") if filters is not None else None
    feed = ChangeFeed(table, changelog=changelog, deletes=mode, columns=columns, partition_filter=partition_filter,
                      end=end, zone=zone,
                      carryovers=frozenset(carryover_ignore_columns or ()) if drop_carryovers else None,
                      filters=pushed.model if pushed else None)
    feed.start_after(start)
    parts = [rows for _plan, rows in feed.rounds()]
    out = pa.concat_tables(parts) if parts else feed.schema.empty_table()
    return filter_rows(out, pushed, "read_changes") if pushed is not None else out
