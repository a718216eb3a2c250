"""What a batch read of a table reads: the file slices of a snapshot (optionally as of an instant), a
read-optimized or an incremental read, and the columns merging needs (``hudi_streaming.read.read_table`` reads
them; the planner and the Spark batch reader plan with them too).

Incremental windows follow Spark + Hudi exactly (fixtures README, spec §2.9): on table v8/v9 the bounds are
compared with each instant's completion time, start exclusive, end inclusive, and rows are those whose
``_hoodie_commit_time`` is one of the included instants; on v6 the bounds are requested times. Only the files
the included instants wrote are read, merged as of the last included instant.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Literal

import pyarrow as pa

from ..errors import DataLossError, OptionError
from .filters import Filter, PartitionPruner
from .fs_view import FileSlice, parse_base_file, parse_log_file
from .metadata_stats import SlicePruner
from .scanner import InstantRange
from .table import COMMIT_TIME, IS_DELETED, RECORD_KEY, HudiTable
from .timeline import CommitMetadata

log = logging.getLogger(__name__)
#: (table URL, instant) of blank commits already reported: the stream plans each instant once, but a batch
#: reader may read the same range many times in one process
_blank_reported: set[tuple[str, str]] = set()
_blank_lock = threading.Lock()

PartitionFilter = Callable[[dict[str, str]], bool] | Mapping[str, "str | list[str]"]
MergeTypeArg = Literal["payload_combine", "skip_merge"]


def _partition_predicate(table: HudiTable, pf: PartitionFilter | None) -> Callable[[str], bool] | None:
    if pf is None:
        return None
    if callable(pf):
        return lambda path: bool(pf(table.partition_values(path)))
    wanted = {k: {v} if isinstance(v, str) else set(map(str, v)) for k, v in pf.items()}
    unknown = set(wanted) - set(table.config.partition_fields)
    if unknown:
        raise OptionError(f"{table.url}: partition filter names {sorted(unknown)}, not partition fields "
                          f"{table.config.partition_fields}")
    return lambda path: all(table.partition_values(path).get(k) in v for k, v in wanted.items())


def incremental_instants(table: HudiTable, start: str | None, end: str | None) -> tuple[list[str], list[str]]:
    """Requested times of the completed writes in the window, in requested-time order, and apart those of its log
    compactions.

    Log compactions are not writes of their own: they repeat earlier blocks' records (which a read of the window
    takes from those blocks), and Hudi's incremental query returns nothing for a window holding only one. Their
    stamp outlives them, though: a full compaction copies the records a log compaction stamped into the base file,
    and those rows belong to a window that holds the log compaction (a read keeps the rows of both lists)."""
    writes: list[str] = []
    log_compactions: list[str] = []
    v8 = table.config.version >= 8
    when = (lambda e: e.completion_time) if v8 else (lambda e: e.requested_time)  # noqa: E731
    active = table.timeline.completed_writes()
    # the archive is read only when the window can start before the active timeline
    need_archive = start is None or not active or start < when(active[0])
    for e in table.timeline.completed_writes(include_archived=need_archive):
        t = when(e)
        if (start is None or t > start) and (end is None or t <= end):
            (log_compactions if e.is_log_compaction else writes).append(e.requested_time)
    return writes, log_compactions


def planned_metadata(table: HudiTable, instant_time: str) -> CommitMetadata:
    """Commit metadata of a completed write, for readers that take the files to read from it (incremental reads
    and the stream), which would otherwise pass over the rows of an instant whose metadata file lost its content.

    Hudi reads an empty completed file as empty metadata (``CommitMetadataSerDeV1/V2.deserialize``: empty
    content → ``clazz.newInstance()``) and still counts the instant as committed, so its files are in every
    snapshot (the file-system view goes by the timeline) while an incremental read planned from the metadata
    finds nothing to read. When data files carry the instant's time (base files; on v8/v9 log files too, which
    are named by the delta commit that wrote them) that is a :class:`DataLossError`: the changes exist but
    cannot be delivered as the changes of that instant. Without such files the instant is the empty commit Hudi
    takes it for; that is logged once, since it is still unusual.
    """
    md = table.timeline.commit_metadata(instant_time)
    if not md.is_blank:
        return md
    carriers = _files_of_instant(table, instant_time)
    if carriers:
        more = f" and {len(carriers) - 3} more" if len(carriers) > 3 else ""
        raise DataLossError(f"{table.url}: instant {instant_time}'s commit metadata is empty but files "
                            f"{', '.join(carriers[:3])}{more} carry its data; the instant's changes cannot be "
                            "read incrementally (a snapshot read still has them)")
    with _blank_lock:
        first = (table.url, instant_time) not in _blank_reported
        _blank_reported.add((table.url, instant_time))
    if first:
        log.warning("%s: instant %s's commit metadata is empty and no data file carries its time; read as an "
                    "empty commit, as Hudi reads it", table.url, instant_time)
    return md


def _files_of_instant(table: HudiTable, instant_time: str) -> list[str]:
    """Data files named with ``instant_time``: base files, and (v8/v9) the log files that instant wrote."""
    out = []
    for info in table.listing():
        base = parse_base_file(info)
        if base is not None and base.instant == instant_time:
            out.append(info.path)
        elif base is None and table.config.version >= 8:
            logf = parse_log_file(info)
            if logf is not None and logf.instant == instant_time:
                out.append(info.path)
    return sorted(out)


def plan_slices(table: HudiTable, *, as_of: str | None = None, start: str | None = None, end: str | None = None,
                partition_filter: PartitionFilter | None = None, filters: Filter | None = None,
                schema: pa.Schema | None = None) -> tuple[list[FileSlice], str | None, InstantRange | None]:
    """The file slices a query reads, the instant to merge up to, and the instant range of an incremental read.

    ``filters`` prunes the partitions that cannot hold a matching row (:class:`PartitionPruner`, with the rows'
    ``schema``), then the file slices that the metadata table's record index and statistics rule out
    (:class:`SlicePruner`); the rows of the slices kept are not filtered here."""
    given = _partition_predicate(table, partition_filter)
    pruner = PartitionPruner(table, filters, schema) if filters is not None else None
    if pruner is not None and not pruner.used:
        pruner = None

    def keep(partition: str) -> bool:
        return (given is None or given(partition)) and (pruner is None or pruner.may_match(partition))
    if start is None and end is None:
        view = table.file_system_view()
        max_instant = as_of or table.timeline.latest_write_time()
        rng = None
    else:
        instants, log_compactions = incremental_instants(table, start, end)
        if not instants:
            return [], None, None
        paths = sorted({p for t in instants for p in planned_metadata(table, t).written_paths()})
        view = table.file_system_view(paths)
        max_instant = max(instants)
        rng = (InstantRange(instants=frozenset(instants + log_compactions)) if table.config.version >= 8
               else InstantRange(start=start, end=end))
    if max_instant is None:
        return [], None, rng
    slices = [s for s in view.latest_merged_slices(max_instant) if keep(s.partition)]
    if filters is not None and table.files_index() is not None:
        latest = rng is None and max_instant == table.timeline.latest_write_time()
        slices = SlicePruner(table, filters, schema if schema is not None else table.arrow_schema(),
                             latest=latest).prune(slices)
    return slices, max_instant, rng


def read_schema(table: HudiTable, full: pa.Schema, columns: list[str] | None, incremental: bool) -> pa.Schema:
    """Requested columns plus what merging needs (keys, ordering, delete marker, commit time).

    A table without meta fields has no ``_hoodie_commit_time``: an incremental read still reads one, which the
    slice reader fills with the instant of the file or log block that holds each row (:func:`commit_times`)."""
    if incremental and COMMIT_TIME not in full.names:
        full = pa.schema([pa.field(COMMIT_TIME, pa.string()), *full])
    if columns is None:
        return full
    cfg = table.config
    need = list(columns) + [RECORD_KEY] + cfg.record_key_fields + cfg.ordering_fields + [IS_DELETED]
    if cfg.delete_field is not None:
        need.append(cfg.delete_field)
    if incremental:
        need.append(COMMIT_TIME)
    return pa.schema([f for f in full if f.name in set(need)])
