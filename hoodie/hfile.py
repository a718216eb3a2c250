"""HFile v3 reader (spec §5.9; apache/hudi ``hudi-io/hfile_format.md``): the metadata table's base files and the
HFILE_DATA blocks of its log files (and of data tables written with ``hoodie.logfile.data.block.format=hfile``).

Two writers make these files: HBase's (Hudi 0.x and 1.0; multi-level data index with ``IDXINTE2``/``IDXLEAF2``
blocks and Bloom chunks ``BLMFBLK2`` among the data blocks, index keys that may be "fake" midpoints between two
blocks) and Hudi 1.1+'s native writer (one root index level). Both lay a file out as

    data blocks (and inline index / Bloom blocks) | load-on-open section | trailer (4096 bytes)

where the load-on-open section holds the root data index, the meta index, the file info and Bloom metadata.
A reader of a file on a store needs no more than: the trailer (read with the load-on-open section in one ranged
read when it fits in :data:`TAIL_READ`), then, a level at a time, the index blocks below the root and the data
blocks that may hold a wanted key, neighbouring blocks in one ranged read (:meth:`HFileReader.lookup`,
:meth:`HFileReader.prefix`); or the data section in one read for a full scan (:meth:`HFileReader.scan`).
(hudi-rs reads the whole file into memory instead.)

Every size and offset comes from the file and is checked against the file's size before it is used: a damaged
file raises :class:`CorruptFileError` naming the file and what is wrong, never an ``IndexError`` or a read past
its end. Block checksums (CRC32C) are not verified; damage is caught where it breaks the structure.
"""
from __future__ import annotations

import bisect
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from ..errors import CorruptFileError, UnsupportedTableError
from .storage import Storage

TRAILER_SIZE = 4096
TRAILER_MAGIC = b'TRABLK"$'
#: Bytes read from a file's end at once: the trailer and, in every metadata-table file we met, the whole
#: load-on-open section, so that opening a file costs one request.
TAIL_READ = 64 * 1024
#: Index and data blocks a reader keeps, most recently used (:meth:`HFileReader._blocks`).
CACHED_BLOCKS = 16
#: Blocks at most this far apart are fetched in one ranged read, which spans at most MAX_SPAN bytes: a request
#: costs about as much as a megabyte of transfer on an object store.
COALESCE_GAP = 1024 * 1024
MAX_SPAN = 16 * 1024 * 1024
_BLOCK_HEADER = struct.Struct(">8siiqbii")  # magic, on-disk size w/o header, uncompressed size w/o header,
#                                             previous block offset, checksum type, bytes per checksum,
#                                             on-disk data size with header (the checksums follow it)
_DATA_MAGIC = b"DATABLK*"
_ROOT_INDEX_MAGIC = b"IDXROOT2"
_LEAF_INDEX_MAGIC = b"IDXLEAF2"
_INTERMEDIATE_INDEX_MAGIC = b"IDXINTE2"
_FILE_INFO_MAGIC = b"FILEINF2"
_META_MAGIC = b"METABLKc"
#: Blocks that HBase may write between data blocks (inline leaf index and Bloom chunks): a scan skips them.
_INLINE_MAGICS = frozenset({_LEAF_INDEX_MAGIC, _INTERMEDIATE_INDEX_MAGIC, b"BLMFBLK2"})
_CODEC_GZIP, _CODEC_NONE = 1, 2  # Hadoop's Compression.Algorithm ordinals
_I32 = struct.Struct(">i")
_I32_PAIR = struct.Struct(">ii")
_I64_I32 = struct.Struct(">qi")
_U16 = struct.Struct(">H")


class ByteSource(Protocol):
    """Random access to one file's bytes: its size, and ``length`` bytes at ``offset`` (both within the size)."""

    size: int

    def read(self, offset: int, length: int) -> memoryview: ...


class BytesSource:
    """A file already in memory (the content of a log block)."""

    def __init__(self, data: bytes | memoryview):
        self._data = memoryview(data)
        self.size = len(self._data)

    def read(self, offset: int, length: int) -> memoryview:
        return self._data[offset:offset + length]


