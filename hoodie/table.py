"""A Hudi table opened for reading: storage, configuration, timeline and schema in one place."""
from __future__ import annotations

import json

import pyarrow as pa

from .config import TableConfig, load_table_config
from .fs_view import FileSystemView, list_data_files
from .logfile.avro_arrow import arrow_schema_from_avro
from .schema_history import SchemaHistory, load_schema_history
from .storage import FileInfo, Storage
from .timeline import CommitCheck, Timeline

META_COLUMNS = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                "_hoodie_partition_path", "_hoodie_file_name"]
COMMIT_TIME, RECORD_KEY, PARTITION_PATH = META_COLUMNS[0], META_COLUMNS[2], META_COLUMNS[3]
IS_DELETED = "_hoodie_is_deleted"
OPERATION = "_hoodie_operation"


class HudiTable:
    """Entry point to one table. Cheap to create: the timeline is loaded on first use (a stream's executors read
    planned file slices without it), then kept until :meth:`reload`."""

    def __init__(self, url: str, storage_options: dict | None = None):
        self.storage = Storage(url, storage_options)
        self.config: TableConfig = load_table_config(self.storage)
        self._timeline: Timeline | None = None
        self._commits: CommitCheck | None = None
        self._listing: list[FileInfo] | None = None
        self._schema_history: SchemaHistory | None | bool = False  # False: not read yet

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
            schema = self.timeline.commit_metadata(entry.requested_time).writer_schema
            if schema:
                return json.loads(schema)
        return json.loads(self.config.create_schema) if self.config.create_schema else None

    def renames(self, instant: str) -> dict[str, str]:
        """Column names in data written at ``instant`` -> today's names, for columns renamed since (schema on
        read, :mod:`.schema_history`); read once per table object."""
        if self._schema_history is False:
            self._schema_history = load_schema_history(self.storage)
        history = self._schema_history
        return history.renames(instant) if isinstance(history, SchemaHistory) else {}

    def arrow_schema(self, as_of: str | None = None) -> pa.Schema:
        """The rows' schema: meta columns first (when the table populates them), then the data columns."""
        avro = self.avro_schema(as_of)
        data = arrow_schema_from_avro(avro) if avro else pa.schema([])
        fields = [f for f in data if f.name not in META_COLUMNS]
        if self.config.populate_meta_fields:
            fields = [pa.field(c, pa.string()) for c in META_COLUMNS] + fields
        return pa.schema(fields)

    # -- files -----------------------------------------------------------------------------------------------
    def listing(self) -> list[FileInfo]:
        if self._listing is None:
            self._listing = list_data_files(self.storage)
        return self._listing

    def file_system_view(self, paths: list[str] | None = None) -> FileSystemView:
        """View over every data file, or only over ``paths`` (the files some instants wrote)."""
        files = self.listing()
        if paths is not None:
            wanted = set(paths)
            files = [f for f in files if f.path in wanted]
        return FileSystemView(self.config, self.timeline, files)

    def partition_values(self, partition_path: str) -> dict[str, str]:
        """Partition path → {field: value} (hive style ``f=v`` or plain values in field order)."""
        if not partition_path or not self.config.partition_fields:
            return {}
        parts = partition_path.split("/")
        if self.config.hive_style_partitioning or all("=" in p for p in parts):
            return dict(p.split("=", 1) for p in parts if "=" in p)
        return dict(zip(self.config.partition_fields, parts))
