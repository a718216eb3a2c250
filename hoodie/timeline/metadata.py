"""Commit metadata of completed instants: JSON (layout 1) or an Avro object container (layout 2).

Both encodings use the same field names, so they decode into one pydantic model. The model is the
reader's only source for "which files did this instant write", so everything in it is checked when the file
is decoded, and a file that fails is one error naming it: :class:`CorruptFileError` when it cannot be what
Hudi writes (not JSON or Avro, a field of the wrong type, a schema that is not JSON),
:class:`InvalidTableContentError` when it decodes but must not be trusted (a path outside the table, a negative
size).

An empty file (0 bytes, or only whitespace) decodes as metadata that says nothing, because that is what
Hudi makes of it: ``CommitMetadataSerDeV1/V2.deserialize`` return ``clazz.newInstance()`` for empty content, and
0.x's ``HoodieDefaultTimeline.deserializeInstantContent`` does the same for Jackson's "No content to map". The
instant still counts as completed (the file-system view goes by the timeline, so snapshots show its files);
only readers that plan from the metadata see nothing, which :attr:`CommitMetadata.is_blank` lets them check.
"""
from __future__ import annotations

import io
import json
import posixpath
from typing import Any

import fastavro
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass

from ...errors import CorruptFileError, InvalidTableContentError
from ..logfile.avro_arrow import record_schema_problem
from ..storage import safe_relpath

AVRO_MAGIC = b"Obj\x01"
#: Hudi's counters are Java longs: anything larger cannot have come from a writer.
_JAVA_LONG_MAX = 2**63 - 1


class _Untrusted(ValueError):
    """Raised by a field check for content that decodes but must not be used (reported as
    :class:`InvalidTableContentError` rather than :class:`CorruptFileError`)."""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _count(value: Any) -> int:
    """A non-negative Java long, as Jackson reads one: a JSON number, or a string of digits."""
    if value is None:
        return 0
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        value = int(value)
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value > _JAVA_LONG_MAX:
        raise ValueError(f"expected a count, got {_short(value)}")
    if value < 0:
        raise _Untrusted(f"negative count {value}")
    return value


def _table_path(value: str) -> str:
    """A path relative to the table root that stays inside it (partition paths and written files)."""
    try:
        return safe_relpath(value)
    except InvalidTableContentError:
        raise _Untrusted(f"path {_short(value)} is absolute or leaves the table") from None


