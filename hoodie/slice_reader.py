"""Reading one file slice into Arrow rows: the base file, the log blocks that count, and their merge.

The modes are the ones Hudi's readers offer (Flink's ``MergeOnReadInputFormat``): base only (read-optimized),
log only (no base file), skip-merge (base rows then every log record, unmerged) and payload-combine (the
real merge). The base file is read and merged in pieces of a fixed number of rows (:func:`slice_pieces`), so a
read holds one piece of it, not the whole file. The output order of a slice is deterministic — per piece, the
base rows the log left alone in file order, then the updated rows in file order; then log-only inserts in log
order — because the streaming consumer resumes a slice by skipping the first N rows it delivered.
"""
from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidTableContentError
from .base_file import open_base_file
from .config import OVERWRITE_WITH_LATEST, TableConfig
from .fs_view import FileSlice
from .logfile.blocks import decode_data_block
from .logfile.delete_records import delete_rows
from .logfile.format import BlockType, HeaderKey, LogBlock
from .merge import BaseMerge, LogRecords, MergeRules, commit_time_deletes, merge_with_base
from .pools import SharedPool
from .scanner import InstantRange, ScanStats, scan_blocks, timed, timed_steps
from .spill import DEFAULT_BUDGET_BYTES, SpillBuffer
from .table import COMMIT_TIME, HIVE_DEFAULT_PARTITION, IS_DELETED, OPERATION, RECORD_KEY, HudiTable
from .timestamp_repair import repair_base, repair_block
from .vectors import bytes_as_vectors, is_vector_cast


class MergeType(str, enum.Enum):
    PAYLOAD_COMBINE = "payload_combine"
    SKIP_MERGE = "skip_merge"


def merge_rules(config: TableConfig) -> MergeRules:
    legacy = config.legacy_merge
    return MergeRules(mode=config.merge_mode, legacy_payload=legacy,
                      log_always_wins=legacy and (config.payload_class in (None, OVERWRITE_WITH_LATEST)))


def _stored_names(names: list[str], renames: dict[str, str]) -> list[str]:
    """The names columns ``names`` have in data whose columns were renamed since (``renames``: old -> new)."""
    old_of = {new: old for old, new in renames.items()}
    return [old_of.get(n, n) for n in names]


def renamed(table: pa.Table, renames: dict[str, str]) -> pa.Table:
    """``table`` with the columns renamed since it was written under today's names."""
    return table.rename_columns([renames.get(n, n) for n in table.column_names]) if renames else table


