"""A split read in pieces: the same rows as a whole read, in the documented order (offset version 3), on every
fixture table, and a range of it resumed anywhere gives the same sequence.

The fixtures' base files hold a few rows, so pieces are made tiny (``PIECE_ROWS`` of 2 and 3) to cut every base
file into several. The whole read (one piece larger than any file) is the order of offset version 2; the
expected piecewise order is derived from it and from the base file read with pyarrow alone: per piece of base
rows, the rows the log left alone in file order, then the updated ones in file order of the row they replace;
then the log-only inserts in their whole-read order.
"""
from __future__ import annotations

import math
from collections import defaultdict

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import fixture_names
from support.planning import round_by_round_splits
from support.stream_sim import make_reader

from hudi_streaming.hoodie import slice_reader
from hudi_streaming.hoodie.changes import slice_changes
from hudi_streaming.hoodie.deletes import Deletes
from hudi_streaming.hoodie.feed_schema import output_schema, read_columns
from hudi_streaming.hoodie.read import plan_slices
from hudi_streaming.hoodie.slice_reader import SliceRead, align, read_slice
from hudi_streaming.hoodie.table import HudiTable
from hudi_streaming.monitor.monitor import MonitorOptions, StreamMonitor
from hudi_streaming.streaming import consumer
from hudi_streaming.streaming.consumer import SplitRange, coalesced, consume
from hudi_streaming.writer import create_table

WHOLE = 10**9