def _partition_keys(value: Any) -> Any:
    """Partition-keyed maps: ``None`` is empty, every partition path stays inside the table."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return {_table_path(k) if isinstance(k, str) else k: v for k, v in value.items()}
    return value


@pydantic_dataclass(config=ConfigDict(extra="ignore", populate_by_name=True), slots=True)
class WriteStat:
    """One file written by an instant (Hudi ``HoodieWriteStat``).

    A pydantic dataclass with slots, not a model: a wide table's commit holds one per file group, and a model
    also keeps a ``__dict__`` and the set of fields given (1.7 KiB per stat against ~0.5 KiB)."""

    file_id: str = Field(alias="fileId")
    path: str | None = None
    partition_path: str | None = Field(default=None, alias="partitionPath")
    prev_commit: str | None = Field(default=None, alias="prevCommit")
    num_writes: int = Field(default=0, alias="numWrites")
    num_deletes: int = Field(default=0, alias="numDeletes")
    num_update_writes: int = Field(default=0, alias="numUpdateWrites")
    num_inserts: int = Field(default=0, alias="numInserts")
    total_write_bytes: int = Field(default=0, alias="totalWriteBytes")
    file_size_in_bytes: int = Field(default=0, alias="fileSizeInBytes")
    log_version: int | None = Field(default=None, alias="logVersion")
    log_offset: int | None = Field(default=None, alias="logOffset")
    base_file: str | None = Field(default=None, alias="baseFile")
    log_files: list[str] | None = Field(default=None, alias="logFiles")

    @field_validator("num_writes", "num_deletes", "num_update_writes", "num_inserts", "total_write_bytes",
                     "file_size_in_bytes", mode="before")
    @classmethod
    def _counter(cls, v: Any) -> int:
        return _count(v)

    @field_validator("log_version", "log_offset", mode="before")
    @classmethod
    def _optional_counter(cls, v: Any) -> int | None:
        return None if v is None else _count(v)

    @field_validator("path")
    @classmethod
    def _path_inside_table(cls, v: str | None) -> str | None:
        return None if v in (None, "", "null") else _table_path(v)

    @field_validator("partition_path")
    @classmethod
    def _partition_inside_table(cls, v: str | None) -> str | None:
        return None if v is None else _table_path(v)

    @property
    def file_name(self) -> str | None:
        return posixpath.basename(self.path) if self.path else None


class CommitMetadata(BaseModel):
    """``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata``: files written (and replaced) by an instant."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    partition_to_write_stats: dict[str, list[WriteStat]] = Field(default_factory=dict, alias="partitionToWriteStats")
    partition_to_replace_file_ids: dict[str, list[str]] = Field(default_factory=dict,
                                                                 alias="partitionToReplaceFileIds")
    compacted: bool | None = None
    extra_metadata: dict[str, str | None] = Field(default_factory=dict, alias="extraMetadata")
    operation_type: str | None = Field(default=None, alias="operationType")

    @field_validator("partition_to_write_stats", "partition_to_replace_file_ids", mode="before")
    @classmethod
    def _partitions(cls, v: Any) -> Any:
        return _partition_keys(v)

    @field_validator("extra_metadata", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return {} if v is None else v

    @field_validator("extra_metadata")
    @classmethod
    def _schema_is_a_record(cls, v: dict[str, str | None]) -> dict[str, str | None]:
        """Checked once per file, so the table's Arrow schema and the stream's schema check read a record, and
        a damaged schema is reported with its file."""
        problem = record_schema_problem(v["schema"]) if v.get("schema") else None
        if problem is not None:
            raise ValueError(f"the writer schema is not an Avro record schema ({problem})")
        return v

    @property
    def writer_schema(self) -> str | None:
        """The writer schema (Avro JSON, without meta fields) the instant wrote with.

        Not ``schema_json``: that name is pydantic's (a deprecated ``BaseModel`` classmethod).
        """
        return self.extra_metadata.get("schema") or None

    @property
    def is_blank(self) -> bool:
        """Says nothing at all: no files, no operation, no extra metadata (what an empty file decodes to).

        A commit Hudi writes always names its operation and carries the writer schema, even when it wrote no
        rows, so blank metadata of a write instant means the file lost its content.
        """
        return not (self.partition_to_write_stats or self.partition_to_replace_file_ids or self.extra_metadata
                    or self.operation_type or self.compacted is not None)

    def write_stats(self) -> list[WriteStat]:
        return [s for stats in self.partition_to_write_stats.values() for s in stats]

    def written_paths(self) -> list[str]:
        return [s.path for s in self.write_stats() if s.path]


def decode_avro_container(data: bytes, where: str) -> dict:
    """The single record of an Avro object container file (the encoding of all non-JSON timeline files)."""
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except Exception as e:  # fastavro raises many types on garbage
        raise CorruptFileError(f"{where}: not a readable Avro container file ({e})") from None
    if len(records) != 1:
        raise CorruptFileError(f"{where}: expected one Avro record, found {len(records)}")
    record = records[0]
    if not isinstance(record, dict):
        raise CorruptFileError(f"{where}: the Avro container holds a {type(record).__name__}, not a record")
    return record


def parse_writer_schema(data: bytes, where: str) -> str | None:
    """The writer schema alone of a commit-metadata file, checked as :func:`parse_commit_metadata` checks it.

    Spark asks the source for its schema in a process of its own, before the stream plans anything; on a wide
    table the last commit holds a write stat per file group, and decoding and validating every one of them
    for this one field cost 0.34 s of the 10,000-partition table's time to the first batch. An Avro file is
    decoded with a reader schema of the extra metadata only (fastavro skips the rest); a JSON one is parsed
    whole (the C parser is fast) and only its extra metadata validated."""
    raw = _extra_metadata_only(data, where) if data[:4] == AVRO_MAGIC else decode_metadata_bytes(data, where)
    return parse_commit_metadata({"extraMetadata": raw.get("extraMetadata")}, where).writer_schema


def _extra_metadata_only(data: bytes, where: str) -> dict:
    """An Avro commit-metadata container's record with its ``extraMetadata`` field only (all of it, through
    :func:`decode_avro_container`, when the writer schema is not the record it should be)."""
    try:
        written = json.loads(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])
        fields = [f for f in written["fields"] if f["name"] == "extraMetadata"]
        reader_schema = {**written, "fields": fields}
        records = list(fastavro.reader(io.BytesIO(data), reader_schema=reader_schema))
    except Exception:  # noqa: BLE001 - whatever is wrong, the full decode names it as it always has
        return decode_avro_container(data, where)
    if len(records) != 1 or not isinstance(records[0], dict):
        return decode_avro_container(data, where)
    return records[0]


def decode_metadata_bytes(data: bytes, where: str) -> dict:
    """Decode a timeline file's content, JSON or Avro, into a plain dict (empty file → empty dict)."""
    if not data.strip():
        return {}
    if data[:4] == AVRO_MAGIC:
        return decode_avro_container(data, where)
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, nested too deep, a number too long
        raise CorruptFileError(f"{where}: neither JSON nor Avro commit metadata ({_short(str(e))})") from None
    if not isinstance(value, dict):
        raise CorruptFileError(f"{where}: commit metadata is not a JSON object")
    return value


def parse_commit_metadata(data: bytes | dict, where: str) -> CommitMetadata:
    """Commit metadata from a timeline file's bytes (or an already-decoded dict, e.g. from the archive)."""
    raw = data if isinstance(data, dict) else decode_metadata_bytes(data, where)
    try:
        return CommitMetadata.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        cause = first.get("ctx", {}).get("error")
        msg = str(cause) if isinstance(cause, ValueError) else first["msg"]
        error = InvalidTableContentError if isinstance(cause, _Untrusted) else CorruptFileError
        raise error(f"{where}: invalid commit metadata at {loc or '<root>'}: {msg}") from None