class StorageSource:
    """A file on the table's store, each read one ranged request (:meth:`Storage.read_range`); ``size`` comes
    from the listing that found the file, so opening it costs no extra request."""

    def __init__(self, storage: Storage, rel: str, size: int):
        self.storage, self.rel, self.size = storage, rel, size
        #: ranged reads made, for the caller's accounting
        self.reads = 0

    def read(self, offset: int, length: int) -> memoryview:
        self.reads += 1
        return memoryview(self.storage.read_range(self.rel, offset, length))


@dataclass(frozen=True)
class Trailer:
    """The fields of ``FileTrailerProto`` a reader needs (HBase ``HFileProtos``; field numbers in comments)."""

    file_info_offset: int  # 1
    load_on_open_offset: int  # 2
    data_index_count: int  # 5: entries of the root data index
    meta_index_count: int  # 6
    entry_count: int  # 7: cells in the file
    index_levels: int  # 8
    first_data_block_offset: int  # 9
    last_data_block_offset: int  # 10
    codec: int  # 12


@dataclass(frozen=True)
class _IndexEntry:
    """One index entry: the first row key of what it points at (or a key between it and the one before), and
    where that block lies."""

    row: bytes
    offset: int
    size: int  # on-disk size with header


class HFileReader:
    """One HFile, opened by reading its trailer and load-on-open section."""

    def __init__(self, source: ByteSource, name: str):
        self.source, self.name = source, name
        self._cache: dict[int, memoryview] = {}
        try:
            self._open()
        except (struct.error, UnicodeDecodeError) as e:
            raise CorruptFileError(f"{name}: undecodable HFile: {e}") from e

    def _fail(self, what: str) -> CorruptFileError:
        return CorruptFileError(f"{self.name}: {what}")

    def _open(self) -> None:
        size = self.source.size
        if size < TRAILER_SIZE:
            raise self._fail(f"HFile of {size} bytes is shorter than its {TRAILER_SIZE}-byte trailer")
        tail_start = max(0, size - TAIL_READ)
        tail = self.source.read(tail_start, size - tail_start)
        if len(tail) != size - tail_start:
            raise self._fail(f"read {len(tail)} bytes of the file's last {size - tail_start}")
        self.trailer = self._parse_trailer(tail[-TRAILER_SIZE:], size)
        t = self.trailer
        end = size - TRAILER_SIZE
        if t.load_on_open_offset >= tail_start:
            section = tail[t.load_on_open_offset - tail_start:end - tail_start]
        else:
            section = self._read(t.load_on_open_offset, end - t.load_on_open_offset)
        root_block, pos = self._block_in(section, 0, t.load_on_open_offset)
        if root_block[0] != _ROOT_INDEX_MAGIC:
            raise self._fail(f"load-on-open section starts with a {bytes(root_block[0])!r} block, not the root "
                             "data index")
        self._root = _root_entries(self, root_block[1], t.data_index_count, data_keys=True)
        meta_block, _ = self._block_in(section, pos, t.load_on_open_offset + pos)
        if meta_block[0] != _ROOT_INDEX_MAGIC:
            raise self._fail(f"meta index is a {bytes(meta_block[0])!r} block")
        self.meta_index = {e.row: e for e in _root_entries(self, meta_block[1], t.meta_index_count,
                                                            data_keys=False)}
        info_at = t.file_info_offset - t.load_on_open_offset
        info_block, _ = self._block_in(section, info_at, t.file_info_offset)
        if info_block[0] != _FILE_INFO_MAGIC or info_block[1][:4] != b"PBUF":
            raise self._fail("file info block missing")
        self.file_info = self._parse_file_info(info_block[1])
        self._with_mvcc = self.file_info.get(b"KEY_VALUE_VERSION") == _I32.pack(1)
        for e in self._root:
            self._check_span(e, t.load_on_open_offset)

    # -- trailer and load-on-open ---------------------------------------------------------------------------
    def _parse_trailer(self, trailer: memoryview, size: int) -> Trailer:
        """The fixed 4096-byte trailer: magic, varint-delimited ``TrailerProto``, then minor/major version."""
        if trailer[:8] != TRAILER_MAGIC:
            raise self._fail("HFile trailer magic missing")
        major = int.from_bytes(trailer[-3:], "big")
        if major != 3:
            raise UnsupportedTableError(f"{self.name}: HFile major version {major}; only version 3 is readable")
        message, _ = _delimited(self, trailer, 8)
        fields = {number: value for number, value in _protobuf_fields(self, message) if isinstance(value, int)}
        t = Trailer(file_info_offset=fields.get(1, 0), load_on_open_offset=fields.get(2, 0),
                    data_index_count=fields.get(5, 0), meta_index_count=fields.get(6, 0),
                    entry_count=fields.get(7, 0), index_levels=fields.get(8, 1),
                    first_data_block_offset=fields.get(9, 0), last_data_block_offset=fields.get(10, 0),
                    codec=fields.get(12, _CODEC_NONE))
        end = size - TRAILER_SIZE
        if not (0 <= t.first_data_block_offset <= t.load_on_open_offset <= t.file_info_offset < end):
            raise self._fail(f"HFile trailer offsets are inconsistent with the file's {size} bytes: {t}")
        if not (0 <= t.data_index_count <= end and 0 <= t.meta_index_count <= end and 1 <= t.index_levels <= 16
                and t.entry_count >= 0):
            raise self._fail(f"HFile trailer counts are impossible: {t}")
        if t.codec not in (_CODEC_GZIP, _CODEC_NONE):
            raise UnsupportedTableError(f"{self.name}: HFile compression codec {t.codec} is not supported "
                                        "(only gzip and none)")
        return t

    def _parse_file_info(self, payload: memoryview) -> dict[bytes, bytes]:
        """``PBUF`` then a varint-delimited ``InfoProto`` of (key, value) byte pairs."""
        info = {}
        message, _ = _delimited(self, payload, 4)
        for number, entry in _protobuf_fields(self, message):
            if number == 1 and isinstance(entry, memoryview):  # repeated BytesBytesPair map_entry
                pair = dict(_protobuf_fields(self, entry))
                first, second = pair.get(1, b""), pair.get(2, b"")
                info[bytes(first) if not isinstance(first, int) else b""] = \
                    bytes(second) if not isinstance(second, int) else b""
        return info

    # -- blocks ---------------------------------------------------------------------------------------------
    def _read(self, offset: int, length: int) -> memoryview:
        if offset < 0 or length < 0 or offset + length > self.source.size:
            raise self._fail(f"a read of {length} bytes at {offset} runs past the file's {self.source.size} bytes")
        data = self.source.read(offset, length)
        if len(data) != length:
            raise self._fail(f"read {len(data)} of {length} bytes at {offset}")
        return data

    def _check_span(self, entry: _IndexEntry, limit: int) -> None:
        if not (0 <= entry.offset and _BLOCK_HEADER.size <= entry.size and entry.offset + entry.size <= limit):
            raise self._fail(f"index entry points at {entry.size} bytes at {entry.offset}, outside the file's "
                             f"blocks (which end at {limit})")

    def _block_in(self, data: memoryview, pos: int, file_offset: int) -> tuple[tuple[memoryview, memoryview], int]:
        """The block at ``pos`` of ``data`` (at ``file_offset`` in the file): ``(magic, uncompressed payload)``
        and the position after it."""
        if pos < 0 or len(data) - pos < _BLOCK_HEADER.size:
            raise self._fail(f"HFile block header at {file_offset} runs past the bytes read")
        magic, on_disk_size, uncompressed_size, _, _, _, data_size_with_header = _BLOCK_HEADER.unpack_from(data, pos)
        header = _BLOCK_HEADER.size
        end = pos + header + on_disk_size
        if not (0 <= uncompressed_size and header <= data_size_with_header <= header + on_disk_size
                and end <= len(data)):
            raise self._fail(f"HFile block at {file_offset} has impossible sizes")
        stored = data[pos + header:pos + data_size_with_header]  # checksum bytes, if any, follow
        if self.trailer.codec == _CODEC_NONE:
            payload = stored
        else:
            inflater = zlib.decompressobj(wbits=31)  # gzip framing, as Hadoop's GzipCodec writes
            try:
                payload = memoryview(inflater.decompress(stored, uncompressed_size + 1))
            except zlib.error as e:
                raise self._fail(f"HFile block at {file_offset} does not inflate: {e}") from e
            if not inflater.eof:
                raise self._fail(f"HFile block at {file_offset} inflates past its stated size")
        if len(payload) != uncompressed_size:
            raise self._fail(f"HFile block at {file_offset} holds {len(payload)} bytes, its header says "
                             f"{uncompressed_size}")
        return (magic, payload), end

    def _blocks(self, entries: list[_IndexEntry], expect: bytes) -> list[memoryview]:
        """The payloads of the blocks these index entries point at. Blocks not in the cache are read in spans:
        neighbours at most :data:`COALESCE_GAP` bytes apart share one ranged read (up to :data:`MAX_SPAN`
        bytes), so a listing of many partitions costs a few requests, not one per block. The last
        :data:`CACHED_BLOCKS` blocks are kept (a listing looks up ``__all_partitions__``, then the partitions it
        names, most often in the same block)."""
        got = {e.offset: self._cache[e.offset] for e in entries if e.offset in self._cache}
        missing = sorted({e.offset: e for e in entries if e.offset not in got}.values(), key=lambda e: e.offset)
        i = 0
        while i < len(missing):
            j, end = i + 1, missing[i].offset + missing[i].size
            while j < len(missing) and missing[j].offset - end <= COALESCE_GAP \
                    and missing[j].offset + missing[j].size - missing[i].offset <= MAX_SPAN:
                end = max(end, missing[j].offset + missing[j].size)
                j += 1
            start = missing[i].offset
            span = self._read(start, end - start)
            for e in missing[i:j]:
                (magic, payload), block_end = self._block_in(span[e.offset - start:e.offset - start + e.size], 0,
                                                             e.offset)
                if magic != expect:
                    raise self._fail(f"block at {e.offset} is {bytes(magic)!r}, its index says {expect!r}")
                if block_end != e.size:
                    raise self._fail(f"block at {e.offset} spans {block_end} bytes, its index says {e.size}")
                got[e.offset] = payload
            i = j
        for e in entries[-CACHED_BLOCKS:]:
            self._cache.pop(e.offset, None)
            self._cache[e.offset] = got[e.offset]  # most recently used last
        while len(self._cache) > CACHED_BLOCKS:
            del self._cache[next(iter(self._cache))]
        return [got[e.offset] for e in entries]

    # -- index ----------------------------------------------------------------------------------------------
    def _data_blocks(self, wanted: list[tuple[bytes, Callable[[bytes], bool]]]) -> list[_IndexEntry]:
        """The data blocks that may hold the keys of each wanted range ``(first, past)``: rows from ``first`` on,
        up to the first block whose first row ``past`` says lies beyond the range. The index is walked down from
        the root a level at a time for all ranges together, its blocks read as :meth:`_blocks` reads them."""
        entries, level = self._root, self.trailer.index_levels
        while True:
            rows = [e.row for e in entries]
            chosen: dict[int, _IndexEntry] = {}
            for first, past in wanted:
                start = max(0, bisect.bisect_right(rows, first) - 1)
                stop = start + 1
                while stop < len(entries) and not past(entries[stop].row):
                    stop += 1
                chosen.update((e.offset, e) for e in entries[start:stop])
            picked = sorted(chosen.values(), key=lambda e: e.offset)
            if level <= 1:
                return picked
            level -= 1
            magic = _LEAF_INDEX_MAGIC if level == 1 else _INTERMEDIATE_INDEX_MAGIC
            entries = [e for parent, payload in zip(picked, self._blocks(picked, magic))
                       for e in self._child_entries(parent, payload)]

    def _child_entries(self, parent: _IndexEntry, payload: memoryview) -> list[_IndexEntry]:
        """A non-root index block: int32 count, int32[count + 1] entry offsets (relative to the entries), then
        entries of int64 offset, int32 on-disk size and the key bytes (their length from the offsets)."""
        if len(payload) < 4:
            raise self._fail(f"index block at {parent.offset} is cut off")
        (count,) = _I32.unpack_from(payload, 0)
        base = 4 + 4 * (count + 1)
        if not 0 < count <= (len(payload) - 4) // 16:
            raise self._fail(f"index block at {parent.offset} claims {count} entries")
        offsets = struct.unpack_from(f">{count + 1}i", payload, 4)
        out = []
        for i in range(count):
            at, nxt = base + offsets[i], base + offsets[i + 1]
            if not (base <= at and at + 12 <= nxt <= len(payload)):
                raise self._fail(f"index block at {parent.offset} has entry offsets out of order")
            offset, size = _I64_I32.unpack_from(payload, at)
            entry = _IndexEntry(_row_of(self, payload[at + 12:nxt]), offset, size)
            self._check_span(entry, self.trailer.load_on_open_offset)
            out.append(entry)
        return out

    # -- cells ----------------------------------------------------------------------------------------------
    def _cells(self, data: memoryview, where: int) -> Iterator[tuple[bytes, memoryview]]:
        """``(row key, value)`` of each cell of an uncompressed data block.

        A cell is int32 key length, int32 value length, the key (int16 row length, row, family, qualifier,
        timestamp, type), the value, then (KEY_VALUE_VERSION 1) a Hadoop vlong memstore timestamp.
        """
        pos, end = 0, len(data)
        while pos < end:
            if end - pos < 8:
                raise self._fail(f"HFile cell header cut off in the data block at {where}")
            key_length, value_length = _I32_PAIR.unpack_from(data, pos)
            pos += 8
            if not (2 <= key_length <= end - pos and 0 <= value_length <= end - pos - key_length):
                raise self._fail(f"HFile cell with impossible lengths in the data block at {where}")
            (row_length,) = _U16.unpack_from(data, pos)
            if row_length > key_length - 2:
                raise self._fail(f"HFile row key longer than its cell key in the data block at {where}")
            row = bytes(data[pos + 2:pos + 2 + row_length])
            pos += key_length
            yield row, data[pos:pos + value_length]
            pos += value_length
            if self._with_mvcc and pos < end:
                pos += _vlong_size(data[pos])
        if pos != end:
            raise self._fail(f"HFile data block at {where} cut inside its last cell")

    def _data_cells(self, entries: list[_IndexEntry]) -> Iterator[tuple[bytes, memoryview]]:
        for entry, payload in zip(entries, self._blocks(entries, _DATA_MAGIC)):
            yield from self._cells(payload, entry.offset)

    # -- queries --------------------------------------------------------------------------------------------
    def scan(self) -> Iterator[tuple[bytes, memoryview]]:
        """Every cell in file (= key) order, the blocks up to the trailer's last data block read in one request;
        the count is checked against the trailer's."""
        t = self.trailer
        if not t.entry_count:
            return
        if not t.first_data_block_offset <= t.last_data_block_offset < t.load_on_open_offset:
            raise self._fail(f"HFile trailer's last data block offset {t.last_data_block_offset} lies outside "
                             "the data section")
        # the section after the data blocks (meta and Bloom blocks, intermediate index) is read but not parsed
        section = self._read(t.first_data_block_offset, t.load_on_open_offset - t.first_data_block_offset)
        pos, count = 0, 0
        try:
            while pos <= t.last_data_block_offset - t.first_data_block_offset:
                (magic, payload), nxt = self._block_in(section, pos, t.first_data_block_offset + pos)
                if magic == _DATA_MAGIC:
                    for cell in self._cells(payload, t.first_data_block_offset + pos):
                        count += 1
                        yield cell
                elif magic not in _INLINE_MAGICS:
                    raise self._fail(f"unexpected HFile block {bytes(magic)!r} among data blocks")
                pos = nxt
        except (struct.error, UnicodeDecodeError) as e:
            raise self._fail(f"undecodable HFile: {e}") from e
        if count != t.entry_count:
            raise self._fail(f"HFile holds {count} cells, its trailer says {t.entry_count}")

    def lookup(self, keys: Iterable[bytes]) -> dict[bytes, memoryview]:
        """The values of those ``keys`` the file holds: only the index and data blocks that may hold them are
        read, each once, neighbours together."""
        want = set(keys)
        if not want or not self.trailer.entry_count:
            return {}
        try:
            blocks = self._data_blocks([(key, key.__lt__) for key in sorted(want)])  # past: a first row above it
            return {row: value for row, value in self._data_cells(blocks) if row in want}
        except (struct.error, UnicodeDecodeError) as e:
            raise self._fail(f"undecodable HFile: {e}") from e

    def prefix(self, prefix: bytes) -> list[tuple[bytes, memoryview]]:
        """Every cell whose row key starts with ``prefix``, in key order."""
        if not self.trailer.entry_count:
            return []
        try:
            blocks = self._data_blocks([(prefix, lambda row: row > prefix and not row.startswith(prefix))])
            return [(row, value) for row, value in self._data_cells(blocks) if row.startswith(prefix)]
        except (struct.error, UnicodeDecodeError) as e:
            raise self._fail(f"undecodable HFile: {e}") from e

    def meta_block(self, name: bytes) -> memoryview | None:
        """The payload of a meta block (Hudi writes its Bloom filter so), or None when the file has none."""
        entry = self.meta_index.get(name)
        return self._blocks([entry], _META_MAGIC)[0] if entry is not None else None


