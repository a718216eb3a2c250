"""The HFile reader (``hoodie.hfile``) on HFiles Hudi wrote, by HBase's writer (0.15) and by its native one (1.2),
and on files built here with a multi-level index, as HBase writes big files.

Every key's value from a ranged lookup must equal the full scan's; a lookup reads the trailer and load-on-open
section, then only the index and data blocks on the key's path (counted); damage is a CorruptFileError naming the
file.
"""
from __future__ import annotations

import gzip
import struct
from pathlib import Path

import pytest
from oracle.hudi_oracle.fixture import FOLDER, HudiFixture

from hudi_streaming.errors import CorruptFileError
from hudi_streaming.hoodie.hfile import TRAILER_SIZE, BytesSource, HFileReader, StorageSource
from hudi_streaming.hoodie.logfile.blocks import read_hfile_cells
from hudi_streaming.hoodie.logfile.format import BlockType
from hudi_streaming.hoodie.logfile.reader import read_log_file
from hudi_streaming.hoodie.storage import Storage

#: (zip, writer): metadata tables written through HBase's HFile writer and through Hudi's native writer (with
#: a record index, whose HFiles hold a key per record)
WRITTEN = [("mor_v6_015_compaction", "0.15"), ("mor_v6_015_rli", "0.15"), ("mor_v9_compaction", "1.2"),
           ("mor_v9_rli", "1.2")]


@pytest.fixture(scope="module")
def metadata_tables(tmp_path_factory) -> dict[str, Path]:
    """Each zip of :data:`WRITTEN` materialized once, after its last step."""
    out = {}
    for name, _ in WRITTEN:
        fx = HudiFixture(FOLDER / f"{name}.zip", tmp_path_factory.mktemp(name))
        out[name] = fx.materialize(len(fx.steps) - 1, fx.work / "table")
    return out


