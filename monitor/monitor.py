"""The monitor: which completed instants come next, and the splits that deliver their changes.

It mirrors Hudi Flink's ``StreamReadMonitoringFunction`` + ``IncrementalInputSplits``. The *issued cursor* is
the last instant already planned. On table v8/v9 instants are taken in completion-time order, so an instant
that started earlier but completed later is not lost. On table v6 instants are taken in requested-time order
and never past a pending write (Hudi's BLOCK policy for hollow commits): once it completes it is still ahead
of the cursor. Compaction and clustering rewrite rows without changing them and are skipped by default
(they still move the cursor). Splits are one per latest merged file slice of each file group an instant
wrote, restricted by the partition filter, in (partition, file id) order.

Each split carries ``est_rows``, an upper bound of the rows reading it yields in the stream's read mode
(:mod:`.row_bounds`; the driver's row limit relies on it, see ``streaming.admission.admit``), or None where the
write stats cannot bound a whole slice (planning opens no data file: the driver reads that bound when a row limit
needs it), and ``est_bytes``, the exact size of the files reading it opens.
"""
from __future__ import annotations

import bisect
import functools
import logging
import posixpath
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import pyarrow as pa

from ..errors import DataLossError
from ..hoodie.fs_view import FileSlice, FileSystemView
from ..hoodie.read import planned_metadata
from ..hoodie.split import Split
from ..hoodie.storage import FileInfo
from ..hoodie.table import HudiTable
from ..hoodie.timeline import Action, TimelineEntry
from ..hoodie.timeline.metadata import WriteStat
from .row_bounds import FILE_READERS, file_rows, row_bound, slice_bound
from .schema_check import check_instant_schema

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class Cursor:
    """The last issued instant: its requested time and (v8/v9) completion time."""

    requested: str
    completion: str | None = None


@dataclass
class Plan:
    """The outcome of one poll: splits to deliver, the instants covered, and where the cursor moves."""

    cursor: Cursor | None
    splits: list[Split] = field(default_factory=list)
    instants: list[TimelineEntry] = field(default_factory=list)
    snapshot: bool = False
    blocked_by: str | None = None  # v6: the pending instant holding the cursor back


@dataclass
class MonitorOptions:
    skip_compaction: bool = True
    skip_clustering: bool = True
    skip_insert_overwrite: bool = False
    ending_instant: str | None = None
    partition_filter: dict[str, list[str]] | None = None
    #: plan the rows of file groups an insert overwrite replaced, as deletes (to deliver them, or to stop on them)
    replaced_as_deletes: bool = False
    #: the stream's schema (fixed when the query started) and whether compatible changes are delivered
    reference_schema: pa.Schema | None = None
    allow_schema_changes: bool = False
    #: the stream reads a projection of the reference schema's table (option columns)
    projected: bool = False
    #: the stream delivers changelogs (an update is a pre-image and a post-image row): the row bounds count both
    changelog: bool = False