def _root_entries(reader: HFileReader, payload: memoryview, count: int, *, data_keys: bool) -> list[_IndexEntry]:
    """A root index block: ``count`` entries of int64 offset, int32 on-disk size, a vint key length and the key
    (a data index's keys are cell keys, a meta index's plain names); what follows them (the mid-key of a
    multi-level index) is not needed."""
    out, pos = [], 0
    for _ in range(count):
        if len(payload) - pos < 13:
            raise reader._fail(f"root index ends before its {count} entries")
        offset, size = _I64_I32.unpack_from(payload, pos)
        length, pos = _read_vlong(payload, pos + 12)
        if not 0 <= length <= len(payload) - pos:
            raise reader._fail("root index key runs past its block")
        key = payload[pos:pos + length]
        pos += length
        out.append(_IndexEntry(_row_of(reader, key) if data_keys else bytes(key), offset, size))
    if data_keys and any(a.row > b.row for a, b in zip(out, out[1:])):
        raise reader._fail("root data index keys are out of order")
    return out


def _row_of(reader: HFileReader, key: memoryview) -> bytes:
    """The row of a cell key: int16 row length, then the row."""
    if len(key) < 2:
        raise reader._fail("index key shorter than its row length")
    (length,) = _U16.unpack_from(key, 0)
    if length > len(key) - 2:
        raise reader._fail("index key's row runs past the key")
    return bytes(key[2:2 + length])


