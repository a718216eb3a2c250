"""The driver reads a split's row bound from its files only when a row limit needs it, for the splits a batch may
admit (issue 25.2), and the row limits and exactly-once delivery hold with bounds read late or read again.

The table's file groups were all written by commits since archived: the planner cannot bound their snapshot splits
from write stats (``Split.est_rows`` None). The stream is driven as Spark drives it (latest offset, partitions,
every task read by the split consumer, commit), without Spark; the data files opened are counted per call.
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from support.data_reads import data_reads

from hudi_streaming.cli.commands import main
from hudi_streaming.errors import DataLossError
from hudi_streaming.streaming.admission import BatchLimit
from hudi_streaming.streaming.consumer import SplitRange, consume
from hudi_streaming.streaming.driver import StreamDriver
from hudi_streaming.streaming.offsets import Offset, make_offset
from hudi_streaming.streaming.options import parse_options
from hudi_streaming.streaming.schema import source_schema

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("part", pa.string())])
GROUPS = 6
MAX_ROWS = 7


@pytest.fixture(scope="module")
def archived(tmp_path_factory) -> Path:
    """Six file groups of ten rows (MOR, v9), two of each updated in a log file, their commits archived."""
    from hudi_streaming.writer import create_table

    table = tmp_path_factory.mktemp("archived") / "t"
    w = create_table(str(table), "bounds", SCHEMA, record_key="id", partition_fields="part", ordering_field="ts")
    keys = range(GROUPS * 10)
    w.insert(pa.table({"id": [f"k{k:03d}" for k in keys], "ts": [1] * len(keys),
                       "part": [f"p{k % GROUPS}" for k in keys]}, schema=SCHEMA))
    w.upsert(pa.table({"id": [f"k{k:03d}" for k in range(12)], "ts": [2] * 12,
                       "part": [f"p{k % GROUPS}" for k in range(12)]}, schema=SCHEMA))
    for i in range(4):  # later writes elsewhere, so that the two above can be archived
        w.insert(pa.table({"id": [f"x{i}"], "ts": [i], "part": ["q"]}, schema=SCHEMA))
    assert len(w.archive(keep_active=2)) >= 2
    return table


def _driver(table: Path, state: Path, **options: str) -> StreamDriver:
    opts = parse_options({"path": str(table), "stateLocation": str(state), **options})
    return StreamDriver(opts, source_schema(opts))


def _read(driver: StreamDriver, start: Offset, end: Offset) -> list[dict]:
    """The rows of batch ``start``..``end``, every task read as an executor reads it."""
    tasks = driver.partitions(start, end, lambda ranges, columns, _commits, _clock: (ranges, columns))
    opts = driver.opts
    return [row for ranges, columns in tasks
            for rb in consume(driver.table, ranges, driver.output, columns, driver.output, deletes=opts.deletes,
                              changelog=False, merge_type=opts.merge_type, mini_batch=opts.mini_batch_size)
            for row in rb.to_pylist()]


def _splits_read(driver: StreamDriver, start: Offset, end: Offset) -> list[SplitRange]:
    tasks = driver.partitions(start, end, lambda ranges, _columns, _commits, _clock: ranges)
    return [r for ranges in tasks for r in ranges]


def _stream(driver: StreamDriver, monkeypatch, table: Path, start: Offset | None = None, batches: int | None = None
            ) -> tuple[list[list[dict]], list[tuple[list[str], set[str]]], Offset]:
    """Batches (their rows) until caught up or ``batches`` of them; per batch the data files its latest offset
    opened and the files of the splits it reads; the last end offset."""
    start = start or make_offset(0, 0)
    rows, reads = [], []
    while batches is None or len(rows) < batches:
        with data_reads(monkeypatch, str(table)) as opened:
            end = driver.latest_offset(start, BatchLimit())
        if end == start:
            break
        reads.append((list(opened), {f for r in _splits_read(driver, start, end) for f in r.split.files}))
        rows.append(_read(driver, start, end))
        driver.commit(end)
        start = end
    return rows, reads, start


def _once(batches: list[list[dict]]) -> Counter:
    return Counter(tuple(sorted(r.items())) for b in batches for r in b)


def test_the_planner_leaves_bounds_unknown_and_no_row_limit_reads_no_file(archived, tmp_path, monkeypatch):
    driver = _driver(archived, tmp_path / "state")
    assert sum(s.est_rows is None for s in driver.monitor.plan_snapshot().splits) >= GROUPS
    batches, reads, _ = _stream(driver, monkeypatch, archived)
    assert [opened for opened, _ in reads] == [[]]  # planning and admitting the one batch: not one data file
    assert sum(map(len, batches)) == GROUPS * 10 + 4


def test_a_row_limit_reads_the_bounds_of_the_splits_each_batch_admits(archived, tmp_path, monkeypatch):
    reference, _, _ = _stream(_driver(archived, tmp_path / "all"), monkeypatch, archived)
    driver = _driver(archived, tmp_path / "limited", maxRowsPerTrigger=str(MAX_ROWS))
    batches, reads, _ = _stream(driver, monkeypatch, archived)
    assert all(len(b) <= MAX_ROWS for b in batches), [len(b) for b in batches]
    assert _once(batches) == _once(reference) and max(_once(batches).values()) == 1
    # each batch's latest offset opened files of the splits it reads only, and no file in two batches (a footer's
    # read is two storage calls)
    assert all(set(opened) <= files for opened, files in reads), reads
    everything = [f for opened, _ in reads for f in set(opened)]
    assert len(everything) == len(set(everything))
    # the first batch: the splits its seven rows need (the first two groups'), not all six
    first, _ = reads[0]
    assert 0 < len({f.split("/")[0] for f in first}) <= 2


def test_a_restart_with_unknown_bounds_delivers_the_rest_exactly_once(archived, tmp_path, monkeypatch):
    """Two batches (the second cut inside a split whose bound the first driver read), then a new driver on the
    same state reads that bound again: the rest comes once, no batch over the limit. A batch Spark logged but
    did not commit is replayed by the new driver from its offsets alone, with the same rows."""
    reference, _, _ = _stream(_driver(archived, tmp_path / "all"), monkeypatch, archived)
    state = tmp_path / "state"
    first = _driver(archived, state, maxRowsPerTrigger=str(MAX_ROWS))
    before, _, at = _stream(first, monkeypatch, archived, batches=2)
    assert int(at["rec"]) > 0  # inside a split
    logged = first.latest_offset(at, BatchLimit())  # in Spark's offset log, its rows never committed
    planned = _read(first, at, logged)
    restarted = _driver(archived, state, maxRowsPerTrigger=str(MAX_ROWS))
    assert restarted.state.splits and all(p.split.est_rows is None for p in restarted.state.splits
                                          if p.split.partition != "part=q")
    assert _read(restarted, at, logged) == planned  # the replay: no admission, no bound needed
    restarted.commit(logged)
    after, _, _ = _stream(restarted, monkeypatch, archived, start=logged)
    batches = before + [planned] + after
    assert all(len(b) <= MAX_ROWS for b in batches), [len(b) for b in batches]
    assert _once(batches) == _once(reference) and max(_once(batches).values()) == 1


def test_a_file_gone_when_its_bound_is_read_is_the_readers_data_loss(archived, tmp_path, monkeypatch):
    """A base file removed (a cleaner) after planning: it counts 0 rows in the bound (the split's log file its two
    updates), and the batch's task reports the loss, naming the file, as any task reading a gone file does."""
    table = Path(shutil.copytree(archived, tmp_path / "t"))
    driver = _driver(table, tmp_path / "state", maxRowsPerTrigger=str(MAX_ROWS))
    driver._start()
    first = driver.state.splits[0].split
    assert first.est_rows is None and first.slice.base_file is not None
    (table / first.slice.base_file.path).unlink()
    end = driver.latest_offset(make_offset(0, 0), BatchLimit())
    assert driver.state.splits[0].split.est_rows == 2 and end["seq"] >= 1
    with pytest.raises(DataLossError, match=first.slice.base_file.path.rsplit("/", 1)[-1]):
        _read(driver, make_offset(0, 0), end)


