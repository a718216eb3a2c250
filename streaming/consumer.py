"""The split consumer: reads a split's changes in a fixed order and delivers a record range of them.

A split always yields the same sequence (the slice reader's order is deterministic and the split names its
exact files and sizes), so a range ``[skip, stop)`` of it is well defined: after a restart the stream reopens
the split and skips exactly the records already delivered. Before skipping, the files are checked to be the
ones planned — a cleaner that removed them would otherwise shift every record.
"""
from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from hoodie.fs_view import BaseFile, FileSlice, LogFile
from hoodie.logfile.format import parse_log_file_name
from hoodie.scanner import InstantRange
from hoodie.slice_reader import MergeType, SliceRead, align, read_slice_changes
from hoodie.table import COMMIT_TIME, RECORD_KEY, HudiTable
from monitor.monitor import DataLossError
from monitor.split import Split

log = logging.getLogger("hudi_streaming.consumer")

CHANGE_TYPE = "_change_type"
INSERT, UPDATE_PRE, UPDATE_POST, DELETE = "insert", "update_preimage", "update_postimage", "delete"


@dataclass(frozen=True)
class SplitRange:
    """Records ``[skip, stop)`` of one split (``stop`` None: to the end)."""

    split: Split
    skip: int
    stop: int | None


def output_schema(table_schema: pa.Schema, columns: list[str] | None) -> pa.Schema:
    """Rows the stream emits: the (projected) table columns, then the change type."""
    fields = [f for f in table_schema if columns is None or f.name in columns or f.name.startswith("_hoodie_")]
    if columns is not None:
        order = {c: i for i, c in enumerate(columns)}
        meta = [f for f in fields if f.name not in order]
        fields = meta + sorted((f for f in fields if f.name in order), key=lambda f: order[f.name])
    return pa.schema(fields + [pa.field(CHANGE_TYPE, pa.string())])


def file_slice(split: Split) -> FileSlice:
    """The file slice exactly as planned (paths and sizes from the split, not from a new listing)."""
    base = None
    if split.base_path:
        name = posixpath.basename(split.base_path)
        parts = name.split("_")
        base = BaseFile(split.base_path, split.file_id, parts[1] if len(parts) > 2 else "", split.base_instant,
                        split.base_size)
    logs = []
    for ref in split.logs:
        parsed = parse_log_file_name(posixpath.basename(ref.path))
        logs.append(LogFile(ref.path, split.file_id, parsed.instant if parsed else "", parsed.version if parsed else 0,
                            parsed.write_token if parsed else None, ref.size))
    return FileSlice(split.partition, split.file_id, split.base_instant, base, logs)


def verify_files(table: HudiTable, split: Split) -> None:
    """The planned files must still exist with at least the planned sizes."""
    for path, size in ([(split.base_path, split.base_size)] if split.base_path else []) + \
            [(r.path, r.size) for r in split.logs]:
        try:
            actual = table.storage.size(path)
        except FileNotFoundError:
            raise DataLossError(f"{table.url}: {path} of split {split.file_id} (instants "
                                f"{(split.instants or ['snapshot'])[:3]}) was removed before it was read; "
                                "the cleaner retains too few commits for this stream's lag") from None
        if actual < size:
            raise DataLossError(f"{table.url}: {path} shrank from {size} to {actual} bytes since it was planned")


def split_changes(table: HudiTable, split: Split, schema: pa.Schema, emit_deletes: bool,
                  changelog: bool = False, merge_type: str = "payload_combine") -> pa.Table:
    """Every change a split delivers, in a fixed order: pre-images, upserts, then deletes."""
    verify_files(table, split)
    read_schema = _read_schema(table, schema)
    if split.replaced_by is not None:
        return _replaced_rows(table, split, read_schema, schema) if emit_deletes else schema.empty_table()
    rng = InstantRange(instants=frozenset(split.instants)) if split.instants is not None else None
    req = SliceRead(table, read_schema, split.max_instant, rng, MergeType(merge_type))
    rows, deleted = read_slice_changes(req, file_slice(split), with_deletes=emit_deletes)
    existed = _existed_before(table, split, req, rows)
    parts = []
    if changelog and existed is not None:
        parts.append(_with_kind(_pre_images(table, split, req, rows, existed), UPDATE_PRE, schema))
    parts.append(_with_kind(rows, INSERT if existed is None else pc.if_else(existed, UPDATE_POST, INSERT), schema))
    if emit_deletes and deleted is not None and deleted.num_rows:
        parts.append(_with_kind(deleted, DELETE, schema))
    return pa.concat_tables(parts)


