"""What every task of a batch is given besides its ranges, the same for a stream's micro-batch and a batch read:
the columns to read, (v6) which instants are committed, and when the batch's instants became visible.

The driver computes them once per batch from its own view of the timeline and hands them to every task, so a
task reads no timeline; the caller's ``make`` (``source.py``'s, or a test's) wraps them into its task type.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import pyarrow as pa

from ..hoodie.commit_clock import CommitClock, commit_clock
from ..hoodie.feed_schema import read_columns
from ..hoodie.split import Split
from ..hoodie.table import HudiTable
from ..hoodie.timeline import CommitCheck
from .consumer import SplitRange

#: what the caller makes of one task's input: its ranges, the columns to read, and (v6) the commits
Task = TypeVar("Task")
TaskFactory = Callable[[list[SplitRange], pa.Schema, CommitCheck | None, CommitClock], Task]


def task_inputs(table: HudiTable, output: pa.Schema) -> tuple[pa.Schema, CommitCheck | None]:
    """What every task needs besides its files: the columns to read and, on v6, which instants are committed
    (as the driver saw the timeline, so tasks need no listing)."""
    columns = read_columns(table, output)
    return columns, table.timeline.commit_check() if table.config.version < 8 else None


def batch_clock(table: HudiTable, splits: Iterable[Split], zone: str) -> CommitClock:
    """When the instants a batch delivers became visible (its rows' ``_commit_version`` and ``_commit_timestamp``),
    from the driver's timeline, once per batch and handed to every task: tasks read no timeline."""
    return commit_clock(table, (i for s in splits for i in s.delivered_instants), zone)