def _check_lookups(reader: HFileReader) -> int:
    """Every key looked up alone, all keys at once, absent keys and every key's prefixes against the scan;
    returns the number of cells."""
    cells = [(key, bytes(value)) for key, value in reader.scan()]
    assert cells, f"{reader.name}: no cells"
    assert [k for k, _ in cells] == sorted(k for k, _ in cells), "cells out of key order"
    for key, value in cells:
        assert {k: bytes(v) for k, v in reader.lookup([key]).items()} == {key: value}, key
        for n in sorted({0, 1, len(key) // 2, len(key)}):
            assert [(k, bytes(v)) for k, v in reader.prefix(key[:n])] == [c for c in cells if c[0].startswith(key[:n])]
    assert {k: bytes(v) for k, v in reader.lookup(k for k, _ in cells).items()} == dict(cells)
    absent = [b"", b"\x00", b"\xff" * 3] + [key + b"\x00" for key, _ in cells]
    assert not set(reader.lookup(absent)) - {k for k, _ in cells}
    return len(cells)


@pytest.mark.slow
@pytest.mark.parametrize("name,writer", WRITTEN)
def test_metadata_hfiles_lookup_equals_scan(metadata_tables, name, writer):
    """Base HFiles of every metadata partition and the HFile data blocks of their log files, key by key."""
    root = metadata_tables[name]
    storage = Storage(str(root / ".hoodie" / "metadata"))
    base_files = sorted(p for p in (root / ".hoodie" / "metadata").rglob("*.hfile") if not p.name.startswith("."))
    assert base_files, f"{name} ({writer}): no base HFile"
    for path in base_files:
        rel = str(path.relative_to(root / ".hoodie" / "metadata"))
        assert _check_lookups(HFileReader(StorageSource(storage, rel, path.stat().st_size), rel))
        # one key costs the tail (trailer and load-on-open section together), then one read per level
        ranged = StorageSource(storage, rel, path.stat().st_size)
        reader = HFileReader(ranged, rel)
        assert ranged.reads == 1
        first = next(reader.scan())[0]
        ranged.reads = 0
        assert first in reader.lookup([first]) and ranged.reads == reader.trailer.index_levels
    blocks = [b for p in sorted((root / ".hoodie" / "metadata").rglob(".*.log.*")) if not p.name.endswith(".crc")
              for b in read_log_file(storage, str(p.relative_to(root / ".hoodie" / "metadata")))
              if b.type is BlockType.HFILE_DATA]
    assert blocks, f"{name}: no HFile data block in the metadata table's logs"
    for block in blocks:
        assert _check_lookups(HFileReader(BytesSource(block.content), block.where())) == len(read_hfile_cells(block))


# --- files built here: a multi-level index, compression, damage ----------------------------------------------

def _cell_key(row: bytes) -> bytes:
    """An HBase cell key: int16 row length, row, family length 0, no qualifier, timestamp, type Put."""
    return struct.pack(">H", len(row)) + row + b"\x00" + struct.pack(">qb", 0, 4)


def _block(magic: bytes, payload: bytes, gzip_codec: bool) -> bytes:
    stored = gzip.compress(payload) if gzip_codec else payload
    return struct.pack(">8siiqbii", magic, len(stored), len(payload), -1, 0, 16384, 33 + len(stored)) + stored


def _varint(n: int) -> bytes:
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def _field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _non_root(entries: list[tuple[int, int, bytes]]) -> bytes:
    body = [struct.pack(">qi", off, size) + key for off, size, key in entries]
    offsets = [sum(len(b) for b in body[:i]) for i in range(len(body) + 1)]
    return struct.pack(f">i{len(offsets)}i", len(entries), *offsets) + b"".join(body)


def build_hfile(rows: list[bytes], *, per_block: int = 2, fanout: int = 2, levels: int = 2, gzip_codec: bool = False,
                damage: dict | None = None) -> bytes:
    """An HFile v3 as HBase lays one out: data blocks with the leaf index blocks inline between them, higher
    index levels after the data, then root index, meta index and file info, then the trailer. ``damage`` overrides
    trailer fields or the first root entry's size."""
    damage = damage or {}
    out = b""
    chunks = [rows[i:i + per_block] for i in range(0, len(rows), per_block)]
    level: list[tuple[int, int, bytes]] = []  # (offset, on-disk size, first cell key) of the level being built
    pending: list[tuple[int, int, bytes]] = []
    first_data, last_data = 0, 0
    for chunk in chunks:
        payload = b"".join(struct.pack(">ii", len(_cell_key(r)), len(b"v:" + r)) + _cell_key(r) + b"v:" + r + b"\x00"
                           for r in chunk)
        block = _block(b"DATABLK*", payload, gzip_codec)
        last_data = len(out)
        pending.append((len(out), len(block), _cell_key(chunk[0])))
        out += block
        if levels > 1 and len(pending) == fanout:
            leaf = _block(b"IDXLEAF2", _non_root(pending), gzip_codec)
            level.append((len(out), len(leaf), pending[0][2]))
            out += leaf
            pending = []
    if levels > 1 and pending:
        leaf = _block(b"IDXLEAF2", _non_root(pending), gzip_codec)
        level.append((len(out), len(leaf), pending[0][2]))
        out += leaf
    if levels == 1:
        level = pending
    for _ in range(levels - 2):  # intermediate levels, in the non-scanned section
        upper = []
        for i in range(0, len(level), fanout):
            block = _block(b"IDXINTE2", _non_root(level[i:i + fanout]), gzip_codec)
            upper.append((len(out), len(block), level[i][2]))
            out += block
        level = upper
    load_on_open = len(out)
    root_entries = [(off, damage.get("root_size", size) if i == 0 else size, key)
                    for i, (off, size, key) in enumerate(level)]
    root = b"".join(struct.pack(">qi", off, size) + bytes([len(key)]) + key for off, size, key in root_entries)
    out += _block(b"IDXROOT2", root, gzip_codec) + _block(b"IDXROOT2", b"", gzip_codec)
    file_info_offset = len(out)
    pair = _field(1, b"KEY_VALUE_VERSION") + _field(2, struct.pack(">i", 1))
    info = _field(1, pair)
    out += _block(b"FILEINF2", b"PBUF" + _varint(len(info)) + info, gzip_codec)
    fields = {1: file_info_offset, 2: load_on_open, 5: len(level), 6: 0, 7: len(rows), 8: levels, 9: first_data,
              10: last_data, 12: 1 if gzip_codec else 2, **damage.get("trailer", {})}
    proto = b"".join(_field(n, v) for n, v in fields.items())
    trailer = b'TRABLK"$' + _varint(len(proto)) + proto
    return out + trailer + bytes(TRAILER_SIZE - len(trailer) - 4) + struct.pack(">i", 3)


class _Counting(BytesSource):
    def __init__(self, data: bytes):
        super().__init__(data)
        self.reads = 0

    def read(self, offset: int, length: int) -> memoryview:
        self.reads += 1
        return super().read(offset, length)


@pytest.mark.parametrize("levels", [1, 2, 3])
@pytest.mark.parametrize("gzip_codec", [False, True])
def test_multi_level_index_lookup(levels, gzip_codec):
    """A lookup walks root → intermediate → leaf → data: one read per level below the tail, whatever the size."""
    rows = [f"key{i:03d}".encode() for i in range(37)]
    data = build_hfile(rows, levels=levels, gzip_codec=gzip_codec)
    source = _Counting(data)
    reader = HFileReader(source, "built.hfile")
    assert reader.trailer.index_levels == levels and _check_lookups(reader) == len(rows)
    for row in (rows[0], rows[17], rows[-1]):
        fresh = HFileReader(source, "built.hfile")  # nothing cached yet
        source.reads = 0
        assert bytes(fresh.lookup([row])[row]) == b"v:" + row
        assert source.reads == levels  # (levels - 1) index blocks and one data block
        source.reads = 0
        assert bytes(fresh.lookup([row])[row]) == b"v:" + row and source.reads == 0  # the same blocks again
    fresh = HFileReader(source, "built.hfile")
    source.reads = 0
    assert [k for k, _ in fresh.prefix(b"key01")] == rows[10:20]
    assert source.reads == levels  # neighbouring blocks share a read: one per level
    fresh = HFileReader(source, "built.hfile")
    source.reads = 0
    assert len(fresh.lookup(rows[::3])) == len(rows[::3]) and source.reads == levels


def test_distant_blocks_are_read_apart(monkeypatch):
    """Blocks farther apart than COALESCE_GAP are separate reads (a lookup never fetches the file between)."""
    from hudi_streaming.hoodie import hfile
    rows = [f"key{i:03d}".encode() for i in range(40)]
    source = _Counting(build_hfile(rows, levels=1))
    monkeypatch.setattr(hfile, "COALESCE_GAP", 0)
    reader = HFileReader(source, "built.hfile")
    source.reads = 0
    assert len(reader.lookup([rows[0], rows[39]])) == 2 and source.reads == 2
    reader = HFileReader(source, "built.hfile")
    source.reads = 0
    assert len(reader.lookup(rows[:6])) == 6 and source.reads == 1  # three adjacent blocks: one read


@pytest.mark.parametrize("damage,words", [
    ({"trailer": {2: 10 ** 9}}, "trailer offsets are inconsistent"),
    ({"trailer": {1: 5}}, "trailer offsets are inconsistent"),
    ({"trailer": {8: 99}}, "trailer counts are impossible"),
    ({"trailer": {5: 50}}, "root index ends before its 50 entries"),
    ({"root_size": 10 ** 7}, "outside the file's blocks"),
    ({"trailer": {7: 99}}, "its trailer says 99"),
])
def test_damaged_hfile_names_file_and_fault(damage, words):
    data = build_hfile([f"k{i}".encode() for i in range(9)], levels=2, damage=damage)
    with pytest.raises(CorruptFileError, match=f"^damaged.hfile: .*{words}"):
        reader = HFileReader(BytesSource(data), "damaged.hfile")
        list(reader.scan())


def test_truncated_and_bit_flipped_hfiles():
    data = build_hfile([f"k{i}".encode() for i in range(9)], levels=2)
    with pytest.raises(CorruptFileError, match="^short.hfile: .*shorter than its 4096-byte trailer"):
        HFileReader(BytesSource(data[:1000]), "short.hfile")
    with pytest.raises(CorruptFileError, match="^cut.hfile: "):
        HFileReader(BytesSource(data[:200] + data[-TRAILER_SIZE:]), "cut.hfile")
    flipped = bytearray(data)
    flipped[33:37] = struct.pack(">i", 10 ** 6)  # the first cell's key length
    reader = HFileReader(BytesSource(bytes(flipped)), "flipped.hfile")
    with pytest.raises(CorruptFileError, match="^flipped.hfile: HFile cell with impossible lengths"):
        reader.lookup([b"k0"])
