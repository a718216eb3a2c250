"""The driver side of the source without Spark: which splits each micro-batch (or batch read) delivers.

It is its own module, apart from the Spark adapter ``source.py``, so that the stream's logic — the start
position, polling the timeline, the offset arithmetic that admits a batch, grouping a batch into tasks, commits,
metrics — is one idea that tests can drive without a Spark session. It imports nothing from PySpark:
``source.py`` turns Spark's ``ReadLimit`` into a :class:`BatchLimit` and wraps each task's input in its
``InputPartition``.

Offsets are ``{"rec": r, "seq": s, "sid": id, "v": 3}``: every split with a lower sequence number is
delivered, and split ``s`` up to record ``r``. ``v`` names the order of a split's rows that ``r`` counts in (3:
per piece of ``hoodie.slice_reader.PIECE_ROWS`` base rows, the untouched rows, then the updated ones; then
log-only inserts. 2 was the same with the whole base file as one piece); an offset inside a split in another
order is refused, never misread. ``sid`` names the stream whose state planned the splits. The split queue
itself lives in the state files (``state/``), written before ``latest_offset`` returns an offset that refers to
it, because after a crash Spark calls ``partitions(start, end)`` for the uncommitted batch in a new process
before anything else.

Every offset Spark hands back is checked against the state before it is used (:meth:`StreamDriver._explain`): a
state folder that is empty, another stream's, or older or newer than Spark's checkpoint is refused with what to
do, never silently re-planned (which would apply Spark's old offset to new splits: changes lost and doubled).
"""
from __future__ import annotations

import datetime
import json
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypedDict, TypeVar, cast

import pyarrow as pa

from .._faults import fault_point
from ..errors import DataLossError, OptionError, StateError
from ..hoodie.changes import CommitClock, Deletes, commit_clock, output_schema, read_columns
from ..hoodie.filters import Filter
from ..hoodie.read import plan_slices
from ..hoodie.storage import storage_retries
from ..hoodie.table import HudiTable
from ..hoodie.timeline import CommitCheck
from ..monitor.feed import ChangeFeed
from ..monitor.monitor import Cursor, MonitorOptions, Plan, StreamMonitor
from ..monitor.rewinds import RewindCheck
from ..monitor.split import Split
from ..state import PlannedSplit, StateStore, StreamState
from .consumer import SplitRange
from .options import ReadMode, SourceOptions
from .packing import pack_ranges

log = logging.getLogger(__name__)

#: the row order within a split that record offsets count in (see the module docstring)
OFFSET_VERSION = 3

#: rounds of one instant each that a changelog stream plans per poll (see ``StreamDriver._rounds_per_poll``)
CHANGELOG_ROUNDS_PER_POLL = 32

#: what the caller makes of one task's input: its ranges, the columns to read, and (v6) the commits
Task = TypeVar("Task")
TaskFactory = Callable[[list[SplitRange], pa.Schema, CommitCheck | None, CommitClock], Task]


class Offset(TypedDict, total=False):
    """Spark's offset of this source (see the module docstring); ``sid`` is absent only from the initial one."""

    v: int
    seq: int
    rec: int
    sid: str


class BatchSummary(TypedDict):
    """What an admitted batch holds (see :func:`admit`): the source's ``lastBatch`` metric."""

    splits: int
    rowsEstimate: int
    bytesEstimate: int
    instants: int


class SourceMetrics(TypedDict):
    """The source's progress report (:meth:`StreamDriver.metrics`), as ``query.lastProgress`` shows it."""

    cursor: str | None
    latestInstant: str | None
    lagInstants: int
    lagSeconds: float | None
    pendingSplits: int
    pendingRowsEstimate: int
    pendingBytesEstimate: int
    lastBatch: BatchSummary | dict
    lateInstants: int
    cleanRetainsFrom: str | None
    retentionHeadroomInstants: int | None
    blockedByPendingInstant: str | None
    #: the driver process's retried object-store requests (botocore's and the storage layer's), since it started
    storageRetries: int


_Json = TypeVar("_Json", Offset, SourceMetrics)


def canonical(value: _Json) -> _Json:
    """Spark compares offsets as JSON strings: equal offsets must serialise identically (and a report reads the
    same every time)."""
    return cast(_Json, json.loads(json.dumps(value, sort_keys=True)))


