"""Commit metadata of completed instants: JSON (layout 1) or an Avro object container (layout 2).

Both encodings use the same field names, so they decode into one pydantic model. The model is the
reader's only source for "which files did this instant write", so every path in it is validated before use.
"""
from __future__ import annotations

import io
import json
import posixpath
from typing import Any

import fastavro
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ...errors import CorruptFileError
from ..storage import safe_relpath

AVRO_MAGIC = b"Obj\x01"


class WriteStat(BaseModel):
    """One file written by an instant (Hudi ``HoodieWriteStat``)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

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
        v = 0 if v is None else int(v)
        if v < 0:
            raise ValueError(f"negative counter {v}")
        return v

    @field_validator("path")
    @classmethod
    def _path_inside_table(cls, v: str | None) -> str | None:
        return None if v in (None, "", "null") else safe_relpath(v)

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

    @field_validator("partition_to_write_stats", "partition_to_replace_file_ids", "extra_metadata", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return {} if v is None else v

    @property
    def writer_schema(self) -> str | None:
        """The writer schema (Avro JSON, without meta fields) the instant wrote with.

        Not ``schema_json``: that name is pydantic's (a deprecated ``BaseModel`` classmethod).
        """
        return self.extra_metadata.get("schema") or None

    @property
    def schema_json(self) -> str | None:  # type: ignore[override]  # old name, still read by hoodie/table.py
        """Deprecated name of :attr:`writer_schema`, until its last caller (hoodie/table.py) moves."""
        return self.writer_schema

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


def decode_metadata_bytes(data: bytes, where: str) -> dict:
    """Decode a timeline file's content, JSON or Avro, into a plain dict (empty file → empty dict)."""
    if not data.strip():
        return {}
    if data[:4] == AVRO_MAGIC:
        return decode_avro_container(data, where)
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CorruptFileError(f"{where}: neither JSON nor Avro commit metadata ({e})") from None
    if not isinstance(value, dict):
        raise CorruptFileError(f"{where}: commit metadata is not a JSON object")
    return value


def parse_commit_metadata(data: bytes | dict, where: str) -> CommitMetadata:
    """Commit metadata from a timeline file's bytes (or an already-decoded dict, e.g. from the archive)."""
    raw = data if isinstance(data, dict) else decode_metadata_bytes(data, where)
    try:
        return CommitMetadata.model_validate(raw)
    except (ValidationError, ValueError) as e:
        first = e.errors()[0] if isinstance(e, ValidationError) else {"msg": str(e), "loc": ()}
        loc = ".".join(str(x) for x in first.get("loc", ()))
        raise CorruptFileError(f"{where}: invalid commit metadata at {loc or '<root>'}: {first['msg']}") from None
