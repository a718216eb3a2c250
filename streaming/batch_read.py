"""``spark.read`` of the source: a snapshot's file slices, or a range of the change feed, as tasks.

Apart from the stream's driver because a batch read has no state, no offsets and no polling: it plans once,
from the options alone, and packs the splits into tasks as a stream's batch is packed.
"""
from __future__ import annotations

import pyarrow as pa

from ..hoodie.filters import Filter
from ..hoodie.read import plan_slices
from ..hoodie.table import HudiTable
from ..monitor.feed import ChangeFeed
from ..monitor.monitor import MonitorOptions, StreamMonitor
from .consumer import SplitRange
from .options import ReadMode, SourceOptions
from .packing import pack_ranges
from .tasks import Task, TaskFactory, batch_clock, task_inputs


def plan_batch_read(opts: SourceOptions, output: pa.Schema, make: TaskFactory,
                    filters: Filter | None = None) -> list[Task]:
    """``spark.read``: the file slices of a snapshot; for a range (``startingInstant``, exclusive, and
    ``endingInstant``) the splits of the change feed ``read_changes`` reads (``monitor.feed``), so both return
    the same rows, in either read mode; packed into tasks as a stream's batch is (``packing``). An empty table or
    range still gets one (empty) task. ``filters`` (Spark's pushed filters) leaves out the partitions that cannot
    hold a matching row; Spark still filters the rows."""
    table = HudiTable(opts.path, opts.storage or None, metadata_enable=opts.metadata_enable)
    zone = opts.timeline_zone(table.config)
    first, end = opts.positions(zone)
    start = None if first in ("earliest", "latest") else first
    columns, commits = task_inputs(table, output)
    if start or end:
        feed = ChangeFeed(table, changelog=opts.read_mode is ReadMode.CHANGELOG, deletes=opts.deletes,
                          columns=opts.columns, partition_filter=opts.partition_filter(), end=end, filters=filters)
        feed.start_after(start)
        splits = [s for plan in feed.plans() for s in plan.splits]
    else:
        slices, max_instant, _ = plan_slices(table, partition_filter=opts.partition_filter(), filters=filters,
                                             schema=output)
        mon = StreamMonitor(table, MonitorOptions())
        # no instant to merge up to (an empty table) comes with no slices
        splits = [mon.split_of(s, None, max_instant, est_rows=0) for s in slices] if max_instant is not None else []
    ranges = pack_ranges([[SplitRange(s, 0, None)] for s in splits], opts.packing())
    clock = batch_clock(table, splits, zone)
    return [make(r, columns, commits, clock) for r in ranges] or [make([], columns, commits, clock)]
