"""Decoding block contents: data blocks to Arrow tables, delete blocks to keys and ordering values.

Contents are untrusted bytes (spec §5.5–5.7, §5.9): every count and length is checked against the bytes
that are really there before it is used, and whatever does not decode raises :class:`CorruptFileError`
naming the block (``path@offset``), never a bare ``struct.error`` or a huge allocation. A block whose
framing was intact can still carry flipped bits in its records; the Hudi log format has no checksum, so
such damage is only caught where it breaks the structure.

HFile data blocks (spec §5.9; written for the metadata table, and for data tables with
``hoodie.logfile.data.block.format=hfile``) are HBase HFile v3 files. Only what decoding every record
needs is read: the trailer, the file info (to know whether a memstore timestamp follows each cell) and the
data blocks in file order; the block index is not needed for a full scan.
"""
from __future__ import annotations

import datetime as dt
import io
import json
import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import CorruptFileError, UnsupportedTableError
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
    if len(content) < _HFILE_TRAILER_SIZE or content[-_HFILE_TRAILER_SIZE:][:8] != _HFILE_TRAILER_MAGIC:
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

def _layout(block: LogBlock, layout):
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
        parquet = pq.ParquetFile(pa.BufferReader(pa.py_buffer(block.content)), pre_buffer=False)
        if columns is not None:
            present = set(parquet.schema_arrow.names)
            columns = [c for c in columns if c in present]
        return parquet.read(columns=columns, use_threads=False)
    except (pa.ArrowException, OSError, ValueError) as e:  # ValueError: e.g. a footer string not UTF-8
        raise CorruptFileError(f"{block.where()}: undecodable parquet block: {e!r}") from e


# --- HFile ------------------------------------------------------------------------------------------------

_HFILE_TRAILER_SIZE = 4096
_HFILE_TRAILER_MAGIC = b'TRABLK"$'
_HFILE_BLOCK_HEADER = struct.Struct(">8siiqbii")  # magic, on-disk size, uncompressed size, prev offset,
#                                                  checksum type, bytes per checksum, on-disk data size w/ header
_HFILE_DATA_MAGIC = b"DATABLK*"
_HFILE_FILE_INFO_MAGIC = b"FILEINF2"
#: Blocks that HBase may write between data blocks ("inline" leaf index and bloom chunks); skipped.
_HFILE_INLINE_MAGICS = frozenset({b"IDXLEAF2", b"BLMFBLK2"})
_HFILE_CODEC_GZIP, _HFILE_CODEC_NONE = 1, 2
#: ``HoodieAvroHFileReaderImplBase.KEY_FIELD_NAME``: writers blank this field, readers refill it from the key.
_HFILE_KEY_FIELD = "key"


@dataclass(frozen=True)
class _HFileTrailer:
    file_info_offset: int
    load_on_open_offset: int
    entry_count: int
    first_data_block_offset: int
    codec: int


def read_hfile_cells(block: LogBlock) -> list[tuple[str, memoryview]]:
    """The cells of an HFILE_DATA block in file (= key) order: ``(row key, Avro record bytes)``.

    The record bytes are written with the block's SCHEMA header; Hudi blanks their ``key`` field to an
    empty string and readers refill it from the row key (:func:`decode_data_block` does).
    """
    if block.type is not BlockType.HFILE_DATA:
        raise ValueError(f"{block.where()}: a {block.type.name} block is not an HFile block")
    hfile = memoryview(block.content)
    cells: list[tuple[str, memoryview]] = []
    try:
        trailer = _hfile_trailer(block, hfile)
        file_info = _hfile_file_info(block, hfile, trailer)
        with_mvcc = file_info.get(b"KEY_VALUE_VERSION") == _I32.pack(1)
        offset = trailer.first_data_block_offset
        while offset < trailer.load_on_open_offset:
            magic, payload, offset = _hfile_block(block, hfile, offset, trailer.codec)
            if magic == _HFILE_DATA_MAGIC:
                cells += _hfile_cells(block, payload, with_mvcc)
            elif magic not in _HFILE_INLINE_MAGICS:
                raise CorruptFileError(f"{block.where()}: unexpected HFile block {bytes(magic)!r} among data blocks")
    except (struct.error, UnicodeDecodeError) as e:
        raise CorruptFileError(f"{block.where()}: undecodable HFile: {e}") from e
    if len(cells) != trailer.entry_count:
        raise CorruptFileError(f"{block.where()}: HFile holds {len(cells)} cells, its trailer says "
                               f"{trailer.entry_count}")
    return cells


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