def align(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns: cast where types differ, nulls where a column is missing.
    A table already so is returned as is (most are: every piece of every file group passes here)."""
    if table.schema.equals(schema, check_metadata=True):
        return table
    names = set(table.column_names)  # a fresh list per access: not once per field
    cols = []
    for f in schema:
        if f.name in names:
            col = table.column(f.name)
            cols.append(col if col.type == f.type else _cast(col, f.type))
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _cast(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """``col`` as ``target``. A struct whose fields cannot be null may still hold nulls in them below null structs
    (a parquet writer stores a null struct's required fields as nulls: Hudi 1.2's BLOB ``reference`` after a
    compaction), which Arrow's cast refuses; those are dropped there, and any other null is refused."""
    if is_vector_cast(col.type, target):
        return bytes_as_vectors(col, target)
    try:
        return col.cast(target)
    except pa.ArrowInvalid:
        if not pa.types.is_struct(target):
            raise
    relaxed = col.cast(_nullable(target))
    return pa.chunked_array([_required(chunk, target) for chunk in relaxed.chunks], target)


def _nullable(t: pa.DataType) -> pa.DataType:
    """``t`` with every field of its structs nullable."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _nullable(f.type), True, f.metadata) for f in t])
    return t


def _required(arr: pa.Array, t: pa.DataType, hidden: pa.Array | None = None, nullable: bool = True) -> pa.Array:
    """``arr`` (of ``_nullable(t)``) as ``t``: the nulls of a field that cannot be null (``nullable`` False) are
    dropped where a struct above it is null (``hidden``), refused anywhere else."""
    mask = arr.is_null()
    if not nullable and arr.null_count:
        if hidden is None or not pc.all(pc.or_(pc.invert(mask), hidden)).as_py():
            raise pa.ArrowInvalid(f"a field of type {t} that cannot be null is null in a struct that is not")
    if pa.types.is_struct(t):
        below = mask if hidden is None else pc.or_(mask, hidden)
        children = [_required(arr.field(i), f.type, below, f.nullable) for i, f in enumerate(t)]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask if nullable and arr.null_count else None)
    if nullable or not arr.null_count:
        return arr
    if pa.types.is_nested(t):
        raise pa.ArrowInvalid(f"a nested field of type {t} that cannot be null is null below a null struct")
    return pa.Array.from_buffers(t, len(arr), [None, *arr.buffers()[1:]], offset=arr.offset)


@dataclass
class SliceRead:
    """What a slice read needs to know about the table and the query."""

    table: HudiTable
    schema: pa.Schema  # columns to produce (read schema: projection plus merge keys)
    max_instant: str | None
    instant_range: InstantRange | None = None
    merge_type: MergeType = MergeType.PAYLOAD_COMBINE
    read_optimized: bool = False
    #: log blocks of these instants are left out (the slice as it was before them)
    without_instants: frozenset[str] = frozenset()
    #: log records held in memory per slice before they spill to disk
    memory_budget: int = DEFAULT_BUDGET_BYTES
    #: an incremental read decodes every log block and keeps the range's rows after merging, on any table
    #: version (a stream: its replay must equal the snapshot, see :func:`decodes_whole_log`)
    whole_log: bool = False

    def key_array(self, t: pa.Table) -> pa.Array:
        cfg = self.table.config
        if RECORD_KEY in t.column_names:
            return pc.cast(t.column(RECORD_KEY), pa.string()).combine_chunks()
        fields = cfg.record_key_fields
        if len(fields) == 1:
            return pc.cast(t.column(fields[0]), pa.string()).combine_chunks()
        parts = [pc.binary_join_element_wise(f, ":", pc.fill_null(pc.cast(t.column(f), pa.string()), "__null__"),
                                             "") for f in fields]
        return pc.binary_join_element_wise(*parts, ",").combine_chunks()

    def ordering_arrays(self, t: pa.Table) -> list[pa.Array]:
        """The ordering field columns of ``t`` as stored, nulls included (the merge decides how they compare)."""
        return [t.column(f).combine_chunks() for f in self.table.config.ordering_fields if f in t.column_names]


#: base rows merged at a time. A slice read holds about one piece of its base file (plus its log records), not
#: the whole file; the pieces are cut at fixed row numbers of the file, so a slice's row order never depends on how
#: Arrow batches a read. Changing it changes that order: bump the stream's offset version (streaming.offsets).
PIECE_ROWS = 131_072


class Piece(NamedTuple):
    """One piece of a slice read: its rows, deleted rows (``with_deletes``) and the earlier state of the keys it
    changed (``before``), each None when not asked for."""

    rows: pa.Table
    deleted: pa.Table | None
    before: pa.Table | None


def read_slice(req: SliceRead, fs: FileSlice, stats: ScanStats | None = None) -> pa.Table:
    """The rows of one file slice under ``req``, in deterministic order, with ``req.schema`` exactly."""
    return read_slice_changes(req, fs, stats, with_deletes=False)[0]


def read_slice_changes(req: SliceRead, fs: FileSlice, stats: ScanStats | None = None,
                       with_deletes: bool = True) -> tuple[pa.Table, pa.Table | None]:
    """Rows of the slice and, with ``with_deletes``, the keys deleted in range with their last known values."""
    return _whole(req, slice_pieces(req, fs, stats, with_deletes), with_deletes)


def _whole(req: SliceRead, pieces: Iterator[Piece], with_deletes: bool) -> tuple[pa.Table, pa.Table | None]:
    """The pieces of a slice read joined: rows, and deleted rows when asked for."""
    got = list(pieces)

    def joined(parts: list[pa.Table | None]) -> pa.Table:
        tables = [t for t in parts if t is not None]
        return pa.concat_tables(tables) if tables else req.schema.empty_table()
    return joined([p.rows for p in got]), (joined([p.deleted for p in got]) if with_deletes else None)


def decodes_whole_log(config: TableConfig) -> bool:
    """Whether an incremental read decodes every log block of a slice and keeps the range's rows after merging
    (v8+: rows are told by their commit time), rather than the range's blocks alone (v6, as Hudi 0.x's scanner
    and so Hudi's incremental query). A v6 table whose nulls keep earlier values needs the older blocks too: a
    change's row takes its null fields from them.

    The stream always decodes the whole log (:attr:`SliceRead.whole_log`): on v6, the range's blocks alone let a
    record that the older blocks outrank (a smaller ordering value, preCombined away in every snapshot) pass for
    a change, and a replay of the stream would then differ from the table (tests/oracle/hudi_oracle:
    mor_v6_015_default_payload, where Hudi 0.15's own incremental query returns that record)."""
    return config.version >= 8 or config.nulls_keep_values


def slice_pieces(req: SliceRead, fs: FileSlice, stats: ScanStats | None = None, with_deletes: bool = False,
                 with_before: bool = False) -> Iterator[Piece]:
    """:func:`_slice_pieces`, with the partition columns filled from the slice's partition path on a table whose
    writer dropped them from its data files (``hoodie.datasource.write.drop.partition.columns``), as Hudi's
    readers fill them."""
    pieces = _slice_pieces(req, fs, stats, with_deletes, with_before)
    fill = _partition_fill(req, fs)
    if fill is None:
        return pieces
    return (Piece(fill(p.rows), None if p.deleted is None else fill(p.deleted),
                  None if p.before is None else fill(p.before)) for p in pieces)


def _partition_fill(req: SliceRead, fs: FileSlice) -> Callable[[pa.Table], pa.Table] | None:
    """A function that sets the read's partition columns to the values of ``fs``'s partition path, or None when
    the table keeps its partition columns in its data files (or none is read)."""
    table = req.table
    if not table.config.drop_partition_columns:
        return None
    values = {}
    for name, text in table.partition_values(fs.partition).items():
        if name not in req.schema.names:
            continue
        ftype = req.schema.field(name).type
        try:
            values[name] = pa.scalar(None if text == HIVE_DEFAULT_PARTITION else text, pa.string()).cast(ftype)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise InvalidTableContentError(f"{table.url}: partition path {fs.partition!r}: value {text!r} of the "
                                           f"dropped partition column {name} is not a {ftype} ({exc})") from exc
    if not values:
        return None

    def fill(t: pa.Table) -> pa.Table:
        for name, value in values.items():
            t = t.set_column(t.schema.get_field_index(name), t.schema.field(name),
                             pa.repeat(value, t.num_rows))
        return t
    return fill


def _slice_pieces(req: SliceRead, fs: FileSlice, stats: ScanStats | None, with_deletes: bool,
                  with_before: bool) -> Iterator[Piece]:
    """A slice read a piece at a time: one piece per :data:`PIECE_ROWS` base rows (file order), then one for
    the log records no base row consumed. Concatenated, the pieces are the slice's rows in its fixed order.

    Only the base file is read piece by piece; the log records are read first, whole (the spill buffer bounds
    them). No piece is referenced here once it is handed on (the pieces go through ``map``, not loop variables,
    which would keep the last one alive while the next is read): a consumer that drops each piece holds one.

    ``with_before`` (incremental reads of an explicit set of instants that decode the whole log, whose range did
    not write the base file) adds the earlier state of the keys each piece changed: the slice as it was before the
    range's instants (base rows merged with the log blocks of every other instant), restricted to those keys,
    from the same base rows and decoded blocks — v6 reads decode just the range's blocks, so they cannot
    (unless :func:`decodes_whole_log`).
    """
    before = None
    whole_log = req.whole_log or decodes_whole_log(req.table.config)
    if with_before:
        if not whole_log or req.instant_range is None or req.instant_range.instants is None:
            raise ValueError("the earlier state needs a read of the whole log over an explicit set of instants")
        before = req.instant_range.instants
    empty = req.schema.empty_table()
    none_deleted = empty if with_deletes else None
    if req.read_optimized or not fs.log_files:
        def unmerged(base: pa.Table) -> Piece:
            rows = _filter_range(req, base)
            return Piece(rows, none_deleted, rows if before is not None else None)
        yield from map(unmerged, timed_steps(_base_pieces(req, fs), stats, "base_read_seconds"))
        return
    # the first piece is read while the log is decoded (a slice of log files only has no piece to read ahead)
    base_pieces = timed_steps(_read_ahead(timed_steps(_base_pieces(req, fs), stats, "base_read_seconds")), stats,
                              "base_wait_seconds") if fs.base_file is not None else iter(())
    cfg = req.table.config
    is_committed = req.table.is_committed if cfg.version < 8 else None
    # a read of an instant range leaves log compactions' blocks out: their records carry the log compaction's
    # instant, not the write's (the blocks they repeat are read instead)
    blocks = scan_blocks(req.table.storage, [(lf.path, lf.size) for lf in fs.log_files], req.max_instant,
                         is_committed, None if whole_log else req.instant_range, stats, req.without_instants,
                         skip_log_compaction=req.instant_range is not None)
    with timed(stats, "log_records_seconds"):
        log = _log_records(req, blocks, stats)
    del blocks  # the log files' bytes: what the read needs of them is decoded now
    rules = merge_rules(cfg)
    merge = BaseMerge(log, rules, stats) if log is not None and req.merge_type is MergeType.PAYLOAD_COMBINE else None

    def combine(base: pa.Table | None, records: LogRecords | None) -> pa.Table:
        """The merged rows of ``base`` and ``records`` (one merge on its own: the earlier state)."""
        if req.merge_type is MergeType.SKIP_MERGE:
            parts = [t for t in (base, _upserts(records)) if t is not None]
            return pa.concat_tables(parts) if parts else empty
        if records is None:
            return base if base is not None else empty
        return merge_with_base(base, req.key_array(base) if base is not None else None,
                               req.ordering_arrays(base) if base is not None else None, records, rules)[0]

    def finish(base: pa.Table | None, out: pa.Table, deleted: pa.Table | None) -> Piece:
        out, deleted = _filter_range(req, out), (_filter_range(req, deleted) if deleted is not None else None)
        if before is None:
            return Piece(out, deleted, None)
        # the earlier state of just the keys the piece changed: base rows and older records of those keys
        changed = pa.concat_arrays([req.key_array(t) for t in (out, deleted) if t is not None and t.num_rows]
                                   or [pa.array([], pa.string())])
        prior_base = base.filter(pc.is_in(req.key_array(base), value_set=changed)) if base is not None else None
        earlier = None
        if log is not None and len(changed):
            assert log.instants is not None  # _log_records records the instant of every block
            keep = ~np.isin(log.instants, list(before))
            earlier = log.where(keep & pc.is_in(log.keys, value_set=changed).to_numpy(zero_copy_only=False))
        return Piece(out, deleted, combine(prior_base, earlier))

    def merged(base: pa.Table) -> Piece:
        if merge is None:
            return finish(base, base, none_deleted)
        return finish(base, *merge.piece(base, req.key_array(base), req.ordering_arrays(base), with_deletes))
    yield from map(merged, base_pieces)
    if merge is not None:
        yield finish(None, *merge.tail(with_deletes))
    elif log is not None:  # skip-merge: every log record after the base rows, unmerged
        yield finish(None, _upserts(log) or empty, none_deleted)


def _upserts(records: LogRecords | None) -> pa.Table | None:
    """The log records that are not deletes, in log order (a skip-merge read's log part)."""
    return records.table.filter(pa.array(~records.is_delete)) if records is not None else None


def _base_pieces(req: SliceRead, fs: FileSlice) -> Iterator[pa.Table]:
    """The base file's rows (``req.schema``'s columns) in pieces of exactly :data:`PIECE_ROWS` rows, the last
    one shorter; nothing for a slice without a base file. Any base file format (:mod:`.base_file`): the pieces
    are cut from the format's batches, so they are the same rows whatever the format batches by."""
    if fs.base_file is None:
        return
    renames = req.table.renames(fs.base_file.instant)
    with contextlib.closing(open_base_file(req.table.storage, fs.base_file.path, fs.base_file.size)) as f:
        names = set(f.names)
        present = [c for c in _stored_names(req.schema.names, renames) if c in names]
        if not present:  # nothing to read but the row count
            yield commit_times(req, align(pa.table({"": pa.nulls(f.num_rows)}).select([]), req.schema),
                               fs.base_file.instant)
            return
        held: list[pa.RecordBatch] = []  # the rows read and not handed on yet, and nothing else
        n = 0
        for batch in f.batches(present, PIECE_ROWS):
            held.append(batch)
            n += batch.num_rows
            del batch  # not kept alive by the loop while the next batch is read
            while n >= PIECE_ROWS:
                n -= PIECE_ROWS
                yield _aligned_base(req, renamed(_first_rows(held, PIECE_ROWS), renames), fs.base_file.instant)
        if n:
            yield _aligned_base(req, renamed(pa.Table.from_batches(held), renames), fs.base_file.instant)


def _aligned_base(req: SliceRead, rows: pa.Table, instant: str) -> pa.Table:
    """Base file rows in the read's schema: mislabelled millisecond timestamps repaired, commit times filled."""
    return commit_times(req, align(repair_base(rows, req.schema), req.schema), instant)


def commit_times(req: SliceRead, t: pa.Table, instant: str | None) -> pa.Table:
    """``t`` with its commit time column set to ``instant`` where the data holds none: on a table without meta
    fields (``hoodie.populate.meta.fields=false``) a row's commit is the instant of the base file or log block
    that holds it — exact for log blocks and for the base files of inserts; a base file a copy-on-write upsert
    rewrote stamps the rows it carried over too, which a read of changes tells apart against the prior slice."""
    if (req.table.config.populate_meta_fields or instant is None or COMMIT_TIME not in t.column_names
            or t.column(COMMIT_TIME).null_count < t.num_rows):
        return t
    i = t.schema.get_field_index(COMMIT_TIME)
    return t.set_column(i, t.schema.field(i), pa.repeat(pa.scalar(instant, pa.string()), t.num_rows))


#: the threads that read base files ahead: one per slice read at the same time in this process (up to four)
_READ_AHEAD = SharedPool(4, "hoodie-base")


def _read_ahead(pieces: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """``pieces``, the next one always being read in another thread while the caller works on the one it has
    (the first is asked for at once): Arrow decodes the base file without the GIL and an object store's requests
    wait without it, so the read overlaps the log's read and decode and each piece's merge. Two pieces are held
    at a time, the current one and the next. The thread is the process's (:mod:`.pools`), not one per read."""
    reader = _READ_AHEAD.executor()
    pending = reader.submit(next, pieces, None)

    def ahead() -> Iterator[pa.Table]:
        nonlocal pending
        try:
            while (piece := pending.result()) is not None:
                pending = reader.submit(next, pieces, None)
                yield piece
                del piece  # not held while the next one is awaited
        finally:
            pending.cancel()  # a read stopped early: the next piece, unless its read has started
    return ahead()


def _first_rows(held: list[pa.RecordBatch], rows: int) -> pa.Table:
    """The first ``rows`` rows of ``held`` (zero-copy), which keeps the rest."""
    table = pa.Table.from_batches(held)
    held[:] = table.slice(rows).to_batches()
    return table.slice(0, rows)


def _filter_range(req: SliceRead, t: pa.Table) -> pa.Table:
    """Incremental reads keep only rows written by the instants in range (by ``_hoodie_commit_time``)."""
    rng = req.instant_range
    if rng is None or t.num_rows == 0:
        return t
    ct = t.column("_hoodie_commit_time")
    mask = pc.is_valid(ct)
    if rng.instants is not None:
        mask = pc.and_(mask, pc.is_in(ct, value_set=pa.array(sorted(rng.instants), pa.string())))
    if rng.start is not None:
        mask = pc.and_(mask, pc.greater(ct, rng.start))
    if rng.end is not None:
        mask = pc.and_(mask, pc.less_equal(ct, rng.end))
    return t.filter(pc.fill_null(mask, False))


def _log_records(req: SliceRead, blocks: list[LogBlock], stats: ScanStats | None) -> LogRecords | None:
    """All counted log records of a slice as one aligned table plus the per-record merge flags."""
    schema, cfg = req.schema, req.table.config
    buffer = SpillBuffer(req.memory_budget)
    keys, ordering, is_delete, ctd, from_block, absent_cols = [], [], [], [], [], {}
    partial_rows: list[tuple[int, int, set[str]]] = []
    null_rows: list[tuple[int, dict[str, np.ndarray]]] = []
    sizes = []
    offset = 0
    for block in blocks:
        if block.type is BlockType.DELETE:
            rows, c = delete_rows(block, schema, cfg.record_key_fields, cfg.ordering_fields,
                                  lambda: _table_avro_schema(req))
            t = align(rows, schema)
            d = np.ones(t.num_rows, bool)
            o = req.ordering_arrays(t)
            from_block.append(np.ones(t.num_rows, bool))
        else:
            renames = req.table.renames(block.instant_time) if block.instant_time else {}
            with timed(stats, "log_decode_seconds"):
                raw = renamed(decode_data_block(block, columns=_stored_names(schema.names, renames)), renames)
            raw = repair_block(raw, schema, block.schema_json)
            t = commit_times(req, align(raw, schema), block.instant_time)
            d = _deleted_flags(raw, cfg)
            o = req.ordering_arrays(t)
            c = commit_time_deletes(d, o)
            from_block.append(np.zeros(t.num_rows, bool))
            if block.header.get(HeaderKey.IS_PARTIAL, "").lower() == "true":
                partial_rows.append((offset, t.num_rows, set(raw.column_names)))
            if cfg.nulls_keep_values:
                null_rows.append((offset, _null_fields(t, d)))
            if cfg.unavailable_marker is not None:
                null_rows.append((offset, _marked_fields(t, d, cfg.unavailable_marker)))
        buffer.append(t)
        keys.append(req.key_array(t))
        ordering.append(o)
        is_delete.append(d)
        ctd.append(c)
        sizes.append(t.num_rows)
        offset += t.num_rows
    table = buffer.table()
    if table is None:
        return None
    if stats is not None:
        stats.spilled_bytes += buffer.spilled_bytes
    if partial_rows or null_rows:
        # a column a record does not supply comes from an earlier version: absent from a partial block, or null
        # where nulls keep values
        for name in schema.names:
            mask = np.zeros(offset, bool)
            for start, n, carried in partial_rows:
                mask[start:start + n] = name not in carried
            for start, nulls in null_rows:
                if name in nulls:
                    mask[start:start + len(nulls[name])] |= nulls[name]
            absent_cols[name] = mask
    return LogRecords(table=table, keys=pa.concat_arrays(keys),
                      ordering=[pa.concat_arrays(list(cols)) for cols in zip(*ordering)],
                      is_delete=np.concatenate(is_delete), commit_time_delete=np.concatenate(ctd),
                      from_delete_block=np.concatenate(from_block), absent=absent_cols,
                      instants=np.repeat(np.array([b.instant_time for b in blocks], dtype=object), sizes))


def _null_fields(t: pa.Table, deleted: np.ndarray) -> dict[str, np.ndarray]:
    """Per data column with nulls, the records (deletes left out: a delete supplies every column) where it is
    null."""
    return {name: pc.is_null(t.column(name)).to_numpy(zero_copy_only=False) & ~deleted
            for name in t.column_names if not name.startswith("_hoodie_") and t.column(name).null_count}


def _marked_fields(t: pa.Table, deleted: np.ndarray, marker: str) -> dict[str, np.ndarray]:
    """Per string column holding the unavailable-value marker (partial update mode FILL_UNAVAILABLE), the records
    (deletes left out) where it does: those keep the column's earlier value, as Hudi's merge fills them."""
    out = {}
    for name in t.column_names:
        col = t.column(name)
        if not name.startswith("_hoodie_") and pa.types.is_string(col.type):
            hits = pc.fill_null(pc.equal(col, marker), False).to_numpy(zero_copy_only=False) & ~deleted
            if hits.any():
                out[name] = hits
    return out


def _deleted_flags(t: pa.Table, config: TableConfig) -> np.ndarray:
    """Deletes among decoded log records: ``_hoodie_is_deleted``, a delete ``_hoodie_operation``, or the table's
    custom delete marker in its delete field."""
    flags = np.zeros(t.num_rows, bool)
    if config.delete_field is not None and config.delete_field in t.column_names:
        value = pc.cast(t.column(config.delete_field), pa.string())
        flags |= pc.fill_null(pc.equal(value, config.delete_marker), False).to_numpy(zero_copy_only=False)
    if IS_DELETED in t.column_names:
        flags |= pc.fill_null(t.column(IS_DELETED), False).to_numpy(zero_copy_only=False)
    if OPERATION in t.column_names:
        flags |= pc.fill_null(pc.is_in(t.column(OPERATION), value_set=pa.array(["D", "-U"])),
                              False).to_numpy(zero_copy_only=False)
    return flags


def _table_avro_schema(req: SliceRead) -> dict | None:
    """The table's Avro schema, for the unit of a timestamp ordering field in delete blocks: the create schema
    answers without the timeline (Hudi assumes an ordering field keeps its type, HUDI-8682)."""
    text = req.table.config.create_schema
    return json.loads(text) if text else req.table.avro_schema(req.max_instant)
