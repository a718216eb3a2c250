"""The ``files`` partition of a table's metadata table (``.hoodie/metadata``): the table's partitions and each
partition's files without listing the store.

Hudi's readers take their listings from there (``HoodieBackedTableMetadata``); on an object store a table of
thousands of partitions is then a few ranged reads of one HFile and its logs instead of a LIST per partition.
The metadata table is itself a MERGE_ON_READ table keyed by partition (``__all_partitions__`` lists the
partitions, ``.`` is the partition of a non-partitioned table), whose records are Avro ``HoodieMetadataRecord``
values. Reading it follows Hudi's rules:

- only the latest file slice of each ``files`` file group: its base HFile (read by key, :mod:`hoodie.hfile`),
  then its log files' blocks in order (HFILE_DATA records, DELETE blocks remove whole records, rollback command
  blocks remove the blocks of their target, as :func:`hoodie.scanner.scan_blocks` does for data tables);
- a block counts only when its instant is completed on the metadata table's own timeline and valid for the
  data table (``HoodieTableMetadataUtil.getValidInstantTimestamps``: a completed data-table instant, or the
  metadata table's own initialisation or log-compaction instants): the metadata table is written before the
  data-table instant completes, so it may hold writes that failed;
- records of one key merge by ``HoodieMetadataPayload``: a file marked deleted leaves, otherwise the larger of
  two sizes wins (a log file only grows).

:func:`open_files_index` says why the metadata table cannot be used instead (the caller lists the store): the
reader turned it off, ``files`` is no completed metadata partition, the metadata table is missing, or it has
not caught up with the data table's latest completed instant.
"""
from __future__ import annotations

import io
import json
import logging
import posixpath
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro

from ..errors import CorruptFileError
from .config import TableConfig, parse_java_properties
from .fs_view import FileSlice, FileSystemView
from .hfile import HFileReader, StorageSource
from .logfile.blocks import decode_delete_block, read_hfile_cells
from .logfile.format import BlockType
from .scanner import scan_blocks
from .storage import FileInfo, Storage
from .timeline import Timeline, TimelineEntry
from .timeline.instant import Action

log = logging.getLogger(__name__)

METADATA_FOLDER = ".hoodie/metadata"
FILES_PARTITION = "files"
ALL_PARTITIONS_KEY = "__all_partitions__"
#: the key of a non-partitioned table's only partition (``""`` in this project)
NON_PARTITIONED_KEY = "."
#: ``HoodieTableMetadata.SOLO_COMMIT_TIMESTAMP``: instants starting so initialise metadata partitions
_SOLO_COMMIT_PREFIX = "00000000000000"
#: the properties of the metadata table's ``hoodie.properties`` that say where its files and timeline are; the
#: rest (HFILE base format, ``HoodieMetadataPayload``) is this module's to apply
_LAYOUT_PROPERTIES = ("hoodie.table.name", "hoodie.table.type", "hoodie.table.version",
                      "hoodie.timeline.layout.version", "hoodie.timeline.path", "hoodie.timeline.history.path",
                      "hoodie.archivelog.folder", "hoodie.table.timeline.timezone")
#: data-table actions that Hudi applies to the metadata table as a delta commit of the same instant time
_SYNCED_ACTIONS = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLEAN,
                             Action.ROLLBACK, Action.RESTORE})
_HFILE_SCHEMA = b"schema"
#: ``HoodieMetadataPayload``'s record types of the files partition: the partitions, and one partition's files
_PARTITION_LIST, _FILE_LIST = 1, 2

#: one file's entry: size, and whether the record says it was deleted (a tombstone)
_Entry = tuple[int, bool]


def metadata_partitions(config: TableConfig) -> tuple[frozenset[str], frozenset[str]]:
    """The metadata partitions the data table's ``hoodie.properties`` calls completed, and those it calls
    inflight (``hoodie.table.metadata.partitions``, ``...partitions.inflight``)."""
    def names(key: str) -> frozenset[str]:
        return frozenset(p.strip() for p in (config.raw.get(key) or "").split(",") if p.strip())
    return names("hoodie.table.metadata.partitions"), names("hoodie.table.metadata.partitions.inflight")


