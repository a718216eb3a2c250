"""Slice-level reading: bounded memory (spill to disk), skip-merge, and stable output order."""
from __future__ import annotations

import pyarrow as pa
import pytest

from hudi_streaming import hoodie
from hudi_streaming.hoodie.read import plan_slices
from hudi_streaming.hoodie.scanner import ScanStats
from hudi_streaming.hoodie.slice_reader import MergeType, SliceRead, read_slice

MULTI_LOG = ["mor_avro__v9_mor_8i4u_commit_time", "mor_avro__v6_trips_8i3d", "mor_parquet__v6_nonpartitioned_rollback",
             "mor_avro__table_partial_update_event_time"]


def _slices(url):
    table = hoodie.HudiTable(url)
    slices, max_instant, _ = plan_slices(table)
    return table, slices, max_instant


@pytest.mark.parametrize("name", MULTI_LOG)
def test_spilling_log_records_gives_the_same_rows(name, unzip_fixture):
    table, slices, max_instant = _slices(str(unzip_fixture(name).table))
    schema = table.arrow_schema()
    spilled = 0
    for s in slices:
        stats = ScanStats()
        tiny = read_slice(SliceRead(table, schema, max_instant, memory_budget=1), s, stats)
        assert tiny.equals(read_slice(SliceRead(table, schema, max_instant), s)), s.file_id
        spilled += stats.spilled_bytes
    assert spilled > 0, "a 1-byte budget must spill"


def test_skip_merge_returns_base_rows_and_every_log_record(unzip_fixture):
    table, slices, max_instant = _slices(str(unzip_fixture("mor_avro__v6_trips_8i1u").table))
    schema = table.arrow_schema()
    merged = sum(read_slice(SliceRead(table, schema, max_instant), s).num_rows for s in slices)
    unmerged = pa.concat_tables([read_slice(SliceRead(table, schema, max_instant, merge_type=MergeType.SKIP_MERGE), s)
                                 for s in slices])
    # 8 inserts and 1 update: the update shows up as an extra row next to its base row
    assert merged == 8 and unmerged.num_rows == 9
    assert len(set(unmerged.column("_hoodie_record_key").to_pylist())) == 8


@pytest.mark.parametrize("name", MULTI_LOG)
def test_same_slice_always_yields_the_same_sequence(name, unzip_fixture):
    table, slices, max_instant = _slices(str(unzip_fixture(name).table))
    schema = table.arrow_schema()
    for s in slices:
        first = read_slice(SliceRead(table, schema, max_instant), s)
        again = read_slice(SliceRead(hoodie.HudiTable(table.url), schema, max_instant), s)
        assert first.equals(again)


def test_stats_time_each_phase_of_a_merged_read(unzip_fixture):
    table, slices, max_instant = _slices(str(unzip_fixture("mor_avro__v9_mor_8i4u_commit_time").table))
    schema = table.arrow_schema()
    merged = [s for s in slices if s.base_file is not None and s.log_files]
    assert merged
    for s in merged:
        stats = ScanStats()
        assert read_slice(SliceRead(table, schema, max_instant), s, stats).equals(
            read_slice(SliceRead(table, schema, max_instant), s))
        phases = ("log_scan", "log_decode", "log_records", "base_read", "base_wait", "merge")
        assert all(getattr(stats, f"{p}_seconds") > 0 for p in phases), stats
        assert stats.log_records_seconds >= stats.log_decode_seconds
        ro = ScanStats()
        read_slice(SliceRead(table, schema, max_instant, read_optimized=True), s, ro)
        assert ro.base_read_seconds > 0 and ro.log_scan_seconds == ro.merge_seconds == ro.base_wait_seconds == 0