class StreamMonitor:
    """Plans splits for a table; holds no state of its own beyond what the caller passes in (the cursor)."""

    def __init__(self, table: HudiTable, options: MonitorOptions):
        self.table = table
        self.options = options
        self.v8 = table.config.version >= 8
        #: partition → file name → info; a partition is listed once, then kept current from commit metadata until
        #: files are removed (a clean or a rollback completes): then every listing is dropped and made again on
        #: use, so a driver that runs for months holds the table's current files, not every file it ever saw
        self._files: dict[str, dict[str, FileInfo]] = {}
        self._removals: frozenset[str] = frozenset()
        self._schema_logged: set[str] = set()

    # -- instants ----------------------------------------------------------------------------------------------
    def _frontier(self, e: TimelineEntry) -> tuple:
        return (e.completion_time or e.requested_time, e.requested_time) if self.v8 else (e.requested_time,)

    def cursor_of(self, e: TimelineEntry) -> Cursor:
        return Cursor(requested=e.requested_time, completion=e.completion_time if self.v8 else None)

    def cursor_key(self, c: Cursor) -> tuple:
        return (c.completion or c.requested, c.requested) if self.v8 else (c.requested,)

    def completed_after(self, cursor: Cursor | None, *, from_first: bool = False,
                        known: Mapping[str, str] | None = None,
                        floor: str | None = None) -> tuple[list[TimelineEntry], str | None]:
        """Completed writes after the cursor in frontier order (and, v6, the pending instant blocking more).

        The archived timeline is read when the cursor is archived, or when there is no cursor and ``from_first``
        asks for every instant from the table's first (a stream positioned before it); otherwise no cursor
        means the active timeline is enough (the latest instant, a snapshot).

        ``known`` (v8/v9): the requested times the stream has accounted for. A completed write of the active
        timeline at or before the cursor that is not among them is *late* — its completion time was taken before
        the cursor's, but it became visible after (writers' clocks, a slow rename) — and comes first, unless it
        completed before ``floor`` (the instant the user started the stream at).
        """
        tl = self.table.timeline
        archived = from_first if cursor is None else tl.is_archived(cursor.requested)
        entries = tl.completed_writes(include_archived=archived)
        late = self.late_instants(cursor, known, floor)
        after = sorted([*late, *(e for e in entries if cursor is None or self._frontier(e) > self.cursor_key(cursor))],
                       key=self._frontier)
        blocked = None
        if not self.v8:
            pending = [e.requested_time for e in tl.active.pending_writes()
                       if not (e.instant.action is Action.COMPACTION or e.planned_as is Action.CLUSTERING)]
            if pending:
                blocked = min(pending)
                after = [e for e in after if e.requested_time < blocked]
        if self.options.ending_instant:
            end = self.options.ending_instant
            after = [e for e in after if self._frontier(e)[0] <= end]
        return after, blocked

    def late_instants(self, cursor: Cursor | None, known: Mapping[str, str] | None,
                      floor: str | None = None) -> list[TimelineEntry]:
        """Completed writes of the active timeline at or before ``cursor`` that are not ``known`` (v8/v9 only: v6
        takes instants in requested-time order and never past a pending one, so none can be late)."""
        if not self.v8 or cursor is None or known is None:
            return []
        key = self.cursor_key(cursor)
        return [e for e in self.table.timeline.completed_writes() if e.requested_time not in known
                and self._frontier(e) <= key and (floor is None or self._frontier(e)[0] >= floor)]

    def accounted(self, cursor: Cursor | None) -> dict[str, str]:
        """Requested → completion time of the active timeline's completed writes at or before ``cursor``: what a
        stream starting there (or whose older state tracked no instants) has accounted for."""
        if not self.v8 or cursor is None:
            return {}
        key = self.cursor_key(cursor)
        return {e.requested_time: e.completion_time or "" for e in self.table.timeline.completed_writes()
                if self._frontier(e) <= key}

    def latest_cursor(self) -> Cursor | None:
        done, _ = self.completed_after(None)
        return self.cursor_of(done[-1]) if done else None

    def cursor_at(self, instant: str, *, exclusive: bool = False) -> Cursor | None:
        """Cursor just before ``instant`` (a start position given by the user; the instant itself is delivered),
        or with ``exclusive`` at it (delivered from the write after it, as an incremental query's start).

        The archived timeline is read when the instant is not after every active write: the write just before
        it may be archived (a start at the first active write once left the cursor empty, and the stream then
        delivered the archive's writes too)."""
        active = [self._frontier(e)[0] for e in self.table.timeline.completed_writes()]
        older = not active or instant <= min(active) or self.table.timeline.is_archived(instant)
        done, _ = self.completed_after(None, from_first=older)
        before = [e for e in done if self._frontier(e)[0] < instant or (exclusive and self._frontier(e)[0] == instant)]
        return self.cursor_of(before[-1]) if before else None

    def _emits(self, e: TimelineEntry) -> bool:
        o, tl = self.options, self.table.timeline
        if e.is_compaction or (e.action is Action.COMMIT and tl.commit_metadata(e.requested_time).compacted):
            return not o.skip_compaction
        if e.action is Action.REPLACE_COMMIT:
            if tl.is_clustering(e):
                return not o.skip_clustering
            return not o.skip_insert_overwrite
        return not e.is_log_compaction

    # -- planning ----------------------------------------------------------------------------------------------
    def plan_snapshot(self) -> Plan:
        """The whole table as of the latest completed instant: the first plan of a stream started at earliest."""
        done, blocked = self.completed_after(None)
        if not done:
            return Plan(cursor=None, blocked_by=blocked)
        last = done[-1]
        slices = [s for s in self.table.file_system_view().latest_merged_slices(last.requested_time)
                  if self._keep(s.partition)]
        # the listing is done with: a wide table's (the metadata table's files partition, the view's own slices)
        # would otherwise be held until the next poll
        self.table.release_listings()
        # no row bounds: only a row limit needs them, and bounding a snapshot decodes every write stat of the
        # commits that wrote its files (at 10,000 file groups 0.65 s and 15 MiB per commit that touched them
        # all); the driver finds them (:meth:`slice_bounds`, then the files) for the splits a row decision reaches
        splits = [self.split_of(s, None, max(e.requested_time for e in done), est_rows=None) for s in slices]
        return Plan(cursor=self.cursor_of(last), splits=splits, instants=done, snapshot=True, blocked_by=blocked)

    def restored_splits(self, groups: set[tuple[str, str]]) -> list[Split]:
        """Whole slices of these file groups as the table holds them now (as of its latest completed write):
        what reconciling a rewind delivers for the groups the undone instants wrote. The partitions are listed
        again (a rewind deleted files the cached listings still hold)."""
        done, _ = self.completed_after(None)
        if not done or not groups:
            return []
        last = max(e.requested_time for e in done)
        self._learn_files([])
        slices = [s for s in self._view_of_groups(groups).latest_merged_slices(last)
                  if (s.partition, s.file_id) in groups]
        return [self.split_of(s, None, last, est_rows=rows) for s, rows in zip(slices, self.slice_bounds(slices))]

    def plan_next(self, cursor: Cursor | None, max_instants: int | None = None, *,
                  known: Mapping[str, str] | None = None, floor: str | None = None) -> Plan:
        """Splits for the next completed instants after ``cursor`` (at most ``max_instants`` of them), late ones
        (see :meth:`completed_after`) first. The cursor never moves back: a round of late instants keeps it."""
        after, blocked = self.completed_after(cursor, from_first=True, known=known, floor=floor)
        batch = self._round(after[:max_instants] if max_instants else after)
        if not batch:
            return Plan(cursor=cursor, blocked_by=blocked)
        emitting = [e for e in batch if self._emits(e)]
        tl = self.table.timeline
        self._learn_files(batch)
        touched: dict[tuple[str, str], list] = {}
        for e in emitting:
            md = planned_metadata(self.table, e.requested_time)  # blank metadata over written files: DataLossError
            self._check_schema(e, md.writer_schema)
            for part, stats in md.partition_to_write_stats.items():
                if not self._keep(part):
                    continue
                for st in stats:
                    touched.setdefault((part, st.file_id), []).append((e.requested_time, st))
        replaced = self._replaced_groups(emitting)
        splits = []
        if touched or replaced:
            max_instant = max(e.requested_time for e in batch)
            view = self._view_of_groups(set(touched) | set(replaced))
            found = set()
            written: list[str] | None = None  # requested times of completed writes, for prior slices
            for s in view.latest_merged_slices(max_instant):
                writes = touched.get((s.partition, s.file_id))
                if not writes:
                    continue
                found.add((s.partition, s.file_id))
                self._check_readable(s, writes)
                instants = sorted({t for t, _ in writes})
                bound = row_bound(s, [st for _, st in writes], self.options.changelog,
                                  functools.partial(file_rows, self.table.storage))
                split = self.split_of(s, instants, max_instant, est_rows=bound)
                if s.base_instant in instants:
                    if written is None:
                        written = [e.requested_time for e in tl.completed_writes()]
                    prior = self._prior(view, s, written, instants[0])
                    if prior is not None:  # its files are read too (pre-images, the rewrite's deletes)
                        split = replace(split, prior=prior[0], prior_max_instant=prior[1],
                                        est_bytes=split.est_bytes + prior[0].size)
                splits.append(split)
            gone = [(view.merged_slice_of(part, file_id, by), by) for (part, file_id), by in sorted(replaced.items())]
            kept = [(s, by) for s, by in gone if s is not None]
            for (s, by), rows in zip(kept, self.slice_bounds([s for s, _ in kept])):
                splits.append(replace(self.split_of(s, None, by, est_rows=rows), replaced_by=by))
            lost = sorted(set(touched) - found)
            if lost:
                raise DataLossError(f"{self.table.url}: file groups {lost[:3]} written by instants "
                                    f"{[e.requested_time for e in emitting][:5]} are no longer readable "
                                    "(cleaned or replaced before the stream read them)")
        last = self.cursor_of(batch[-1])
        moved = cursor is None or self.cursor_key(last) > self.cursor_key(cursor)
        return Plan(cursor=last if moved else cursor, splits=splits, instants=batch, blocked_by=blocked)

    def _check_schema(self, e: TimelineEntry, schema_json: str | None) -> None:
        ref = self.options.reference_schema
        if ref is None:
            return
        cfg = self.table.config
        allowed = check_instant_schema(ref, schema_json, e.requested_time, self.table.url,
                                       self.options.allow_schema_changes, self.options.projected,
                                       frozenset(cfg.partition_fields) if cfg.drop_partition_columns else frozenset())
        if allowed and e.requested_time not in self._schema_logged:
            self._schema_logged.add(e.requested_time)
            log.warning("%s: instant %s changes the schema compatibly (%s); delivering the stream's columns",
                        self.table.url, e.requested_time, "; ".join(allowed))

    def _round(self, instants: list[TimelineEntry]) -> list[TimelineEntry]:
        """Cut a planning round before the first instant that rewrites or replaces file groups.

        A skipped compaction, clustering or insert overwrite may replace the file groups earlier instants of
        the round wrote; planning those instants as of the rewrite would read the new groups, which the round
        does not list. A rewrite therefore forms a round of its own (it moves the cursor, delivers nothing).
        A delivered insert overwrite replaces groups too, so the round ends before it and it starts the next one
        (the groups it replaced are read as of itself, as deletes; its new groups like any write's): in one round
        with the writes before it, their groups were gone from the round's view and the stream failed with a
        false "no longer readable" (a stream that fell behind an insert overwrite).
        """
        for i, e in enumerate(instants):
            if self._rewrites(e):
                return instants[:i] if i else instants[:1]
            if i and e.action is Action.REPLACE_COMMIT:
                return instants[:i]
        return instants

    def _rewrites(self, e: TimelineEntry) -> bool:
        return e.action in (Action.COMMIT, Action.REPLACE_COMMIT) and not self._emits(e) and (
            e.is_compaction or e.action is Action.REPLACE_COMMIT
            or bool(self.table.timeline.commit_metadata(e.requested_time).compacted))

    def _replaced_groups(self, emitting: list[TimelineEntry]) -> dict[tuple[str, str], str]:
        """File groups replaced by insert overwrites among ``emitting`` → the replacing instant."""
        if not self.options.replaced_as_deletes:
            return {}
        tl, out = self.table.timeline, {}
        for e in emitting:
            if e.action is Action.REPLACE_COMMIT and not tl.is_clustering(e):
                for part, ids in tl.commit_metadata(e.requested_time).partition_to_replace_file_ids.items():
                    if self._keep(part):
                        out.update({(part, fid): e.requested_time for fid in ids})
        return out

    def _keep(self, partition: str) -> bool:
        pf = self.options.partition_filter
        if not pf:
            return True
        values = self.table.partition_values(partition)
        return all(values.get(k) in v for k, v in pf.items())

    def _learn_files(self, instants: list[TimelineEntry]) -> None:
        """Add the files these instants wrote to the cached partition listings (one stat per new file), after
        dropping every listing if files were removed since (see ``_files``)."""
        removals = frozenset(e.requested_time for e in self.table.timeline.active.completed()
                             if e.action in (Action.CLEAN, Action.ROLLBACK, Action.RESTORE))
        if not removals <= self._removals:
            self._files.clear()
        self._removals = removals
        storage = self.table.storage
        for e in instants:
            for st in self.table.timeline.commit_metadata(e.requested_time).write_stats():
                if not st.path:
                    continue
                part = posixpath.dirname(st.path)
                if part in self._files:
                    try:
                        size = storage.size(st.path)
                    except FileNotFoundError:
                        continue  # removed since (cleaned): the readability check reports it if it matters
                    self._files[part][posixpath.basename(st.path)] = FileInfo(st.path, size, None)

    def _partition_files(self, part: str) -> dict[str, FileInfo]:
        if part not in self._files:
            self._files[part] = {posixpath.basename(f.path): f for f in self.table.partition_files(part)}
        return self._files[part]

    def _view_of_groups(self, groups: set[tuple[str, str]]) -> FileSystemView:
        """A file-system view over just these file groups: planning cost follows what the instants wrote.

        Each partition is listed the first time it is written to; after that its listing is kept current
        from commit metadata, so a poll touches only the files its instants wrote.
        """
        wanted: dict[str, set[str]] = {}
        for part, file_id in groups:
            wanted.setdefault(part, set()).add(file_id)
        files: list[FileInfo] = []
        for part in sorted(wanted):
            ids = wanted[part]
            files.extend(f for name, f in self._partition_files(part).items()
                         if name.lstrip(".").split("_", 1)[0] in ids)
        return FileSystemView(self.table.config, self.table.timeline, files)

    def _check_readable(self, s: FileSlice, writes: list) -> None:
        """Every file an instant wrote to this group must still be read (else the cleaner removed it).

        A file may be gone legitimately when a later compaction folded it into the slice's newer base file
        (compaction keeps commit times, so the rows are still delivered from there).
        """
        have = {posixpath.basename(p) for p in s.files}
        for instant, st in writes:
            name = st.file_name
            if name and name not in have and not (s.base_file is not None and s.base_file.instant > instant):
                raise DataLossError(f"{self.table.url}: file {st.path} written by instant {instant} is gone "
                                    "(cleaned or replaced) before the stream read it")

    def _prior(self, view: FileSystemView, s: FileSlice, written: list[str], first: str
               ) -> tuple[FileSlice, str] | None:
        """The group's slice as of the last write before ``first`` (``written``: sorted requested times of the
        completed writes), when the range rewrote its base file, and that write's requested time."""
        i = bisect.bisect_left(written, first)
        prior = view.merged_slice_of(s.partition, s.file_id, written[i - 1]) if i else None
        if prior is None or prior.base_instant == s.base_instant:
            return None  # a new file group: nothing came before it
        return prior, written[i - 1]

    def slice_bounds(self, slices: list[FileSlice]) -> list[int | None]:
        """Upper bounds of the rows each whole file slice yields, from the write stats of the completed writes
        that wrote their files (:func:`slice_bound`; commit metadata, read once per instant), or None for a slice
        they cannot bound (a file of an archived commit, or one no stat counts).

        No data file is opened here: a task reads the slice's files anyway, and on a long-lived table nearly every
        file group's base file is of an archived commit, so bounding a snapshot from footers and logs cost a
        table of 10^5 file groups on S3 thousands of requests before its first batch, row limit or not. The
        driver reads an unknown bound from the files only when a row limit needs it, for the splits a batch may
        admit (``streaming.driver.StreamDriver``). Replaced and restored file groups are bounded here when
        planned; a snapshot's slices only when the driver asks (:meth:`plan_snapshot`)."""
        tl = self.table.timeline
        first = tl.active.first_write_time()
        instants = {f.instant for s in slices for f in ([s.base_file] if s.base_file else []) + s.log_files}
        relevant = [t for t in instants if first is not None and t >= first]
        written: dict[str, list[WriteStat]] = {}
        if relevant:
            oldest = min(relevant)
            times = [e.requested_time for e in tl.completed_writes() if e.requested_time >= oldest]
            with ThreadPoolExecutor(FILE_READERS) as pool:  # one metadata file per instant: I/O bound
                for md in pool.map(tl.commit_metadata, times):
                    for st in md.write_stats():
                        if st.file_name:
                            written.setdefault(st.file_name, []).append(st)
        return [slice_bound(s, written, first) for s in slices]

    def split_of(self, s: FileSlice, instants: list[str] | None, max_instant: str, est_rows: int | None) -> Split:
        """The split of file slice ``s``, its rows bounded by ``est_rows`` (None: not bounded yet); reading it
        opens the slice's files."""
        return Split(s, max_instant, tuple(instants) if instants is not None else None, est_rows=est_rows,
                     est_bytes=s.size)