def make_offset(seq: int, rec: int, sid: str | None = None) -> Offset:
    """An offset; ``sid`` (the stream's identity) is left out only of the initial offset, which no state owns."""
    offset = Offset(v=OFFSET_VERSION, seq=seq, rec=rec)
    if sid:
        offset["sid"] = sid
    return canonical(offset)


def position(offset: Offset, location: str) -> tuple[int, int]:
    """(split sequence, record) of an offset; one that points inside a split in another row order is refused."""
    seq, rec = int(offset["seq"]), int(offset["rec"])
    if rec and int(offset.get("v", 1)) != OFFSET_VERSION:
        raise StateError(f"{location}: the checkpoint's offset {offset} points inside a split whose rows an "
                         f"earlier version of hudi_streaming ordered differently (offset version "
                         f"{offset.get('v', 1)}, now {OFFSET_VERSION}); finish the batch with that version first")
    return seq, rec


def source_schema(opts: SourceOptions) -> pa.Schema:
    """The rows the source delivers for these options: the table's columns (projected), meta columns, change type.

    Spark asks for it when the query is defined (``load()``), so the options that name the table's columns and
    partition fields are checked against the table here: a wrong name fails there, listing the right ones,
    instead of streaming rows without the columns or no rows at all.
    """
    table = HudiTable(opts.path, opts.storage or None, metadata_enable=opts.metadata_enable)
    schema = table.arrow_schema()
    data = [n for n in schema.names if not n.startswith("_hoodie_")]
    for option, names in (("columns", opts.columns), ("carryoverIgnoreColumns", opts.carryover_ignore_columns)):
        unknown = [c for c in names or [] if c not in schema.names]
        if unknown:
            raise OptionError(f"option {option}: {table.url} has no column {', '.join(unknown)}; its columns: "
                              f"{', '.join(data)}")
    fields = table.config.partition_fields
    unknown = [f for f in opts.partition_filter() or {} if f not in fields]
    if unknown:
        raise OptionError(f"option partitions: {', '.join(unknown)} is not a partition field of {table.url}; its "
                          f"partition fields: {', '.join(fields) or 'none (the table is not partitioned)'}")
    return output_schema(schema, opts.columns)


def _task_inputs(table: HudiTable, output: pa.Schema) -> tuple[pa.Schema, CommitCheck | None]:
    """What every task needs besides its files: the columns to read and, on v6, which instants are committed
    (as the driver saw the timeline, so tasks need no listing)."""
    columns = read_columns(table, output)
    return columns, table.timeline.commit_check() if table.config.version < 8 else None


def batch_clock(table: HudiTable, splits: Iterable[Split], zone: str) -> CommitClock:
    """When the instants a batch delivers became visible (its rows' ``_commit_version`` and ``_commit_timestamp``),
    from the driver's timeline, once per batch and handed to every task: tasks read no timeline."""
    return commit_clock(table, (s.slice_range() for s in splits), zone)


def _min(a: int | None, b: int | None) -> int | None:
    vals = [v for v in (a, b) if v]
    return min(vals) if vals else None


@dataclass(frozen=True)
class BatchLimit:
    """The bounds of one micro-batch as plain numbers (None: unbounded).

    ``max_rows``: the batch delivers at most this many rows (each split's ``est_rows`` is an upper bound of
    the rows it yields in the stream's read mode, and the last split is cut at an exact record offset).
    ``max_bytes``: the files the batch's splits read (each split's ``est_bytes``: its file slice and, for a
    rewritten base file, the slice before it; a split resumed or cut inside counts in full, as it is read in
    full) total at most this many bytes, unless one split alone is larger: then the batch is that split.
    ``max_files``: splits; ``max_instants``: instants of whole planning rounds.
    """

    max_rows: int | None = None
    max_files: int | None = None
    max_bytes: int | None = None
    max_instants: int | None = None

    def within(self, opts: SourceOptions) -> BatchLimit:
        """The tighter of this limit (Spark's, for one trigger) and the query's ``max*PerTrigger`` options."""
        return BatchLimit(_min(opts.max_rows_per_trigger, self.max_rows),
                          _min(opts.max_splits_per_trigger, self.max_files),
                          _min(opts.max_bytes_per_trigger, self.max_bytes),
                          _min(opts.max_instants_per_trigger, self.max_instants))


