"""Decoding block contents: data blocks to Arrow tables, delete blocks to keys and ordering values.

Contents are untrusted bytes (spec §5.5–5.7, §5.9): every count and length is checked against the bytes
that are really there before it is used, and whatever does not decode raises :class:`CorruptFileError`
naming the block (``path@offset``), never a bare ``struct.error`` or a huge allocation. A block whose
framing was intact can still carry flipped bits in its records; the Hudi log format has no checksum, so
such damage is only caught where it breaks the structure.

HFile data blocks (spec §5.9; written for the metadata table, and for data tables with
``hoodie.logfile.data.block.format=hfile``) are HFile v3 files, read by :mod:`hoodie.hfile`.
"""
from __future__ import annotations

import datetime as dt
import io
import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

import fastavro
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import CorruptFileError, UnsupportedTableError
from ..hfile import TRAILER_MAGIC, TRAILER_SIZE, BytesSource, HFileReader
from .avro_arrow import decode_avro_records, record_schema_problem, split_records
from .format import (
    CONTENT_VERSION,
    DELETE_RECORD_LIST_SCHEMA,
    WRAPPER_BY_RECORD,
    BlockType,
    LogBlock,
    header_problem,
    parse_log_file_name,
)

_I32 = struct.Struct(">i")
_I32_LE = struct.Struct("<i")
_I32_PAIR = struct.Struct(">ii")
_U16 = struct.Struct(">H")
_DELETE_SCHEMA = fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA)
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
#: What fastavro and the date/time conversions raise on a damaged delete payload (IndexError: a union
#: index past the wrappers; ValueError includes invalid UTF-8).
_DELETE_DECODE_ERRORS = (ValueError, EOFError, IndexError, OverflowError)


@dataclass(frozen=True)
class DeleteRecords:
    """The deletes of one DELETE block, one list entry per deleted key, in block order.

    ``ordering_values`` are plain Python values (int, float, str, bytes, bool, Decimal, date, time,
    timezone-aware UTC datetime for TimestampMicrosWrapper, tuple for ArrayWrapper) or None.
    ``ordering_kinds`` names the wrapper each came in (``"int"``, ``"long"``, … as in
    :data:`~hoodie.logfile.format.ORDERING_WRAPPERS`; None for null), so a block can be re-encoded exactly.
    ``ordering_is_commit_time`` is True where the value is null or IntWrapper 0, Hudi's "no ordering"
    sentinel written by Spark SQL ``DELETE``: that delete wins by commit time.
    """

    record_keys: list[str]
    partition_paths: list[str | None]
    ordering_values: list[Any]
    ordering_kinds: list[str | None]
    ordering_is_commit_time: list[bool]

    def __len__(self) -> int:
        return len(self.record_keys)


class _Malformed(Exception):
    """Content laid out otherwise than Hudi writes it; the message says how. Internal: the reader turns it
    into a CORRUPT block, the decoders into a :class:`CorruptFileError` naming the block."""


def check_block(block: LogBlock) -> tuple[str | None, object]:
    """Why ``block`` cannot be a block Hudi wrote, judged from its header and the layout of its content
    without decoding a record (None if it can be), and that layout (:attr:`LogBlock.layout`; None with a
    problem). The reader asks this of every framed block.

    The file name says what the file may hold: in a ``.log`` file every block carries its INSTANT_TIME, and
    CDC_DATA blocks are exactly the blocks of CDC log files (``HoodieCDCLogger``). A path that is no log file
    name (a file handed to ``inspect log``) leaves those two rules out.
    """
    name = parse_log_file_name(block.path)
    problem = header_problem(block.type, block.header, delta_log=name is not None and name.extension == "log")
    if problem is not None:
        return problem, None
    if name is not None and (block.type is BlockType.CDC_DATA) != name.cdc and block.type is not BlockType.COMMAND:
        return (f"a {block.type.name} block in a {'CDC' if name.cdc else 'data'} log file "
                f"({'only CDC_DATA' if name.cdc else 'never CDC_DATA'} blocks are written there)"), None
    if block.schema_json is not None:
        problem = record_schema_problem(block.schema_json)
        if problem is not None:
            return f"SCHEMA header is not an Avro schema ({problem})", None
    try:
        return None, _CONTENT_LAYOUTS[block.type](memoryview(block.content))
    except _Malformed as e:
        return str(e), None


