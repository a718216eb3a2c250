"""The Spark Python data source ``hudi_streaming``: stream and batch readers over a Hudi table.

A thin adapter: what each batch delivers is decided in ``driver`` (no Spark there); this module translates
between PySpark's types and it. Offsets are described in ``offsets``. ``read()`` runs on executors with only
the partition and this reader's constructor state, so both are small and picklable. The data source Spark looks
up, which makes these readers, is ``data_source``'s (light at import: PySpark imports it in workers that read
nothing).

This module is light at import too, for the same reason: PySpark's planner worker imports it to make a stream
reader and pickle it, and does nothing else with it (it was ~50 MiB of that worker's ~120 MiB RSS when this
module imported the planning and reading stack). So the stack is imported by the methods that use it, in the
processes that call them: the driver's (``driver``, offsets) in the source's runner, the readers' (``read``) in
the tasks' workers, which the worker daemon preloads anyway (``daemon``).
"""
from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.datasource import Filter as SparkFilter
from pyspark.sql.datasource import Not as SparkNot
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from .options import OnRewind, ReadMode, SourceOptions

if TYPE_CHECKING:  # imported where used (the module's docstring says why)
    from ..hoodie.commit_clock import CommitClock
    from ..hoodie.filters import Filter
    from ..hoodie.table import HudiTable
    from ..hoodie.timeline import CommitCheck
    from ..state.rewind_keys import KeyRecorder
    from .consumer import SplitRange
    from .driver import StreamDriver
    from .offsets import Offset

log = logging.getLogger(__name__)


@dataclass
class FileGroupPartition(InputPartition):
    """One task's ranges: those of one or more file groups, a group's all in this task in sequence order (keeps
    per-key order within one task), groups packed by size (``packing``); and what a task needs besides the
    files: the columns to read (see ``read_columns``) and, on v6, the commits."""

    ranges: list[SplitRange]
    columns: pa.Schema
    #: table v6: which instants are committed, as the driver saw the timeline (tasks then need no listing)
    commits: CommitCheck | None = None
    #: when the task's instants became visible (the rows' _commit_version and _commit_timestamp)
    clock: CommitClock | None = None


def _planned(partition: InputPartition) -> FileGroupPartition:
    """The partition Spark hands ``read()``: one that ``partitions()`` made (PySpark types it as the base class)."""
    if not isinstance(partition, FileGroupPartition):
        raise TypeError(f"hudi_streaming: read() got a {type(partition).__name__}, not a partition this source "
                        "planned")
    return partition


def _task_table(opts: SourceOptions, partition: FileGroupPartition) -> HudiTable:
    """The table as a task opens it: no timeline listing, the driver's view of the commits where v6 needs it."""
    from ..hoodie.table import HudiTable

    table = HudiTable(opts.path, opts.storage or None)
    if partition.commits is not None:
        table.pin_commits(partition.commits)
    return table


def _read_task(o: SourceOptions, partition: FileGroupPartition, target: pa.Schema,
               fail_on_data_loss: bool = True) -> Iterator[pa.RecordBatch]:
    """A task's record batches, as ``target`` (the query's schema), in the options' read mode, small ones joined
    up to ``miniBatchSize`` rows (``consumer.coalesced``); with ``onRewind=reconcile``, the keys of what it
    delivers recorded in the stream's state folder."""
    from ..state.rewind_keys import KeyLedger, KeyRecorder, identity_columns
    from .consumer import coalesced, consume

    table = _task_table(o, partition)
    # the state folder's store is opened only by a task that records keys or reads a reconcile's rows
    ledger = KeyLedger(o.state_location, o.storage or None) \
        if o.state_location and (o.on_rewind is OnRewind.RECONCILE or any(r.split.rows for r in partition.ranges)) \
        else None

    def read(ranges: list[SplitRange]) -> Iterator[pa.RecordBatch]:
        return consume(table, ranges, target, partition.columns, target, deletes=o.deletes,
                       changelog=o.read_mode is ReadMode.CHANGELOG, merge_type=o.merge_type,
                       mini_batch=o.mini_batch_size, fail_on_data_loss=fail_on_data_loss, clock=partition.clock,
                       carryovers=o.carryovers(), rows_of=ledger.read if ledger is not None else None)
    if ledger is None or o.on_rewind is not OnRewind.RECONCILE:
        return coalesced(read(partition.ranges), o.mini_batch_size)
    columns = identity_columns(target, table.config.record_key_fields, table.config.partition_fields)
    return coalesced(_recorded(read, partition.ranges, KeyRecorder(ledger, columns, repr(partition.ranges))),
                     o.mini_batch_size)


