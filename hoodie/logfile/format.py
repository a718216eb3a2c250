"""Names and constants of the Hudi log format: block types, header keys, the block record, file names.

Everything here is fixed by what Hudi writes on disk (spec §4.2, §5.1–5.3, §5.7): enum values are Java
ordinals, so they must never be renumbered. The reader, the content decoders and the writer all share
these definitions, which is why the delete-block Avro schema and its ordering-value wrappers live here too.
"""
from __future__ import annotations

import base64
import binascii
import enum
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Every block starts with these six bytes (``HoodieLogFormat.MAGIC``).
MAGIC = b"#HUDI#"
#: The only log format version written since Hudi 0.4 (``HoodieLogFormat.CURRENT_VERSION``).
LOG_FORMAT_VERSION = 1
#: Content version of Avro data blocks and delete blocks written by Hudi 0.14+ / 1.x.
CONTENT_VERSION = 3


class BlockType(enum.IntEnum):
    """``HoodieLogBlock.HoodieLogBlockType``, serialized as its ordinal."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2  # never written: the reader makes one for bytes it cannot frame
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(enum.IntEnum):
    """``HoodieLogBlock.HeaderMetadataType``, serialized as its ordinal."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


#: ``HoodieCommandBlock.HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK`` as written in the COMMAND_BLOCK_TYPE header.
ROLLBACK_COMMAND = "0"

_DATA_TYPES = frozenset({BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.HFILE_DATA})

# --- what a valid block header holds (spec §5.2, §5.3, §5.8) -----------------------------------------------

#: Lengths of instant times (spec §2.1): ``yyyyMMddHHmmss`` (pre-0.9 Hudi), ``yyyyMMddHHmmssSSS``, and the 0.x
#: metadata table's service instants, a 17-digit instant plus a three-digit suffix
#: (``HoodieTableMetadataUtil.createCompactionTimestamp`` and siblings).
INSTANT_TIME_LENGTHS = frozenset({14, 17, 20})
_BLOCK_IDENTIFIER = re.compile(r"\d+,\d+")  # "<attemptNo>,<blockSeqNo>" (split and parsed as long, int by Hudi)


def is_instant_time(value: str) -> bool:
    """Whether ``value`` has the form of a Hudi instant time: ASCII digits of one of the lengths Hudi writes."""
    return len(value) in INSTANT_TIME_LENGTHS and value.isascii() and value.isdigit()


def _is_base64(value: str) -> bool:
    """``RECORD_POSITIONS``: a serialized bitmap, ``java.util.Base64`` encoded (never empty: Hudi leaves the
    header out when it has no positions)."""
    try:
        return bool(value) and bool(base64.b64decode(value, validate=True))
    except (binascii.Error, ValueError):
        return False


#: Header key -> (predicate on its value, what the value must be). SCHEMA is checked by the content decoders'
#: module (it must parse as an Avro record schema), which knows Avro.
HEADER_VALUE_RULES: Mapping[HeaderKey, tuple[Callable[[str], bool], str]] = {
    HeaderKey.INSTANT_TIME: (is_instant_time, "an instant time"),
    HeaderKey.TARGET_INSTANT_TIME: (is_instant_time, "an instant time"),
    HeaderKey.BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS: (is_instant_time, "an instant time"),
    HeaderKey.COMPACTED_BLOCK_TIMES: (lambda v: all(map(is_instant_time, v.split(","))),
                                      "a comma-separated list of instant times"),
    HeaderKey.COMMAND_BLOCK_TYPE: (lambda v: v == ROLLBACK_COMMAND,
                                   f"a command type (only {ROLLBACK_COMMAND}, ROLLBACK_BLOCK, exists)"),
    HeaderKey.RECORD_POSITIONS: (_is_base64, "Base64"),
    HeaderKey.BLOCK_IDENTIFIER: (lambda v: _BLOCK_IDENTIFIER.fullmatch(v) is not None, "<attempt>,<sequence number>"),
    HeaderKey.IS_PARTIAL: (lambda v: v in ("true", "false"), "true or false"),
}
#: Keys only command blocks carry (a rollback's, ``BaseRollbackHelper``), and the only ones they carry.
_COMMAND_KEYS = frozenset({HeaderKey.INSTANT_TIME, HeaderKey.TARGET_INSTANT_TIME, HeaderKey.COMMAND_BLOCK_TYPE})
_CONTENT_KEYS = frozenset(HeaderKey) - {HeaderKey.TARGET_INSTANT_TIME, HeaderKey.COMMAND_BLOCK_TYPE}