def _expected_order(whole: pa.Table, base: pa.Table, keys_whole: list, keys_base: list, piece: int) -> list[dict]:
    """The rows of ``whole`` (one-piece order) in the order of pieces of ``piece`` base rows."""
    rows, base_rows = whole.to_pylist(), base.to_pylist()
    positions: dict = defaultdict(list)
    for i, k in enumerate(keys_base):
        positions[k].append(i)
    first = {k: p[0] for k, p in positions.items()}
    placed = []
    for i, (k, row) in enumerate(zip(keys_whole, rows)):
        same = [p for p in positions.get(k, []) if base_rows[p] == row]
        if same:  # a base row the log left alone
            positions[k].remove(same[0])
            placed.append(((same[0] // piece, 0, same[0]), row))
        elif k in first:  # an updated row takes the place of the key's first base row
            placed.append(((first[k] // piece, 1, first[k]), row))
        else:  # a log-only insert
            placed.append(((math.inf, 2, i), row))
    return [row for _, row in sorted(placed, key=lambda x: x[0])]


@pytest.mark.parametrize("name", fixture_names())
def test_a_slice_read_in_pieces_is_the_whole_read_in_piece_order(name, unzip_fixture, monkeypatch):
    table = HudiTable(str(unzip_fixture(name).table))
    slices, max_instant, _ = plan_slices(table)
    schema = table.arrow_schema()
    for s in slices:
        req = SliceRead(table, schema, max_instant)
        monkeypatch.setattr(slice_reader, "PIECE_ROWS", WHOLE)
        whole = read_slice(req, s)
        base = (align(pq.read_table(table.storage.full(s.base_file.path)), schema)
                if s.base_file is not None else schema.empty_table())
        for piece in (2, 3):
            monkeypatch.setattr(slice_reader, "PIECE_ROWS", piece)
            pieces = read_slice(req, s)
            expected = _expected_order(whole, base, req.key_array(whole).to_pylist(),
                                       req.key_array(base).to_pylist(), piece)
            assert pieces.to_pylist() == expected, (s.file_id, piece)


def _stream_splits(table: HudiTable) -> list:
    """The splits a stream from earliest plans: the snapshot, then nothing (fixtures are static)."""
    return StreamMonitor(table, MonitorOptions(replaced_as_deletes=True)).plan_snapshot().splits


@pytest.mark.slow
@pytest.mark.parametrize("name", fixture_names())
def test_a_split_streamed_in_pieces_delivers_the_same_changes_and_resumes_anywhere(name, unzip_fixture,
                                                                                   monkeypatch):
    table = HudiTable(str(unzip_fixture(name).table))
    # a stream refuses tables without meta fields (StreamDriver): only their snapshot is read in splits
    splits = (round_by_round_splits(table) if table.config.populate_meta_fields else []) + _stream_splits(table)
    out = output_schema(table.arrow_schema(), None)
    columns = read_columns(table, out)
    for changelog in (False, True):
        for split in splits:
            monkeypatch.setattr(slice_reader, "PIECE_ROWS", WHOLE)
            whole = slice_changes(table, split, out, columns, Deletes.EMIT, changelog)
            monkeypatch.setattr(slice_reader, "PIECE_ROWS", 2)
            pieces = slice_changes(table, split, out, columns, Deletes.EMIT, changelog)
            # the same changes: pieces only reorder them
            assert sorted(map(repr, pieces.to_pylist())) == sorted(map(repr, whole.to_pylist())), split.file_id
            # a range resumed at any record continues the same sequence (what a restarted batch relies on)
            n = pieces.num_rows
            cuts = sorted({0, n // 3, n // 2, n - 1, n} - {-1})
            got = []
            for lo, hi in zip(cuts, cuts[1:] + [None]):
                ranges = [SplitRange(split, lo, hi)]
                got += [b for b in consume(table, ranges, out, columns, out, deletes=Deletes.EMIT,
                                           changelog=changelog, merge_type="payload_combine", mini_batch=2)]
            resumed = pa.Table.from_batches(got, out) if got else out.empty_table()
            assert resumed.equals(pieces), split.file_id


def _numbered(*sizes: int) -> list[pa.RecordBatch]:
    """Batches of ``sizes`` rows numbering the rows 0, 1, ... across them."""
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    schema = pa.schema([("n", pa.int64()), ("s", pa.string())])
    return [pa.record_batch({"n": list(range(s, s + k)), "s": [str(i) for i in range(s, s + k)]}, schema=schema)
            for s, k in zip(starts, sizes)]


def test_coalesced_joins_consecutive_small_batches_in_order_up_to_the_limit():
    batches = _numbered(3, 0, 5, 10, 2, 8, 1)
    out = list(coalesced(iter(batches), 10))
    assert [b.num_rows for b in out] == [8, 10, 10, 1]  # a full batch passes as is, after what was held
    assert pa.Table.from_batches(out).equals(pa.Table.from_batches(batches))
    assert out[1] is batches[3]


def test_a_held_slice_of_a_larger_piece_is_a_copy():
    """A short slice held while the next piece is read keeps none of the piece it was cut from alive."""
    piece = _numbered(100_000)[0]
    (held,) = coalesced(iter([piece.slice(99_990)]), 65_536)
    assert held.equals(piece.slice(99_990)) and held.get_total_buffer_size() < piece.get_total_buffer_size() / 100


def test_a_task_of_many_small_file_groups_hands_spark_few_batches_of_the_same_rows(tmp_path, monkeypatch):
    """Each file group yields its own small batches; the task joins them up to miniBatchSize: the same rows in
    the same order, in as few batches as the size allows."""
    table = str(tmp_path / "table")
    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("part", pa.string())])
    writer = create_table(table, "many", schema, record_key="id", partition_fields="part", ordering_field="ts",
                          table_type="MERGE_ON_READ", version=9)
    keys = [f"k{i:03d}" for i in range(60)]
    writer.insert(pa.table({"id": keys, "ts": [1] * 60, "part": [f"p{i % 12}" for i in range(60)]}, schema=schema))
    writer.upsert(pa.table({"id": keys[:12], "ts": [2] * 12, "part": [f"p{i}" for i in range(12)]}, schema=schema))
    for size in ("65536", "7"):
        reader = make_reader(table, str(tmp_path / f"state-{size}"), miniBatchSize=size)
        end = reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
        tasks = reader.partitions(reader.initialOffset(), end)
        with monkeypatch.context() as m:
            m.setattr(consumer, "coalesced", lambda batches, rows: batches)
            apart = [list(reader.read(t)) for t in tasks]
        joined = [list(reader.read(t)) for t in tasks]
        assert sum(len(b) for b in apart) >= 12  # a batch or more per file group
        for a, j in zip(apart, joined):
            assert pa.Table.from_batches(j).equals(pa.Table.from_batches(a))
            # none larger than the size, none that the next would still have fitted into
            assert all(b.num_rows <= int(size) for b in j)
            assert all(x.num_rows + y.num_rows > int(size) for x, y in zip(j, j[1:]))
        assert size == "7" or all(len(j) == 1 for j in joined)
