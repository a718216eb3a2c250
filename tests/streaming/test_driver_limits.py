"""maxRowsPerTrigger and maxBytesPerTrigger hold for real tables and the real reader (issue 11).

Tables written by the project's writer (upserts with late updates, deletes; MOR and COW) are streamed by the
driver (``StreamDriver``: planning, admission, offsets, state) and the split consumer exactly as a Spark task
reads (``consume``), without Spark. Every batch's delivered rows are counted, and the bytes of the files its
splits read are taken from the file system; the rows of all batches together must equal those of an
unlimited stream of the same table, each change once.
"""
from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from hudi_streaming.hoodie.split import Split
from hudi_streaming.streaming.admission import BatchLimit
from hudi_streaming.streaming.consumer import SplitRange, consume
from hudi_streaming.streaming.driver import StreamDriver
from hudi_streaming.streaming.offsets import make_offset
from hudi_streaming.streaming.options import ReadMode, parse_options
from hudi_streaming.streaming.schema import source_schema
from hudi_streaming.writer.loadgen import LoadGenerator

MAX_ROWS = 50
MINI_BATCH = 16


@dataclass
class Batch:
    rows: list[dict]
    ranges: list[SplitRange]
    admitted: dict  # the driver's lastBatch

    def file_bytes(self, table: Path) -> int:
        """Bytes of the files the batch's splits read, measured on disk (not the planner's numbers)."""
        return sum(os.path.getsize(table / f) for r in self.ranges for f in _files_read(r.split))


def _files_read(split: Split) -> list[str]:
    return split.files + (split.prior.files if split.prior else [])


def _write(path: Path, steps: int, **kwargs) -> LoadGenerator:
    gen = LoadGenerator(str(path), **{"keys": 400, "partitions": 2, "seed": 3, "batch": 80, "delete_every": 4,
                                      "max_file_records": 150, **kwargs})
    gen.run(steps)
    return gen


def _stream(table: Path, state: Path, max_batches: int = 500, driver: StreamDriver | None = None,
            start: dict | None = None, **options: str) -> tuple[list[Batch], StreamDriver, dict]:
    """Batches of a stream (Spark's loop: latest offset, partitions, read every task, commit) until caught up."""
    if driver is None:
        opts = parse_options({"path": str(table), "stateLocation": str(state), "emitDeletes": "true",
                              "miniBatchSize": str(MINI_BATCH), **options})
        driver = StreamDriver(opts, source_schema(opts))
    opts = driver.opts
    start = start or make_offset(0, 0)
    batches = []
    for _ in range(max_batches):
        end = driver.latest_offset(start, BatchLimit())
        if end == start:
            return batches, driver, start
        tasks = driver.partitions(start, end, lambda ranges, columns, _commits, _clock: (ranges, columns))
        rows = []
        for ranges, columns in tasks:
            for rb in consume(driver.table, ranges, driver.output, columns, driver.output, deletes=opts.deletes,
                              changelog=opts.read_mode is ReadMode.CHANGELOG, merge_type=opts.merge_type,
                              mini_batch=opts.mini_batch_size):
                assert rb.num_rows <= MINI_BATCH
                rows.extend(rb.to_pylist())
        batches.append(Batch(rows, [r for ranges, _ in tasks for r in ranges], dict(driver.last_batch)))
        driver.commit(end)
        start = end
    raise AssertionError(f"no end after {max_batches} batches")


def _changes(batches: list[Batch]) -> Counter:
    return Counter(tuple(sorted(r.items())) for b in batches for r in b.rows)


def _check(table: Path, batches: list[Batch], reference: list[Batch], max_rows: int | None = None,
           max_bytes: int | None = None) -> None:
    delivered = [len(b.rows) for b in batches]
    if max_rows:
        over = [(i, n) for i, n in enumerate(delivered) if n > max_rows]
        assert not over, f"batches over maxRowsPerTrigger={max_rows} (batch, rows): {over}; all: {delivered}"
        for b in batches:  # the driver's figure is a bound of what the batch delivered
            assert len(b.rows) <= b.admitted["rowsEstimate"] <= max_rows
    if max_bytes:
        read = [(i, b.file_bytes(table), len(b.ranges)) for i, b in enumerate(batches)]
        over = [x for x in read if x[1] > max_bytes and x[2] > 1]
        assert not over, f"batches of several splits over maxBytesPerTrigger={max_bytes} (batch, bytes, splits): {over}"
        assert all(b.admitted["bytesEstimate"] == n for b, (_, n, _) in zip(batches, read))
    got, want = _changes(batches), _changes(reference)
    assert got == want, (f"{sum((got - want).values())} changes delivered too often, "
                         f"{sum((want - got).values())} never")
    assert sum(want.values()) > 0
    # progress: a batch ends at a split boundary or uses a whole row budget (of its bound): no empty batches
    # without end
    splits = len({(r.split.group, tuple(r.split.instants or []), r.split.replaced_by) for b in batches
                  for r in b.ranges})
    assert len(batches) <= splits + math.ceil(sum(b.admitted["rowsEstimate"] for b in batches) / (max_rows or 1)) + 1


