"""The stream reader's options and offset arithmetic, driven like Spark drives it (no JVM: fast)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.reveal import TimelineReveal
from support.stream_sim import as_read, make_reader, resume, run_batches
from support.verify import _plain, state_differences

from hudi_streaming import hoodie, read_table

V9 = "mor_avro__v9_txns_simple_meta"
V6 = "mor_avro__v6_trips_8i3d"


def _copy(unzip_fixture, name, tmp_path) -> Path:
    dest = tmp_path / "table"
    shutil.copytree(unzip_fixture(name).table, dest)
    return dest


def _rows(batches) -> list[dict]:
    out = []
    for i, b in enumerate(batches):
        for r in (b.to_pylist() if b is not None else []):
            r["_batch"] = i
            out.append(r)
    return out


def _following(unzip_fixture, name, tmp_path, state="state", **options):
    """A copy of fixture ``name`` revealed up to its first instant, and a stream that has read that far."""
    table = _copy(unzip_fixture, name, tmp_path)
    reveal = TimelineReveal(table, tmp_path / "hidden")
    reveal.reveal_next()
    reader = make_reader(str(table), str(tmp_path / state), **options)
    return table, reveal, reader, run_batches(reader)


def _followed_to_the_end(unzip_fixture, name, tmp_path, **options):
    """The table and every row a stream delivers while fixture ``name`` is revealed instant by instant."""
    table, reveal, reader, batches = _following(unzip_fixture, name, tmp_path, **options)
    while reveal.reveal_next():
        batches += resume(reader)
    return table, _rows(batches)


def _apply(rows):
    from support.verify import apply_upserts
    return apply_upserts(rows)


@pytest.mark.parametrize("name", [V9, V6, "mor_parquet__v6_nonpartitioned_rollback",
                                  "mor_avro__v8_mor_boundary_windows", "cow__v9_txns_simple_meta",
                                  "cow__v6_simplekeygen_nonhivestyle_overwritetable",
                                  "mor_avro__table_uncommitted_log_v6"])
def test_earliest_then_increments_rebuild_the_table(name, unzip_fixture, tmp_path):
    table, rows = _followed_to_the_end(unzip_fixture, name, tmp_path, emitDeletes="true")
    assert state_differences(_apply(rows), read_table(str(table))) == []


def test_latest_starts_after_the_current_instant(unzip_fixture, tmp_path):
    table = _copy(unzip_fixture, V9, tmp_path)
    reveal = TimelineReveal(table, tmp_path / "hidden")
    for _ in range(3):
        reveal.reveal_next()
    reader = make_reader(str(table), str(tmp_path / "state"), startingInstant="latest")
    assert run_batches(reader) == []
    fourth = reveal.reveal_next()
    rows = _rows(resume(reader))
    assert rows and {r["_hoodie_commit_time"] for r in rows} == {fourth}


@pytest.mark.parametrize("as_timestamp", [False, True])
def test_starting_and_ending_instant_bound_the_stream(as_timestamp, unzip_fixture, tmp_path):
    """Every write completed inside [start, end] is delivered (changelog: one round per instant), none outside;
    a start given as a timestamp ``YYYY-MM-DD HH:MM:SS`` means the same as that instant time."""
    table = _copy(unzip_fixture, V9, tmp_path)
    writes = [e for e in hoodie.HudiTable(str(table)).timeline.completed_writes() if e.action.value == "deltacommit"]
    start, end = writes[2].completion_time, writes[5].completion_time
    if as_timestamp:
        start = start[:14] + "000"  # whole seconds, as a timestamp can say them
        option = f"{start[:4]}-{start[4:6]}-{start[6:8]} {start[8:10]}:{start[10:12]}:{start[12:14]}"
    else:
        option = start
    reader = make_reader(str(table), str(tmp_path / "state"), startingInstant=option, endingInstant=end,
                         readMode="changelog", emitDeletes="true")  # two of the writes only delete
    times = {r["_hoodie_commit_time"] for r in _rows(run_batches(reader))}
    assert times == {w.requested_time for w in writes if start <= w.completion_time <= end}


@pytest.mark.parametrize("limit_option,check", [
    ("maxRowsPerTrigger", lambda batches, n: all(b is None or b.num_rows <= n for b in batches)),
    ("maxSplitsPerTrigger", lambda batches, n: len(batches) >= 2),
])
def test_read_limits_cut_batches_without_loss(limit_option, check, unzip_fixture, tmp_path):
    table = _copy(unzip_fixture, V9, tmp_path)
    unlimited = _rows(run_batches(make_reader(str(table), str(tmp_path / "s1"))))
    reader = make_reader(str(table), str(tmp_path / "s2"), **{limit_option: "2"})
    batches = run_batches(reader, available_now=True)
    assert check(batches, 2)
    limited = _rows(batches)
    key = lambda r: (r["_hoodie_record_key"], r["_hoodie_commit_time"])  # noqa: E731
    assert sorted(map(key, limited)) == sorted(map(key, unlimited))


def test_partition_filter_prunes_splits(unzip_fixture, tmp_path):
    table = _copy(unzip_fixture, V9, tmp_path)
    rows = _rows(run_batches(make_reader(str(table), str(tmp_path / "state"), partitions="region=eu|us")))
    assert rows and {r["region"] for r in rows} == {"eu", "us"}


def test_column_projection_keeps_meta_and_change_type(unzip_fixture, tmp_path):
    table = _copy(unzip_fixture, V9, tmp_path)
    batches = run_batches(make_reader(str(table), str(tmp_path / "state"), columns="amount,txn_id"))
    names = batches[0].column_names
    assert names[-5:] == ["amount", "txn_id", "_change_type", "_commit_version", "_commit_timestamp"]
    assert names[0] == "_hoodie_commit_time"


def test_restart_replays_the_same_batch(unzip_fixture, tmp_path):
    """A new reader (new process after a crash) returns identical partitions for an uncommitted batch."""
    table = _copy(unzip_fixture, V9, tmp_path)
    state = str(tmp_path / "state")
    first = make_reader(str(table), state, maxRowsPerTrigger="5")
    start = first.initialOffset()
    end = first.latestOffset(start, first.getDefaultReadLimit())
    parts = first.partitions(start, end)
    rows = [b for p in parts for b in first.read(p)]
    second = make_reader(str(table), state, maxRowsPerTrigger="5")  # crashed before commit: Spark replays
    again = second.partitions(start, end)
    assert as_read(again) == as_read(parts)
    assert [b for p in again for b in second.read(p)] == rows


def test_offset_inside_a_split_of_another_row_order_is_refused(unzip_fixture, tmp_path):
    """A checkpoint from a version that ordered split rows differently resumes at split boundaries only."""
    from hudi_streaming.errors import StateError
    table = _copy(unzip_fixture, V9, tmp_path)
    reader = make_reader(str(table), str(tmp_path / "state"), maxRowsPerTrigger="5")
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert end["rec"] > 0, "the scenario needs a batch that ends inside a split"
    old = dict(end, v=1)
    with pytest.raises(StateError, match="ordered differently"):
        reader.partitions(start, old)
    with pytest.raises(StateError, match="ordered differently"):
        reader.latestOffset(old, reader.getDefaultReadLimit())
    boundary = dict(start, v=1)  # at a split boundary the order does not matter
    assert reader.partitions(boundary, end) == reader.partitions(start, end)


def test_state_of_another_table_is_refused(unzip_fixture, tmp_path):
    from hudi_streaming.errors import StateError
    a = _copy(unzip_fixture, V9, tmp_path / "a")
    b = _copy(unzip_fixture, V6, tmp_path / "b")
    state = str(tmp_path / "state")
    run_batches(make_reader(str(a), state))
    with pytest.raises(StateError, match="belongs to table"):
        run_batches(make_reader(str(b), state))


def test_torn_state_file_is_refused(unzip_fixture, tmp_path):
    from hudi_streaming.errors import StateError
    table = _copy(unzip_fixture, V9, tmp_path)
    state = tmp_path / "state"
    run_batches(make_reader(str(table), str(state)))
    newest = sorted(state.glob("state-*.json"))[-1]
    newest.write_bytes(newest.read_bytes()[: len(newest.read_bytes()) // 2])
    with pytest.raises(StateError, match="torn"):
        run_batches(make_reader(str(table), str(state)))


def test_committing_batches_does_not_rewrite_the_split_queue(unzip_fixture, tmp_path):
    """Planned splits are written once, in a segment; each commit writes only a small state file."""
    table = _copy(unzip_fixture, V9, tmp_path)
    state = tmp_path / "state"
    reader = make_reader(str(table), str(state), maxSplitsPerTrigger="1")
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    pending = len(reader.driver.state.splits)
    assert pending > 3, "the scenario needs a snapshot of several splits"
    segments = sorted(state.glob("splits-*.json"))
    assert len(segments) == 1 and "file_id" not in sorted(state.glob("state-*.json"))[-1].read_text()
    written = segments[0].stat().st_mtime_ns
    for _ in range(2):
        reader.commit(end)
        start, end = end, reader.latestOffset(end, reader.getDefaultReadLimit())
    assert sorted(state.glob("splits-*.json")) == segments and segments[0].stat().st_mtime_ns == written
    again = make_reader(str(table), str(state), maxSplitsPerTrigger="1")  # a restart reads the queue back
    assert again.driver.state.splits == reader.driver.state.splits and len(again.driver.state.splits) == pending - 2
    run_batches(again, start=start)
    assert not list(state.glob("splits-*.json")), "a fully committed segment is removed"


@pytest.mark.parametrize("damage", ["torn", "missing"])
def test_damaged_split_segment_is_refused(damage, unzip_fixture, tmp_path):
    from hudi_streaming.errors import StateError
    table = _copy(unzip_fixture, V9, tmp_path)
    state = tmp_path / "state"
    reader = make_reader(str(table), str(state), maxSplitsPerTrigger="1")
    reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
    segment = sorted(state.glob("splits-*.json"))[0]
    if damage == "torn":
        segment.write_bytes(segment.read_bytes()[:-10])
    else:
        segment.unlink()
    with pytest.raises(StateError, match=damage):
        _ = make_reader(str(table), str(state)).driver


def test_cleaned_files_fail_or_fall_back_to_a_snapshot(unzip_fixture, tmp_path):
    from hudi_streaming.errors import DataLossError
    table, reveal, reader, _ = _following(unzip_fixture, V9, tmp_path, state="s1")
    second = reveal.reveal_next()
    written = hoodie.HudiTable(str(table)).timeline.commit_metadata(second).written_paths()
    for p in written:
        (table / p).unlink()  # the cleaner removed what the next instant wrote before the stream read it
    # without a clean instant, which would also have told the metadata table: the store is the only truth left
    shutil.rmtree(table / ".hoodie" / "metadata")
    with pytest.raises(DataLossError, match=second):
        resume(reader)
    lenient = make_reader(str(table), str(tmp_path / "s2"), failOnDataLoss="false", emitDeletes="true")
    run_batches(lenient)
    assert reveal.reveal_next()
    rows = _rows(resume(lenient))
    assert rows, "after the loss the stream continues from a snapshot"


def test_unknown_option_lists_valid_ones(tmp_path):
    from hudi_streaming.errors import OptionError
    from hudi_streaming.streaming.options import parse_options
    with pytest.raises(OptionError, match="maxRowsPerTrigger"):
        parse_options({"path": str(tmp_path), "maxRowsPerTriger": "1"})


def test_skip_compaction_off_plans_compaction_without_duplicating_rows(unzip_fixture, tmp_path):
    table, rows = _followed_to_the_end(unzip_fixture, V9, tmp_path, skipCompaction="false", skipClustering="false",
                                       ignoreDeletes="true")
    # compaction and clustering keep commit times: reading them adds no new versions
    versions = [(r["_hoodie_record_key"], r["_hoodie_commit_time"]) for r in rows]
    assert len(versions) == len(set(versions))
    assert all(_plain(x) is not None for x in versions)


def test_added_column_stops_the_stream_unless_allowed(unzip_fixture, tmp_path):
    from hudi_streaming.errors import SchemaChangeError
    table = _copy(unzip_fixture, "mor_avro__table_evo_add_col", tmp_path)
    reveal = TimelineReveal(table, tmp_path / "hidden")
    reveal.reveal_next()
    reveal.reveal_next()  # the first two instants have columns key, ts, val
    strict = make_reader(str(table), str(tmp_path / "s1"))
    lenient = make_reader(str(table), str(tmp_path / "s2"), allowSchemaChanges="true")
    projected = make_reader(str(table), str(tmp_path / "s3"), columns="val")  # reads none of what is added
    run_batches(strict)
    run_batches(lenient)
    run_batches(projected)
    adding = reveal.reveal_next()  # ALTER TABLE ... ADD COLUMNS extra
    writing = reveal.reveal_next()  # an update written with the new schema
    with pytest.raises(SchemaChangeError, match=f"instant {adding}.*column extra .* was added"):
        resume(strict)
    rows = _rows(resume(lenient))
    assert rows and all("extra" not in r for r in rows)
    assert {r["_hoodie_commit_time"] for r in rows} == {writing}
    narrow = _rows(resume(projected))  # before: stopped with "column extra was added" (and ts, key: not read)
    assert {r["_hoodie_commit_time"] for r in narrow} == {writing} and all("extra" not in r for r in narrow)
    assert [r["val"] for r in narrow] == [r["val"] for r in rows]


def test_incompatible_type_change_is_refused_even_when_allowed():
    import pyarrow as pa

    from hudi_streaming.errors import SchemaChangeError
    from hudi_streaming.monitor.schema_check import check_instant_schema
    reference = pa.schema([("id", pa.string()), ("n", pa.int64()), ("x", pa.int32())])
    schema = ('{"type":"record","name":"r","fields":[{"name":"id","type":"string"},'
              '{"name":"n","type":"string"},{"name":"x","type":"long"}]}')
    with pytest.raises(SchemaChangeError, match="column n: int64 -> string"):
        check_instant_schema(reference, schema, "20260101000000000", "t", allow_compatible=True)
    widened = schema.replace('"name":"n","type":"string"', '"name":"n","type":"long"')
    assert check_instant_schema(reference, widened, "t1", "t", allow_compatible=True) == ["column x: int32 -> int64"]


def test_metrics_report_lag_and_backlog(unzip_fixture, tmp_path):
    _, reveal, reader, _ = _following(unzip_fixture, V9, tmp_path)
    assert reader.reportLatestOffset()["lagInstants"] == 0
    for _ in range(3):
        reveal.reveal_next()
    reader.driver.table.reload()
    m = reader.reportLatestOffset()
    assert m["lagInstants"] == 3 and m["lagSeconds"] > 0 and m["latestInstant"] == reveal.instants[3]


def test_metrics_describe_the_admitted_batch(unzip_fixture, tmp_path):
    table = _copy(unzip_fixture, V9, tmp_path)
    # a snapshot's splits are planned without row bounds, and no row limit asks for them: none is read
    reader = make_reader(str(table), str(tmp_path / "state"), maxSplitsPerTrigger="2")
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    batch = reader.reportLatestOffset()["lastBatch"]
    parts = reader.partitions(start, end)
    assert batch["splits"] == sum(len(p.ranges) for p in parts) == 2
    assert batch["bytesEstimate"] == sum(r.split.est_bytes for p in parts for r in p.ranges) > 0
    assert (batch["rowsEstimate"], batch["unboundedSplits"]) == (0, 2)
    # a row limit reads them (from the commits' write stats) before it admits the batch
    bounded = make_reader(str(table), str(tmp_path / "state2"), maxSplitsPerTrigger="2", maxRowsPerTrigger="10000")
    start = bounded.initialOffset()
    end = bounded.latestOffset(start, bounded.getDefaultReadLimit())
    batch = bounded.reportLatestOffset()["lastBatch"]
    parts = bounded.partitions(start, end)
    assert batch["unboundedSplits"] == 0 and batch["splits"] == 2
    assert batch["rowsEstimate"] == sum(r.split.est_rows or 0 for p in parts for r in p.ranges) > 0


@pytest.mark.parametrize("name", [V9, V6, "mor_avro__table_uncommitted_log_v6"])
def test_executors_read_planned_splits_without_the_timeline(name, unzip_fixture, tmp_path, monkeypatch):
    """Splits name their exact files and the driver ships the read columns (and, on v6, which instants are
    committed): a task lists no timeline (on object stores a listing per task would cost more than reading a
    small split)."""
    from hudi_streaming.hoodie.timeline import Timeline
    table = _copy(unzip_fixture, name, tmp_path)
    reader = make_reader(str(table), str(tmp_path / "state"), emitDeletes="true")
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    parts = reader.partitions(start, end)
    expected = [b for p in parts for b in reader.read(p)]

    def no_timeline(*args, **kwargs):
        raise AssertionError("an executor loaded the timeline")

    monkeypatch.setattr(Timeline, "load", no_timeline)
    assert [b for p in parts for b in reader.read(p)] == expected


def test_commit_check_travels_and_answers_like_the_timeline(unzip_fixture):
    """What v6 tasks get instead of the timeline: completed writes yes, pending or unknown newer ones no,
    instants before the active timeline (archived) yes — and it survives pickling (Spark ships partitions)."""
    import pickle
    table = hoodie.HudiTable(str(unzip_fixture("mor_avro__table_uncommitted_log_v6").table))
    tl = table.timeline
    check = pickle.loads(pickle.dumps(tl.commit_check()))
    entries = tl.entries
    pending = [e.requested_time for e in entries if not e.is_completed]
    assert pending, "the fixture has an uncommitted write"
    for e in entries:
        assert check(e.requested_time) == (e.is_completed and e.is_write), e
    first = tl.completed_writes()[0].requested_time
    assert check(str(int(first) - 1).zfill(len(first)))  # older than the active timeline: archived
    assert not check("99991231235959999")