class MetadataPartition:
    """One partition of the metadata table as of its latest valid instant: the latest slice of each of its file
    groups, their base HFiles read by key or key prefix, their log files read whole (they are small: the
    metadata table compacts them), and the records of both in Hudi's merge order.

    ``record_names``: Avro unions of several records decode as ``(record name, value)`` (the statistics' value
    wrappers say a value's type only by their name), other unions as their value."""

    def __init__(self, storage: Storage, config: TableConfig, timeline: Timeline, valid: frozenset[str],
                 archived: Callable[[str], bool], name: str = FILES_PARTITION, *, record_names: bool = False):
        """``valid``: the instants whose blocks count (with the metadata table's own timeline saying they
        completed); ``archived``: whether an instant is older than the data table's active timeline, which
        counts too (only completed instants are archived; Hudi's writers never archive past the metadata
        table's last compaction, but a table archived otherwise must still list right)."""
        self.storage, self.config, self.timeline, self.name = storage, config, timeline, name
        self._valid = valid
        self._archived = archived
        self._record_names = record_names
        view = FileSystemView(config, timeline, storage.list_dir(name))
        self.slices: list[FileSlice] = view.latest_merged_slices()
        self._readers: dict[str, HFileReader] = {}
        self._logs: list[tuple[str, memoryview | None, Any, str]] | None = None
        self._siblings: dict[tuple[str, bool], MetadataPartition] = {}

    def sibling(self, name: str, *, record_names: bool = False) -> MetadataPartition:
        """Another partition of the same metadata table, as of the same instants (opened once: its listing and
        log records are read once per timeline load, however many queries plan with it)."""
        key = (name, record_names)
        if key not in self._siblings:
            self._siblings[key] = MetadataPartition(self.storage, self.config, self.timeline, self._valid,
                                                    self._archived, name, record_names=record_names)
        return self._siblings[key]

    def _usable(self, instant: str) -> bool:
        return self.timeline.is_committed(instant) and (instant in self._valid or self._archived(instant))

    def _reader(self, s: FileSlice) -> HFileReader | None:
        if s.base_file is None:
            return None
        path = s.base_file.path
        if path not in self._readers:
            self._readers[path] = HFileReader(StorageSource(self.storage, path, s.base_file.size),
                                              f"{self.storage.url}/{path}")
        return self._readers[path]

    def _decode(self, value: memoryview, schema: Any, where: str) -> Any:
        return _decode(value, schema, where, self._record_names)

    def _log_records(self) -> list[tuple[str, memoryview | None, Any, str]]:
        """Every counted log record of the latest slices, oldest first, undecoded: ``(key, its Avro bytes or None
        for a key a DELETE block removes, the block's record schema, the block)``. Read once per index; a record
        is decoded only when a query asks for its key (:meth:`records`): a poll asks for the few partitions its
        instants wrote, and holding decoded records cost the driver ~2.4 KiB per partition of a wide table."""
        if self._logs is None:
            out: list[tuple[str, memoryview | None, Any, str]] = []
            for s in self.slices:
                blocks = scan_blocks(self.storage, [(lf.path, lf.size) for lf in s.log_files], None, self._usable)
                for block in blocks:
                    where = block.where()
                    if block.type is BlockType.HFILE_DATA:
                        schema = _schema(block.schema_json or "", where)
                        out.extend((key, value, schema, where) for key, value in read_hfile_cells(block))
                    elif block.type is BlockType.DELETE:
                        out.extend((key, None, None, where) for key in decode_delete_block(block).record_keys)
                    else:
                        raise CorruptFileError(f"{where}: a {block.type.name} block in the metadata "
                                               f"table's {self.name} partition (Hudi writes HFile and delete "
                                               "blocks)")
            self._logs = out
        return self._logs

    def records(self, *, keys: Iterable[str] | None = None, prefix: str | None = None,
                scan: bool = False) -> Iterator[tuple[str, Any, str]]:
        """The records of ``keys`` (or of the keys starting with ``prefix``) in merge order, ``(key,
        HoodieMetadataRecord or None for a delete, where it came from)``: each base HFile's, read by key or
        prefix (``scan``: read whole, the same records by another path), then the log records."""
        wanted = set(keys) if keys is not None else None

        def match(key: str) -> bool:
            return key in wanted if wanted is not None else prefix is not None and key.startswith(prefix)
        for s in self.slices:
            reader = self._reader(s)
            if reader is None:
                continue
            schema = _schema(reader.file_info.get(_HFILE_SCHEMA, b"").decode("utf-8", "replace"), reader.name)
            if scan:
                cells: Iterable[tuple[bytes, memoryview]] = (
                    (row, value) for row, value in reader.scan() if match(row.decode("utf-8", "replace")))
            elif wanted is not None:
                cells = reader.lookup(k.encode() for k in wanted).items()
            else:
                cells = reader.prefix((prefix or "").encode())
            for row, value in cells:
                yield row.decode("utf-8", "replace"), self._decode(value, schema, reader.name), reader.name
        for key, logged, log_schema, where in self._log_records():
            if match(key):
                yield key, None if logged is None else self._decode(logged, log_schema, where), where


