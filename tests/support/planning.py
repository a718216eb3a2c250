"""Splits a stream plans, for tests that check what every planned split yields."""
from __future__ import annotations

from hudi_streaming.hoodie.split import Split
from hudi_streaming.hoodie.table import HudiTable
from hudi_streaming.monitor.monitor import MonitorOptions, StreamMonitor


def round_by_round_splits(table: HudiTable) -> list[Split]:
    """The splits of a stream that starts before the table's first instant: one round per instant (groups an insert
    overwrite replaced as deletes)."""
    mon = StreamMonitor(table, MonitorOptions(replaced_as_deletes=True))
    cursor, splits = None, []
    for _ in range(200):
        plan = mon.plan_next(cursor, 1)
        if not plan.instants:
            return splits
        splits += plan.splits
        cursor = plan.cursor
    raise AssertionError(f"{table.url}: more than 200 planning rounds")