@pytest.fixture(scope="module")
def mor(tmp_path_factory) -> Path:
    """A MOR table (v9) of 12 commits: log files over small file groups, updates (some late), deletes."""
    table = tmp_path_factory.mktemp("mor") / "table"
    _write(table, 12)
    return table


@pytest.fixture(scope="module")
def first_instant(mor) -> str:
    from hudi_streaming.hoodie.table import HudiTable
    return HudiTable(str(mor)).timeline.completed_writes()[0].requested_time


@pytest.mark.parametrize("mode", ["changelog", "upsert"])
@pytest.mark.parametrize("start", ["earliest", "first"])
def test_max_rows_per_trigger_holds_for_every_batch(mode, start, mor, first_instant, tmp_path):
    """Snapshot start (a base file plus log inserts and deletes per split) and incremental (changelog: an
    update is two rows; upsert: one round of every instant)."""
    options = {"readMode": mode, "startingInstant": first_instant if start == "first" else start}
    reference, _, _ = _stream(mor, tmp_path / "all", **options)
    batches, _, _ = _stream(mor, tmp_path / "limited", maxRowsPerTrigger=str(MAX_ROWS), **options)
    _check(mor, batches, reference, max_rows=MAX_ROWS)
    assert len(batches) > len(reference)


def test_limits_hold_for_a_snapshot_start_and_then_increments(tmp_path):
    """A stream from earliest (a snapshot) that follows the table as it changes, with both limits."""
    table = tmp_path / "table"
    gen = _write(table, 6, version=6)
    options = {"readMode": "changelog", "maxRowsPerTrigger": str(MAX_ROWS), "maxBytesPerTrigger": "20000"}
    batches, driver, at = _stream(table, tmp_path / "limited", **options)
    reference, ref_driver, ref_at = _stream(table, tmp_path / "all", readMode="changelog")
    gen.run(6)
    for d in (driver, ref_driver):
        d._last_poll = 0.0  # poll at once, not after the idle interval
    more, _, _ = _stream(table, tmp_path / "limited", driver=driver, start=at)
    ref_more, _, _ = _stream(table, tmp_path / "all", driver=ref_driver, start=ref_at)
    assert more and ref_more
    _check(table, batches + more, reference + ref_more, max_rows=MAX_ROWS, max_bytes=20000)


@pytest.mark.parametrize("mode", ["changelog", "upsert"])
def test_max_bytes_per_trigger_counts_every_file_a_batch_reads(mode, tmp_path):
    """Copy-on-write from the 4th commit: an updated file group's split also reads the base file from before
    the update (pre-images, inserts told from updates); a split cut by the row limit is read whole."""
    table = tmp_path / "table"
    _write(table, 8, table_type="COPY_ON_WRITE", partitions=4)
    from hudi_streaming.hoodie.table import HudiTable
    fourth = HudiTable(str(table)).timeline.completed_writes()[3].requested_time
    options = {"readMode": mode, "startingInstant": fourth}
    reference, _, _ = _stream(table, tmp_path / "all", **options)
    sizes = sorted(Batch([], [r], {}).file_bytes(table) for b in reference for r in b.ranges)
    limit = sizes[len(sizes) // 2] * 3 // 2  # one or two splits a batch
    batches, _, _ = _stream(table, tmp_path / "bytes", maxBytesPerTrigger=str(limit), **options)
    _check(table, batches, reference, max_bytes=limit)
    both, _, _ = _stream(table, tmp_path / "both", maxBytesPerTrigger=str(limit), maxRowsPerTrigger=str(MAX_ROWS),
                         **options)
    _check(table, both, reference, max_rows=MAX_ROWS, max_bytes=limit)