def admit(pending: list[PlannedSplit], seq: int, rec: int, limit: BatchLimit
          ) -> tuple[tuple[int, int], BatchSummary]:
    """The end (split, record) of the batch that starts at (``seq``, ``rec``), and what it holds.

    Whole splits are taken while every limit allows. A split whose remaining rows (its row bound minus the
    records already delivered) do not fit the row budget ends the batch inside it, at record ``skip + budget``:
    the reader yields at most that range, so a batch never delivers more than ``max_rows`` rows — as long as
    the splits' ``est_rows`` bound their rows, which the planner makes them do (``monitor.row_bounds.row_bound``). Where
    a bound exceeds the rows a split really yields, a cut may lie past its end: that batch delivers fewer rows
    and the next one starts past the end, reads nothing more of the split, and goes on with the next (its
    remaining bound is ``est_rows - rec``, and a split with nothing left is taken whole, reading no rows). So
    every batch moves the offset forward and no split is skipped.

    A batch always takes something — one split, or one record of it — so the stream makes progress whatever
    the limit; only then may it exceed ``max_bytes`` (one split larger than the budget) or ``max_files``/
    ``max_instants`` (one planning round). An instant counts once per planning round.

    The dict (``lastBatch`` of the metrics): ``splits`` read, ``rowsEstimate`` (the most rows the batch can
    deliver: its splits' bounds, the cut one up to its cut), ``bytesEstimate`` (the exact bytes of the files
    its splits read), ``instants``.
    """
    rows = files = nbytes = instants = 0
    rounds: set[int] = set()
    end_seq, end_rec = seq, rec
    for p in pending:
        skip = rec if p.seq == seq else 0
        left = max(p.split.est_rows - skip, 0)
        new_round = p.round not in rounds
        taken_any = (end_seq, end_rec) != (seq, rec)
        if taken_any and ((limit.max_files and files + 1 > limit.max_files)
                          or (limit.max_bytes and nbytes + p.split.est_bytes > limit.max_bytes)
                          or (limit.max_instants and new_round
                              and instants + p.instants_in_round > limit.max_instants)):
            break
        cut = bool(limit.max_rows) and rows + left > (limit.max_rows or 0)
        if cut:
            budget = (limit.max_rows or 0) - rows
            if budget <= 0:  # used up exactly by the splits before (a first split always has a budget)
                break
            left, end_seq, end_rec = budget, p.seq, skip + budget
        else:
            end_seq, end_rec = p.seq + 1, 0
        rows += left
        files += 1
        nbytes += p.split.est_bytes  # read in full, however few of its rows the batch takes
        if new_round:
            rounds.add(p.round)
            instants += p.instants_in_round
        if cut:
            break
    return (end_seq, end_rec), BatchSummary(splits=files, rowsEstimate=rows, bytesEstimate=nbytes, instants=instants)


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
    columns, commits = _task_inputs(table, output)
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


