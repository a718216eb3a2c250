"""Upper bounds of the rows a split yields, which the driver's row limit relies on (``streaming.admission.admit``).

An incremental split is bounded from the write stats of its range (:func:`row_bound`), a whole file slice (a
snapshot split, or every row of a replaced file group as a delete) from the write stats of the instants that
wrote its files (:func:`slice_bound`), or where they cannot tell from its files (:func:`slice_rows`): its base
file's footer row count plus every record of its log files. Stats first: a task reads the files anyway, and
the driver reading them too, footer by footer and log by log, cost a wide table minutes before its first batch.
So the planner only uses the stats and leaves a slice they cannot bound unbounded (``Split.est_rows`` None); the
driver reads its files (:func:`slices_rows`, in parallel) only when a row limit needs that split's bound.
"""
from __future__ import annotations

import posixpath
import struct
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from ..hoodie.base_file import base_file_rows
from ..hoodie.fs_view import FileSlice
from ..hoodie.logfile.blocks import decode_data_block, decode_delete_block
from ..hoodie.logfile.format import BlockType, LogBlock, parse_log_file_name
from ..hoodie.logfile.reader import read_log_file
from ..hoodie.storage import Storage
from ..hoodie.timeline.metadata import WriteStat

__all__ = ["FILE_READERS", "file_rows", "row_bound", "slice_bound", "slice_rows", "slices_rows"]

#: threads reading commit metadata, or footers and log files, to bound whole file slices (I/O bound)
FILE_READERS = 8


def slice_bound(s: FileSlice, written: Mapping[str, Sequence[WriteStat]], first_active: str | None) -> int | None:
    """An upper bound of the rows a whole file slice yields (as :func:`slice_rows` bounds them), from write stats
    alone, or None when they cannot give one.

    ``written``: file name → the stats naming it, from every completed write of the active timeline from the
    slice's files' instants on (``first_active``: its first write; a file's writers are its own instant, or on
    v6 for a log file the slice's base instant, and later ones). A base file holds the records its stat wrote
    (``numWrites``, every record of the file, as Hudi's create and merge handles count them); a log file the
    data and delete records of every completed append to it. A file of an archived instant (some writers may
    be archived too), or one no stat names or whose stats count nothing (a writer that leaves the counters out),
    gives none. Appends of failed writes are in no completed stat, and their blocks yield no rows."""
    total = 0
    files = [(s.base_file.path, s.base_file.instant, True)] if s.base_file else []
    files += [(lf.path, lf.instant, False) for lf in s.log_files]
    for path, instant, base in files:
        stats = written.get(posixpath.basename(path))
        if first_active is None or instant < first_active or not stats or \
                all(st.num_writes + st.num_deletes == 0 for st in stats):
            return None
        total += sum(st.num_writes + (0 if base else st.num_deletes) for st in stats)
    return total


def slice_rows(storage: Storage, s: FileSlice) -> int:
    """An upper bound of the rows a whole file slice yields (a snapshot split, or every row of a replaced file
    group as a delete): its base file's row count (its footer) plus every record of its log files."""
    return (file_rows(storage, s.base_file.path, s.base_file.size) if s.base_file else 0) + \
        sum(file_rows(storage, lf.path) for lf in s.log_files)


def slices_rows(storage: Storage, slices: Sequence[FileSlice]) -> list[int]:
    """:func:`slice_rows` of each slice, read in parallel (``FILE_READERS`` threads: a footer and the logs per
    slice, each a round trip to an object store)."""
    if len(slices) <= 1:
        return [slice_rows(storage, s) for s in slices]
    with ThreadPoolExecutor(min(FILE_READERS, len(slices))) as pool:
        return list(pool.map(lambda s: slice_rows(storage, s), slices))


def file_rows(storage: Storage, path: str, size: int | None = None) -> int:
    """Records in one data file, read from the file: a base file's footer row count (``size``: its listed size,
    which spares an object store the request asking for it), or a log file's data and delete records (every
    block, rolled back or not: an upper bound). 0 for a file that is gone — the split's reader reports that as
    data loss."""
    try:
        if parse_log_file_name(posixpath.basename(path)) is None:
            return base_file_rows(storage, path, size)
        return sum(_block_records(b) for b in read_log_file(storage, path))
    except FileNotFoundError:
        return 0


_I32_PAIR = struct.Struct(">ii")


def _block_records(block: LogBlock) -> int:
    """Records in one log block (0 for commands and corrupt blocks, which add no rows)."""
    try:
        if block.type in (BlockType.AVRO_DATA, BlockType.CDC_DATA) and len(block.content) >= 8:
            version, count = _I32_PAIR.unpack_from(block.content)
            if version >= 2:  # version 1 has no record count
                return count
        if block.type is BlockType.PARQUET_DATA:
            import pyarrow.parquet as pq  # here: only parquet log blocks need it

            return pq.ParquetFile(pa.BufferReader(block.content)).metadata.num_rows
        if block.type is BlockType.DELETE:
            return len(decode_delete_block(block))
        return decode_data_block(block).num_rows if block.is_data else 0
    except Exception:  # noqa: BLE001 - a block the reader cannot decode fails the read itself, with the reason
        return 0


def row_bound(s: FileSlice, stats: list[WriteStat], changelog: bool, rows_of: Callable[[str], int]) -> int:
    """An upper bound of the rows an incremental split of slice ``s`` yields, from the write stats of its range.

    Per stat: ``data`` records written (a log file: ``numWrites``, every record it holds; a base file the range
    wrote: ``numInserts + numUpdateWrites`` when they account for its records, as Hudi's merge handle counts
    them, else ``numWrites``, the whole file), and ``numDeletes``. Upsert mode yields at most one row per
    written record and per delete; rows that were also in the range's new base file number at most its
    records. Changelog mode adds one pre-image per update (``numUpdateWrites``, or every written record when
    the stats' inserts and updates do not add up to its records). A stat that counts nothing for a file it
    wrote (a writer that leaves the counters out) is replaced by the file's own record count
    (``rows_of(path)``, e.g. :func:`file_rows`; every file of the slice when the stat names none), taken twice in
    changelog mode.
    """
    data = pre = deletes = 0
    base_rows: int | None = None
    log_data = 0
    for st in stats:
        is_log = st.path is not None and parse_log_file_name(posixpath.basename(st.path)) is not None
        if st.num_writes + st.num_deletes == 0:  # nothing counted: count the file (deletes too)
            d = records = rows_of(st.path) if st.path else sum(rows_of(f) for f in s.files)
            pre += d
        else:
            classified = st.num_inserts + st.num_update_writes
            d = st.num_writes if is_log or not 0 < classified <= st.num_writes else classified
            records = st.num_writes
            pre += st.num_update_writes if classified == d else d
            deletes += st.num_deletes
        data += d
        if is_log:
            log_data += d
        elif s.base_file is not None and st.path == s.base_file.path:
            base_rows = records
    if changelog:
        return data + pre + deletes
    return (data if base_rows is None else min(data, base_rows + log_data)) + deletes
