"""Splitting a log file into blocks exactly as Hudi's ``HoodieLogFileReader`` does (spec §5.1, §5.2, §5.4).

Hudi frames a block by trusting nothing but three facts: the magic, the ``blockSize`` after it, and the copy
of that size (plus 6) in the block's last eight bytes followed by the next magic or the end of the file.
A block failing that check is what a crashed writer leaves behind; Hudi turns everything from it to the
next magic into one CORRUPT block and goes on, and the scanner later drops it. We do the same, so a
stream sees the blocks Hudi's own readers see. (Hudi skips the check on storage with atomic writes, S3
and the like, HUDI-2118: no partial block can exist there, so only a damaged file tells the difference,
and Hudi would fail to read that one.)

Inside a block that passed the framing check Hudi trusts every length and every header; we do not. Before
anything is decoded, a framed block must be one Hudi could have written: its header, content and footer fill
the framed span exactly, its type and header keys are known, the header holds the keys its type carries
with values of the right kind (instant times, an Avro record schema, the rollback command type; see
:func:`~.format.header_problem`), the footer is empty (Hudi defines no footer keys) and the content's own
lengths, counts and version agree with its bytes (:func:`~.blocks.check_block`). A block failing that is
CORRUPT here, spanning exactly its framed bytes (Hudi would crash or mis-read it: a DELETE block whose type
was flipped to COMMAND would otherwise drop its deletes), so a block we yield re-encodes to exactly the
bytes on disk and is structurally sound; only damage inside values, which the format has no checksum to
reveal, can remain. The exception is the log format version: Hudi fails on anything but version 1 (a
version-0 block from pre-0.4 Hudi, or a future one), and so do we, with a :class:`CorruptFileError` naming
file and offset, rather than silently dropping a block we cannot read.

Two more Hudi behaviours kept on purpose: fewer than six bytes after the last block are ignored (Hudi's
``hasNext`` sees EOF), and when the bytes after a block are not a magic, that *preceding* block is the one
declared corrupt (its "next magic" check fails). Where Hudi would throw ``CorruptedLogFileException``
(bytes other than a magic at the start of the file) we instead yield one CORRUPT block up to the next magic.
"""
from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from ...errors import CorruptFileError
from .blocks import check_block
from .format import LOG_FORMAT_VERSION, MAGIC, BlockType, HeaderKey, LogBlock

if TYPE_CHECKING:  # storage imports the retry layer and fsspec: not needed to parse bytes
    from ..storage import Storage

log = logging.getLogger(__name__)

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I32_PAIR = struct.Struct(">ii")
_HEAD = len(MAGIC) + _I64.size  # magic + blockSize
#: Smallest ``blockSize`` of a version-1 block: version, type, empty header, content length, empty footer,
#: trailing length.
_MIN_BLOCK_SIZE = 4 + 4 + 4 + 8 + 4 + 8
_READABLE_TYPES = frozenset(BlockType) - {BlockType.CORRUPT}
_HEADER_KEYS = {k.value: k for k in HeaderKey}


class _Unframed(Exception):
    """Bytes Hudi's reader would not accept as a block (its framing check fails); the message says why."""


class _Invalid(Exception):
    """A framed block whose fields are not those of a block Hudi writes; the message says why."""


def iter_blocks(data: bytes, path: str, *, strict: bool = False) -> Iterator[LogBlock]:
    """Yield the blocks of one log file's bytes in file order, CORRUPT blocks included.

    Block contents are zero-copy ``memoryview`` slices of ``data``. Raises :class:`CorruptFileError` for a
    block of a log format version other than 1, and with ``strict`` for a framed but invalid block too (the
    archived timeline's reader: a skipped block there would silently lose instants). Every other kind of
    damage becomes a CORRUPT block, logged as a warning.
    """
    data = bytes(data)  # no copy when already bytes; bytes.find and .startswith do the scanning
    view = memoryview(data)
    pos = 0
    reason: str | None
    while len(data) - pos >= len(MAGIC):
        if not data.startswith(MAGIC, pos):
            reason, end = "no magic at block start", _next_magic(data, pos + 1)
        else:
            try:
                end = _frame(data, pos)
            except _Unframed as e:
                reason, end = str(e), _next_magic(data, pos + len(MAGIC))
            else:
                try:
                    block = _parse(data, view, pos, end, path)
                    reason, layout = check_block(block)
                except _Invalid as e:
                    reason = str(e)
                if reason is None:
                    yield replace(block, layout=layout)
                    pos = end
                    continue
                if strict:
                    raise CorruptFileError(f"{path}@{pos}: {reason}")
        log.warning("%s: corrupt log block at offset %d, %d bytes (%s); skipped as Hudi does",
                    path, pos, end - pos, reason)
        yield LogBlock(BlockType.CORRUPT, {}, {}, view[pos:end], pos, end - pos, path)
        pos = end


