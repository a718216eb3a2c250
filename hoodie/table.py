"""A Hudi table opened for reading: storage, configuration, timeline and schema in one place."""
from __future__ import annotations

import json
import posixpath
import threading
import urllib.parse

import pyarrow as pa

from ..errors import InvalidTableContentError
from .config import TableConfig, load_table_config
from .fs_view import FileSystemView, list_data_files
from .logfile.avro_arrow import arrow_schema_from_avro
from .metadata_table import FilesIndex, Unusable, log_fallback, open_files_index
from .schema_history import SchemaHistory, load_schema_history
from .storage import FileInfo, Storage
from .timeline import CommitCheck, Timeline
from .timestamp_repair import marked, millis_columns
from .vectors import with_vectors

META_COLUMNS = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                "_hoodie_partition_path", "_hoodie_file_name"]
COMMIT_TIME, RECORD_KEY, PARTITION_PATH = META_COLUMNS[0], META_COLUMNS[2], META_COLUMNS[3]
IS_DELETED = "_hoodie_is_deleted"
#: the partition value Hudi's key generators write for a null or empty partition field (``PartitionPathEncodeUtils``)
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
OPERATION = "_hoodie_operation"


class HudiTable:
    """Entry point to one table. Cheap to create: the timeline is loaded on first use (a stream's executors read
    planned file slices without it), then kept until :meth:`reload`."""

    def __init__(self, url: str, storage_options: dict | None = None, *, metadata_enable: bool = True):
        """``metadata_enable=False`` (Hudi's read option ``hoodie.metadata.enable=false``) lists the store even
        where the table's metadata table could serve the listings (:mod:`.metadata_table`)."""
        self.storage = Storage(url, storage_options)
        self.config: TableConfig = load_table_config(self.storage)
        self._storage_options = storage_options
        self._metadata_enable = metadata_enable
        self._timeline: Timeline | None = None
        self._commits: CommitCheck | None = None
        self._listing: list[FileInfo] | None = None
        self._files_index: FilesIndex | None | bool = False  # False: not opened yet; None: not usable
        self._schema_history: SchemaHistory | None | bool = False  # False: not read yet
        #: a slice read asks for renames from two threads at once (base file, log blocks): it is read once
        self._schema_history_lock = threading.Lock()

    @property
    def url(self) -> str:
        return self.storage.url

    @property
    def timeline(self) -> Timeline:
        if self._timeline is None:
            self._timeline = Timeline.load(self.storage, self.config)
        return self._timeline

    def reload(self) -> "HudiTable":
        self._timeline = Timeline.load(self.storage, self.config, previous=self._timeline)
        self._commits = None
        self._listing = None
        self._files_index = False
        self._schema_history = False
        return self

    def pin_commits(self, commits: CommitCheck) -> None:
        """Answer :meth:`is_committed` from a check made elsewhere (a stream's driver), without the timeline."""
        self._commits = commits

    def is_committed(self, instant_time: str) -> bool:
        """A completed write (v6 readers skip the log blocks of failed writes)."""
        return (self._commits or self.timeline.commit_check())(instant_time)

    # -- schema ----------------------------------------------------------------------------------------------
    def avro_schema(self, as_of: str | None = None) -> dict | None:
        """Writer schema (no meta fields) of the latest completed write at or before ``as_of``."""
        for entry in reversed(self.timeline.completed_writes()):
            if as_of is not None and entry.requested_time > as_of:
                continue
            schema = self.timeline.writer_schema(entry.requested_time)
            if schema:
                return json.loads(schema)
        return json.loads(self.config.create_schema) if self.config.create_schema else None

    def renames(self, instant: str) -> dict[str, str]:
        """Column names in data written at ``instant`` -> today's names, for columns renamed since (schema on
        read, :mod:`.schema_history`); read once per table object."""
        with self._schema_history_lock:
            if self._schema_history is False:
                self._schema_history = load_schema_history(self.storage)
            history = self._schema_history
        return history.renames(instant) if isinstance(history, SchemaHistory) else {}

    def arrow_schema(self, as_of: str | None = None) -> pa.Schema:
        """The rows' schema: meta columns first (when the table populates them), then the data columns."""
        avro = self.avro_schema(as_of)
        # VECTOR columns are decoded as their bytes and returned as arrays (.vectors)
        data = with_vectors(arrow_schema_from_avro(avro), avro) if avro else pa.schema([])
        fields = [f for f in data if f.name not in META_COLUMNS]
        if self.config.drop_partition_columns:
            # the data files lack the partition columns; readers fill them from the partition path, as strings
            # where the writer's schema left them out too (Hudi's TableSchemaResolver appends them so)
            names = {f.name for f in fields}
            fields += [pa.field(c, pa.string()) for c in self.config.partition_fields if c not in names]
        if self.config.populate_meta_fields:
            fields = [pa.field(c, pa.string()) for c in META_COLUMNS] + fields
        # millisecond columns, marked so that readers repair files that label them micros (.timestamp_repair)
        return marked(pa.schema(fields), millis_columns(avro) if avro else frozenset())

    # -- files -----------------------------------------------------------------------------------------------
    def listing(self) -> list[FileInfo]:
        """Every data file the store holds (one recursive LIST), whatever wrote it: the files of pending and
        failed writes too, which checks of the store's content need and the metadata table does not list."""
        if self._listing is None:
            self._listing = list_data_files(self.storage)
        return self._listing

    def release_listings(self) -> None:
        """Let go of the listings kept for reuse (the store's LIST, the opened metadata table): a caller that has
        taken what it needs from a wide table's listing frees their memory before its next step. The next
        listing opens them again, as after :meth:`reload`."""
        self._listing = None
        self._files_index = False

    def files_index(self) -> FilesIndex | None:
        """The metadata table's ``files`` partition when it can serve this table's listings, else None (the
        reason logged once per table and reason). Opened once per timeline load (:meth:`reload`)."""
        if self._files_index is False:
            found = (Unusable("hoodie.metadata.enable=false") if not self._metadata_enable
                     else open_files_index(self.storage, self.config, self.timeline, self._storage_options))
            if isinstance(found, Unusable):
                log_fallback(self.url, found.reason)
                self._files_index = None
            else:
                self._files_index = found
        return self._files_index if isinstance(self._files_index, FilesIndex) else None

    def data_files(self) -> list[FileInfo]:
        """Every data file of the table: from the metadata table when it is usable, else :meth:`listing`."""
        index = self.files_index()
        return index.all_files() if index is not None else self.listing()

    def partitions(self) -> list[str]:
        """The table's partition paths (``""`` for a non-partitioned table's files)."""
        index = self.files_index()
        if index is not None:
            return index.partitions()
        return sorted({posixpath.dirname(f.path) for f in self.listing()})

    def partition_files(self, partition: str) -> list[FileInfo]:
        """The files directly in one partition: from the metadata table when it is usable, else one LIST."""
        index = self.files_index()
        if index is not None:
            return index.files([partition])[partition]
        return self.storage.list_dir(partition)

    def file_system_view(self, paths: list[str] | None = None) -> FileSystemView:
        """View over every data file, or only over ``paths`` (the files some instants wrote: only their
        partitions are looked up when the metadata table serves the listing)."""
        if paths is None:
            return FileSystemView(self.config, self.timeline, self.data_files())
        wanted = set(paths)
        index = self.files_index()
        if index is not None:
            found = index.files({posixpath.dirname(p) for p in wanted})
            files = [f for listed in found.values() for f in listed if f.path in wanted]
        else:
            files = [f for f in self.listing() if f.path in wanted]
        return FileSystemView(self.config, self.timeline, files)

    def partition_values(self, partition_path: str) -> dict[str, str]:
        """Partition path → {field: value} (hive style ``f=v`` or plain values in field order; URL-decoded where the
        writer encoded them).

        A path with more levels than partition fields, on a table of one partition field, is one value that spans
        them (a timestamp key generator's ``yyyy/MM/dd``, Hudi 1.2's slash-separated date partitioning): the value
        is the whole path, as the writer formatted it. Any other mismatch is refused by name: silently pairing
        fields with the wrong levels would filter or fill the wrong values."""
        fields = self.config.partition_fields
        if not partition_path or not fields:
            return {}
        parts = partition_path.split("/")
        if self.config.hive_style_partitioning or all("=" in p for p in parts):
            values = dict(p.split("=", 1) for p in parts if "=" in p)
        elif len(parts) == len(fields):
            values = dict(zip(fields, parts))
        elif len(fields) == 1:
            values = {fields[0]: partition_path}
        else:
            raise InvalidTableContentError(
                f"{self.url}: partition path {partition_path!r} has {len(parts)} levels for the {len(fields)} "
                f"partition fields {', '.join(fields)}")
        if self.config.url_encode_partitions:
            values = {k: urllib.parse.unquote(v) for k, v in values.items()}
        return values