class FilesIndex(MetadataPartition):
    """The ``files`` partition: the table's partitions and each partition's files.

    Each query reads the base HFiles' trailer and load-on-open section once, then only the data blocks of the
    keys asked for."""

    def _records(self, keys: Iterable[str], scan: bool) -> dict[str, dict[str, _Entry]]:
        """The merged file entries (tombstones dropped) of ``keys`` that the metadata table holds: the base
        HFiles read by key (``scan``: read whole, the same records by another path), then the log records."""
        merged: dict[str, dict[str, _Entry] | None] = {}
        for key, record, where in self.records(keys=keys, scan=scan):
            merged[key] = None if record is None else _combine(merged.get(key), _entries(record, key, where))
        return {key: {name: e for name, e in entries.items() if not e[1]}
                for key, entries in merged.items() if entries is not None}

    def partitions(self, *, scan: bool = False) -> list[str]:
        """The data table's partitions (``""`` for a non-partitioned table's)."""
        record = self._records([ALL_PARTITIONS_KEY], scan).get(ALL_PARTITIONS_KEY, {})
        return sorted(_partition(name) for name in record)

    def files(self, partitions: Iterable[str], *, scan: bool = False) -> dict[str, list[FileInfo]]:
        """Each partition's files, as a listing of the data table gives them (paths relative to its root)."""
        keys = {(p or NON_PARTITIONED_KEY): p for p in partitions}
        records = self._records(keys, scan)
        out: dict[str, list[FileInfo]] = {}
        for key, part in keys.items():
            names = records.get(key, {})
            out[part] = [FileInfo(posixpath.join(part, name), size, None) for name, (size, _) in sorted(names.items())]
        return out

    def all_files(self) -> list[FileInfo]:
        """Every file of every partition."""
        return [f for files in self.files(self.partitions()).values() for f in files]


def _partition(name: str) -> str:
    return "" if name == NON_PARTITIONED_KEY else name


@lru_cache(maxsize=16)
def _parsed_schema(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))


def _schema(schema_json: str, where: str) -> Any:
    try:
        return _parsed_schema(schema_json)
    except (ValueError, KeyError, TypeError, fastavro.schema.SchemaParseException) as e:
        raise CorruptFileError(f"{where}: the metadata record schema is not an Avro schema: {e!r}") from e


def _decode(value: memoryview, schema: Any, where: str, record_names: bool = False) -> Any:
    buf = io.BytesIO(value)
    try:
        record = fastavro.schemaless_reader(buf, schema, None, return_record_name=record_names,
                                            return_record_name_override=record_names)
    except (ValueError, EOFError, IndexError, OverflowError, TypeError) as e:
        raise CorruptFileError(f"{where}: undecodable metadata record: {e!r}") from e
    if buf.tell() != len(value):
        raise CorruptFileError(f"{where}: a metadata record ends at byte {buf.tell()} of {len(value)}")
    return record


def _entries(record: Any, key: str, where: str) -> dict[str, _Entry]:
    """``filesystemMetadata`` of the ``files`` record of ``key``: file (or, for ``__all_partitions__``, partition)
    name -> (size, isDeleted); what no writer makes (a file name with a slash, a negative size, a record of
    another type) is a :class:`CorruptFileError` naming the file it came from."""
    listing_type = _PARTITION_LIST if key == ALL_PARTITIONS_KEY else _FILE_LIST
    if not isinstance(record, dict) or record.get("type") != listing_type:
        kind = record.get("type") if isinstance(record, dict) else type(record).__name__
        raise CorruptFileError(f"{where}: metadata record {key!r} is of type {kind!r}, not {listing_type} (the "
                               "files partition's listing)")
    out = {}
    for name, info in (record.get("filesystemMetadata") or {}).items():
        size, deleted = (info or {}).get("size"), (info or {}).get("isDeleted")
        if not isinstance(size, int) or size < 0 or not isinstance(deleted, bool) or not name \
                or ("/" in name and listing_type == _FILE_LIST):
            raise CorruptFileError(f"{where}: metadata record {key!r} lists {name!r} with size {size!r}, "
                                   f"isDeleted {deleted!r}")
        out[name] = (size, deleted)
    return out


