"""The table writer: create a table, then upsert / insert / delete, each write one crash-safe instant.

See the package docstring (``hudi_streaming.writer``) for the API and the on-disk protocol.
"""
from __future__ import annotations

import io
import logging
import posixpath
import struct
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import InvalidTableContentError, OptionError, UnsupportedTableError
from ..hoodie.config import DEFAULT_PAYLOAD, OVERWRITE_WITH_LATEST, MergeMode, TableConfig, TableType, load_table_config
from ..hoodie.fs_view import FileSlice, parse_log_file
from ..hoodie.logfile.format import (
    COMMIT_TIME_DELETE,
    CONTENT_VERSION,
    BlockType,
    HeaderKey,
    Ordering,
    make_log_file_name,
)
from ..hoodie.logfile.writer import encode_block, encode_delete_block
from ..hoodie.merge import LogRecords, commit_time_deletes, fill_ordering, merge_with_base
from ..hoodie.slice_reader import SliceRead, align, merge_rules
from ..hoodie.storage import FileInfo, Storage
from ..hoodie.table import HIVE_DEFAULT_PARTITION, IS_DELETED, HudiTable
from . import schema as sch
from . import services
from .avro_encode import encode_records
from .files import MARKER_DIR, TableFiles, rel_path
from .index import RecordIndex
from .props import render_properties
from .timeline_io import TimelineFiles, commit_metadata, encode_commit_metadata, write_stat

if TYPE_CHECKING:
    from typing_extensions import Unpack

log = logging.getLogger(__name__)

TableTypeName = Literal["MERGE_ON_READ", "COPY_ON_WRITE"]
MergeModeName = Literal["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"]
#: what an insert does with a key the table has: leave it (drop the incoming record), fail, or update it
OnExisting = Literal["drop", "fail", "upsert"]
#: data to write: one table, one batch, or batches (of one schema)
Data: TypeAlias = "pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch]"


class WriterOptions(TypedDict, total=False):
    """The options of a writer (:class:`HudiWriter`'s keyword arguments), which :func:`create_table` and
    :meth:`HudiWriter.open` pass on."""

    max_file_records: int
    parquet_compression: str
    auto_recover: bool
    max_log_block_records: int | None

STRATEGY_EVENT_TIME = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
_KEYGEN_CLASS = {"SIMPLE": "org.apache.hudi.keygen.SimpleKeyGenerator",
                 "COMPLEX": "org.apache.hudi.keygen.ComplexKeyGenerator",
                 "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedKeyGenerator"}
# internal columns of a prepared batch
_KEY, _PART = "__hoodie_key", "__hoodie_partition"
_I32 = struct.Struct(">i")


# ---------------------------------------------------------------------------------------------------------------
# table creation