class StreamDriver:
    """The runner-process side of the stream: monitor, state store, and the offset arithmetic.

    Separate from Spark's ``DataSourceStreamReader`` (``source.py``, which only translates types) so that the
    stream's one idea — which splits each batch delivers, exactly once — is tested and read without Spark.
    """

    def __init__(self, opts: SourceOptions, reference_schema: pa.Schema):
        if not opts.state_location:  # HudiStreamingDataSource.streamReader refuses this first, with a hint
            raise OptionError("hudi_streaming: option stateLocation is required for streaming reads")
        self.opts = opts
        #: the source's own state folder (option stateLocation)
        self.location: str = opts.state_location
        #: the query's output schema, fixed when it started
        self.output = reference_schema
        self.table = HudiTable(opts.path, opts.storage or None, metadata_enable=opts.metadata_enable)
        self.store = StateStore(self.location, opts.storage or None)
        #: the instant the user started the stream at: late instants completed before it are not delivered
        #: startingInstant and endingInstant as this table's instant times (timestamps read in its timeline zone)
        #: the zone the table's instant times are read in (option timelineTimeZone, or the table's own)
        self.zone = opts.timeline_zone(self.table.config)
        self.start, end = opts.positions(self.zone)
        self.floor = None if self.start in ("earliest", "latest") else self.start
        rules = opts.row_rules()
        self.state: StreamState = (self.store.load(self.table.url, self.table.config.name, rules)
                                   or StreamState(table_url=self.table.url, table_name=self.table.config.name,
                                                  rules=rules))
        self.monitor = StreamMonitor(self.table, MonitorOptions(
            skip_compaction=opts.skip_compaction, skip_clustering=opts.skip_clustering,
            skip_insert_overwrite=opts.skip_insert_overwrite, ending_instant=end,
            partition_filter=opts.partition_filter(), replaced_as_deletes=opts.deletes is not Deletes.IGNORE,
            reference_schema=reference_schema, allow_schema_changes=opts.allow_schema_changes,
            projected=opts.columns is not None, changelog=opts.read_mode is ReadMode.CHANGELOG))
        #: restores and rollbacks that undid instants the stream delivered (checked before each planning)
        self.rewinds = RewindCheck(self.table)
        self.target: Cursor | None = None
        self.available_now = False
        self._last_poll = 0.0
        self._caught_up = False
        #: what the last admitted batch holds (see :func:`admit`), for the progress metrics
        self.last_batch: BatchSummary | dict = {}
        self._sig = False
        self.blocked_by: str | None = None

    def install_sigterm(self) -> None:
        """Spark ends the runner with SIGTERM; raising SystemExit lets ``stop()`` run (see the PySpark spec)."""
        if not self._sig:
            self._sig = True
            signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(SystemExit(0)))

    # -- planning ----------------------------------------------------------------------------------------------
    def pin_target(self) -> None:
        self.available_now = True
        self.table.reload()
        self.target = self.monitor.latest_cursor()

    def _append(self, splits: Iterable[Split], n_instants: int) -> None:
        st = self.state
        rnd = st.next_round
        for s in splits:
            st.splits.append(PlannedSplit(seq=st.next_seq, round=rnd, instants_in_round=n_instants, split=s))
            st.next_seq += 1
        st.next_round += 1

    def _start(self) -> None:
        st = self.state
        if self.start == "earliest":
            plan = self.monitor.plan_snapshot()
            self._append(plan.splits, len(plan.instants))
            st.cursor = plan.cursor
        elif self.start == "latest":
            st.cursor = self.monitor.latest_cursor()
        else:
            st.cursor = self.monitor.cursor_at(self.start)
        st.known = self.monitor.accounted(st.cursor) if self.monitor.v8 else None
        st.started = True
        self.store.save(st)

    #: the timeline folder's local path ("" when the table is not on a local file system), found at the first poll
    _timeline_folder: str | None = None
    #: (its modification time in ns, the wall time it was read) just before the last listing; None: not local
    _timeline_seen: tuple[int, float] | None = None

    def _poll(self) -> bool:
        """Plan the next round(s) of instants; True when the state changed.

        A stream that is behind plans its next round at once. One that has caught up lists the timeline again
        when ``pollIntervalSeconds`` have passed or, on a local file system, as soon as the timeline folder's
        modification time moves (creating or renaming an instant file sets it): one ``stat`` per call — Spark
        asks for the latest offset every ~10 ms when idle — so a new instant is planned at the next trigger. The
        interval remains the bound wherever the folder's time tells nothing (object stores have no folders).
        """
        now = time.monotonic()
        if self._caught_up and not self.available_now and now - self._last_poll < self.opts.poll_interval_seconds \
                and not self._timeline_moved():
            return False
        self._last_poll = now
        self._timeline_seen = self._timeline_stat()  # before listing: a change during the listing shows next time
        self.table.reload()
        st, changed, rounds = self.state, False, 0
        for i in range(1000):  # skipped instants advance the cursor without splits; keep going to real ones
            if self.target is not None and st.cursor is not None and \
                    self.monitor.cursor_key(st.cursor) >= self.monitor.cursor_key(self.target):
                break
            if self.available_now and self.target is None:
                break
            try:
                if i == 0:  # once a poll, before planning moves past what a restore undid
                    self.rewinds.check(st.cursor, self._known())
                plan = self.monitor.plan_next(st.cursor, self._round_size(), known=self._known(), floor=self.floor)
            except DataLossError as e:
                if self.opts.fail_on_data_loss:
                    raise
                plan = self._recover(e)
            self.blocked_by = plan.blocked_by
            self._caught_up = not plan.instants
            if self._caught_up:
                break
            if not plan.snapshot:  # a recovery's snapshot may sit behind the cursor (a restore): not late
                self._check_late(plan)
            self._append(plan.splits, len(plan.instants))
            st.cursor = plan.cursor
            self._remember(plan)
            changed = True
            rounds += bool(plan.splits)
            if rounds >= self._rounds_per_poll():
                break
        if changed:
            fault_point("driver.poll")
            self.store.save(st)
        return changed

    def _timeline_stat(self) -> tuple[int, float] | None:
        """(modification time in ns, now) of the timeline folder on a local file system; None elsewhere."""
        if self._timeline_folder is None:
            storage, protocol = self.table.storage, self.table.storage.fs.protocol
            local = {"file", "local"} & ({protocol} if isinstance(protocol, str) else set(protocol))
            self._timeline_folder = storage.full(self.table.config.timeline_dir) if local else ""
        if not self._timeline_folder:
            return None
        try:
            return os.stat(self._timeline_folder).st_mtime_ns, time.time()
        except OSError:
            return None

    def _timeline_moved(self) -> bool:
        """Whether the local timeline folder changed since the last listing (False where that is unknown).

        File times come from a coarse clock (a timer tick; a whole second on some file systems), so a change in
        the same tick as the time the last listing saw leaves it unchanged: a folder time read less than a second
        after it was set is trusted only after one more listing, a second later.
        """
        seen = self._timeline_seen
        current = self._timeline_stat() if seen is not None else None
        if seen is None or current is None:
            return False
        fresh = seen[1] - seen[0] / 1e9 < 1.0
        return current[0] != seen[0] or (fresh and current[1] - current[0] / 1e9 >= 1.0)

    def _known(self) -> dict[str, str] | None:
        """The instants the stream has accounted for (v8/v9); a state from before they were tracked starts from
        everything completed up to its cursor."""
        st = self.state
        if self.monitor.v8 and st.known is None and st.started:
            st.known = self.monitor.accounted(st.cursor)
        return st.known

    def _remember(self, plan: Plan) -> None:
        """Account for a planned round; forget instants archived since (no longer in the active timeline, they
        cannot turn up late any more), which keeps the state as small as the active timeline."""
        st = self.state
        if st.known is None:
            return
        if plan.snapshot:  # failOnDataLoss=false restarted from a snapshot: it covers everything up to its cursor
            st.known = self.monitor.accounted(plan.cursor)
            return
        st.known.update({e.requested_time: e.completion_time or "" for e in plan.instants})
        active = {e.requested_time for e in self.table.timeline.completed_writes()}
        st.known = {r: c for r, c in st.known.items() if r in active}

    def _check_late(self, plan: Plan) -> None:
        """Count and report the round's late instants; one later than ``lateInstantWindowSeconds`` is a data-loss
        event: a sink may already have moved past the time its changes belong to."""
        st, cursor = self.state, self.state.cursor
        if cursor is None or not self.monitor.v8:
            return
        late = [e for e in plan.instants if self.monitor.cursor_key(self.monitor.cursor_of(e))
                <= self.monitor.cursor_key(cursor)]
        for e in late:
            st.late_instants += 1
            behind = _seconds_between(self.monitor.cursor_of(e), cursor) or 0.0
            what = (f"{self.table.url}: instant {e.requested_time} completed at {e.completion_time}, {behind:.3f} s "
                    f"before the stream's cursor {cursor.completion}, and became visible only now (late)")
            if behind > self.opts.late_instant_window_seconds:
                if self.opts.fail_on_data_loss:
                    raise DataLossError(f"{what}: later than lateInstantWindowSeconds="
                                        f"{self.opts.late_instant_window_seconds}; the sink may have moved past it. "
                                        "Deliver it anyway with failOnDataLoss=false, or widen the window")
                log.error("hudi_streaming: %s; delivering it (failOnDataLoss=false)", what)
            else:
                log.warning("hudi_streaming: %s; delivering it in the next batch", what)

    def _recover(self, error: DataLossError) -> Plan:
        """failOnDataLoss=false: log the lost range and continue from a snapshot of the table as it is now."""
        plan = self.monitor.plan_snapshot()
        log.error("hudi_streaming: DATA LOSS, continuing from a snapshot at %s: %s",
                  plan.cursor.requested if plan.cursor else None, error)
        return plan

    def _rounds_per_poll(self) -> int:
        """Rounds with splits planned per poll. Changelog mode plans one instant per round (each change its own
        version), so it plans many rounds at once: a stream that is behind — after a restart, say — then
        catches up in a few batches instead of one batch per instant while the cleaner closes in."""
        return CHANGELOG_ROUNDS_PER_POLL if self.opts.read_mode is ReadMode.CHANGELOG else 1

    def _round_size(self) -> int | None:
        if self.opts.read_mode is ReadMode.CHANGELOG:
            return 1  # one instant per round: each change is delivered as its own version
        return self.opts.max_instants_per_trigger

    # -- offsets -----------------------------------------------------------------------------------------------
    def _explain(self, offset: Offset) -> tuple[int, int]:
        """The position of an offset Spark hands back, once the state is shown to have served it.

        Refused (one line naming the state folder, the offset and what to do): an empty state folder with a
        checkpoint past its start (deleted, moved, mistyped), another stream's state, or a state older or newer
        than Spark's checkpoint (another query's, or a checkpoint restored from an older copy). Never a silent
        restart.
        """
        st = self.state
        seq, rec = position(offset, self.location)
        sid = offset.get("sid")
        problem = None
        if self.store.version < 0 and ((seq, rec) != (0, 0) or sid is not None):
            problem = "holds no state, but Spark's checkpoint is past the start of a stream"
        elif sid is not None and sid != st.stream_id:
            problem = f"holds stream {st.stream_id}, but Spark's checkpoint is a position in stream {sid}"
        elif seq < st.committed_seq:
            problem = (f"has delivered every split below {st.committed_seq}, but Spark's checkpoint is at split {seq} "
                       "(the state is newer than the checkpoint)")
        elif seq > st.next_seq or (seq == st.next_seq and rec > 0):
            problem = (f"has planned splits below {st.next_seq} only, but Spark's checkpoint is at split {seq} "
                       "(the state is older than the checkpoint)")
        if problem:
            raise StateError(f"stateLocation {self.location} {problem} (offset {json.dumps(offset, sort_keys=True)}): "
                             "the state folder does not belong to this checkpoint. Restore the stream's own state "
                             "folder, or start a new stream: a new checkpointLocation and a new stateLocation")
        return seq, rec

    def latest_offset(self, start: Offset, limit: BatchLimit) -> Offset:
        seq, rec = self._explain(start)
        if not self.state.started:
            self._start()
        if not self.state.pending_from(seq) or (seq == self.state.next_seq):
            self._poll()
        pending = self.state.pending_from(seq)
        if pending and self._too_few(pending, rec) and self._poll():  # held back: look for more rows meanwhile
            pending = self.state.pending_from(seq)
        if not pending or self._holds_back(pending, rec):
            return make_offset(seq, rec, start.get("sid"))
        (end_seq, end_rec), self.last_batch = admit(pending, seq, rec, limit.within(self.opts))
        b = self.last_batch
        log.info("hudi_streaming: batch of %d splits (at most %d rows, %d file bytes, %d instants) up to split %d "
                 "record %d; %d splits left after it", b["splits"], b["rowsEstimate"], b["bytesEstimate"],
                 b["instants"], end_seq, end_rec, sum(1 for p in pending if p.seq >= end_seq))
        return make_offset(end_seq, end_rec, self.state.stream_id)

    #: when the last batch was admitted (monotonic; the stream's first call when none was yet)
    _last_batch_at: float | None = None

    def _holds_back(self, pending: list[PlannedSplit], rec: int) -> bool:
        """``minRowsPerTrigger``: no batch yet while fewer rows are pending — by the splits' row bounds, which
        are upper bounds, so a batch may still deliver fewer — unless ``maxTriggerDelay`` has passed since the
        last batch. An AvailableNow query is never held back: it ends when it has caught up."""
        now = time.monotonic()
        if self._last_batch_at is None:
            self._last_batch_at = now
        if self._too_few(pending, rec) and now - self._last_batch_at < self.opts.max_trigger_delay_seconds:
            return True
        self._last_batch_at = now
        return False

    def _too_few(self, pending: list[PlannedSplit], rec: int) -> bool:
        """Fewer rows pending than ``minRowsPerTrigger`` asks for (never in an AvailableNow query)."""
        least = self.opts.min_rows_per_trigger
        return least is not None and not self.available_now and sum(p.split.est_rows for p in pending) - rec < least

    def partitions(self, start: Offset, end: Offset, make: TaskFactory) -> list[Task]:
        """The batch ``start``..``end`` as tasks made by ``make``: all ranges of one file group in one task, in
        sequence order (keeps per-key order within one task), file groups packed into tasks by size
        (``packing``)."""
        (s_seq, s_rec), (e_seq, e_rec) = self._explain(start), self._explain(end)
        if (s_seq, s_rec) == (e_seq, e_rec):
            return []
        by_seq = {p.seq: p for p in self.state.splits}
        last = e_seq if e_rec > 0 else e_seq - 1
        groups: dict[tuple[str, str], list[SplitRange]] = {}
        for seq in range(s_seq, last + 1):
            p = by_seq.get(seq)
            if p is None:
                raise StateError(f"{self.location}: split {seq} of batch {start}..{end} is not in the "
                                 "state; the state folder does not belong to this checkpoint")
            skip = s_rec if seq == s_seq else 0
            stop = e_rec if seq == e_seq else None
            groups.setdefault(p.split.group, []).append(SplitRange(p.split, skip, stop))
        columns, commits = _task_inputs(self.table, self.output)
        clock = batch_clock(self.table, (r.split for rs in groups.values() for r in rs), self.zone)
        return [make(r, columns, commits, clock) for r in pack_ranges([r for _, r in sorted(groups.items())],
                                                                      self.opts.packing())]

    def commit(self, end: Offset) -> None:
        e_seq = int(end["seq"])
        st = self.state
        if e_seq > st.committed_seq:
            st.splits = [p for p in st.splits if p.seq >= e_seq]
            st.committed_seq = e_seq
            self.store.save(st)

    def metrics(self) -> SourceMetrics:
        """Progress a user reads in ``query.lastProgress`` (Spark shows it as the source's latestOffset).

        Row "estimates" are upper bounds (the splits' ``est_rows``), byte ones the exact sizes of the files the
        splits read; ``lastBatch`` is described at :func:`admit`.
        """
        st = self.state
        pending = st.pending_from(st.committed_seq)
        behind, _ = self.monitor.completed_after(st.cursor, known=st.known, floor=self.floor)
        latest = self.monitor.cursor_of(behind[-1]) if behind else st.cursor
        retains_from, headroom = self._retention(pending, behind)
        report = SourceMetrics(cursor=st.cursor.requested if st.cursor else None,
                               latestInstant=latest.requested if latest else None,
                               lagInstants=len(behind),
                               lagSeconds=_seconds_between(st.cursor, latest),
                               pendingSplits=len(pending),
                               pendingRowsEstimate=sum(p.split.est_rows for p in pending),
                               pendingBytesEstimate=sum(p.split.est_bytes for p in pending),
                               lastBatch=self.last_batch,
                               lateInstants=st.late_instants,
                               cleanRetainsFrom=retains_from, retentionHeadroomInstants=headroom,
                               blockedByPendingInstant=self.blocked_by, storageRetries=storage_retries())
        return canonical(report)

    def _retention(self, pending: list[PlannedSplit], unplanned: list) -> tuple[str | None, int | None]:
        """How close the cleaner is to files this stream still needs (Hudi has no reader lease to hold it off).

        (``cleanRetainsFrom``, ``retentionHeadroomInstants``): the newest clean's earliest retained instant, and
        writes the newest clean retained minus writes since the oldest instant
        the stream still reads (a pending split's, or the first completed one not yet planned) — at 0 or
        below, the next clean of the same policy may remove them, and a warning is logged while the data is
        still there. A stream that has caught up needs only the newest slices, which every clean keeps.
        """
        retention = self.table.timeline.clean_retention()
        if retention is None:
            return None, None
        retains_from, kept = retention
        needed = [min(p.split.instants or [p.split.max_instant]) for p in pending]
        needed += [e.requested_time for e in unplanned]
        if not needed:
            return retains_from, kept
        oldest = min(needed)
        since = sum(1 for e in self.table.timeline.completed_writes() if e.requested_time >= oldest)
        headroom = kept - since
        if headroom <= 0:
            log.warning("hudi_streaming: %s: the cleaner keeps the last %d writes (from %s); this stream still reads "
                        "from %s, %d writes back: the next clean may remove files it needs", self.table.url, kept,
                        retains_from, oldest, since)
        return retains_from, headroom


def _seconds_between(a: Cursor | None, b: Cursor | None) -> float | None:
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