def _combine(older: dict[str, _Entry] | None, newer: dict[str, _Entry]) -> dict[str, _Entry]:
    """``HoodieMetadataPayload.combineFileSystemMetadata``: a deleted file leaves (its tombstone stays when the
    older listing lacks it, for a base file merged later), otherwise the larger size wins."""
    out = dict(older or {})
    for name, (size, deleted) in newer.items():
        old = out.get(name)
        if old is None:
            out[name] = (size, deleted)
        elif deleted:
            if old[1]:
                out[name] = (size, deleted)
            else:
                del out[name]
        else:
            out[name] = (max(size, old[0]), False)
    return out


@dataclass(frozen=True)
class Unusable:
    """Why the metadata table is not read (the store is listed instead)."""

    reason: str


def _restored_too(entry: TimelineEntry, mdt_done: Iterable[TimelineEntry]) -> bool:
    """Whether a data-table restore was applied to the metadata table: Hudi restores the metadata table inside the
    data table's restore, under an instant of its own requested after the data table's (on 1.2 and 0.15 alike)."""
    return entry.action is Action.RESTORE and any(
        e.action is Action.RESTORE and e.requested_time > entry.requested_time for e in mdt_done)


def open_files_index(data_storage: Storage, config: TableConfig, timeline: Timeline,
                     storage_options: dict | None) -> FilesIndex | Unusable:
    """The ``files`` index of the table, or why it cannot serve listings now."""
    done, inflight = metadata_partitions(config)
    if FILES_PARTITION not in done or FILES_PARTITION in inflight:
        return Unusable("'files' is not a completed metadata partition (hoodie.table.metadata.partitions="
                        f"{','.join(sorted(done)) or 'empty'})")
    storage = Storage(f"{data_storage.url}/{METADATA_FOLDER}", storage_options)
    try:
        text = storage.read_bytes(".hoodie/hoodie.properties").decode("latin-1")
    except FileNotFoundError:
        return Unusable(f"no metadata table ({METADATA_FOLDER}/.hoodie/hoodie.properties is missing)")
    where = f"{storage.url}/.hoodie/hoodie.properties"
    props = parse_java_properties(text, where)
    mdt_config = TableConfig.from_properties({k: props[k] for k in _LAYOUT_PROPERTIES if k in props}, where)
    mdt_timeline = Timeline.load(storage, mdt_config)
    mdt_done = {e.requested_time: e for e in mdt_timeline.active.completed()}
    synced = [e for e in timeline.active.completed() if e.action in _SYNCED_ACTIONS]
    if synced and synced[-1].requested_time not in mdt_done and not _restored_too(synced[-1], mdt_done.values()):
        latest = synced[-1]
        return Unusable(f"the metadata table is behind: the data table's {latest.action.value} "
                        f"{latest.requested_time} is not a completed instant of {METADATA_FOLDER}")
    valid = {e.requested_time for e in timeline.active.completed()}
    valid |= {t for t, e in mdt_done.items() if t.startswith(_SOLO_COMMIT_PREFIX) or e.is_log_compaction}
    index = FilesIndex(storage, mdt_config, mdt_timeline, frozenset(valid), timeline.is_archived)
    if not index.slices:  # Hudi initialises the partition with its first slice: none is no listing of nothing
        return Unusable(f"{METADATA_FOLDER}/{FILES_PARTITION} holds no completed file slice")
    return index


_fallbacks_logged: set[tuple[str, str]] = set()
_fallbacks_lock = threading.Lock()


def log_fallback(url: str, reason: str, doing: str = "listing the store, not the metadata table") -> None:
    """Say once per table and reason that its listings come from the store, not its metadata table (a stream
    re-checks every poll; one line per poll would drown the log), or what else is ``doing`` instead."""
    with _fallbacks_lock:
        first = (url, reason) not in _fallbacks_logged
        _fallbacks_logged.add((url, reason))
    if first:
        log.info("%s: %s: %s", url, doing, reason)
