"""``hoodie.properties``: the table's configuration, parsed from a Java properties file into a pydantic model.

The file is written by ``java.util.Properties.store``, so values carry Java escapes (``\\:``, ``\\=``,
``\\uXXXX``, line continuations). Everything the reader needs to decide how to read and merge is derived here
once — table type and version, key/partition/ordering fields, merge mode — so the rest of ``hoodie`` never
looks at raw property strings.
"""
from __future__ import annotations

import enum
import re
import zlib

from pydantic import BaseModel, ConfigDict

from ..errors import CorruptFileError, InvalidTableContentError, OptionError, UnsupportedTableError
from .base_file import FORMATS as BASE_FILE_FORMATS
from .logfile.avro_arrow import record_schema_problem
from .storage import Storage, safe_relpath
from .zones import local_zone

PROPERTIES_FILE = ".hoodie/hoodie.properties"
PROPERTIES_BACKUP = ".hoodie/hoodie.properties.backup"
SUPPORTED_VERSIONS = (6, 8, 9)
#: ``TimelineLayoutVersion``: 1 keeps instants in ``.hoodie/`` (table v6), 2 in ``.hoodie/timeline/`` (v8/v9)
SUPPORTED_LAYOUTS = (1, 2)


class TableType(str, enum.Enum):
    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"


class MergeMode(str, enum.Enum):
    """How two versions of one record combine (Hudi 1.x ``RecordMergeMode``; v6 payloads map onto it)."""

    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
    CUSTOM = "CUSTOM"


OVERWRITE_WITH_LATEST = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_TIME_PAYLOAD = "org.apache.hudi.common.model.EventTimeAvroPayload"
PARTIAL_UPDATE_PAYLOAD = "org.apache.hudi.common.model.PartialUpdateAvroPayload"
OVERWRITE_NON_DEFAULTS = "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload"
#: payloads whose merge keeps a field's earlier value where the newer record has null (its default):
#: PartialUpdateAvroPayload on event time, OverwriteNonDefaultsWithLatestAvroPayload on commit time (Hudi 1.x
#: tables name the latter's rule partial update mode IGNORE_DEFAULTS)
NULLS_KEEP_VALUES_PAYLOADS = (PARTIAL_UPDATE_PAYLOAD, OVERWRITE_NON_DEFAULTS)
_PAYLOAD_MODES = {
    OVERWRITE_WITH_LATEST: MergeMode.COMMIT_TIME_ORDERING,
    OVERWRITE_NON_DEFAULTS: MergeMode.COMMIT_TIME_ORDERING,
    DEFAULT_PAYLOAD: MergeMode.EVENT_TIME_ORDERING,
    EVENT_TIME_PAYLOAD: MergeMode.EVENT_TIME_ORDERING,
}
COMMIT_TIME_STRATEGY = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
_STRATEGY_MODES = {
    "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5": MergeMode.EVENT_TIME_ORDERING,
    COMMIT_TIME_STRATEGY: MergeMode.COMMIT_TIME_ORDERING,
    "1897ef5f-18bc-4557-939c-9d6a8afd1519": MergeMode.CUSTOM,
}


def parse_java_properties(text: str, where: str = "properties") -> dict[str, str]:
    """Parse the text of a ``java.util.Properties`` file (the subset ``Properties.store`` and people write).

    A malformed ``\\uXXXX`` escape is a :class:`CorruptFileError` naming ``where``, as ``Properties.load``
    refuses it too ("Malformed \\uxxxx encoding").
    """
    props: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        # a line continues when it ends in an odd number of backslashes
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for line in logical:
        key, value = _split_key_value(line)
        try:
            props[_unescape(key)] = _unescape(value)
        except ValueError as e:
            raise CorruptFileError(f"{where}: line {_short(line)}: {e}") from None
    return props


