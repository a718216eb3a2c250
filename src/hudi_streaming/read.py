"""The public batch reads: ``read_table`` (a snapshot, read-optimized or incremental read of a table's rows) and
``read_changes`` (what changed in an instant range, with change types), side by side.

Both are composed from the layers below: ``read_table`` from the format layer's planning and slice reading
(``hoodie.read``: which file slices, and how an incremental window is bounded), ``read_changes`` from the
planner's change feed (``monitor.feed``: the rounds a stream would plan, read by ``hoodie.changes``). The
package root imports them on first use, as ``hudi_streaming.read_table`` and ``hudi_streaming.read_changes``.
"""
from __future__ import annotations

import pyarrow as pa

from .errors import OptionError
from .hoodie.deletes import Deletes
from .hoodie.feed_schema import output_schema
from .hoodie.filters import FilterArg, columns_of, filter_rows, pushed_filters
from .hoodie.read import MergeTypeArg, PartitionFilter, plan_slices, read_schema
from .hoodie.slice_reader import MergeType, SliceRead, read_slice
from .hoodie.table import HudiTable
from .hoodie.timeline.instant import is_instant_time
from .hoodie.zones import is_zone
from .monitor.feed import ChangeFeed, DeletesArg, Partitions


def read_table(url: str, *, columns: list[str] | None = None, as_of: str | None = None,
               read_optimized: bool = False, start: str | None = None, end: str | None = None,
               partition_filter: PartitionFilter | None = None, filters: FilterArg | None = None,
               storage_options: dict | None = None,
               merge_type: MergeTypeArg | MergeType = MergeType.PAYLOAD_COMBINE,
               metadata_enable: bool = True) -> pa.Table:
    """The rows of the Hudi table at ``url`` as one Arrow table: a snapshot (the latest, or as of an instant), a
    read-optimized read, or an incremental read of an instant range (see the module docstring).

    Parameters:
        url: the table's root folder (local path or fsspec URL such as ``s3://bucket/table``).
        columns: the columns to return, in that order; None returns every column of the table, Hudi's
            ``_hoodie_*`` meta columns first.
        as_of: a snapshot as of this instant time (``yyyyMMddHHmmss[SSS]``, a requested time): the writes up to
            it, merged; None reads the latest. An incremental read (``start`` or ``end`` given) takes only the
            table's columns as of it.
        read_optimized: read the base files only, without merging their log files (faster; a merge-on-read
            table's latest writes are left out until they are compacted).
        start: an incremental read of the writes after this instant, exclusive (a completion time on table
            versions 8/9, a requested time on 6), returning the latest value of each record they wrote.
        end: an incremental read of the writes up to this instant, inclusive, likewise.
        partition_filter: the partitions to read: partition field -> the value or values to keep, or a function
            of a partition's ``{field: value}`` that returns whether to read it.
        filters: the rows to return, as pyarrow and delta-rs take them: DNF (a list of ``(column, op, value)``
            tuples, their AND, or a list of such lists, the OR of those ANDs; ops ``=``, ``==``, ``!=``, ``<``,
            ``<=``, ``>``, ``>=``, ``in``, ``not in``) or a ``pyarrow.compute.Expression``. The rows returned are
            those that match (a null outcome drops the row, as pyarrow's ``Table.filter``); partitions whose values
            rule out every match are not read at all (for an Expression, where ``hoodie.filters`` can read it).
        storage_options: fsspec options for the table's store (credentials, endpoint, ...).
        merge_type: ``"payload_combine"`` merges each record's versions by the table's merge rules (Hudi's
            default); ``"skip_merge"`` returns each file slice's base rows and then its log records (deletes left
            out), unmerged.
        metadata_enable: take the file listing from the table's metadata table where it can serve it (Hudi's
            ``hoodie.metadata.enable``); False lists the store.

    Raises :class:`OptionError` for a bad argument (an unknown column, a partition filter naming fields that
    are not partition fields, a filter naming an unknown column or operator, an unknown ``merge_type``),
    :class:`DataLossError` when an incremental read needs
    files the cleaner removed.
    """
    try:
        merge = MergeType(merge_type)
    except ValueError:
        raise OptionError(f"read_table: merge_type={merge_type!r}; use 'payload_combine' or 'skip_merge'") from None
    table = HudiTable(url, storage_options, metadata_enable=metadata_enable)
    full = table.arrow_schema(as_of)
    if columns is not None:
        unknown = [c for c in columns if c not in full.names]
        if unknown:
            raise OptionError(f"{url}: unknown columns {unknown}; the table has {full.names}")
    pushed = pushed_filters(filters, full, "read_table") if filters is not None else None
    slices, max_instant, rng = plan_slices(table, as_of=as_of, start=start, end=end,
                                           partition_filter=partition_filter,
                                           filters=pushed.model if pushed else None, schema=full)
    # the rows are filtered on columns that may not be returned: read them too (all, for an opaque Expression)
    wanted = columns
    if pushed is not None and columns is not None:
        wanted = None if pushed.model is None else columns + sorted(columns_of(pushed.model) - set(columns))
    req = SliceRead(table, read_schema(table, full, wanted, rng is not None), max_instant, rng, merge,
                    read_optimized)
    parts = [read_slice(req, s) for s in slices]
    out = pa.concat_tables(parts) if parts else req.schema.empty_table()
    if pushed is not None:
        out = filter_rows(out, pushed, "read_table")
    return out.select(columns if columns is not None else [c for c in full.names])


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
