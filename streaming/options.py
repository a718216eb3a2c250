"""The source's options: parsed once from Spark's string options into a validated pydantic model.

Spark hands a Python data source a case-insensitive dict of strings. Every option is declared here with its
type and default; an unknown name is an error listing the valid ones, because a misspelt
``maxRowsPerTriger`` silently ignored is how a stream falls over in production. ``hoodie.*`` options go through
untouched; storage options (``fs.*``/``storage.*``) become fsspec's, typed (``storage_options``).
"""
from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import OptionError
from .storage_options import storage_options


class ReadMode(str, enum.Enum):
    UPSERT = "upsert"
    CHANGELOG = "changelog"


class SourceOptions(BaseModel):
    """Options of ``spark.readStream.format("hudi_streaming")`` (names as users write them)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    path: str
    state_location: str | None = Field(default=None, alias="stateLocation")
    starting_instant: str = Field(default="earliest", alias="startingInstant")
    ending_instant: str | None = Field(default=None, alias="endingInstant")
    read_mode: ReadMode = Field(default=ReadMode.UPSERT, alias="readMode")
    emit_deletes: bool = Field(default=False, alias="emitDeletes")
    skip_compaction: bool = Field(default=True, alias="skipCompaction")
    skip_clustering: bool = Field(default=True, alias="skipClustering")
    skip_insert_overwrite: bool = Field(default=False, alias="skipInsertOverwrite")
    max_instants_per_trigger: int | None = Field(default=None, alias="maxInstantsPerTrigger", gt=0)
    max_splits_per_trigger: int | None = Field(default=None, alias="maxSplitsPerTrigger", gt=0)
    max_rows_per_trigger: int | None = Field(default=None, alias="maxRowsPerTrigger", gt=0)
    max_bytes_per_trigger: int | None = Field(default=None, alias="maxBytesPerTrigger", gt=0)
    partitions: str | None = None
    columns: list[str] | None = None
    merge_type: str = Field(default="payload_combine", alias="mergeType")
    mini_batch_size: int = Field(default=65536, alias="miniBatchSize", gt=0)
    fail_on_data_loss: bool = Field(default=True, alias="failOnDataLoss")
    #: v8/v9: how much earlier than the cursor a late instant may have completed and still be delivered quietly
    late_instant_window_seconds: int = Field(default=3600, alias="lateInstantWindowSeconds", ge=0)
    allow_schema_changes: bool = Field(default=False, alias="allowSchemaChanges")
    hoodie: dict[str, str] = Field(default_factory=dict)
    #: fsspec storage options; kept out of the repr, which would print credentials
    storage: dict[str, Any] = Field(default_factory=dict, repr=False)

    @field_validator("columns", mode="before")
    @classmethod
    def _split_columns(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [c.strip() for c in v.split(",") if c.strip()] or None
        return v

    @field_validator("merge_type")
    @classmethod
    def _merge_type(cls, v: str) -> str:
        if v.lower() not in ("payload_combine", "skip_merge"):
            raise ValueError("must be payload_combine or skip_merge")
        return v.lower()

    @field_validator("read_mode", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v

    def partition_filter(self) -> dict[str, list[str]] | None:
        """``partitions`` as ``field=v1|v2,field2=v3`` → {field: [values]}."""
        if not self.partitions:
            return None
        out: dict[str, list[str]] = {}
        for part in self.partitions.split(","):
            if "=" not in part:
                raise OptionError(f"option partitions: '{part}' is not field=value[|value...]")
            k, v = part.split("=", 1)
            out.setdefault(k.strip(), []).extend(x.strip() for x in v.split("|"))
        return out



_NAMES = {(f.alias or name).lower(): (f.alias or name) for name, f in SourceOptions.model_fields.items()
          if name not in ("hoodie", "storage")}


def parse_options(options: Mapping[str, str]) -> SourceOptions:
    """Validate Spark's (lower-cased, string-valued) options."""
    values: dict[str, Any] = {"hoodie": {}}
    storage: dict[str, str] = {}
    for key, value in options.items():
        low = key.lower()
        if low.startswith("hoodie."):
            values["hoodie"][key] = value
        elif low.startswith(("fs.", "storage.")):
            storage[key] = value
        elif low in _NAMES:
            values[_NAMES[low]] = value
        else:
            valid = ", ".join(sorted(_NAMES.values()))
            raise OptionError(f"unknown option '{key}'; valid options: {valid}, and hoodie.*/fs.* pass-throughs")
    if "path" not in values:
        raise OptionError("no table path: use .load(<table url>) or .option('path', <table url>)")
    values["storage"] = storage_options(storage)
    try:
        return SourceOptions.model_validate(values)
    except ValidationError as e:
        err = e.errors()[0]
        name = err["loc"][0] if err["loc"] else "?"
        raise OptionError(f"option {name}={values.get(str(name))!r}: {err['msg']}") from None


#: keys Spark's session catalog adds to a source's options on ``CREATE TABLE ... USING hudi_streaming``; it also
#: repeats every user option as ``option.<name>``
_CATALOG_KEYS = ("owner", "location", "provider")
#: where a catalog table's options are kept: metadata of the schema's first field (see :func:`table_options`)
TABLE_OPTIONS_KEY = "hudi_streaming.tableOptions"


def is_catalog_definition(options: Mapping[str, str]) -> bool:
    """Spark is defining a catalog table (``CREATE TABLE``): it passes ``provider``, which no reader does."""
    return any(k.lower() == "provider" for k in options)


def user_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options the user gave, without the ones Spark's catalog adds when it defines a table."""
    if not is_catalog_definition(options):
        return dict(options)
    return {k: v for k, v in options.items()
            if k.lower() not in _CATALOG_KEYS and not k.lower().startswith("option.")}


def table_options(schema_metadata: Mapping[str, Any]) -> dict[str, str]:
    """The options a catalog table was defined with, from its schema's first field's metadata.

    PySpark 4 passes a Python source's ``CREATE TABLE ... OPTIONS (...)`` only to ``schema()`` when the table is
    defined; a later ``spark.table(t)`` or ``spark.readStream.table(t)`` hands the reader only the options of that
    read (often none, so not even the path). Spark keeps the schema with its field metadata in the catalog and
    gives it back to every reader, so the definition's options travel there, and a read's own options override
    them (e.g. a ``stateLocation`` per query).
    """
    raw = schema_metadata.get(TABLE_OPTIONS_KEY)
    if raw is None:
        return {}
    try:
        stored = json.loads(raw)
    except ValueError:
        stored = None
    if not isinstance(stored, dict) or not all(isinstance(v, str) for v in stored.values()):
        raise OptionError(f"the catalog table's schema metadata {TABLE_OPTIONS_KEY} is not a JSON object of "
                          f"strings: {raw[:80]!r}; drop and create the table again")
    return stored