def test_min_rows_per_trigger_reads_bounds_until_enough_rows_are_known(archived, tmp_path, monkeypatch):
    driver = _driver(archived, tmp_path / "state", minRowsPerTrigger="15")
    with data_reads(monkeypatch, str(archived)) as opened:
        end = driver.latest_offset(make_offset(0, 0), BatchLimit())
    assert end["seq"] == len(driver.state.splits)  # enough rows: one batch of everything
    bounded = [p for p in driver.state.splits if p.split.est_rows is not None and p.split.partition != "part=q"]
    assert 2 <= len(bounded) < GROUPS and {f.split("/")[0] for f in opened} == {p.split.partition for p in bounded}
    assert sum(p.split.est_rows or 0 for p in driver.state.splits) >= 15


def test_metrics_and_the_state_command_count_the_splits_not_bounded_yet(archived, tmp_path, capsys):
    driver = _driver(archived, tmp_path / "state", maxSplitsPerTrigger="1")
    driver.latest_offset(make_offset(0, 0), BatchLimit())
    pending = driver.state.splits
    unbounded = [p for p in pending if p.split.est_rows is None]
    report = driver.metrics()
    assert report["pendingUnboundedSplits"] == len(unbounded) >= GROUPS
    assert report["pendingRowsEstimate"] == sum(p.split.est_rows or 0 for p in pending)
    assert driver.last_batch["unboundedSplits"] == 1 and driver.last_batch["rowsEstimate"] == 0
    assert main(["state", str(tmp_path / "state")]) == 0
    out = capsys.readouterr().out
    assert f"and those of {len(unbounded)} splits not bounded yet" in out
    assert out.count("not bounded yet") == 1 + len(unbounded)