def _short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def _split_key_value(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":") and (i >= n or line[i] in " \t\f=:"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        nxt = s[i + 1]
        if nxt == "u":
            digits = s[i + 2 : i + 6]
            if not _HEX4.fullmatch(digits):
                raise ValueError(f"malformed \\uxxxx escape {_short(s[i:i + 6])}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    # characters outside the BMP arrive as two \u escapes (a UTF-16 surrogate pair): join them
    try:
        return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise ValueError("a \\u escape is half of a UTF-16 surrogate pair") from None


def _fields(value: str | None) -> list[str]:
    """A comma-separated field list; ``field:type`` (CustomKeyGenerator) keeps only the field."""
    if not value:
        return []
    return [f.split(":", 1)[0].strip() for f in value.split(",") if f.strip()]


def _bool(value: str | None, default: bool) -> bool:
    return default if value is None or value == "" else value.strip().lower() == "true"


class TableConfig(BaseModel):
    """The parts of ``hoodie.properties`` that decide how a table is read and written."""

    model_config = ConfigDict(frozen=True)

    name: str
    database: str | None = None
    table_type: TableType
    version: int
    timeline_layout: int
    timeline_path: str = "timeline"
    history_path: str = "history"
    archive_folder: str = "archived"
    record_key_fields: list[str]
    partition_fields: list[str]
    ordering_fields: list[str]
    key_generator: str | None = None
    payload_class: str | None = None
    merge_mode: MergeMode
    #: a null field of a newer record keeps the older record's value (:data:`NULLS_KEEP_VALUES_PAYLOADS`)
    nulls_keep_values: bool = False
    #: partial update mode FILL_UNAVAILABLE: a field of a newer record holding this marker keeps the older value
    #: (Debezium's ``__debezium_unavailable_value`` for a column its change event did not carry)
    unavailable_marker: str | None = None
    #: a record whose ``delete_field`` holds ``delete_marker`` is a delete (RFC-97's custom delete marker: AWS DMS's
    #: ``Op`` = ``D``, Debezium's ``_change_operation_type`` = ``d``), besides ``_hoodie_is_deleted``
    delete_field: str | None = None
    delete_marker: str | None = None
    #: Hudi merges the table by its 0.x payload class's rules (log records preCombined by ordering value; see
    #: hoodie.merge); otherwise by the 1.x rules of its merge mode
    legacy_merge: bool = False
    hive_style_partitioning: bool = False
    url_encode_partitions: bool = False
    drop_partition_columns: bool = False
    populate_meta_fields: bool = True
    base_file_format: str = "PARQUET"
    create_schema: str | None = None
    #: the zone instant times are written in: "UTC", or "LOCAL" — the writer's JVM zone, which the table does not
    #: record (Hudi's default)
    timeline_timezone: str = "LOCAL"
    raw: dict[str, str]

    @property
    def timeline_zone(self) -> str:
        """The IANA zone to read this table's instant times in, when no one says what the writer's was: UTC, or
        this process's own zone for a LOCAL timeline (Hudi's readers do the same in their JVM's zone)."""
        return "UTC" if self.timeline_timezone == "UTC" else local_zone()

    def reading_zone(self, asked: str | None, setting: str) -> str:
        """The IANA zone to read this table's instant times in when ``asked`` (a valid zone name, or None) names
        the writer's: it applies to a LOCAL timeline only. A UTC table says its own zone, so another one asked for
        (``setting``: the option or argument, for the message) is refused rather than ignored or obeyed — either
        would read every timestamp position off by the offset without a word."""
        if self.timeline_timezone == "UTC":
            if asked not in (None, "UTC"):
                raise OptionError(f"{setting}={asked!r}: the table writes its instant times in UTC "
                                  "(hoodie.table.timeline.timezone=UTC); leave it out")
            return "UTC"
        return asked or self.timeline_zone

    @property
    def timeline_dir(self) -> str:
        """Folder of the active timeline, relative to the table root."""
        return ".hoodie" if self.timeline_layout == 1 else f".hoodie/{self.timeline_path}"

    @property
    def archive_dir(self) -> str:
        return (f".hoodie/{self.archive_folder}" if self.timeline_layout == 1
                else f".hoodie/{self.timeline_path}/{self.history_path}")

    @classmethod
    def from_properties(cls, props: dict[str, str], where: str) -> "TableConfig":
        def need(key: str) -> str:
            if not props.get(key):
                raise UnsupportedTableError(f"{where}: required property {key} is missing")
            return props[key]

        try:
            version = int(props.get("hoodie.table.version", "6"))
        except ValueError:
            raise CorruptFileError(f"{where}: hoodie.table.version is not a number: "
                                   f"{props.get('hoodie.table.version')!r}") from None
        if version not in SUPPORTED_VERSIONS:
            raise UnsupportedTableError(f"{where}: hoodie.table.version={version} is not supported "
                                        f"(supported: {', '.join(map(str, SUPPORTED_VERSIONS))})")
        base_format = (props.get("hoodie.table.base.file.format") or props.get("hoodie.table.ro.file.format")
                       or "PARQUET").upper()
        if base_format not in BASE_FILE_FORMATS:
            raise UnsupportedTableError(f"{where}: hoodie.table.base.file.format={base_format} is not supported "
                                        f"(readable: {', '.join(BASE_FILE_FORMATS)})")
        if _bool(props.get("hoodie.table.multiple.base.file.formats.enable"), False):
            raise UnsupportedTableError(f"{where}: hoodie.table.multiple.base.file.formats.enable=true "
                                        "is not supported")
        if props.get("hoodie.bootstrap.base.path"):
            raise UnsupportedTableError(f"{where}: bootstrapped tables (hoodie.bootstrap.base.path) are not supported")
        table_type = need("hoodie.table.type") if "hoodie.table.type" in props else "COPY_ON_WRITE"
        try:
            ttype = TableType(table_type.upper())
        except ValueError:
            raise UnsupportedTableError(f"{where}: hoodie.table.type={table_type} is not a Hudi table type") from None
        ordering = _fields(props.get("hoodie.table.ordering.fields") or props.get("hoodie.table.precombine.field"))
        payload = props.get("hoodie.compaction.payload.class") or props.get("hoodie.table.legacy.payload.class")
        layout_text = props.get("hoodie.timeline.layout.version") or ("2" if version >= 8 else "1")
        if layout_text.strip() not in {str(v) for v in SUPPORTED_LAYOUTS}:
            raise UnsupportedTableError(f"{where}: hoodie.timeline.layout.version={layout_text} is not supported "
                                        f"(supported: {', '.join(map(str, SUPPORTED_LAYOUTS))})")
        layout = int(layout_text)
        timeline_path = _folder(props, "hoodie.timeline.path", "timeline", where)
        partial_mode = (props.get("hoodie.table.partial.update.mode") or "").upper()
        _refuse_unread_merge_properties(props, partial_mode, where)
        delete_field, delete_marker = props.get(DELETE_FIELD) or None, props.get(DELETE_MARKER) or None
        if (delete_field is None) != (delete_marker is None):
            raise CorruptFileError(f"{where}: {DELETE_FIELD} and {DELETE_MARKER} come together; only "
                                   f"{DELETE_FIELD if delete_field else DELETE_MARKER} is set")
        create_schema = props.get("hoodie.table.create.schema") or None
        # the table's schema until a commit carries one: checked here so the error names this file
        problem = record_schema_problem(create_schema) if create_schema is not None else None
        if problem is not None:
            raise CorruptFileError(f"{where}: hoodie.table.create.schema is not an Avro record schema ({problem})")
        return cls(
            name=need("hoodie.table.name"),
            database=props.get("hoodie.database.name") or None,
            table_type=ttype,
            version=version,
            timeline_layout=layout,
            timeline_path=timeline_path,
            history_path=_folder(props, "hoodie.timeline.history.path", "history", where),
            archive_folder=_folder(props, "hoodie.archivelog.folder", "archived", where),
            record_key_fields=_fields(props.get("hoodie.table.recordkey.fields")),
            partition_fields=_fields(props.get("hoodie.table.partition.fields")),
            ordering_fields=ordering,
            key_generator=props.get("hoodie.table.keygenerator.type") or props.get("hoodie.table.keygenerator.class"),
            payload_class=payload,
            merge_mode=_infer_merge_mode(props, version, payload, ordering, where),
            legacy_merge=_legacy_merge(props, version, payload),
            nulls_keep_values=payload in NULLS_KEEP_VALUES_PAYLOADS or partial_mode == "IGNORE_DEFAULTS",
            unavailable_marker=props.get(UNAVAILABLE_VALUE) if partial_mode == "FILL_UNAVAILABLE" else None,
            delete_field=delete_field, delete_marker=delete_marker,
            hive_style_partitioning=_bool(props.get("hoodie.datasource.write.hive_style_partitioning"), False),
            url_encode_partitions=_bool(props.get("hoodie.datasource.write.partitionpath.urlencode"), False),
            drop_partition_columns=_bool(props.get("hoodie.datasource.write.drop.partition.columns"), False),
            populate_meta_fields=_bool(props.get("hoodie.populate.meta.fields"), True),
            base_file_format=base_format,
            create_schema=create_schema,
            timeline_timezone="UTC" if (props.get("hoodie.table.timeline.timezone") or "").upper() == "UTC"
            else "LOCAL",
            raw=props,
        )


#: partial update modes read as Hudi merges them: KEEP_VALUES (a partial block's missing columns keep the earlier
#: values: IS_PARTIAL blocks), IGNORE_DEFAULTS (a null keeps the earlier value: ``nulls_keep_values``) and
#: FILL_UNAVAILABLE (a marker keeps the earlier value: ``unavailable_marker``)
READ_PARTIAL_MODES = ("", "KEEP_VALUES", "IGNORE_DEFAULTS", "FILL_UNAVAILABLE")
#: table properties of a version-9 merge (RFC-97) that change which records win or count as deletes
MERGE_PROPERTY_PREFIX = "hoodie.record.merge.property."
DELETE_FIELD = MERGE_PROPERTY_PREFIX + "hoodie.payload.delete.field"
DELETE_MARKER = MERGE_PROPERTY_PREFIX + "hoodie.payload.delete.marker"
UNAVAILABLE_VALUE = MERGE_PROPERTY_PREFIX + "hoodie.write.partial.update.unavailable.value"
#: the merge properties read (every other one is refused by name)
READ_MERGE_PROPERTIES = (DELETE_FIELD, DELETE_MARKER, UNAVAILABLE_VALUE)


def _refuse_unread_merge_properties(props: dict[str, str], partial_mode: str, where: str) -> None:
    """A merge rule this reader does not apply would give other rows than Hudi without a word: a partial update
    mode that fills columns from other markers or from defaults (IGNORE_MARKERS, FILL_DEFAULTS), FILL_UNAVAILABLE
    without its marker, or a merge property this reader does not know. Refused by name until read."""
    if partial_mode not in READ_PARTIAL_MODES:
        raise UnsupportedTableError(f"{where}: hoodie.table.partial.update.mode={partial_mode} is not supported "
                                    f"(supported: {', '.join(m for m in READ_PARTIAL_MODES if m)})")
    if partial_mode == "FILL_UNAVAILABLE" and not props.get(UNAVAILABLE_VALUE):
        raise UnsupportedTableError(f"{where}: hoodie.table.partial.update.mode=FILL_UNAVAILABLE without "
                                    f"{UNAVAILABLE_VALUE}: the marker of an unavailable value is unknown")
    unread = sorted(k for k, v in props.items()
                    if k.startswith(MERGE_PROPERTY_PREFIX) and v and k not in READ_MERGE_PROPERTIES)
    if unread:
        raise UnsupportedTableError(f"{where}: merge property {unread[0]}={props[unread[0]]} is not supported (a "
                                    "merge rule this reader does not apply)")


def _folder(props: dict[str, str], key: str, default: str, where: str) -> str:
    """A folder name the config places inside ``.hoodie`` (or inside the timeline folder): it must stay there,
    since every timeline read joins it to the table root."""
    value = props.get(key) or default
    try:
        inside = safe_relpath(value) != ""  # "" is the folder itself ("." or "x/..")
    except InvalidTableContentError:  # absolute, or leaving the folder
        inside = False
    if not inside:
        raise InvalidTableContentError(f"{where}: {key}={value} does not name a folder inside .hoodie")
    return value


def _legacy_merge(props: dict[str, str], version: int, payload: str | None) -> bool:
    """Whether Hudi 1.2 reads a table with the 0.x payload rules: v6 tables, except those a 1.x writer marked
    commit-time (``hoodie.record.merge.strategy.id``: newest wins, log records among themselves too) and those of
    OverwriteNonDefaultsWithLatestAvroPayload, which 1.2 also merges newest first (tests/oracle/hudi_oracle:
    mor_v6_commit_time and mor_v6_custom_payload, where a stale ordering value in the log wins)."""
    return (version < 8 and payload != OVERWRITE_NON_DEFAULTS
            and props.get("hoodie.record.merge.strategy.id") != COMMIT_TIME_STRATEGY)


def _infer_merge_mode(props: dict[str, str], version: int, payload: str | None, ordering: list[str],
                      where: str) -> MergeMode:
    """Hudi's ``inferMergingConfigsForPreV9Table`` precedence: v<8 payload first, v>=8 strategy id first."""
    strategy = props.get("hoodie.record.merge.strategy.id") or props.get("hoodie.compaction.record.merger.strategy")
    explicit = props.get("hoodie.record.merge.mode")
    from_payload = _PAYLOAD_MODES.get(payload) if payload else None
    if payload == PARTIAL_UPDATE_PAYLOAD:
        from_payload = MergeMode.EVENT_TIME_ORDERING
    from_strategy = _STRATEGY_MODES.get(strategy) if strategy else None
    mode: MergeMode | None
    if version < 8:
        # 0.x: the payload class decides; absent means the 0.x default, OverwriteWithLatestAvroPayload
        mode = from_payload or (MergeMode.CUSTOM if payload else MergeMode.COMMIT_TIME_ORDERING)
    else:
        try:
            mode = MergeMode(explicit.upper()) if explicit else (from_strategy or from_payload)
        except ValueError:
            raise UnsupportedTableError(f"{where}: hoodie.record.merge.mode={explicit} is not a merge mode "
                                        f"({', '.join(m.value for m in MergeMode)})") from None
    if mode is None:
        mode = MergeMode.EVENT_TIME_ORDERING if ordering else MergeMode.COMMIT_TIME_ORDERING
    if mode is MergeMode.CUSTOM and payload not in (None, PARTIAL_UPDATE_PAYLOAD):
        raise UnsupportedTableError(f"{where}: custom merge (payload class {payload}) is not supported")
    if mode is MergeMode.CUSTOM:
        raise UnsupportedTableError(f"{where}: hoodie.record.merge.mode=CUSTOM is not supported")
    if mode is MergeMode.EVENT_TIME_ORDERING and not ordering:
        return MergeMode.COMMIT_TIME_ORDERING
    return mode


def _checksum_error(props: dict[str, str], where: str) -> CorruptFileError | None:
    """Hudi's ``HoodieTableConfig.validateChecksum``: CRC32 of ``<database>.<table name>``, a decimal long.

    A checksum that is not a number, or one without a table name to check against, fails there too
    (``Long.parseLong``, ``generateChecksum``'s "property needs to be specified"); a file without a checksum
    is from before Hudi 0.10 and is not checked.
    """
    check = props.get("hoodie.table.checksum")
    if check is None:
        return None
    name = props.get("hoodie.table.name")
    if not re.fullmatch(r"[0-9]{1,20}", check) or name is None:
        return CorruptFileError(f"{where}: hoodie.table.checksum={_short(check)} cannot be checked (not a number, "
                                "or no hoodie.table.name); the file is torn or foreign")
    expect = zlib.crc32(f"{props.get('hoodie.database.name', '')}.{name}".encode())
    if int(check) != expect:
        return CorruptFileError(f"{where}: hoodie.table.checksum={check} does not match the table name "
                                f"(expected {expect}); the file is torn or foreign")
    return None


def load_table_config(storage: Storage) -> TableConfig:
    """Read ``hoodie.properties`` (falling back to the backup Hudi leaves during an update)."""
    last_error: Exception | None = None
    for rel in (PROPERTIES_FILE, PROPERTIES_BACKUP):
        try:
            text = storage.read_bytes(rel).decode("latin-1")
        except FileNotFoundError as e:
            last_error = last_error or e  # a damaged main file is the more useful error
            continue
        where = f"{storage.url}/{rel}"
        try:
            props = parse_java_properties(text, where)
        except CorruptFileError as e:
            last_error = e
            continue
        if not props:
            last_error = CorruptFileError(f"{where}: empty properties file")
            continue
        bad_checksum = _checksum_error(props, where)
        if bad_checksum is not None:
            last_error = bad_checksum
            continue
        return TableConfig.from_properties(props, where)
    if isinstance(last_error, FileNotFoundError):
        raise UnsupportedTableError(f"{storage.url}: not a Hudi table (no {PROPERTIES_FILE})")
    assert last_error is not None  # each of the two files either returned its config or set an error
    raise last_error
