"""The driver side of the stream without Spark: its lifecycle, from the start position through polling the
timeline to the batches it admits, delivers and commits.

It is its own module, apart from the Spark adapter ``source.py``, so that the stream's logic — the start
position, polling the timeline, late instants and data loss, which splits each micro-batch delivers, commits —
is one idea that tests can drive without a Spark session. It imports nothing from PySpark. The ideas it uses
each live in a module of their own: the offsets Spark checkpoints and their check against the state
(``offsets``), how much one batch takes (``admission``), what every task is given (``tasks``), the progress
report (``metrics``); a batch read (``batch_read``) and the source's schema (``schema``) need no driver.
"""
from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import replace

import pyarrow as pa

from .._faults import fault_point
from ..errors import DataLossError, OptionError, StateError
from ..hoodie.deletes import Deletes
from ..hoodie.split import Split
from ..hoodie.table import HudiTable
from ..monitor.monitor import Cursor, MonitorOptions, Plan, StreamMonitor
from ..monitor.rewinds import Rewind, RewindCheck
from ..monitor.row_bounds import FILE_READERS, slices_rows
from ..state import PlannedSplit, StateStore, StreamState
from ..state.rewind_keys import KeyLedger
from .admission import BatchLimit, BatchSummary, admit, too_few, unbounded_ahead
from .consumer import SplitRange
from .metrics import SourceMetrics, seconds_between, source_metrics
from .offsets import Offset, make_offset, served
from .options import OnRewind, ReadMode, SourceOptions
from .packing import pack_ranges
from .reconcile import reconcile_plan
from .tasks import Task, TaskFactory, batch_clock, task_inputs

log = logging.getLogger(__name__)

#: rounds of one instant each that a changelog stream plans per poll (see ``StreamDriver._rounds_per_poll``)
CHANGELOG_ROUNDS_PER_POLL = 32


