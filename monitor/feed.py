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

from ..errors import HudiStreamingError, OptionError, UnsupportedTableError
from ..hoodie.changes import Deletes, change_pieces, output_schema, read_columns
from ..hoodie.table import HudiTable
from ..hoodie.timeline.instant import is_instant_time
from .monitor import Cursor, MonitorOptions, StreamMonitor
from .split import Split

DeletesArg = Literal["emit", "ignore", "fail"]
#: partition field → the values to read
Partitions = Mapping[str, "str | list[str]"]


def require_meta_fields(table: HudiTable) -> None:
    """A change feed finds each commit's rows by ``_hoodie_commit_time``: a table without meta fields has none."""
    if not table.config.populate_meta_fields:
        raise UnsupportedTableError(f"{table.url}: a change feed finds each commit's rows by _hoodie_commit_time, "
                                    "and this table has hoodie.populate.meta.fields=false (Hudi's incremental and "
                                    "streaming reads refuse it too); read its snapshot (read_table, spark.read)")


def plan_changes(table: HudiTable, start: str | None, end: str | None, *, changelog: bool, deletes: Deletes,
                 partition_filter: Partitions | None = None) -> Iterator[list[Split]]:
    """The splits of each planning round for the completed writes after ``start`` up to ``end`` inclusive
    (completion times on table versions 8/9, requested times on 6; None: from the first / to the latest), in the
    order a stream delivers them.

    On table version 6 a pending write holds back the writes after it (their order is not final until it
    completes): a range reaching past one is refused, not cut short.
    """
    wanted = {k: [v] if isinstance(v, str) else list(v) for k, v in (partition_filter or {}).items()}
    monitor = StreamMonitor(table, MonitorOptions(ending_instant=end, partition_filter=wanted or None,
                                                  replaced_as_deletes=deletes is not Deletes.IGNORE,
                                                  changelog=changelog))
    cursor: Cursor | None = None if start is None else monitor.cursor_at(start, exclusive=True)
    while True:
        plan = monitor.plan_next(cursor, 1 if changelog else None)
        if not plan.instants:
            if plan.blocked_by is not None and monitor.completed_after(cursor, from_first=True)[0] != []:
                raise HudiStreamingError(f"{table.url}: instant {plan.blocked_by} is still pending; the writes after "
                                         "it are not final on table version 6 — read up to an instant before it, or "
                                         "once it completes")
            return
        yield plan.splits
        cursor = plan.cursor


def table_changes(table: HudiTable, start: str | None, end: str | None, *, changelog: bool = False,
                  deletes: Deletes = Deletes.EMIT, columns: list[str] | None = None,
                  partition_filter: Partitions | None = None) -> pa.Table:
    """:func:`read_changes` on an open table."""
    require_meta_fields(table)
    schema = output_schema(table.arrow_schema(), columns)
    read = read_columns(table, schema)
    parts = [piece for splits in plan_changes(table, start, end, changelog=changelog, deletes=deletes,
                                              partition_filter=partition_filter)
             for split in splits
             for piece in change_pieces(table, split.slice_range(), schema, read, deletes, changelog)]
    return pa.concat_tables(parts) if parts else schema.empty_table()


def read_changes(url: str, start: str | None = None, end: str | None = None, *, changelog: bool = False,
                 deletes: DeletesArg = "emit", columns: list[str] | None = None,
                 partition_filter: Partitions | None = None, storage_options: dict | None = None) -> pa.Table:
    """What changed in the Hudi table at ``url`` after instant ``start`` up to instant ``end``, with change types.

    The rows are those a stream started just after ``start`` with ``endingInstant=end`` delivers, in its order:
    the table's columns, Hudi's ``_hoodie_*`` meta columns and ``_change_type`` (``insert``,
    ``update_postimage``, ``update_preimage``, ``delete``).

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
        storage_options: fsspec options for the table's store.

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
    table = HudiTable(url, storage_options)
    unknown = [f for f in partition_filter or {} if f not in table.config.partition_fields]
    if unknown:
        raise OptionError(f"read_changes: partition_filter names {', '.join(unknown)}, not a partition field of "
                          f"{table.url} (its partition fields: {', '.join(table.config.partition_fields) or 'none'})")
    full = table.arrow_schema()
    unknown = [c for c in columns or [] if c not in full.names]
    if unknown:
        raise OptionError(f"read_changes: {table.url} has no column {', '.join(unknown)}; its columns: "
                          f"{', '.join(n for n in full.names if not n.startswith('_hoodie_'))}")
    return table_changes(table, start, end, changelog=changelog, deletes=mode, columns=columns,
                         partition_filter=partition_filter)