def _vlong_size(first_byte: int) -> int:
    """Encoded size of a Hadoop ``WritableUtils`` vlong from its first byte (``decodeVIntSize``)."""
    signed = first_byte - 256 if first_byte > 127 else first_byte
    if signed >= -112:
        return 1
    return -119 - signed if signed < -120 else -111 - signed


def _read_vlong(data: memoryview, pos: int) -> tuple[int, int]:
    """A Hadoop ``WritableUtils`` vlong at ``pos``: ``(value, offset after it)``."""
    if pos >= len(data):
        raise struct.error("vlong cut off")
    first = data[pos]
    size = _vlong_size(first)
    if size == 1:
        return (first - 256 if first > 127 else first), pos + 1
    if pos + size > len(data):
        raise struct.error("vlong cut off")
    value = int.from_bytes(data[pos + 1:pos + size], "big")
    signed = first - 256 if first > 127 else first
    return (~value if signed < -120 else value), pos + size


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


def _delimited(reader: HFileReader, data: memoryview, pos: int) -> tuple[memoryview, int]:
    """The bytes at ``pos`` prefixed by their varint length (a ``writeDelimitedTo`` message or a protobuf
    length-delimited field), and the offset after them."""
    length, pos = _varint(data, pos)
    if length > len(data) - pos:
        raise reader._fail("HFile protobuf message runs past its block")
    return data[pos:pos + length], pos + length


def _protobuf_fields(reader: HFileReader, message: memoryview) -> Iterator[tuple[int, int | memoryview]]:
    """``(field number, value)`` of a protobuf message: varints as int, length-delimited fields as bytes."""
    pos = 0
    value: int | memoryview
    while pos < len(message):
        tag, pos = _varint(message, pos)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 0:
            value, pos = _varint(message, pos)
        elif wire_type == 2:
            value, pos = _delimited(reader, message, pos)
        else:
            raise reader._fail(f"HFile protobuf wire type {wire_type} not expected")
        yield number, value