def _replaced_rows(table: HudiTable, split: Split, read_schema: pa.Schema, schema: pa.Schema) -> pa.Table:
    """Every row of a file group an insert overwrite replaced, as a delete at the replacing instant."""
    rows = read_slice_changes(SliceRead(table, read_schema, split.max_instant), file_slice(split),
                              with_deletes=False)[0]
    if COMMIT_TIME in rows.column_names:
        idx = rows.schema.get_field_index(COMMIT_TIME)
        rows = rows.set_column(idx, rows.schema.field(idx), pa.array([split.replaced_by] * rows.num_rows, pa.string()))
    return _with_kind(rows, DELETE, schema)


def _read_schema(table: HudiTable, schema: pa.Schema) -> pa.Schema:
    full = table.arrow_schema()
    cfg = table.config
    need = set(schema.names) | {RECORD_KEY, COMMIT_TIME, "_hoodie_is_deleted", *cfg.record_key_fields,
                                *cfg.ordering_fields}
    return pa.schema([f for f in full if f.name in need])


def _with_kind(rows: pa.Table, kinds: str | pa.Array, schema: pa.Schema) -> pa.Table:
    """``rows`` aligned to ``schema`` with their change type: one for all, or one per row."""
    if isinstance(kinds, str):
        kinds = pa.repeat(pa.scalar(kinds, pa.string()), rows.num_rows)
    return align(rows.append_column(CHANGE_TYPE, kinds), schema)


def _before_slice(split: Split) -> FileSlice | None:
    """The base file as it was before the range: the planned base when it is older than every instant in range."""
    if split.base_path is None or split.instants is None or split.base_instant >= min(split.instants):
        return None
    return file_slice(split.model_copy(update={"logs": []}))


def _existed_before(table: HudiTable, split: Split, req: SliceRead, rows: pa.Table) -> pa.Array | None:
    """Per row: was its key already in the table before the range (an update) or not (an insert)?

    Decided from the slice's base file when that predates the range (None: no such file, every row is an
    insert); keys first written to logs before the range count as inserts (the base file is the only version
    read here).
    """
    before = _before_slice(split) if rows.num_rows else None
    if before is None:
        return None
    base_keys = _base_rows(table, before, req, key_only=True)
    return pc.is_in(req.key_array(rows), value_set=req.key_array(base_keys))


def _pre_images(table: HudiTable, split: Split, req: SliceRead, rows: pa.Table, existed: pa.Array) -> pa.Table:
    """The base-file rows of the keys ``rows`` update (``existed``), as they were before the range."""
    before = _before_slice(split)
    base = _base_rows(table, before, req, key_only=False)
    updated = rows.filter(existed)
    return base.filter(pc.is_in(req.key_array(base), value_set=req.key_array(updated)))


def _base_rows(table: HudiTable, before: FileSlice, req: SliceRead, key_only: bool) -> pa.Table:
    schema = req.schema
    if key_only:
        keep = {RECORD_KEY, *table.config.record_key_fields}
        schema = pa.schema([f for f in schema if f.name in keep])
    sub = SliceRead(table, schema, req.max_instant, None, read_optimized=True)
    rows, _ = read_slice_changes(sub, before, with_deletes=False)
    return rows


def consume(table: HudiTable, ranges: list[SplitRange], schema: pa.Schema, target: pa.Schema, *,
            emit_deletes: bool, changelog: bool, merge_type: str, mini_batch: int) -> Iterator[pa.RecordBatch]:
    """Record batches of at most ``mini_batch`` rows for each range, in order, cast to ``target``."""
    for r in ranges:
        changes = split_changes(table, r.split, schema, emit_deletes, changelog, merge_type)
        stop = changes.num_rows if r.stop is None else min(r.stop, changes.num_rows)
        if r.skip >= stop:
            continue
        part = changes.slice(r.skip, stop - r.skip)
        for batch in part.to_batches(max_chunksize=mini_batch):
            yield batch.cast(target) if batch.schema != target else batch