def header_problem(block_type: BlockType, header: Mapping[HeaderKey, str], delta_log: bool) -> str | None:
    """Why ``header`` cannot be the header of a ``block_type`` block Hudi wrote, or None if it can.

    Hudi's readers trust headers blindly (a DELETE block flipped to COMMAND makes Hudi's scanner fail on the
    missing command type; a data block's instant is compared as a string), so every key must be one that
    block type carries and every value of the kind Hudi writes. ``delta_log``: the block is in a ``.log``
    file, where every block carries its INSTANT_TIME (``HoodieAppendHandle``, ``BaseRollbackHelper``);
    the archive files of the v6 timeline carry only SCHEMA (``HoodieTimelineArchiver``).
    """
    allowed = _COMMAND_KEYS if block_type is BlockType.COMMAND else _CONTENT_KEYS
    required = (set() if block_type is BlockType.DELETE
                else {HeaderKey.TARGET_INSTANT_TIME, HeaderKey.COMMAND_BLOCK_TYPE} if block_type is BlockType.COMMAND
                else {HeaderKey.SCHEMA})
    if delta_log:
        required.add(HeaderKey.INSTANT_TIME)
    stray = sorted(k.name for k in header.keys() - allowed)
    if stray:
        return f"a {block_type.name} block has header key(s) {', '.join(stray)}"
    missing = sorted(k.name for k in required - header.keys())
    if missing:
        return f"a {block_type.name} block without header key(s) {', '.join(missing)}"
    for key, value in header.items():
        rule = HEADER_VALUE_RULES.get(key)
        if rule is not None and not rule[0](value):
            return f"header {key.name} is {value[:40]!r}, not {rule[1]}"
    return None


@dataclass(frozen=True)
class LogBlock:
    """One block of a log file as framed on disk.

    ``offset`` is where the block's magic starts and ``size`` its whole on-disk length, so
    ``data[offset:offset + size]`` is the block. For a CORRUPT block (made by the reader, never written)
    ``content`` is that whole damaged span and the header and footer are empty.
    """

    type: BlockType
    header: dict[HeaderKey, str]
    footer: dict[int, str]
    content: bytes | memoryview
    offset: int
    size: int
    path: str
    #: the layout of ``content`` as the reader checked it (:func:`.blocks.check_block`; an Avro data block: where
    #: its records start and their lengths), so decoding does not walk the records again; None when not checked
    layout: Any = field(default=None, compare=False, repr=False)

    @property
    def instant_time(self) -> str | None:
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema_json(self) -> str | None:
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def is_rollback(self) -> bool:
        return self.type is BlockType.COMMAND and self.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND

    @property
    def is_data(self) -> bool:
        return self.type in _DATA_TYPES

    @property
    def is_corrupt(self) -> bool:
        return self.type is BlockType.CORRUPT

    def where(self) -> str:
        """``path@offset``, the way error messages name a block."""
        return f"{self.path}@{self.offset}"


# --- log file names (spec §4.2) ---------------------------------------------------------------------------

#: ``FSUtils.LOG_FILE_PATTERN`` of the released versions (0.14 – 1.x): unanchored at the end, ``.cdc`` with
#: an unescaped dot, exactly as Hudi matches it.
LOG_FILE_PATTERN = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(.cdc)?)?")


@dataclass(frozen=True)
class LogFileName:
    """The parts of ``.<fileId>_<instant>.log.<version>_<writeToken>[.cdc]``."""

    file_id: str
    instant: str
    extension: str
    version: int
    write_token: str | None
    cdc: bool


def parse_log_file_name(name: str) -> LogFileName | None:
    """Parse a log file name (a path is reduced to its last component); ``None`` if Hudi would not match it."""
    m = LOG_FILE_PATTERN.match(posixpath.basename(name))
    if m is None:
        return None
    return LogFileName(file_id=m.group(1), instant=m.group(2), extension=m.group(3), version=int(m.group(4)),
                       write_token=m.group(6), cdc=m.group(10) is not None)


def make_log_file_name(file_id: str, instant: str, version: int, write_token: str) -> str:
    """``FSUtils.makeLogFileName`` for a delta log file."""
    return f".{file_id}_{instant}.log.{version}_{write_token}"


def log_sort_key(instant: str, version: int, write_token: str | None, cdc: bool = False) -> tuple:
    """Sort key reproducing ``HoodieLogFile.LogFileComparator``, from a log file name's parsed fields.

    Instant as a string, then version as a number, then write token as a string with a missing token
    first, then (1.x tie-break) the CDC suffix, which sorts after no suffix.
    """
    return instant, version, write_token is not None, write_token or "", cdc


def log_file_sort_key(name: str) -> tuple:
    """:func:`log_sort_key` of a log file's name."""
    parsed = parse_log_file_name(name)
    if parsed is None:
        raise ValueError(f"not a Hudi log file name: {name!r}")
    return log_sort_key(parsed.instant, parsed.version, parsed.write_token, parsed.cdc)