def _hfile_trailer(block: LogBlock, hfile: memoryview) -> _HFileTrailer:
    """The fixed 4096-byte trailer: magic, varint-delimited ``TrailerProto``, then minor/major version."""
    if len(hfile) < _HFILE_TRAILER_SIZE:
        raise CorruptFileError(f"{block.where()}: HFile of {len(hfile)} bytes is shorter than its trailer")
    trailer = hfile[-_HFILE_TRAILER_SIZE:]
    if trailer[:8] != _HFILE_TRAILER_MAGIC:
        raise CorruptFileError(f"{block.where()}: HFile trailer magic missing")
    major = int.from_bytes(trailer[-3:], "big")
    if major != 3:
        raise UnsupportedTableError(f"{block.where()}: HFile major version {major}; only version 3 is readable")
    fields = {number: value for number, value in _protobuf_fields(block, _delimited(block, trailer, 8)[0])
              if isinstance(value, int)}
    result = _HFileTrailer(file_info_offset=fields.get(1, 0), load_on_open_offset=fields.get(2, 0),
                           entry_count=fields.get(7, 0), first_data_block_offset=fields.get(9, 0),
                           codec=fields.get(12, _HFILE_CODEC_NONE))
    end_of_blocks = len(hfile) - _HFILE_TRAILER_SIZE
    if not (0 <= result.first_data_block_offset <= result.load_on_open_offset <= result.file_info_offset
            < end_of_blocks):
        raise CorruptFileError(f"{block.where()}: HFile trailer offsets are inconsistent: {result}")
    if result.codec not in (_HFILE_CODEC_GZIP, _HFILE_CODEC_NONE):
        raise UnsupportedTableError(f"{block.where()}: HFile compression codec {result.codec} is not supported "
                                    f"(only gzip and none)")
    return result


def _hfile_file_info(block: LogBlock, hfile: memoryview, trailer: _HFileTrailer) -> dict[bytes, bytes]:
    """The file info block: ``PBUF`` then a varint-delimited ``InfoProto`` of (key, value) byte pairs."""
    magic, payload, _ = _hfile_block(block, hfile, trailer.file_info_offset, trailer.codec)
    if magic != _HFILE_FILE_INFO_MAGIC or payload[:4] != b"PBUF":
        raise CorruptFileError(f"{block.where()}: HFile file info block missing")
    info = {}
    for number, entry in _protobuf_fields(block, _delimited(block, payload, 4)[0]):
        if number == 1 and isinstance(entry, memoryview):  # repeated BytesBytesPair map_entry
            pair = dict(_protobuf_fields(block, entry))
            info[bytes(pair.get(1, b""))] = bytes(pair.get(2, b""))
    return info