def create_table(url: str, name: str, schema: pa.Schema, *, record_key: str | Iterable[str],
                 partition_fields: str | Iterable[str] = (), ordering_field: str | None = None,
                 table_type: TableTypeName | TableType = "MERGE_ON_READ", version: Literal[6, 9] = 9,
                 merge_mode: MergeModeName | MergeMode | None = None, hive_style: bool = True,
                 database: str = "default", storage_options: dict | None = None,
                 **writer_options: Unpack[WriterOptions]) -> HudiWriter:
    """Create an empty Hudi table at ``url`` and return a writer for it (see the package docstring).

    Parameters:
        url: the table's root folder (local path or fsspec URL); it must not hold a table yet.
        name: the table's name (``hoodie.table.name``); its Avro record is ``<name>_record``.
        schema: the data columns (without Hudi's meta columns); fixed for the table's life.
        record_key: the field, or fields, whose values make a record's key (several: Hudi's complex keys
            ``f1:v1,f2:v2``).
        partition_fields: the field, or fields, whose values make a record's partition path; none: one
            unpartitioned table.
        ordering_field: the field whose greatest value wins among versions of a record (Hudi's precombine /
            ordering field); None: the latest write wins.
        table_type: ``"MERGE_ON_READ"`` (updates and deletes go to log files) or ``"COPY_ON_WRITE"`` (each write
            rewrites the base files it touches).
        version: the table version, 6 (Hudi 0.14/0.15) or 9 (Hudi 1.1+).
        merge_mode: ``"EVENT_TIME_ORDERING"`` (the ordering field decides; the default with an ordering field)
            or ``"COMMIT_TIME_ORDERING"`` (the latest write wins; the default without one); on version 6 the
            matching payload class.
        hive_style: partition paths as ``field=value`` (else the bare values).
        database: the table's database name (``hoodie.database.name``).
        storage_options: fsspec options for the table's store.
        writer_options: the options of the returned writer (:class:`HudiWriter`).

    Raises :class:`OptionError` for a bad argument (a field not in ``schema``, a ``merge_mode`` the fields
    do not allow, a type with no Avro equivalent) or when ``url`` holds a table already.
    """
    record_keys = [record_key] if isinstance(record_key, str) else list(record_key)
    partitions = [partition_fields] if isinstance(partition_fields, str) else list(partition_fields)
    try:
        kind = TableType(table_type.upper())
    except ValueError:
        raise OptionError(f"table_type must be MERGE_ON_READ or COPY_ON_WRITE, not {table_type!r}") from None
    if version not in (6, 9):
        raise OptionError(f"version must be 6 or 9 (the latest), not {version!r}")
    names = set(schema.names)
    for f in record_keys + partitions + ([ordering_field] if ordering_field else []):
        if f not in names:
            raise OptionError(f"field {f!r} is not in the schema {schema.names}")
    if not record_keys:
        raise OptionError("at least one record key field is needed")
    try:
        mode = MergeMode((merge_mode or ("EVENT_TIME_ORDERING" if ordering_field else "COMMIT_TIME_ORDERING")).upper())
    except ValueError:
        raise OptionError(f"merge_mode must be EVENT_TIME_ORDERING or COMMIT_TIME_ORDERING, not "
                          f"{merge_mode!r}") from None
    if mode is MergeMode.CUSTOM:
        raise OptionError("merge_mode CUSTOM is not supported by this writer")
    if mode is MergeMode.EVENT_TIME_ORDERING and not ordering_field:
        raise OptionError("EVENT_TIME_ORDERING needs an ordering_field")
    avro = sch.avro_schema_from_arrow(schema, name)
    storage = Storage(url, storage_options)
    if storage.exists(".hoodie/hoodie.properties"):
        raise OptionError(f"{url}: a Hudi table already exists there")
    keygen = ("NON_PARTITION" if not partitions and len(record_keys) == 1
              else "SIMPLE" if len(record_keys) == 1 and len(partitions) == 1 else "COMPLEX")
    props: dict[str, str] = {
        "hoodie.table.name": name,
        "hoodie.database.name": database,
        "hoodie.table.type": kind.value,
        "hoodie.table.version": str(version),
    }
    if version >= 8:
        props.update({"hoodie.table.initial.version": str(version), "hoodie.timeline.layout.version": "2",
                      "hoodie.timeline.path": "timeline", "hoodie.timeline.history.path": "history",
                      "hoodie.table.format": "native"})
    else:
        props["hoodie.timeline.layout.version"] = "1"
    props["hoodie.archivelog.folder"] = "archived"
    props["hoodie.table.recordkey.fields"] = ",".join(record_keys)
    if partitions:
        props["hoodie.table.partition.fields"] = ",".join(partitions)
    if ordering_field:
        props["hoodie.table.ordering.fields" if version >= 9 else "hoodie.table.precombine.field"] = ordering_field
    if version >= 8:
        props["hoodie.table.keygenerator.type"] = keygen
        props["hoodie.record.merge.mode"] = mode.value
    else:
        props["hoodie.table.keygenerator.class"] = _KEYGEN_CLASS[keygen]
        props["hoodie.compaction.payload.class"] = (DEFAULT_PAYLOAD if mode is MergeMode.EVENT_TIME_ORDERING
                                                    else OVERWRITE_WITH_LATEST)
        props["hoodie.compaction.record.merger.strategy"] = STRATEGY_EVENT_TIME  # 0.x: the payload-based merger
    props.update({
        "hoodie.datasource.write.hive_style_partitioning": "true" if hive_style else "false",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.populate.meta.fields": "true",
        "hoodie.table.timeline.timezone": "UTC",
        "hoodie.table.create.schema": sch.schema_text(avro),
        "hoodie.table.checksum": str(zlib.crc32(f"{database}.{name}".encode())),
    })
    fs = storage.fs
    fs.makedirs(storage.full(".hoodie"), exist_ok=True)
    for sub in (".hoodie/.aux", MARKER_DIR, ".hoodie/.schema", ".hoodie/archived"):
        fs.makedirs(storage.full(sub), exist_ok=True)
    if version >= 8:
        fs.makedirs(storage.full(".hoodie/timeline/history"), exist_ok=True)
    # hoodie.properties last: its presence makes the folder a table
    storage.write_bytes_atomic(".hoodie/hoodie.properties", render_properties(
        props, f"Properties saved on {time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime())}Z"))
    return HudiWriter(url, storage_options=storage_options, **writer_options)


# ---------------------------------------------------------------------------------------------------------------
# the writer

@dataclass
class _GroupWrite:
    """What one write does to one file group."""

    partition: str
    file_id: str
    new: bool
    records: pa.Table | None = None  # incoming rows (data columns + _KEY/_PART), inserts and updates
    n_updates: int = 0
    deletes: pa.Table | None = None  # _KEY, _PART and the ordering value (or null) of each delete
    slice: FileSlice | None = None
    task: int = 0
    stat: dict = field(default_factory=dict)