def _command_layout(content: memoryview) -> None:
    """A command block has no content (``HoodieCommandBlock`` writes none)."""
    if len(content):
        raise _Malformed(f"a COMMAND block with {len(content)} bytes of content (Hudi writes none)")


def _delete_layout(content: memoryview) -> int:
    """int32 content version (1, 2: Kryo; 3: Avro), int32 payload length, the payload: the content version."""
    if len(content) < 8:
        raise _Malformed(f"delete block content of {len(content)} bytes is too short")
    version, payload_length = _I32_PAIR.unpack_from(content)
    if version not in (1, 2, CONTENT_VERSION):
        raise _Malformed(f"unknown delete block content version {version}")
    if payload_length != len(content) - 8:
        raise _Malformed(f"delete payload length {payload_length} does not match the {len(content) - 8} bytes "
                         f"after it")
    return version


def _avro_layout(content: memoryview) -> tuple[int, list[int]]:
    """``HoodieAvroDataBlock`` content: int32 version, int32 count (version >= 2), length-prefixed records.

    Returns where the records start and their lengths, which must fill the content exactly.
    """
    if len(content) < 4:
        raise _Malformed(f"data block content of {len(content)} bytes is too short")
    (version,) = _I32.unpack_from(content)
    if version == 1:
        start, count = 4, None  # no record count: the records run to the end
    elif version in (2, CONTENT_VERSION):
        if len(content) < 8:
            raise _Malformed("data block content ends before its record count")
        start, (count,) = 8, _I32.unpack_from(content, 4)
    else:
        raise _Malformed(f"unknown Avro data block content version {version}")
    try:
        return start, split_records(content[start:], count)
    except ValueError as e:
        raise _Malformed(str(e)) from None


def _parquet_layout(content: memoryview) -> None:
    """A whole parquet file: ``PAR1``, pages, footer, little-endian footer length, ``PAR1``."""
    if len(content) < 12 or content[:4] != b"PAR1" or content[-4:] != b"PAR1":
        raise _Malformed("parquet block content is not a parquet file (no PAR1 at both ends)")
    (footer_length,) = _I32_LE.unpack_from(content, len(content) - 8)
    if not 0 < footer_length <= len(content) - 12:
        raise _Malformed(f"parquet footer length {footer_length} does not fit the {len(content)} bytes")


def _hfile_layout(content: memoryview) -> None:
    """An HFile ends in its fixed-size trailer, which starts with a magic (the rest is checked on decoding)."""
    if len(content) < TRAILER_SIZE or content[-TRAILER_SIZE:][:8] != TRAILER_MAGIC:
        raise _Malformed("HFile block content does not end in an HFile trailer")


_CONTENT_LAYOUTS: dict[BlockType, Callable[[memoryview], object]] = {
    BlockType.COMMAND: _command_layout, BlockType.DELETE: _delete_layout, BlockType.AVRO_DATA: _avro_layout,
    BlockType.CDC_DATA: _avro_layout, BlockType.PARQUET_DATA: _parquet_layout, BlockType.HFILE_DATA: _hfile_layout,
}


def decode_data_block(block: LogBlock, columns: Sequence[str] | None = None) -> pa.Table:
    """The records of an AVRO_DATA, CDC_DATA, PARQUET_DATA or HFILE_DATA block as an Arrow table.

    ``columns`` selects top-level columns; requested columns the block does not have are left out (an
    older block under schema evolution), so callers fill them in.
    """
    if block.type in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
        return _decode_avro_content(block, columns)
    if block.type is BlockType.PARQUET_DATA:
        return _decode_parquet_content(block, columns)
    if block.type is BlockType.HFILE_DATA:
        return _decode_hfile_content(block, columns)
    raise ValueError(f"{block.where()}: a {block.type.name} block holds no records")