def _hfile_block(block: LogBlock, hfile: memoryview, offset: int, codec: int) -> tuple[memoryview, memoryview, int]:
    """The HFile block at ``offset``: its magic, its uncompressed payload and the offset after it."""
    if len(hfile) - offset < _HFILE_BLOCK_HEADER.size:
        raise CorruptFileError(f"{block.where()}: HFile block header at {offset} runs past the file")
    magic, on_disk_size, uncompressed_size, _, _, _, data_size_with_header = \
        _HFILE_BLOCK_HEADER.unpack_from(hfile, offset)
    header = _HFILE_BLOCK_HEADER.size
    end = offset + header + on_disk_size
    if not (0 <= uncompressed_size and header <= data_size_with_header <= header + on_disk_size
            and end <= len(hfile)):
        raise CorruptFileError(f"{block.where()}: HFile block at {offset} has impossible sizes")
    stored = hfile[offset + header:offset + data_size_with_header]  # checksum bytes, if any, follow
    if codec == _HFILE_CODEC_NONE:
        payload = stored
    else:
        inflater = zlib.decompressobj(wbits=31)  # gzip framing, as Hadoop's GzipCodec writes
        try:
            payload = memoryview(inflater.decompress(stored, uncompressed_size + 1))
        except zlib.error as e:
            raise CorruptFileError(f"{block.where()}: HFile block at {offset} does not inflate: {e}") from e
        if not inflater.eof:
            raise CorruptFileError(f"{block.where()}: HFile block at {offset} inflates past its stated size")
    if len(payload) != uncompressed_size:
        raise CorruptFileError(f"{block.where()}: HFile block at {offset} holds {len(payload)} bytes, "
                               f"its header says {uncompressed_size}")
    return magic, payload, end


def _hfile_cells(block: LogBlock, data: memoryview, with_mvcc: bool) -> list[tuple[str, memoryview]]:
    """The (row key, value) of each cell of an uncompressed data block.

    A cell is int32 key length, int32 value length, the key (int16 row length, row, family, qualifier,
    timestamp, type), the value, then (KEY_VALUE_VERSION 1) a Hadoop vlong memstore timestamp.
    """
    cells = []
    pos, end = 0, len(data)
    while pos < end:
        if end - pos < 8:
            raise CorruptFileError(f"{block.where()}: HFile cell header cut off")
        key_length, value_length = _I32_PAIR.unpack_from(data, pos)
        pos += 8
        if not (2 <= key_length <= end - pos and 0 <= value_length <= end - pos - key_length):
            raise CorruptFileError(f"{block.where()}: HFile cell with impossible lengths")
        (row_length,) = _U16.unpack_from(data, pos)
        if row_length > key_length - 2:
            raise CorruptFileError(f"{block.where()}: HFile row key longer than its cell key")
        row = str(data[pos + 2:pos + 2 + row_length], "utf-8")
        pos += key_length
        cells.append((row, data[pos:pos + value_length]))
        pos += value_length
        if with_mvcc and pos < end:
            pos += _vlong_size(data[pos])
    if pos != end:
        raise CorruptFileError(f"{block.where()}: HFile data block cut inside its last cell")
    return cells


def _vlong_size(first_byte: int) -> int:
    """Encoded size of a Hadoop ``WritableUtils`` vlong from its first byte (``decodeVIntSize``)."""
    signed = first_byte - 256 if first_byte > 127 else first_byte
    if signed >= -112:
        return 1
    return -119 - signed if signed < -120 else -111 - signed


def _varint(data: memoryview, pos: int) -> tuple[int, int]:
    """A protobuf base-128 varint at ``pos``: ``(value, offset after it)``. At most 10 bytes are read."""
    value = 0
    for shift in range(0, 70, 7):
        if pos >= len(data):
            break
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
    raise struct.error("truncated or overlong varint")


def _delimited(block: LogBlock, data: memoryview, pos: int) -> tuple[memoryview, int]:
    """The bytes at ``pos`` prefixed by their varint length (a ``writeDelimitedTo`` message or a protobuf
    length-delimited field), and the offset after them."""
    length, pos = _varint(data, pos)
    if length > len(data) - pos:
        raise CorruptFileError(f"{block.where()}: HFile protobuf message runs past its block")
    return data[pos:pos + length], pos + length


def _protobuf_fields(block: LogBlock, message: memoryview) -> Iterator[tuple[int, int | memoryview]]:
    """``(field number, value)`` of a protobuf message: varints as int, length-delimited fields as bytes."""
    pos = 0
    value: int | memoryview
    while pos < len(message):
        tag, pos = _varint(message, pos)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            value, pos = _varint(message, pos)
        elif wire_type == 2:
            value, pos = _delimited(block, message, pos)
        else:
            raise CorruptFileError(f"{block.where()}: HFile protobuf wire type {wire_type} not expected")
        yield number, value