class HudiWriter:
    """Writes one Hudi table (single writer). Obtain with :func:`create_table` or :meth:`open`.

    Parameters:
        url: the table's root folder (local path or fsspec URL).
        storage_options: fsspec options for the table's store.
        max_file_records: the record count at which a file group stops taking new keys: new keys fill the file
            groups of their partition holding fewer records (MOR: appended to the log, COW: the base file is
            rewritten), then go to new file groups.
        parquet_compression: the codec of the base files written (a pyarrow ``compression``).
        auto_recover: every write and table service first rolls back what a killed writer left pending
            (:meth:`recover`).
        max_log_block_records: at most this many records per Avro data block of a log append (None: one block
            per append; Hudi cuts blocks by bytes instead, ``hoodie.logfile.data.block.max.size``).

    Raises :class:`OptionError` for a bad option, :class:`UnsupportedTableError` for a table it cannot write.
    """

    def __init__(self, url: str, *, storage_options: dict | None = None, max_file_records: int = 100_000,
                 parquet_compression: str = "snappy", auto_recover: bool = True,
                 max_log_block_records: int | None = None):
        self.url = url
        self.storage_options = storage_options
        self.storage = Storage(url, storage_options)
        self.config: TableConfig = load_table_config(self.storage)
        if self.config.version not in (6, 8, 9):
            raise UnsupportedTableError(f"{url}: table version {self.config.version} cannot be written")
        if not self.config.populate_meta_fields:
            raise UnsupportedTableError(f"{url}: tables without meta fields cannot be written")
        if self.config.url_encode_partitions:
            raise UnsupportedTableError(f"{url}: url-encoded partition paths are not supported by this writer")
        self.max_file_records = max_file_records
        if max_log_block_records is not None and max_log_block_records < 1:
            raise OptionError(f"max_log_block_records must be at least 1, not {max_log_block_records}")
        self.max_log_block_records = max_log_block_records
        self.compression = parquet_compression
        self.timeline = TimelineFiles(self.storage, self.config)
        self.files = TableFiles(self.storage)
        self.auto_recover = auto_recover
        t = HudiTable(url, storage_options)
        avro = t.avro_schema()
        if avro is None:
            raise UnsupportedTableError(f"{url}: the table has no schema (hoodie.table.create.schema)")
        self.avro = avro
        self.avro_with_meta = sch.with_meta_fields(avro)
        self.schema_json = sch.schema_text(avro)
        self.schema_with_meta_json = sch.schema_text(self.avro_with_meta)
        self.arrow_schema = sch.arrow_schema(self.avro_with_meta)
        self.parquet_schema = sch.parquet_schema(self.avro_with_meta)
        self.data_schema = pa.schema([f for f in self.arrow_schema if f.name not in sch.META_FIELDS])
        self._index: RecordIndex | None = None
        self._known_partitions: set[str] = set()
        #: extra metadata (string → string) for the next write's commit metadata, reset after it
        self.extra_metadata: dict[str, str] = {}

    @classmethod
    def open(cls, url: str, *, storage_options: dict | None = None, **options: Unpack[WriterOptions]) -> HudiWriter:
        """A writer of the existing table at ``url``: the same as ``HudiWriter(url, ...)``."""
        return cls(url, storage_options=storage_options, **options)

    # -- public write API --------------------------------------------------------------------------------------
    def upsert(self, data: Data) -> str:
        """Insert new keys and update existing ones; returns the instant time of the write.

        ``data``: the records, with the table's data columns (a missing column is null; a column of another type
        is cast to the table's). Records of one key are combined first: the greatest ordering value wins, ties
        go to the later record. A record whose ``_hoodie_is_deleted`` (a column of the schema, if it has one) is
        true deletes its key.
        """
        return self._write("UPSERT", records=self._prepare(data))

    def insert(self, data: Data, *, on_existing: OnExisting = "drop") -> str:
        """Insert records; returns the instant time of the write.

        ``data``: the records, as for :meth:`upsert`. ``on_existing``: what happens to a record whose key the
        table has: ``"drop"`` drops it (Hudi's ``hoodie.datasource.insert.dup.policy=drop``), ``"fail"`` fails
        the write with nothing written, ``"upsert"`` updates the key as :meth:`upsert` does."""
        if on_existing not in ("drop", "fail", "upsert"):
            raise OptionError(f"on_existing must be drop, fail or upsert, not {on_existing!r}")
        return self._write("INSERT", records=self._prepare(data), on_existing=on_existing)

    def delete(self, keys: Data) -> str:
        """Delete the records whose key (and partition) fields are given; unknown keys are ignored. Returns the
        instant time of the write.

        ``keys``: the record key and partition fields of the records to delete, and optionally the ordering
        field. With an ordering field column present (event-time tables), each delete carries that ordering value
        and loses to a stored record with a greater one; without it the deletes win by commit time.
        """
        return self._write("DELETE", deletes=self._prepare_deletes(data_table(keys)))

    # -- input preparation -------------------------------------------------------------------------------------
    def _prepare(self, data: Data) -> pa.Table:
        t = data_table(data)
        extra = [c for c in t.column_names if c not in self.data_schema.names]
        if extra:
            raise OptionError(f"columns {extra} are not in the table schema {self.data_schema.names}")
        cols = []
        for f in self.data_schema:
            if f.name in t.column_names:
                col = t.column(f.name)
                cols.append(col if col.type == f.type else _cast(col, f.type, f.name))
            else:
                cols.append(pa.nulls(t.num_rows, f.type))
        t = pa.Table.from_arrays(cols, schema=self.data_schema)
        t = self._with_keys(t)
        return self._combine(t)

    def _prepare_deletes(self, t: pa.Table) -> pa.Table:
        need = self.config.record_key_fields + self.config.partition_fields
        missing = [c for c in need if c not in t.column_names]
        if missing:
            raise OptionError(f"delete needs the key and partition fields {need}; missing {missing}")
        cols = {}
        for name in need + [o for o in self.config.ordering_fields if o in t.column_names]:
            f = self.data_schema.field(name)
            col = t.column(name)
            cols[name] = col if col.type == f.type else _cast(col, f.type, name)
        k = self._with_keys(pa.table(cols))
        return self._combine(k)

    def _with_keys(self, t: pa.Table) -> pa.Table:
        keys = record_keys(t, self.config.record_key_fields)
        if keys.null_count:
            raise OptionError("record key values must not be null")
        parts = partition_paths(t, self.config.partition_fields, self.config.hive_style_partitioning)
        return t.append_column(_KEY, keys).append_column(_PART, parts)

    def _combine(self, t: pa.Table) -> pa.Table:
        """preCombine duplicates of a (partition, key) within the batch: the greatest ordering value wins, ties
        go to the later record."""
        n = t.num_rows
        if n <= 1:
            return t
        comp = pc.binary_join_element_wise(t.column(_PART), t.column(_KEY), "\x00").combine_chunks()
        encoded = pc.dictionary_encode(comp)
        if len(encoded.dictionary) == n:
            return t
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        sort_keys = [np.arange(n)]
        for f in reversed(self.config.ordering_fields):
            if f in t.column_names:
                col = fill_ordering(t.column(f))
                sort_keys.append(pc.rank(col, sort_keys="ascending", tiebreaker="dense")
                                 .to_numpy(zero_copy_only=False))
        sort_keys.append(codes)
        order = np.lexsort(sort_keys)
        last = np.r_[codes[order][1:] != codes[order][:-1], True]
        keep = np.sort(order[last])
        return t.take(pa.array(keep, pa.int64()))

    # -- recovery ----------------------------------------------------------------------------------------------
    def recover(self) -> list[str]:
        """Finish or undo whatever a killed writer left pending; returns the rollback instants made."""
        return services.recover(self)

    def rollback_failed(self) -> list[str]:
        """Roll back every pending (failed) write; returns the rollback instant times."""
        return self.recover()

    # -- table services (hudi_streaming.writer.services) ---------------------------------------------------------------
    def compact(self) -> str | None:
        """MOR: schedule and run a compaction of every file group with log files; its instant, or None."""
        return services.compact(self)

    def clean(self, *, retain_commits: int = 10) -> str | None:
        """Delete the file slices that no query of the last ``retain_commits`` writes (at least 1) reads
        (Hudi's ``KEEP_LATEST_COMMITS``); the clean instant, or None when there is nothing to clean."""
        return services.clean(self, retain_commits)

    def archive(self, *, keep_active: int = 20) -> list[str]:
        """Move the instants older than the last ``keep_active`` writes (at least 1) to the archived timeline;
        returns the requested times of the instants archived."""
        return services.archive(self, keep_active)

    # -- index -------------------------------------------------------------------------------------------------
    def index(self, table: HudiTable) -> RecordIndex:
        latest = table.timeline.latest_write_time()
        idx = self._index
        if idx is None or idx.instant != latest:
            idx = RecordIndex.load(self.storage)
            if idx is None or idx.instant != latest:
                log.info("%s: rebuilding the record index from the snapshot as of %s", self.url, latest)
                idx = RecordIndex.rebuild(self.url, self.storage_options, latest)
                if latest is not None:
                    idx.save(self.storage, latest, full=True)
            self._index = idx
        return idx

    def restamp_index(self, current_as_of: str | None, instant: str) -> None:
        """A compaction ``instant`` rewrote the table as of ``current_as_of`` into the same records in the same
        file groups: a cached index current as of that time only needs the new stamp, not a rebuild."""
        if self._index is not None and self._index.instant == current_as_of:
            self._index.save(self.storage, instant)

    # -- the write ---------------------------------------------------------------------------------------------
    def _write(self, operation: str, records: pa.Table | None = None, deletes: pa.Table | None = None,
               on_existing: str = "upsert") -> str:
        try:
            return self._write_instant(operation, records, deletes, on_existing)
        finally:
            self.extra_metadata = {}

    def _write_instant(self, operation: str, records: pa.Table | None, deletes: pa.Table | None,
                       on_existing: str) -> str:
        if self.auto_recover:
            self.recover()
        table = HudiTable(self.url, self.storage_options)
        index = self.index(table)
        cfg = self.config
        is_cow = cfg.table_type is TableType.COPY_ON_WRITE
        action = "commit" if is_cow else "deltacommit"
        view = table.file_system_view()
        latest = {(s.partition, s.file_id): s for s in view.latest_merged_slices()}
        groups: dict[tuple[str, str], _GroupWrite] = {}

        def group(part: str, fid: str, new: bool) -> _GroupWrite:
            g = groups.get((part, fid))
            if g is None:
                g = groups[(part, fid)] = _GroupWrite(part, fid, new, slice=latest.get((part, fid)))
            return g

        for attempt in (1, 2):
            groups.clear()
            new_index_entries = self._assign(records, deletes, operation, on_existing, index, latest, group)
            missing = [g for g in groups.values() if not g.new and g.slice is None]
            if not missing:
                break
            if attempt == 2:
                raise InvalidTableContentError(f"{self.url}: file group {missing[0].partition}/"
                                               f"{missing[0].file_id} of the record index is not in the table")
            log.warning("%s: the record index names file groups the table does not have; rebuilding it", self.url)
            index = self._index = RecordIndex.rebuild(self.url, self.storage_options,
                                                      table.timeline.latest_write_time())
            if index.instant is not None:
                index.save(self.storage, index.instant, full=True)

        ordered = [groups[k] for k in sorted(groups)]
        for task, g in enumerate(ordered):
            g.task = task
        # the instant starts only now that the input is known to be writable
        instant = self.timeline.new_time()
        self.timeline.write_requested(instant, action)
        # inflight: the workload profile
        profile: dict[str, list[dict]] = {}
        for g in ordered:
            profile.setdefault(g.partition, []).append(write_stat(
                fileId=g.file_id, prevCommit=(g.slice.base_instant if g.slice else "null"),
                numInserts=(g.records.num_rows - g.n_updates) if g.records is not None else 0,
                numUpdateWrites=g.n_updates))
        self.timeline.write_inflight(instant, action, encode_commit_metadata(
            commit_metadata(profile, operation=operation, schema=None), cfg.timeline_layout))

        listing = table.listing()
        for g in ordered:
            t0 = time.monotonic()
            self._ensure_partition(g.partition, instant)
            if g.new:
                self._write_new_base(g, instant)
            else:
                assert g.slice is not None  # the attempts above end only when every existing group has its slice
                if is_cow:
                    self._rewrite_base(g, g.slice, instant, table)
                else:
                    self._append_log(g, g.slice, instant, listing)
            g.stat["runtimeStats"] = {"totalScanTime": 0, "totalCreateTime": int((time.monotonic() - t0) * 1000)
                                      if g.new else 0,
                                      "totalUpsertTime": 0 if g.new else int((time.monotonic() - t0) * 1000)}
        stats: dict[str, list[dict]] = {}
        for g in ordered:
            stats.setdefault(g.partition, []).append(g.stat)
        md = commit_metadata(stats, operation=operation, schema=self.schema_json, extra=self.extra_metadata)
        self.timeline.write_completed(instant, action, encode_commit_metadata(md, cfg.timeline_layout))
        # after the commit: markers go, the index follows (a crash here only makes the index stale)
        self.files.remove_markers(instant)
        if new_index_entries:
            index.add(*(pa.concat_arrays([e[i] for e in new_index_entries]) for i in range(3)))
        index.save(self.storage, instant)
        return instant

    def _assign(self, records: pa.Table | None, deletes: pa.Table | None, operation: str, on_existing: str,
                index: RecordIndex, latest: dict[tuple[str, str], FileSlice],
                group: Callable[[str, str, bool], _GroupWrite]) -> list[tuple[pa.Array, pa.Array, pa.Array]]:
        """Split the batch over file groups: updates and deletes by the index, inserts by :meth:`_route_inserts`.
        Returns the index entries the inserts will add."""
        new_index_entries: list[tuple[pa.Array, pa.Array, pa.Array]] = []
        if records is not None and records.num_rows:
            fids = index.lookup(records.column(_PART).combine_chunks(), records.column(_KEY).combine_chunks())
            known = pc.is_valid(fids)
            if operation == "INSERT" and on_existing != "upsert" and pc.any(known).as_py():
                if on_existing == "fail":
                    raise OptionError(f"{self.url}: insert of keys already in the table, e.g. "
                                      f"{records.filter(known).column(_KEY)[0].as_py()!r} (on_existing='fail')")
                records, fids = records.filter(pc.invert(known)), fids.filter(pc.invert(known))
                known = pc.is_valid(fids)
            updates = records.filter(known)
            upd_fids = fids.filter(known)
            for fid in pc.unique(upd_fids).to_pylist():
                sel = updates.filter(pc.equal(upd_fids, fid))
                g = group(sel.column(_PART)[0].as_py(), fid, False)
                g.records = sel
                g.n_updates = sel.num_rows
            inserts = records.filter(pc.invert(known))
            if IS_DELETED in inserts.column_names:  # a soft delete of an unknown key writes nothing
                inserts = inserts.filter(pc.invert(pc.fill_null(inserts.column(IS_DELETED), False)))
            for part, rows, fid, new in self._route_inserts(inserts, index, latest):
                g = group(part, fid, new)
                g.records = rows if g.records is None else pa.concat_tables([g.records, rows])
                new_index_entries.append((rows.column(_PART).combine_chunks(), rows.column(_KEY).combine_chunks(),
                                          pa.repeat(pa.scalar(fid, pa.string()), rows.num_rows)))
        if deletes is not None and deletes.num_rows:
            fids = index.lookup(deletes.column(_PART).combine_chunks(), deletes.column(_KEY).combine_chunks())
            known = pc.is_valid(fids)
            dels, del_fids = deletes.filter(known), fids.filter(known)
            for fid in pc.unique(del_fids).to_pylist():
                sel = dels.filter(pc.equal(del_fids, fid))
                group(sel.column(_PART)[0].as_py(), fid, False).deletes = sel
        return new_index_entries

    def _route_inserts(self, inserts: pa.Table, index: RecordIndex, latest: dict[tuple[str, str], FileSlice]
                       ) -> Iterator[tuple[str, pa.Table, str, bool]]:
        """Yield (partition, rows, file id, is new file group) for the new keys: small file groups first."""
        if not inserts.num_rows:
            return
        counts = index.counts()
        parts = inserts.column(_PART).combine_chunks()
        for part in sorted(pc.unique(parts).to_pylist()):
            rows = inserts.filter(pc.equal(parts, part))
            small = sorted((counts.get((part, fid), 0), fid) for (p, fid), s in latest.items()
                           if p == part and counts.get((part, fid), 0) < self.max_file_records)
            pos = 0
            for count, fid in small:
                if pos >= rows.num_rows:
                    break
                take = min(self.max_file_records - count, rows.num_rows - pos)
                yield part, rows.slice(pos, take), fid, False
                pos += take
            while pos < rows.num_rows:
                take = min(self.max_file_records, rows.num_rows - pos)
                yield part, rows.slice(pos, take), f"{uuid.uuid4()}-0", True
                pos += take

    # -- file writing ------------------------------------------------------------------------------------------
    def _ensure_partition(self, partition: str, instant: str) -> None:
        if partition in self._known_partitions:
            return
        rel = rel_path(partition, ".hoodie_partition_metadata")
        if not self.storage.exists(rel):
            depth = len(partition.split("/")) if partition else 0
            body = render_properties({"commitTime": instant, "partitionDepth": str(depth)}, "partition metadata")
            tmp = rel_path(partition, ".hoodie_partition_metadata_0")
            self.files.put(tmp, body)
            self.storage.fs.mv(self.storage.full(tmp), self.storage.full(rel))
        self._known_partitions.add(partition)

    def with_meta(self, rows: pa.Table, instant: str, task: int, file_name: str) -> pa.Table:
        """Incoming rows as stored: meta columns (commit time, seqno, key, partition, file name) then data."""
        n = rows.num_rows
        seq = pc.binary_join_element_wise(pa.repeat(pa.scalar(f"{instant}_{task}", pa.string()), n),
                                          pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string()),
                                          pa.scalar("_", pa.string()))
        meta = [pa.repeat(pa.scalar(instant, pa.string()), n), seq, rows.column(_KEY), rows.column(_PART),
                pa.repeat(pa.scalar(file_name, pa.string()), n)]
        cols = meta + [rows.column(f.name) for f in self.data_schema]
        return pa.Table.from_arrays(cols, schema=self.arrow_schema)

    def parquet_bytes(self, t: pa.Table) -> bytes:
        keys = t.column("_hoodie_record_key")
        meta = {b"parquet.avro.schema": self.schema_with_meta_json.encode(), b"writer.model.name": b"avro"}
        if t.num_rows:
            mm = pc.min_max(keys)
            meta[b"hoodie_min_record_key"] = mm["min"].as_py().encode()
            meta[b"hoodie_max_record_key"] = mm["max"].as_py().encode()
        if self.parquet_schema != self.arrow_schema:
            t = t.cast(self.parquet_schema)  # a safe cast: sub-millisecond values of a millis field are an error
        sink = io.BytesIO()
        pq.write_table(t.replace_schema_metadata(meta), sink, compression=self.compression)
        return sink.getvalue()

    def base_file_name(self, file_id: str, task: int, instant: str) -> str:
        return f"{file_id}_{task}-1-{task}_{instant}.parquet"

    def _write_new_base(self, g: _GroupWrite, instant: str) -> None:
        name = self.base_file_name(g.file_id, g.task, instant)
        rows = self.with_meta(g.records, instant, g.task, name)
        data = self.parquet_bytes(rows)
        rel = rel_path(g.partition, name)
        self.files.mark(instant, g.partition, name, "CREATE")
        self.files.put(rel, data)
        g.stat = write_stat(fileId=g.file_id, path=rel, prevCommit="null", numWrites=rows.num_rows,
                            numInserts=rows.num_rows, totalWriteBytes=len(data), partitionPath=g.partition,
                            fileSizeInBytes=len(data))

    def _append_log(self, g: _GroupWrite, current: FileSlice, instant: str, listing: list[FileInfo]) -> None:
        cfg = self.config
        if cfg.version >= 8:
            base_instant, version = instant, 1
        else:
            base_instant = current.base_instant
            version = 1 + max((lf.version for lf in map(parse_log_file, listing) if lf is not None
                               and lf.file_id == g.file_id and lf.instant == base_instant
                               and posixpath.dirname(lf.path) == g.partition), default=0)
        token = f"{g.task}-1-{g.task}"
        name = make_log_file_name(g.file_id, base_instant, version, token)
        blocks = []
        n_records = n_deletes = 0
        if g.records is not None and g.records.num_rows:
            rows = self.with_meta(g.records, instant, g.task, g.file_id)
            step = self.max_log_block_records or rows.num_rows
            for part in (rows.slice(start, step) for start in range(0, rows.num_rows, step)):
                content = _I32.pack(CONTENT_VERSION) + _I32.pack(part.num_rows) \
                    + encode_records(part, self.schema_with_meta_json)
                blocks.append(encode_block(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: instant,
                                                                 HeaderKey.SCHEMA: self.schema_with_meta_json},
                                           content))
            n_records = rows.num_rows
        if g.deletes is not None and g.deletes.num_rows:
            d = g.deletes
            blocks.append(encode_delete_block(d.column(_KEY).to_pylist(), d.column(_PART).to_pylist(),
                                              self.delete_ordering_values(d), instant))
            n_deletes = d.num_rows
        data = b"".join(blocks)
        rel = rel_path(g.partition, name)
        self.files.mark(instant, g.partition, name, "APPEND")
        self.files.put(rel, data)
        base_name = current.base_file.name if current.base_file is not None else ""
        g.stat = write_stat(
            fileId=g.file_id, path=rel, prevCommit=(instant if cfg.version >= 8 else base_instant),
            numWrites=n_records, numDeletes=n_deletes, numUpdateWrites=g.n_updates,
            numInserts=n_records - g.n_updates, totalWriteBytes=len(data), partitionPath=g.partition,
            fileSizeInBytes=len(data), logVersion=version, logOffset=0,
            baseFile=("" if cfg.version >= 8 else base_name), logFiles=[name])

    def delete_ordering_values(self, d: pa.Table) -> list:
        """Ordering value of each delete, wrapped as Hudi wraps the Java value (``wrapValueIntoAvro``).

        Deletes without an ordering column (or on a commit-time table) carry IntWrapper 0, as Spark SQL ``DELETE``
        writes them; a null ordering value is the union's null branch, as Hudi wraps a Java null. Both are read as
        commit-time deletes (``OrderingValues.isCommitTimeOrderingValue``: null or the default 0).
        """
        fields = [f for f in self.config.ordering_fields if f in d.column_names]
        if not fields or self.config.merge_mode is not MergeMode.EVENT_TIME_ORDERING:
            return [COMMIT_TIME_DELETE] * d.num_rows
        col = d.column(fields[0])
        if pa.types.is_timestamp(col.type):
            # the raw Avro long in the field's unit, as Hudi wraps it by default (LongWrapper: a Timestamp only
            # with consistent logical timestamps); a sub-millisecond value of a millis field is an error
            col = col.cast(self.parquet_schema.field(fields[0]).type).cast(pa.int64())
        kind = _ordering_kind(col.type)
        return [None if v is None else (Ordering(kind, v) if kind else v) for v in col.to_pylist()]

    def _rewrite_base(self, g: _GroupWrite, current: FileSlice, instant: str, table: HudiTable) -> None:
        """COW: merge the incoming records and deletes into the file group's base file, write a new version."""
        old = current.base_file
        if old is None:
            raise InvalidTableContentError(f"{self.url}: file group {g.partition}/{g.file_id} has no base file to "
                                           "merge the write into")
        with self.storage.open(old.path) as f:
            base = pq.read_table(f)
        base = align(base, self.arrow_schema)
        name = self.base_file_name(g.file_id, g.task, instant)
        merged = self.merge_into(table, base, g.records, g.deletes, instant, g.task, name)
        merged = merged.set_column(merged.schema.get_field_index("_hoodie_file_name"), "_hoodie_file_name",
                                   pa.repeat(pa.scalar(name, pa.string()), merged.num_rows))
        data = self.parquet_bytes(merged)
        rel = rel_path(g.partition, name)
        self.files.mark(instant, g.partition, name, "MERGE")
        self.files.put(rel, data)
        n_in = g.records.num_rows if g.records is not None else 0
        g.stat = write_stat(fileId=g.file_id, path=rel, prevCommit=old.instant, numWrites=merged.num_rows,
                            numDeletes=g.deletes.num_rows if g.deletes is not None else 0,
                            numUpdateWrites=g.n_updates, numInserts=n_in - g.n_updates, totalWriteBytes=len(data),
                            partitionPath=g.partition, fileSizeInBytes=len(data))

    def merge_into(self, table: HudiTable, base: pa.Table, records: pa.Table | None, deletes: pa.Table | None,
                   instant: str, task: int, file_name: str) -> pa.Table:
        """Base rows merged with incoming records and deletes under the table's merge rules (the reader's
        :func:`hoodie.merge.merge_with_base`, so writer and reader can never disagree)."""
        req = SliceRead(table, self.arrow_schema, None)
        parts, flags = [], []
        if records is not None and records.num_rows:
            rows = self.with_meta(records, instant, task, file_name)
            parts.append(rows)
            deleted = (pc.fill_null(rows.column(IS_DELETED), False).to_numpy(zero_copy_only=False)
                       if IS_DELETED in rows.column_names else np.zeros(rows.num_rows, bool))
            flags.append((deleted, commit_time_deletes(deleted, req.ordering_arrays(rows)),
                          np.zeros(rows.num_rows, bool)))
        if deletes is not None and deletes.num_rows:
            n = deletes.num_rows
            cols = {"_hoodie_record_key": deletes.column(_KEY), "_hoodie_partition_path": deletes.column(_PART)}
            for name in deletes.column_names:
                if name in self.data_schema.names:
                    cols[name] = deletes.column(name)
            parts.append(align(pa.table(cols), self.arrow_schema))
            # as the reader decodes the block: null and IntWrapper 0 (also an int field's 0) are commit-time deletes
            by_commit_time = [v is None or v == COMMIT_TIME_DELETE for v in self.delete_ordering_values(deletes)]
            flags.append((np.ones(n, bool), np.array(by_commit_time, bool), np.ones(n, bool)))
        if not parts:
            return base
        incoming = pa.concat_tables(parts)
        log_records = LogRecords(table=incoming, keys=req.key_array(incoming), ordering=req.ordering_arrays(incoming),
                                 is_delete=np.concatenate([f[0] for f in flags]),
                                 commit_time_delete=np.concatenate([f[1] for f in flags]),
                                 from_delete_block=np.concatenate([f[2] for f in flags]))
        rows, _ = merge_with_base(base, req.key_array(base), req.ordering_arrays(base), log_records,
                                  merge_rules(self.config))
        return rows