def decode_delete_block(block: LogBlock) -> DeleteRecords:
    """Keys, partitions and ordering values of a DELETE block (content version 3, Hudi 0.14+)."""
    if block.type is not BlockType.DELETE:
        raise ValueError(f"{block.where()}: a {block.type.name} block is not a delete block")
    content = memoryview(block.content)
    version = _layout(block, _delete_layout)
    if version != CONTENT_VERSION:
        raise UnsupportedTableError(
            f"{block.where()}: delete block content version {version} is Kryo-serialized Java (Hudi 0.13 or "
            f"older) and cannot be read outside the JVM; compact the table with Hudi first")
    payload_length = len(content) - 8
    buf = io.BytesIO(content[8:])
    try:
        decoded = fastavro.schemaless_reader(buf, _DELETE_SCHEMA, None, return_record_name=True)
        assert isinstance(decoded, dict)  # _DELETE_SCHEMA is a record schema
        items = decoded["deleteRecordList"]
        unwrapped = [_unwrap(item["orderingVal"]) for item in items]
    except _DELETE_DECODE_ERRORS as e:
        raise CorruptFileError(f"{block.where()}: undecodable delete records: {e!r}") from e
    if buf.tell() != payload_length:
        raise CorruptFileError(f"{block.where()}: delete records end at byte {buf.tell()} of {payload_length}")
    keys = [item["recordKey"] for item in items]
    if None in keys:
        raise CorruptFileError(f"{block.where()}: delete record without a record key")
    return DeleteRecords(
        record_keys=keys,
        partition_paths=[item["partitionPath"] for item in items],
        ordering_values=[value for _, value in unwrapped],
        ordering_kinds=[kind for kind, _ in unwrapped],
        ordering_is_commit_time=[kind is None or (kind == "int" and value == 0) for kind, value in unwrapped],
    )


def _unwrap(branch: tuple[str, dict] | None) -> tuple[str | None, Any]:
    """``(kind, plain value)`` of one decoded ``orderingVal`` union branch (``HoodieAvroUtils.unwrap…``)."""
    if branch is None:
        return None, None
    name, record = branch
    kind = WRAPPER_BY_RECORD[name].kind
    if kind == "array":
        return kind, tuple(value for _, value in map(_unwrap, record["wrappedValues"] or ()))
    value = record["value"]
    if kind == "date":
        return kind, _EPOCH_DATE + dt.timedelta(days=value)
    if kind == "timestamp_micros":
        return kind, _EPOCH + dt.timedelta(microseconds=value)
    return kind, value


# --- Avro records -----------------------------------------------------------------------------------------

#: what a layout check of a block's content finds
_L = TypeVar("_L")


def _layout(block: LogBlock, layout: Callable[[memoryview], _L]) -> _L:
    """``layout(content)`` of ``block``, its :class:`_Malformed` as a :class:`CorruptFileError` naming the block."""
    try:
        return layout(memoryview(block.content))
    except _Malformed as e:
        raise CorruptFileError(f"{block.where()}: {e}") from None


def _decode_avro_content(block: LogBlock, columns: Sequence[str] | None) -> pa.Table:
    """``HoodieAvroDataBlock`` content (:func:`_avro_layout`) as an Arrow table."""
    start, lengths = block.layout if block.layout is not None else _layout(block, _avro_layout)
    return _avro_to_arrow(block, memoryview(block.content)[start:], len(lengths), columns, lengths)