def _recorded(read: Callable[[list[SplitRange]], Iterator[pa.RecordBatch]], ranges: list[SplitRange],
              recorder: KeyRecorder) -> Iterator[pa.RecordBatch]:
    """``read``'s batches, range by range, the changes' keys recorded (a snapshot's rows, and a reconcile's
    deletes, are no instant's changes: not recorded), written before the task ends."""
    for r in ranges:
        changes = r.split.instants is not None and r.split.rows is None
        for batch in read([r]):
            if changes:
                recorder.add(batch, r.split.file_id)
            yield batch
    recorder.close()


class _Refusal(DataSourceStreamReader):
    """A stream reader that refuses to run, with the reason, at Spark's first call."""

    def __init__(self, error: Exception):
        self.error = error

    def initialOffset(self) -> dict:
        raise self.error

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        raise self.error

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        raise self.error

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        raise self.error


class HudiStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions, schema: StructType):
        # runs in the runner AND the planner process: cheap and picklable; driver state is built lazily
        self.opts = options
        self.spark_schema = schema
        self._driver: StreamDriver | None = None

    def __getstate__(self) -> dict:
        return {"opts": self.opts, "spark_schema": self.spark_schema, "_driver": None}

    # -- driver side -------------------------------------------------------------------------------------------
    @property
    def driver(self) -> StreamDriver:
        if self._driver is None:
            from .driver import StreamDriver

            self._driver = StreamDriver(self.opts, to_arrow_schema(self.spark_schema, timezone="UTC"))
        return self._driver

    # Spark hands offsets over as plain dicts: they become the driver's typed Offset here, and back
    def initialOffset(self) -> dict:
        from .offsets import make_offset

        return dict(make_offset(0, 0))

    def getDefaultReadLimit(self) -> ReadLimit:
        o = self.opts
        if o.max_rows_per_trigger:
            return ReadMaxRows(o.max_rows_per_trigger)
        if o.max_splits_per_trigger:
            return ReadMaxFiles(o.max_splits_per_trigger)
        if o.max_bytes_per_trigger:
            return ReadMaxBytes(o.max_bytes_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.driver.pin_target()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        from .admission import BatchLimit
        from .offsets import make_offset

        self.driver.install_sigterm()
        spark_limit = BatchLimit(max_rows=getattr(limit, "max_rows", None), max_files=getattr(limit, "max_files", None),
                                 max_bytes=getattr(limit, "max_bytes", None))
        return dict(self.driver.latest_offset(cast("Offset", start) or make_offset(0, 0), spark_limit))

    def reportLatestOffset(self) -> dict:
        return dict(self.driver.metrics())

    def partitions(self, start: dict, end: dict) -> list[FileGroupPartition]:
        return self.driver.partitions(cast("Offset", start), cast("Offset", end), FileGroupPartition)

    def commit(self, end: dict) -> None:
        self.driver.commit(cast("Offset", end))

    def stop(self) -> None:
        if self._driver is not None:
            log.info("hudi_streaming: stopped at %s", self._driver.state.cursor)

    # -- executor side -----------------------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        o = self.opts
        # the query's schema, fixed at its start: later added columns are left out, widened ones cast back
        yield from _read_task(o, _planned(partition), to_arrow_schema(self.spark_schema, timezone="UTC"),
                              o.fail_on_data_loss)


class HudiBatchReader(DataSourceReader):
    """``spark.read.format("hudi_streaming")``: a snapshot, or the change feed of a range (``startingInstant``/
    ``endingInstant``) in the stream's read mode, with its deletes options (see ``plan_batch_read``)."""

    def __init__(self, options: SourceOptions, schema: StructType):
        self.opts = options
        self.spark_schema = schema
        #: the tasks ``pushFilters`` planned (it needs the partitions they read), for ``partitions()``
        self._planned: list[FileGroupPartition] | None = None

    def __getstate__(self) -> dict:
        # PySpark pickles the reader for every task before it calls partitions(): the plan stays behind
        return {**self.__dict__, "_planned": None}

    def _plan(self, filters: Filter | None = None) -> list[FileGroupPartition]:
        from .batch_read import plan_batch_read

        return plan_batch_read(self.opts, to_arrow_schema(self.spark_schema, timezone="UTC"), FileGroupPartition,
                               filters)

    def partitions(self) -> list[FileGroupPartition]:
        return self._planned if self._planned is not None else self._plan()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from _read_task(self.opts, _planned(partition), to_arrow_schema(self.spark_schema, timezone="UTC"))


class HudiFilteringBatchReader(HudiBatchReader):
    """The batch reader with Spark's filter pushdown (PySpark 4.1+, ``spark.sql.python.filterPushdown.enabled``):
    partitions that cannot hold a matching row are not planned (``hoodie.filters``), nor file slices that the
    metadata table's record index or statistics rule out (``hoodie.metadata_stats``).

    A class of its own because PySpark refuses every read of a reader that implements ``pushFilters`` while the
    setting is off (``DATA_SOURCE_PUSHDOWN_DISABLED``), and the data source cannot see the setting: Spark asks
    for the filters in a planner worker of its own, so :func:`batch_reader` makes this reader only there."""

    def pushFilters(self, filters: list[SparkFilter]) -> Iterator[SparkFilter]:
        """Every filter Spark pushes (their AND) that the model reads prunes partitions; a filter is handed back
        to Spark unless the partitions kept decide it, every row of each one matching (only partitions then
        decide anything: file statistics would not)."""
        from ..hoodie.filters import And, PartitionPruner
        from ..hoodie.table import HudiTable

        output = to_arrow_schema(self.spark_schema, timezone="UTC")
        names = {n.lower(): n for n in output.names}
        models = [spark_filter(f, names) for f in filters]
        usable = [m for m in models if m is not None]
        self._planned = self._plan(And(tuple(usable)) if usable else None)
        if not usable:
            yield from filters
            return
        table = HudiTable(self.opts.path, self.opts.storage or None, metadata_enable=self.opts.metadata_enable)
        kept = {r.split.partition for task in self._planned for r in task.ranges}
        for f, model in zip(filters, models):
            if model is None or not all(o == {True} for o in map(PartitionPruner(table, model, output).outcomes,
                                                                   kept)):
                yield f


_SPARK_OPS = {"EqualTo": "=", "EqualNullSafe": "<=>", "GreaterThan": ">", "GreaterThanOrEqual": ">=",
              "LessThan": "<", "LessThanOrEqual": "<=", "In": "in", "IsNull": "is_null", "IsNotNull": "not_null",
              "StringStartsWith": "starts_with", "StringEndsWith": "ends_with", "StringContains": "contains"}


def spark_filter(f: SparkFilter, names: dict[str, str]) -> Filter | None:
    """One of Spark's pushed filters in the model (None: not one it reads, e.g. on a nested field). ``names``:
    the output's column names by lower case (Spark resolves names case-insensitively by default)."""
    from ..hoodie.filters import Compare, negate

    if isinstance(f, SparkNot):
        inner = spark_filter(f.child, names)
        return None if inner is None else negate(inner)
    op = _SPARK_OPS.get(type(f).__name__)
    attribute: tuple[str, ...] = getattr(f, "attribute", ())
    if op is None or len(attribute) != 1 or attribute[0].lower() not in names:
        return None
    value: Any = getattr(f, "value", None)
    return Compare(names[attribute[0].lower()], op, tuple(value) if op == "in" else value)


def _in_pushdown_planner() -> bool:
    """Whether this call comes from PySpark's filter pushdown worker (see :class:`HudiFilteringBatchReader`)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(_PUSHDOWN_WORKER):
            return True
        frame = frame.f_back
    return False


_PUSHDOWN_WORKER = "/".join(("pyspark", "sql", "worker", "data_source_pushdown_filters.py"))


def batch_reader(options: SourceOptions, schema: StructType) -> HudiBatchReader:
    """The batch reader for Spark: one that takes pushed filters where Spark asks for them."""
    return (HudiFilteringBatchReader if _in_pushdown_planner() else HudiBatchReader)(options, schema)