class StreamDriver:
    """The runner-process side of the stream: its lifecycle — start, polling the timeline (late instants,
    rewinds, data-loss recovery), offsets handed to Spark and the batches they stand for, commits.

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
        #: onRewind=reconcile: the keys the stream's tasks record (``state.rewind_keys``)
        self.keys = KeyLedger(self.location, opts.storage or None) \
            if opts.on_rewind is OnRewind.RECONCILE else None
        if self.keys is not None and not self.table.config.populate_meta_fields:
            raise OptionError(f"{self.table.url}: option onRewind=reconcile needs the table's meta fields "
                              "(_hoodie_record_key, _hoodie_partition_path), which this table does not write "
                              "(hoodie.populate.meta.fields=false)")
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
    #: whether this process has made sure the stream records keys (onRewind=reconcile)
    _recording = False

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
        if self.keys is not None and not self._recording:  # tasks record the rounds after the cursor
            self.keys.begin(st.cursor.requested if st.cursor else "")
            self._recording = True
        # once a poll, before planning moves past what a restore undid; also when the restore left an AvailableNow
        # query's target (the latest write when it started) behind the cursor
        rewind = self.rewinds.find(st.cursor, self._known())
        for _ in range(1000):  # skipped instants advance the cursor without splits; keep going to real ones
            if rewind is None and self.target is not None and st.cursor is not None and \
                    self.monitor.cursor_key(st.cursor) >= self.monitor.cursor_key(self.target):
                break
            if self.available_now and self.target is None:
                break
            try:
                plan = self._rewound(rewind) if rewind is not None else \
                    self.monitor.plan_next(st.cursor, self._round_size(), known=self._known(), floor=self.floor)
            except DataLossError as e:
                if self.opts.fail_on_data_loss:
                    raise
                plan = self._recover(e)
            rewind = None
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
            behind = seconds_between(self.monitor.cursor_of(e), cursor) or 0.0
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

    def _rewound(self, rewind: Rewind) -> Plan:
        """A restore or rollback undid instants this stream delivered: the round that reconciles the sink with
        it (``onRewind=reconcile``), or the one-line error (which ``failOnDataLoss=false`` recovers from)."""
        if self.keys is None:
            raise rewind.error()
        log.warning("hudi_streaming: %s; delivering what it changed (onRewind=reconcile)", rewind.describe())
        return reconcile_plan(self.table, self.monitor, self.keys, rewind)

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
        """The position of an offset Spark hands back, once the state is shown to have served it (refused
        otherwise: :func:`.offsets.served`)."""
        return served(offset, self.state, self.store.version, self.location)

    def latest_offset(self, start: Offset, limit: BatchLimit) -> Offset:
        seq, rec = self._explain(start)
        if not self.state.started:
            self._start()
        if not self.state.pending_from(seq) or (seq == self.state.next_seq):
            self._poll()
        pending = self.state.pending_from(seq)
        if pending and self._too_few(seq, rec) and self._poll():  # held back: look for more rows meanwhile
            pending = self.state.pending_from(seq)
        if not pending or self._holds_back(seq, rec):
            return make_offset(seq, rec, start.get("sid"))
        within = limit.within(self.opts)
        if within.max_rows:  # the splits the other limits let the batch reach, their bounds read as the rows need
            (reach, _), _ = admit(pending, seq, rec, replace(within, max_rows=None))
            self._read_bounds(seq, rec, within.max_rows, reach)
            pending = self.state.pending_from(seq)
        (end_seq, end_rec), self.last_batch = admit(pending, seq, rec, within)
        b = self.last_batch
        log.info("hudi_streaming: batch of %d splits (at most %d rows%s, %d file bytes, %d instants) up to split %d "
                 "record %d; %d splits left after it", b["splits"], b["rowsEstimate"],
                 f" and those of {b['unboundedSplits']} splits not bounded" if b["unboundedSplits"] else "",
                 b["bytesEstimate"], b["instants"], end_seq, end_rec, sum(1 for p in pending if p.seq >= end_seq))
        return make_offset(end_seq, end_rec, self.state.stream_id)

    def _read_bounds(self, seq: int, rec: int, rows: int, reach: int | None = None) -> None:
        """Read the row bounds a decision over ``rows`` rows from (``seq``, ``rec``) needs — of the pending splits
        below ``reach`` — that the planner left unknown (:func:`.admission.unbounded_ahead`), and keep them in the
        state's splits: first from the commits' write stats (``StreamMonitor.slice_bounds``), for every pending
        split at once (each commit decoded once, no data file opened), then, for splits they cannot bound, from
        the splits' files (``monitor.row_bounds.slices_rows``), a few at a time in parallel.

        Only a row limit needs a bound: the files of a split no row decision reaches are opened by its task alone.
        A bound is the split's rows as its commits' stats or files count them, whenever it is read: the same
        commits and files give the same count (a log file appended to since gives more, still a bound), and a
        batch's end is a record offset into its last split, which a bound read later — after a restart — only
        decides where to cut, never what a record offset means. So bounds are not written back (a state's
        segments are immutable): a restarted driver reads again those of the splits still pending (from files,
        about a batch's worth, or ``minRowsPerTrigger``'s, at most)."""
        splits = self.state.splits
        pending = [p for p in splits if p.seq >= seq and (reach is None or p.seq < reach)]
        at, in_pending = {p.seq: i for i, p in enumerate(splits)}, {p.seq: k for k, p in enumerate(pending)}
        while ahead := unbounded_ahead(pending, rec, rows, FILE_READERS):
            bounds: list[int | None]
            untried = [p for p in pending if p.split.est_rows is None and p.seq >= self._stats_tried_below]
            if untried:  # one pass of the commits' stats over every pending split they were not asked about
                self._stats_tried_below = self.state.next_seq
                ahead, bounds = untried, [*self.monitor.slice_bounds([p.split.slice for p in untried])]
            else:  # what the stats could not bound: from the files, the splits the decision reaches
                bounds = [*slices_rows(self.table.storage, [p.split.slice for p in ahead])]
            for p, bound in zip(ahead, bounds):
                if bound is not None:
                    bounded = replace(p, split=replace(p.split, est_rows=bound))
                    pending[in_pending[p.seq]] = splits[at[p.seq]] = bounded

    #: splits planned below this sequence number have had their row bounds asked of the commits' stats (a split
    #: they could not bound is left to its files; asking again each batch would decode every commit's stats again)
    _stats_tried_below = 0

    #: when the last batch was admitted (monotonic; the stream's first call when none was yet)
    _last_batch_at: float | None = None

    def _holds_back(self, seq: int, rec: int) -> bool:
        """``minRowsPerTrigger``: no batch yet while fewer rows are pending — by the splits' row bounds, which
        are upper bounds, so a batch may still deliver fewer — unless ``maxTriggerDelay`` has passed since the
        last batch. An AvailableNow query is never held back: it ends when it has caught up."""
        now = time.monotonic()
        if self._last_batch_at is None:
            self._last_batch_at = now
        if now - self._last_batch_at < self.opts.max_trigger_delay_seconds and self._too_few(seq, rec):
            return True
        self._last_batch_at = now
        return False

    def _too_few(self, seq: int, rec: int) -> bool:
        """Fewer rows pending from (``seq``, ``rec``) than ``minRowsPerTrigger`` asks for (never in an
        AvailableNow query); unknown bounds are read until the known ones reach it or none is left."""
        least = self.opts.min_rows_per_trigger
        if self.available_now or least is None:
            return False
        self._read_bounds(seq, rec, least)
        return too_few(self.state.pending_from(seq), rec, least)

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
        columns, commits = task_inputs(self.table, self.output)
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
            if self.keys is not None:
                oldest = self.table.timeline.active.first_write_time()
                if oldest is not None:  # what no rewind can undo any more
                    self.keys.prune(oldest)

    def metrics(self) -> SourceMetrics:
        """Progress a user reads in ``query.lastProgress`` (:func:`.metrics.source_metrics`)."""
        return source_metrics(self.table, self.monitor, self.state, self.floor, self.last_batch, self.blocked_by)
