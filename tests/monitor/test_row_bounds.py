"""Row bounds of whole file slices from commit metadata, reading no data file a task reads (issue 25.2).

A split records an upper bound of its rows (``est_rows``; the row limits rely on it), or None. A snapshot's
splits are planned with None (bounding them decodes every write stat of the commits that wrote the table's files,
which only a row limit needs); ``StreamMonitor.slice_bounds`` gives a whole slice's bound from the write stats of
the commits that wrote its files, or None where those cannot tell (a file of an archived commit, or one no stat
counts), opening nothing: the driver reads that split's footer and logs only when a row limit needs its bound
(``tests/streaming/test_bounds_on_demand.py``).
"""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
from conftest import fixture_names
from support.data_reads import data_reads
from support.planning import round_by_round_splits
from support.stream_sim import make_reader

from hudi_streaming.hoodie.changes import slice_changes
from hudi_streaming.hoodie.deletes import Deletes
from hudi_streaming.hoodie.feed_schema import output_schema, read_columns
from hudi_streaming.hoodie.table import HudiTable
from hudi_streaming.monitor.monitor import MonitorOptions, StreamMonitor
from hudi_streaming.monitor.row_bounds import slice_rows
from hudi_streaming.streaming.admission import BatchLimit

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("part", pa.string())])


def _rows(keys, ts: int, partitions: int = 4) -> pa.Table:
    return pa.table({"id": [f"k{k:04d}" for k in keys], "ts": np.full(len(keys), ts),
                     "part": [f"p{k % partitions}" for k in keys]}, schema=SCHEMA)


def _written(path: str, version: int, table_type: str = "MERGE_ON_READ"):
    from hudi_streaming.writer import create_table

    w = create_table(path, "bounds", SCHEMA, record_key="id", partition_fields="part", ordering_field="ts",
                     version=version, table_type=table_type)
    w.insert(_rows(range(40), 1))
    w.upsert(_rows(range(0, 40, 3), 2))  # updates in log files (MOR)
    w.delete(_rows(range(1, 40, 5), 3).select(["id", "part"]))
    w.upsert(_rows(range(40, 48), 4))  # inserts: into logs or small base files
    return w


@pytest.mark.parametrize("version, table_type", [(9, "MERGE_ON_READ"), (6, "MERGE_ON_READ"), (9, "COPY_ON_WRITE")])
def test_a_snapshot_plan_without_a_row_limit_opens_no_data_file(version, table_type, tmp_path, monkeypatch):
    table = str(tmp_path / "t")
    _written(table, version, table_type)
    reader = make_reader(table, str(tmp_path / "state"))
    with data_reads(monkeypatch, table) as opened:
        end = reader.driver.latest_offset(reader.initialOffset(), BatchLimit())  # plans the snapshot, admits it
        splits = [p.split for p in reader.driver.state.splits]
    assert opened == [] and end["seq"] == len(splits) == 4
    assert all(s.est_rows is None for s in splits)  # planned without bounds: no row limit asked for them
    # the bounds the stats give are the ones the files give (no failed write, nothing archived)
    t = HudiTable(table)
    with data_reads(monkeypatch, table) as opened:
        bounds = StreamMonitor(t, MonitorOptions()).slice_bounds([s.slice for s in splits])
    assert opened == []
    with data_reads(monkeypatch, table) as opened:
        assert bounds == [slice_rows(t.storage, s.slice) for s in splits]
    assert opened  # the files, read: the count sees reads


def test_a_slice_with_a_file_of_an_archived_commit_is_left_unbounded_and_no_file_is_read(tmp_path, monkeypatch):
    """Some writers of a file of an archived commit may be archived too: its stats cannot bound it. (Copy on
    write: the other partition's small base file is rewritten by each insert, so its writer is active.) Its
    files used to be read here, at planning, row limit or not."""
    table = str(tmp_path / "t")
    from hudi_streaming.writer import create_table

    w = create_table(table, "bounds", SCHEMA, record_key="id", partition_fields="part", ordering_field="ts",
                     version=9, table_type="COPY_ON_WRITE")
    w.insert(_rows([0], 1, partitions=1))  # p0, alone in its first commit
    for i in range(1, 7):
        w.insert(pa.table({"id": [f"x{i}"], "ts": [i], "part": ["q"]}, schema=SCHEMA))
    assert w.archive(keep_active=3)
    t = HudiTable(table)
    assert t.timeline.is_archived(t.file_system_view().latest_merged_slices()[0].base_instant)
    monitor = StreamMonitor(t, MonitorOptions())
    with data_reads(monkeypatch, table) as opened:
        plan = monitor.plan_snapshot()
        bounds = monitor.slice_bounds([s.slice for s in plan.splits])
    p0 = [s.partition for s in plan.splits].index("part=p0")
    assert opened == [] and bounds[p0] is None
    assert [b for i, b in enumerate(bounds) if i != p0] == [slice_rows(t.storage, s.slice)
                                                            for i, s in enumerate(plan.splits) if i != p0]


def test_stats_that_count_nothing_leave_the_bounds_unknown(tmp_path, monkeypatch):
    """A writer that leaves the counters out (v6: JSON commit metadata, counters removed here): no bound, and no
    file read to find one."""
    table = str(tmp_path / "t")
    _written(table, 6)
    for f in (tmp_path / "t" / ".hoodie").glob("*.deltacommit"):
        md = json.loads(f.read_text())
        for stats in md["partitionToWriteStats"].values():
            for st in stats:
                for counter in ("numWrites", "numDeletes", "numInserts", "numUpdateWrites"):
                    st.pop(counter, None)
        f.write_text(json.dumps(md))
    t = HudiTable(table)
    monitor = StreamMonitor(t, MonitorOptions())
    with data_reads(monkeypatch, table) as opened:
        plan = monitor.plan_snapshot()
        bounds = monitor.slice_bounds([s.slice for s in plan.splits])
    assert opened == [] and plan.splits and bounds == [None] * len(plan.splits)


@pytest.mark.slow
@pytest.mark.parametrize("name", fixture_names())
def test_every_snapshot_and_replaced_split_yields_at_most_its_bound(name, unzip_fixture):
    """On every fixture table Hudi wrote: each whole-slice split (a snapshot's, a replaced file group's) yields
    no more rows than it records, in either read mode (or, where the stats cannot bound it, than its files count,
    the bound the driver reads when a row limit needs it)."""
    table = HudiTable(str(unzip_fixture(name).table))
    monitor = StreamMonitor(table, MonitorOptions(replaced_as_deletes=True))
    splits = monitor.plan_snapshot().splits
    splits = [replace(s, est_rows=b) for s, b in zip(splits, monitor.slice_bounds([s.slice for s in splits]))]
    if table.config.populate_meta_fields:
        splits += [s for s in round_by_round_splits(table) if s.replaced_by]
    out = output_schema(table.arrow_schema(), None)
    columns = read_columns(table, out)
    for split in splits:
        bound = slice_rows(table.storage, split.slice) if split.est_rows is None else split.est_rows
        for changelog in (False, True):
            rows = slice_changes(table, split, out, columns, Deletes.EMIT, changelog).num_rows
            assert rows <= bound, (split.file_id, changelog, rows, bound)
