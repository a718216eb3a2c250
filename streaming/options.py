"""The source's options: parsed once from Spark's string options into a validated pydantic model.

Spark hands a Python data source a case-insensitive dict of strings. Every option is declared here with its
type and default; an unknown name is an error listing the valid ones, because a misspelt
``maxRowsPerTriger`` silently ignored is how a stream falls over in production. So is an option of the right
name that nothing reads: the Hudi read options a Hudi user passes (``hoodie.datasource.*``) and Delta's names for
the same things (``maxFilesPerTrigger``, ``startingVersion``, ...) are mapped onto this source's own, and any other
``hoodie.*`` is refused. Storage options (``fs.*``/``storage.*``) become fsspec's, typed (``storage_options``).
Values are checked here, when the query is defined (``load()``), not when it first runs.
"""
from __future__ import annotations

import datetime
import enum
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import OptionError
from ..hoodie.deletes import Deletes
from ..hoodie.zones import is_zone
from .packing import MAX_PARTITION_BYTES, OPEN_COST_IN_BYTES, Packing, default_parallelism
from .storage_options import storage_options

if TYPE_CHECKING:  # the planner's worker parses the options and reads no table: neither module loads there
    from ..hoodie.config import TableConfig
    from ..state.row_rules import RowRules


class ReadMode(str, enum.Enum):
    UPSERT = "upsert"
    CHANGELOG = "changelog"


class OnRewind(str, enum.Enum):
    """What a stream does when a restore or a rollback undoes instants it delivered (``monitor.rewinds``)."""

    #: stop in one line (or, with failOnDataLoss=false, continue from a snapshot of the restored table)
    FAIL = "fail"
    #: deliver what the rewind changed (``reconcile``); tasks record the keys they deliver to make that possible
    RECONCILE = "reconcile"