# --- delete block records (spec §5.7) ---------------------------------------------------------------------

_AVRO_NAMESPACE = "org.apache.hudi.avro.model"


@dataclass(frozen=True)
class _Wrapper:
    """One branch of the ``orderingVal`` union: a single-field record wrapping one primitive."""

    kind: str
    record: str
    value_type: Any

    @property
    def full_name(self) -> str:
        return f"{_AVRO_NAMESPACE}.{self.record}"


#: ``DecimalWrapper`` holds decimal(30, 15): Hudi rescales every decimal ordering value to scale 15.
DECIMAL_WRAPPER_PRECISION, DECIMAL_WRAPPER_SCALE = 30, 15

#: The ``orderingVal`` union after ``null``, in union order (``HoodieMetadata.avsc``); the position in this
#: tuple plus one is the union index on disk. ``LocalDateWrapper`` only occurs inside ``ArrayWrapper``.
ORDERING_WRAPPERS = (
    _Wrapper("boolean", "BooleanWrapper", "boolean"),
    _Wrapper("int", "IntWrapper", "int"),
    _Wrapper("long", "LongWrapper", "long"),
    _Wrapper("float", "FloatWrapper", "float"),
    _Wrapper("double", "DoubleWrapper", "double"),
    _Wrapper("bytes", "BytesWrapper", "bytes"),
    _Wrapper("string", "StringWrapper", "string"),
    _Wrapper("date", "DateWrapper", "int"),
    _Wrapper("decimal", "DecimalWrapper", {"type": "bytes", "logicalType": "decimal",
                                           "precision": DECIMAL_WRAPPER_PRECISION, "scale": DECIMAL_WRAPPER_SCALE}),
    _Wrapper("time_micros", "TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    _Wrapper("timestamp_micros", "TimestampMicrosWrapper", "long"),
    _Wrapper("array", "ArrayWrapper", None),
)
_LOCAL_DATE = _Wrapper("date", "LocalDateWrapper", "int")
#: Full Avro record name -> wrapper, for everything the decoder can meet.
WRAPPER_BY_RECORD = {w.full_name: w for w in (*ORDERING_WRAPPERS, _LOCAL_DATE)}
WRAPPER_BY_KIND = {w.kind: w for w in ORDERING_WRAPPERS}


def _wrapper_schema(w: _Wrapper) -> dict:
    return {"type": "record", "name": w.record, "namespace": _AVRO_NAMESPACE,
            "fields": [{"name": "value", "type": w.value_type}]}


def _delete_record_list_schema() -> dict:
    """``HoodieDeleteRecordList.avsc`` (Hudi master), built from :data:`ORDERING_WRAPPERS`."""
    scalars = [_wrapper_schema(w) for w in ORDERING_WRAPPERS if w.kind != "array"]
    array_items = ["null", *(w.full_name for w in ORDERING_WRAPPERS if w.kind != "array"),
                   _wrapper_schema(_LOCAL_DATE)]
    array = {"type": "record", "name": "ArrayWrapper", "namespace": _AVRO_NAMESPACE,
             "fields": [{"name": "wrappedValues", "type": ["null", {"type": "array", "items": array_items}],
                         "default": None}]}
    nullable_string = {"type": ["null", "string"], "default": None}
    delete_record = {
        "type": "record", "name": "HoodieDeleteRecord", "namespace": _AVRO_NAMESPACE,
        "fields": [{"name": "recordKey", **nullable_string},
                   {"name": "partitionPath", **nullable_string},
                   {"name": "orderingVal", "type": ["null", *scalars, array], "default": None}],
    }
    return {"type": "record", "name": "HoodieDeleteRecordList", "namespace": _AVRO_NAMESPACE,
            "fields": [{"name": "deleteRecordList", "type": {"type": "array", "items": delete_record}}]}


DELETE_RECORD_LIST_SCHEMA = _delete_record_list_schema()


@dataclass(frozen=True)
class Ordering:
    """An ordering value with its wrapper chosen explicitly, e.g. ``Ordering("int", 5)`` for an int32 field.

    ``kind`` is one of the :data:`ORDERING_WRAPPERS` kinds; ``value`` is the plain Python value (for
    ``"array"`` a sequence of plain values or :class:`Ordering`).
    """

    kind: str
    value: Any

    def __post_init__(self) -> None:
        if self.kind not in WRAPPER_BY_KIND:
            raise ValueError(f"unknown ordering value kind {self.kind!r}; one of {sorted(WRAPPER_BY_KIND)}")


#: Ordering value of deletes that carry no ordering (Spark SQL ``DELETE``): ``IntWrapper(0)``, which Hudi
#: reads as "natural order", i.e. the delete wins by commit time.
COMMIT_TIME_DELETE = Ordering("int", 0)