def read_log_file(storage: Storage, rel_path: str) -> list[LogBlock]:
    """All blocks of the log file ``rel_path`` of ``storage``."""
    return list(iter_blocks(storage.read_bytes(rel_path), rel_path))


def _next_magic(data: bytes, start: int) -> int:
    """Offset of the next magic at or after ``start``, or the end of the file (Hudi's corrupt-block scan)."""
    found = data.find(MAGIC, start)
    return len(data) if found < 0 else found


def _frame(data: bytes, pos: int) -> int:
    """Hudi's framing check of the block whose magic is at ``pos``: where it ends, or :class:`_Unframed`."""
    if len(data) - pos < _HEAD:
        raise _Unframed("file ends inside the block size")
    (block_size,) = _I64.unpack_from(data, pos + len(MAGIC))
    body = pos + _HEAD
    if block_size < _MIN_BLOCK_SIZE:
        raise _Unframed(f"block size {block_size} is too small")
    if block_size > len(data) - body:
        raise _Unframed(f"block size {block_size} runs past the end of the file")
    end = body + block_size
    (trailing,) = _I64.unpack_from(data, end - _I64.size)
    if trailing != block_size + len(MAGIC):
        raise _Unframed(f"trailing block length {trailing} does not match block size {block_size}")
    if len(data) - end >= len(MAGIC) and not data.startswith(MAGIC, end):
        raise _Unframed("no magic after the block")
    return end


def _parse(data: bytes, view: memoryview, pos: int, end: int, path: str) -> LogBlock:
    """The fields of the framed block from ``pos`` to ``end``, each checked to fill exactly the bytes the
    lengths before it claim; :class:`_Invalid` if they do not."""
    body = pos + _HEAD
    limit = end - _I64.size  # where the trailing length field starts
    version, type_ordinal = _I32_PAIR.unpack_from(data, body)
    if version != LOG_FORMAT_VERSION:
        raise CorruptFileError(f"{path}: log block at offset {pos} has log format version {version}; only "
                               f"version {LOG_FORMAT_VERSION} can be read (0 is pre-0.4 Hudi), as in Hudi itself")
    if type_ordinal not in _READABLE_TYPES:
        raise _Invalid(f"invalid block type {type_ordinal}")
    raw_header, cursor = _read_map(data, body + 8, limit, "header")
    unknown = raw_header.keys() - _HEADER_KEYS.keys()
    if unknown:
        raise _Invalid(f"unknown header key(s) {sorted(unknown)}")
    header = {_HEADER_KEYS[k]: v for k, v in raw_header.items()}
    if limit - cursor < _I64.size:
        raise _Invalid("header runs into the end of the block")
    (content_length,) = _I64.unpack_from(data, cursor)
    cursor += _I64.size
    if not 0 <= content_length <= limit - cursor:
        raise _Invalid(f"content length {content_length} does not fit the block")
    content = view[cursor:cursor + content_length]
    footer, cursor = _read_map(data, cursor + content_length, limit, "footer")
    if cursor != limit:
        raise _Invalid(f"{limit - cursor} unaccounted bytes before the trailing block length")
    if footer:
        raise _Invalid(f"footer keys {sorted(footer)}: Hudi defines none (FooterMetadataType is empty)")
    return LogBlock(BlockType(type_ordinal), header, footer, content, pos, end - pos, path)


def _read_map(data: bytes, pos: int, limit: int, what: str) -> tuple[dict[int, str], int]:
    """Read a header/footer map (int32 count, then int32 key, int32 length, UTF-8 value) ending by ``limit``.

    Returns the entries in on-disk order and the offset after the map.
    """
    if limit - pos < _I32.size:
        raise _Invalid(f"{what} count runs past the block")
    (count,) = _I32.unpack_from(data, pos)
    pos += _I32.size
    if count < 0:
        raise _Invalid(f"negative {what} entry count {count}")
    entries: dict[int, str] = {}
    for _ in range(count):
        if limit - pos < _I32_PAIR.size:
            raise _Invalid(f"{what} entry runs past the block ({count} entries claimed)")
        key, length = _I32_PAIR.unpack_from(data, pos)
        pos += _I32_PAIR.size
        if not 0 <= length <= limit - pos:
            raise _Invalid(f"{what} value length {length} does not fit the block")
        if key in entries:
            raise _Invalid(f"{what} key {key} appears twice")
        try:
            entries[key] = data[pos:pos + length].decode("utf-8")
        except UnicodeDecodeError:
            raise _Invalid(f"{what} value of key {key} is not UTF-8") from None
        pos += length
    return entries, pos