# ---------------------------------------------------------------------------------------------------------------
# helpers

def data_table(data: Data) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    batches = list(data)
    if not batches:
        raise OptionError("no record batches given")
    return pa.Table.from_batches(batches)


def _cast(col: pa.ChunkedArray, target: pa.DataType, name: str) -> pa.ChunkedArray:
    try:
        return col.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise OptionError(f"column {name}: cannot convert {col.type} to the table's {target}: {e}") from None


def _ordering_kind(t: pa.DataType) -> str | None:
    if pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t):
        return "string"
    return None


def _as_string(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if pa.types.is_string(col.type):
        return col
    if pa.types.is_boolean(col.type):
        return pc.if_else(col, "true", "false")
    return pc.cast(col, pa.string())


def record_keys(t: pa.Table, fields: list[str]) -> pa.Array:
    """``_hoodie_record_key``: the value (one field), or ``f1:v1,f2:v2`` with ``__null__`` / ``__empty__``."""
    if len(fields) == 1:
        return _as_string(t.column(fields[0]))
    parts = []
    for f in fields:
        v = _as_string(t.column(f))
        v = pc.if_else(pc.equal(v, ""), "__empty__", v)
        parts.append(pc.binary_join_element_wise(f, pc.fill_null(v, "__null__"), ":"))
    return pc.binary_join_element_wise(*parts, ",")


def partition_paths(t: pa.Table, fields: list[str], hive_style: bool) -> pa.Array:
    """``_hoodie_partition_path`` of each row: ``f=v`` (hive style) or ``v`` per field, joined by ``/``."""
    if not fields:
        return pa.repeat(pa.scalar("", pa.string()), t.num_rows)
    parts = []
    for f in fields:
        v = _as_string(t.column(f))
        v = pc.fill_null(pc.if_else(pc.equal(v, ""), HIVE_DEFAULT_PARTITION, v), HIVE_DEFAULT_PARTITION)
        if hive_style:
            v = pc.binary_join_element_wise(f, v, "=")
        parts.append(v)
    return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "/")