class SourceOptions(BaseModel):
    """Options of ``spark.readStream.format("hudi_streaming")`` (names as users write them)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    path: str
    state_location: str | None = Field(default=None, alias="stateLocation")
    starting_instant: str = Field(default="earliest", alias="startingInstant")
    ending_instant: str | None = Field(default=None, alias="endingInstant")
    read_mode: ReadMode = Field(default=ReadMode.UPSERT, alias="readMode")
    emit_deletes: bool = Field(default=False, alias="emitDeletes")
    #: drop deletes on purpose; with neither this nor emitDeletes a delete stops the stream (a sink would drift)
    ignore_deletes: bool = Field(default=False, alias="ignoreDeletes")
    skip_compaction: bool = Field(default=True, alias="skipCompaction")
    skip_clustering: bool = Field(default=True, alias="skipClustering")
    skip_insert_overwrite: bool = Field(default=False, alias="skipInsertOverwrite")
    max_instants_per_trigger: int | None = Field(default=None, alias="maxInstantsPerTrigger", gt=0)
    max_splits_per_trigger: int | None = Field(default=None, alias="maxSplitsPerTrigger", gt=0)
    max_rows_per_trigger: int | None = Field(default=None, alias="maxRowsPerTrigger", gt=0)
    max_bytes_per_trigger: int | None = Field(default=None, alias="maxBytesPerTrigger", gt=0)
    #: how a batch's file groups are packed into tasks, as Spark's spark.sql.files.* of the same names pack files
    #: (``packing``); sizes in bytes or as Spark writes them (128m, 4MB); minPartitionNum: this machine's cores
    max_partition_bytes: int = Field(default=MAX_PARTITION_BYTES, alias="maxPartitionBytes", gt=0)
    open_cost_in_bytes: int = Field(default=OPEN_COST_IN_BYTES, alias="openCostInBytes", ge=0)
    min_partition_num: int | None = Field(default=None, alias="minPartitionNum", gt=0)
    #: a batch waits until this many rows are pending (by the splits' row bounds), or maxTriggerDelay has passed
    min_rows_per_trigger: int | None = Field(default=None, alias="minRowsPerTrigger", gt=0)
    #: how long minRowsPerTrigger may hold a batch back, as Spark's Kafka source names it: 500ms, 30s, 15m, 1h
    max_trigger_delay_seconds: float = Field(default=900.0, alias="maxTriggerDelay", gt=0)
    partitions: str | None = None
    columns: list[str] | None = None
    merge_type: str = Field(default="payload_combine", alias="mergeType")
    mini_batch_size: int = Field(default=65536, alias="miniBatchSize", gt=0)
    fail_on_data_loss: bool = Field(default=True, alias="failOnDataLoss")
    on_rewind: OnRewind = Field(default=OnRewind.FAIL, alias="onRewind")
    #: Hudi's read option: false lists the store even where the table's metadata table could serve the listings
    metadata_enable: bool = Field(default=True, alias="hoodie.metadata.enable")
    #: v8/v9: how much earlier than the cursor a late instant may have completed and still be delivered quietly
    late_instant_window_seconds: int = Field(default=3600, alias="lateInstantWindowSeconds", ge=0)
    allow_schema_changes: bool = Field(default=False, alias="allowSchemaChanges")
    #: how often a stream that has caught up lists the timeline for new instants (Spark asks for the latest offset
    #: every ~10 ms when idle). On a local file system it also lists as soon as the timeline folder's modification
    #: time moves, so the interval only bounds a change that time missed; on an object store the mean
    #: commit-to-sink latency grows by half of it, and each poll is one LIST request (0.5 s: 172,800 a day)
    poll_interval_seconds: float = Field(default=0.5, alias="pollIntervalSeconds", ge=0, le=3600)
    #: the zone the writer of a LOCAL timeline (Hudi's default) wrote instant times in, an IANA name; the table
    #: does not record it, and the driver's own zone is assumed without this option
    timeline_time_zone: str | None = Field(default=None, alias="timelineTimeZone")
    #: Spark's CDC option: ``dropCarryovers`` leaves out updates that changed no delivered column
    deduplication_mode: str = Field(default="none", alias="deduplicationMode")
    #: columns a carry-over may differ in (besides Hudi's meta columns), e.g. a writer's updated_at
    carryover_ignore_columns: list[str] | None = Field(default=None, alias="carryoverIgnoreColumns")
    #: fsspec storage options; kept out of the repr, which would print credentials
    storage: dict[str, Any] = Field(default_factory=dict, repr=False)

    @field_validator("deduplication_mode", mode="before")
    @classmethod
    def _dedup(cls, v: Any) -> Any:
        modes = {"none": "none", "dropcarryovers": "dropCarryovers"}
        if isinstance(v, str) and v.strip().lower() in modes:
            return modes[v.strip().lower()]
        if isinstance(v, str) and v.strip().lower() == "netchanges":
            raise ValueError("netChanges is not offered: a stream delivers each batch's changes as they come, and "
                             "collapsing a key's changes across batches needs Spark's stateful CDC post-processing; "
                             "use none or dropCarryovers")
        raise ValueError("must be none or dropCarryovers")

    def carryovers(self) -> frozenset[str] | None:
        """The columns a carry-over may differ in, when carry-overs are dropped (None: they are delivered)."""
        if self.deduplication_mode != "dropCarryovers":
            return None
        return frozenset(self.carryover_ignore_columns or ())

    @field_validator("columns", "carryover_ignore_columns", mode="before")
    @classmethod
    def _split_columns(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [c.strip() for c in v.split(",") if c.strip()] or None
        return v

    @field_validator("starting_instant", mode="before")
    @classmethod
    def _start(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip().lower() in ("earliest", "latest"):
            return v.strip().lower()
        if isinstance(v, str):
            instant_of(v, "startingInstant")  # checked now; read in the table's zone by positions()
            return v.strip()
        return v

    @field_validator("ending_instant", mode="before")
    @classmethod
    def _end(cls, v: Any) -> Any:
        if isinstance(v, str):
            instant_of(v, "endingInstant")
            return v.strip()
        return v

    def positions(self, zone: str) -> tuple[str, str | None]:
        """``startingInstant`` (``earliest``, ``latest`` or an instant) and ``endingInstant`` as instant times of
        a table whose timeline is in ``zone``: a timestamp names the same moment on a LOCAL table as on a UTC
        one (see :func:`instant_of`)."""
        start = self.starting_instant
        if start not in ("earliest", "latest"):
            start = instant_of(start, "startingInstant", zone)
        end = instant_of(self.ending_instant, "endingInstant", zone) if self.ending_instant else None
        return start, end

    @field_validator("max_trigger_delay_seconds", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*", v.lower())
        if not m:
            raise ValueError("expected a duration such as 500ms, 30s, 15m or 1h")
        return float(m.group(1)) * {"ms": 0.001, "s": 1, None: 1, "m": 60, "min": 60, "h": 3600, "d": 86400}[m.group(2)]

    @field_validator("max_partition_bytes", "open_cost_in_bytes", mode="before")
    @classmethod
    def _byte_size(cls, v: Any) -> Any:
        """Spark's byte strings (``JavaUtils.byteStringAs``): a number of bytes, or one with a binary unit."""
        if not isinstance(v, str):
            return v
        m = re.fullmatch(r"\s*(\d+)\s*(b|kb?|mb?|gb?|tb?|pb?)?\s*", v.lower())
        if not m:
            raise ValueError("expected a size in bytes, or with a unit as Spark writes one: 134217728, 128m, 4MB")
        return int(m.group(1)) << (10 * "bkmgtp".index((m.group(2) or "b")[0]))

    def packing(self) -> Packing:
        """How a batch's file groups are packed into tasks (``streaming.packing``)."""
        return Packing(self.max_partition_bytes, self.open_cost_in_bytes,
                       self.min_partition_num or default_parallelism())

    @field_validator("timeline_time_zone")
    @classmethod
    def _zone(cls, v: str | None) -> str | None:
        if v is not None and not is_zone(v):
            raise ValueError("not an IANA time zone name (e.g. Europe/Berlin, America/New_York, UTC)")
        return v

    def timeline_zone(self, config: TableConfig) -> str:
        """The zone to read the table's instant times in (see ``TableConfig.reading_zone``)."""
        return config.reading_zone(self.timeline_time_zone, "option timelineTimeZone")

    @field_validator("merge_type")
    @classmethod
    def _merge_type(cls, v: str) -> str:
        if v.lower() not in ("payload_combine", "skip_merge"):
            raise ValueError("must be payload_combine or skip_merge")
        return v.lower()

    @field_validator("read_mode", "on_rewind", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _one_delete_choice(self) -> SourceOptions:
        if self.emit_deletes and self.ignore_deletes:
            raise OptionError("options emitDeletes and ignoreDeletes are both true: choose one")
        if self.on_rewind is OnRewind.RECONCILE and not self.emit_deletes:
            raise OptionError("option onRewind=reconcile delivers deletes (of keys a restore took away): set "
                              "emitDeletes=true with it")
        return self

    @property
    def deletes(self) -> Deletes:
        return Deletes.EMIT if self.emit_deletes else Deletes.IGNORE if self.ignore_deletes else Deletes.FAIL

    def row_rules(self) -> RowRules:
        """The options that decide which records a split yields, as the stream's state records them."""
        from ..state.row_rules import RowRules  # the driver's: the state's records (and the planner's Cursor)

        return RowRules(read_mode=self.read_mode.value, deletes=self.deletes.value, merge_type=self.merge_type,
                        deduplication_mode=self.deduplication_mode,
                        carryover_ignore_columns=sorted(self.carryover_ignore_columns or ()), columns=self.columns)

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



_INSTANT = re.compile(r"^\d{14}(\d{3})?$")


def instant_of(value: str, option: str, zone: str = "UTC") -> str:
    """A position given by a user: a Hudi instant time (``yyyyMMddHHmmss[SSS]``, kept as given), or a timestamp
    (``YYYY-MM-DD[ HH:MM:SS[.fff]]``, ISO 8601; UTC unless it names a zone) as the instant time of that moment on
    a timeline written in ``zone`` (UTC, or a LOCAL timeline's writer's zone: Hudi writes instant times there).

    Checked for a real date, so ``2026-03-08`` is a time and ``notatime`` an error (compared as strings, either
    would silently select every instant or none).
    """
    text = value.strip()
    try:
        if _INSTANT.match(text):
            datetime.datetime.strptime(text[:14], "%Y%m%d%H%M%S")
            return text
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise OptionError(f"option {option}={value!r}: expected an instant time (yyyyMMddHHmmss or "
                          "yyyyMMddHHmmssSSS) or a timestamp (YYYY-MM-DD[ HH:MM:SS[.fff]], UTC unless it names a "
                          "zone)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    when = when.astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    return f"{when:%Y%m%d%H%M%S}{when.microsecond // 1000:03d}"


def _after(value: str, option: str) -> str:
    """Hudi's exclusive begin instant as this source's inclusive start: the next millisecond."""
    if value.strip().lower() in ("earliest", "latest"):
        return value
    return str(int(instant_of(value, option).ljust(17, "0")) + 1)


#: Hudi's read options, as Hudi users pass them, onto this source's: (option, how the value translates)
_HOODIE_OPTIONS = {
    "hoodie.datasource.streaming.startoffset": ("startingInstant", _after),
    "hoodie.datasource.read.begin.instanttime": ("startingInstant", _after),
    "hoodie.datasource.read.end.instanttime": ("endingInstant", None),
    "hoodie.metadata.enable": ("hoodie.metadata.enable", None),
}
#: Delta's streaming options that mean the same here (a split is one file group's slice)
_DELTA_OPTIONS = {"maxfilespertrigger": "maxSplitsPerTrigger", "startingversion": "startingInstant",
                  "startingtimestamp": "startingInstant"}
_NAMES = {(f.alias or name).lower(): (f.alias or name) for name, f in SourceOptions.model_fields.items()
          if name != "storage"}


def parse_options(options: Mapping[str, str]) -> SourceOptions:
    """Validate Spark's (lower-cased, string-valued) options."""
    values: dict[str, Any] = {}
    given: dict[str, str] = {}  # option set → the name the user set it by
    storage: dict[str, str] = {}
    for key, value in options.items():
        low = key.lower()
        if low.startswith(("fs.", "storage.")):
            storage[key] = value
            continue
        if low in _HOODIE_OPTIONS:
            name, translate = _HOODIE_OPTIONS[low]
            value = translate(value, key) if translate else value
        elif low.startswith("hoodie."):
            raise OptionError(f"option '{key}' is not read by hudi_streaming; the Hudi options it reads: "
                              f"{', '.join(sorted(_HOODIE_OPTIONS))} (its own: {', '.join(sorted(_NAMES.values()))})")
        elif low in _DELTA_OPTIONS:
            name = _DELTA_OPTIONS[low]
        elif low in _NAMES:
            name = _NAMES[low]
        else:
            valid = ", ".join(sorted(_NAMES.values()))
            raise OptionError(f"unknown option '{key}'; valid options: {valid}; also Delta's "
                              f"{', '.join(sorted(_DELTA_OPTIONS))}, Hudi's {', '.join(sorted(_HOODIE_OPTIONS))} "
                              "and fs.* storage options")
        if name in given and given[name].lower() != low:
            raise OptionError(f"options '{given[name]}' and '{key}' both set {name}: give one")
        given[name] = key
        values[name] = value
    if "path" not in values:
        raise OptionError("no table path: use .load(<table url>) or .option('path', <table url>)")
    values["storage"] = storage_options(storage)
    try:
        return SourceOptions.model_validate(values)
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "?"
        raise OptionError(f"option {field}={values.get(field)!r}: {err['msg']}") from None


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


#: option names whose values are credentials (Spark's own ``spark.redaction.regex``, and s3fs's key names)
_SECRET = re.compile(r"(?i)secret|password|token|access[.]?key|^(fs|storage)\.key$")


def kept_table_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options of a ``CREATE TABLE`` that travel with the table's schema: the user's, without credentials.

    The schema is printed and logged freely (``df.schema``); credentials must come with each read (options,
    or the environment, e.g. ``AWS_ACCESS_KEY_ID``) instead.
    """
    return {k: v for k, v in user_options(options).items() if not _SECRET.search(k)}


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