def _avro_to_arrow(block: LogBlock, payload: memoryview, count: int, columns: Sequence[str] | None,
                   lengths: list[int] | None = None) -> pa.Table:
    """Length-prefixed Avro records, written with the block's SCHEMA header, as an Arrow table.

    :func:`decode_avro_records` checks every record length and raises :class:`CorruptFileError` itself, unless
    ``lengths`` gives them as the block's layout check found them.
    """
    schema_json = block.schema_json
    if schema_json is None:
        raise CorruptFileError(f"{block.where()}: {block.type.name} block without a SCHEMA header")
    try:
        present = _field_names(schema_json)
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptFileError(f"{block.where()}: SCHEMA header is not an Avro record schema: {e!r}") from e
    if columns is not None:
        columns = [c for c in columns if c in present]
    return decode_avro_records(schema_json, payload, count, columns=columns, path=block.where(), lengths=lengths)


@lru_cache(maxsize=64)
def _field_names(schema_json: str) -> frozenset[str]:
    return frozenset(field["name"] for field in json.loads(schema_json)["fields"])


# --- parquet ----------------------------------------------------------------------------------------------

def _decode_parquet_content(block: LogBlock, columns: Sequence[str] | None) -> pa.Table:
    """``HoodieParquetDataBlock`` content: one whole parquet file, no prefix."""
    try:
        # single-threaded: Arrow's I/O threads holding this Python-owned buffer at interpreter exit can abort
        # the process (apache/arrow#33975); a log block is small, threads gain nothing here
        import pyarrow.parquet as pq  # here: only parquet log blocks need it, not every process reading logs

        parquet = pq.ParquetFile(pa.BufferReader(pa.py_buffer(block.content)), pre_buffer=False)
        if columns is not None:
            present = set(parquet.schema_arrow.names)
            columns = [c for c in columns if c in present]
        return parquet.read(columns=columns, use_threads=False)
    except (pa.ArrowException, OSError, ValueError) as e:  # ValueError: e.g. a footer string not UTF-8
        raise CorruptFileError(f"{block.where()}: undecodable parquet block: {e!r}") from e


# --- HFile ------------------------------------------------------------------------------------------------

#: ``HoodieAvroHFileReaderImplBase.KEY_FIELD_NAME``: writers blank this field, readers refill it from the key.
_HFILE_KEY_FIELD = "key"


def read_hfile_cells(block: LogBlock) -> list[tuple[str, memoryview]]:
    """The cells of an HFILE_DATA block in file (= key) order: ``(row key, Avro record bytes)``, read by
    :mod:`hoodie.hfile` from the block's content.

    The record bytes are written with the block's SCHEMA header; Hudi blanks their ``key`` field to an
    empty string and readers refill it from the row key (:func:`decode_data_block` does).
    """
    if block.type is not BlockType.HFILE_DATA:
        raise ValueError(f"{block.where()}: a {block.type.name} block is not an HFile block")
    reader = HFileReader(BytesSource(block.content), block.where())
    try:
        return [(str(row, "utf-8"), value) for row, value in reader.scan()]
    except UnicodeDecodeError as e:
        raise CorruptFileError(f"{block.where()}: HFile row key is not UTF-8: {e}") from e


def _decode_hfile_content(block: LogBlock, columns: Sequence[str] | None) -> pa.Table:
    """All records of the HFile in the block, with the blanked ``key`` field refilled from the row keys."""
    cells = read_hfile_cells(block)
    payload = b"".join(part for _, value in cells for part in (_I32.pack(len(value)), value))
    table = _avro_to_arrow(block, memoryview(payload), len(cells), columns)
    if _HFILE_KEY_FIELD in table.schema.names:
        column = table[_HFILE_KEY_FIELD]
        blanked = pc.fill_null(pc.equal(column, ""), False)
        restored = pc.if_else(blanked, pa.array([key for key, _ in cells], type=column.type), column)
        table = table.set_column(table.schema.get_field_index(_HFILE_KEY_FIELD), _HFILE_KEY_FIELD, restored)
    return table
