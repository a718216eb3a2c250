"""Exactly once when the state is not what Spark's checkpoint expects, is shared, or instants arrive late.

Driven like Spark drives the source (no JVM): each scenario is one an audit reproduced as silent loss or
duplication before the source checked offsets against its state, created state files exclusively and tracked the
instants it accounted for.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import fsspec
import pytest
from support.reveal import TimelineReveal
from support.stream_sim import as_read, make_reader, resume, run_batches

from hudi_streaming import read_table
from hudi_streaming.errors import DataLossError, DeleteError, StateError

V9 = "mor_avro__v9_txns_simple_meta"


@pytest.fixture
def table(unzip_fixture, tmp_path) -> Path:
    dest = tmp_path / "table"
    shutil.copytree(unzip_fixture(V9).table, dest)
    return dest


def _half_way(table: Path, state: str) -> dict:
    """A stream that has delivered and committed some batches: Spark's checkpoint then holds the returned offset."""
    reader = make_reader(str(table), state, maxRowsPerTrigger="4")
    run_batches(reader, max_batches=2)
    return reader._last_offset


@pytest.mark.parametrize("damage, message", [
    (lambda state: shutil.rmtree(state), "holds no state, but Spark's checkpoint is past the start"),
    (lambda state: shutil.move(state, str(state) + "-moved"), "holds no state"),
])
def test_an_empty_state_folder_behind_a_checkpoint_is_refused(damage, message, table, tmp_path):
    state = tmp_path / "state"
    offset = _half_way(table, str(state))
    damage(state)
    reader = make_reader(str(table), str(state), maxRowsPerTrigger="4")
    with pytest.raises(StateError, match=message) as err:
        reader.latestOffset(offset, reader.getDefaultReadLimit())
    assert str(state) in str(err.value) and "new checkpointLocation" in str(err.value)
    with pytest.raises(StateError, match=message):
        reader.partitions(offset, offset)
    assert not state.exists()  # refused before anything was planned or written


def test_another_streams_state_is_refused(table, tmp_path):
    """Spark's checkpoint of stream A pointed at the state folder of stream B over the same table."""
    offset_a = _half_way(table, str(tmp_path / "a"))
    _half_way(table, str(tmp_path / "b"))
    reader = make_reader(str(table), str(tmp_path / "b"), maxRowsPerTrigger="4")
    with pytest.raises(StateError, match="holds stream .*, but Spark's checkpoint is a position in stream"):
        reader.latestOffset(offset_a, reader.getDefaultReadLimit())


def test_a_state_newer_or_older_than_the_checkpoint_is_refused(table, tmp_path):
    state = str(tmp_path / "state")
    offset = _half_way(table, state)
    reader = make_reader(str(table), state, maxRowsPerTrigger="4")
    with pytest.raises(StateError, match="the state is newer than the checkpoint"):  # a new checkpoint, old state
        reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
    ahead = dict(offset, seq=offset["seq"] + 50)  # a checkpoint restored with a state folder from an older copy
    with pytest.raises(StateError, match="the state is older than the checkpoint"):
        reader.latestOffset(ahead, reader.getDefaultReadLimit())


def test_a_legacy_offset_without_stream_identity_still_resumes(table, tmp_path):
    """Checkpoints written before offsets named their stream resume by position (the identity is checked only
    where Spark's offset carries one)."""
    state = str(tmp_path / "state")
    offset = _half_way(table, state)
    legacy = {k: v for k, v in offset.items() if k != "sid"}
    reader = make_reader(str(table), state, maxRowsPerTrigger="4")
    rest = run_batches(reader, start=legacy)
    keys = [k for b in rest if b is not None for k in b.column("_hoodie_record_key").to_pylist()]
    assert keys and len(keys) == len(set(keys))


@pytest.mark.parametrize("location", ["local", "memory"])
def test_two_live_queries_on_one_state_location_cannot_both_write(location, table, tmp_path):
    state = str(tmp_path / "state") if location == "local" else f"memory://shared-state-{tmp_path.name}"
    first = make_reader(str(table), state, maxRowsPerTrigger="4")
    second = make_reader(str(table), state, maxRowsPerTrigger="4")
    _ = first.driver, second.driver  # both queries have loaded the (empty) state
    start = first.initialOffset()
    end = first.latestOffset(start, first.getDefaultReadLimit())  # the first writes state version 0
    with pytest.raises(StateError, match="written by another query .* two live queries share this stateLocation"):
        second.latestOffset(start, second.getDefaultReadLimit())
    # the first query's state is intact: a restart of it resumes where it was
    again = make_reader(str(table), state, maxRowsPerTrigger="4")
    assert as_read(again.partitions(start, end)) == as_read(first.partitions(start, end))
    if location == "memory":
        fsspec.filesystem("memory").rm(state, recursive=True)


def _late_stream(table: Path, tmp_path: Path, **options):
    """A stream following the table; the second instant completes *after* the third (skipped, then revealed)."""
    reveal = TimelineReveal(table, tmp_path / "hidden")
    reveal.reveal_next()
    reader = make_reader(str(table), str(tmp_path / "state"), ignoreDeletes="true", **options)
    batches = run_batches(reader)
    late = reveal.instants[1]
    reveal.reveal_next(skip=1)
    batches += resume(reader)
    assert reveal.reveal_next() == late
    return reader, late, reveal, batches


def test_a_late_instant_is_delivered_and_counted(table, tmp_path):
    reader, late, reveal, batches = _late_stream(table, tmp_path)
    batches += resume(reader)
    commits = [t for b in batches if b is not None for t in b.column("_hoodie_commit_time").to_pylist()]
    assert late in commits  # before the fix: never delivered, while snapshots had its rows
    metrics = reader.reportLatestOffset()
    assert metrics["lateInstants"] == 1 and metrics["lagInstants"] == 0
    while reveal.reveal_next():  # the rest of the history: nothing delivered twice
        batches += resume(reader)
    versions = [(k, t) for b in batches if b is not None for k, t in
                zip(b.column("_hoodie_record_key").to_pylist(), b.column("_hoodie_commit_time").to_pylist())]
    assert len(versions) == len(set(versions))
    table_keys = set(read_table(str(table)).column("_hoodie_record_key").to_pylist())
    assert table_keys <= {k for k, _ in versions}


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_a_late_instant_behind_the_window_stops_the_stream_unless_allowed(fail_on_data_loss, table, tmp_path, caplog):
    reader, late, _, _ = _late_stream(table, tmp_path, lateInstantWindowSeconds="0",
                                      failOnDataLoss=str(fail_on_data_loss).lower())
    if fail_on_data_loss:
        with pytest.raises(DataLossError, match=f"instant {late} completed at .* later than lateInstantWindowSeconds"):
            resume(reader)
        return
    batches = resume(reader)
    assert late in [t for b in batches if b is not None for t in b.column("_hoodie_commit_time").to_pylist()]
    assert f"instant {late} completed at" in caplog.text and "delivering it (failOnDataLoss=false)" in caplog.text


@pytest.mark.parametrize("choice", [None, "ignoreDeletes", "emitDeletes"])
def test_a_delete_stops_a_stream_that_has_not_chosen_what_deletes_do(choice, table, tmp_path):
    """Deletes dropped by default let an upsert sink drift from the table without a word; as in Delta, the stream
    stops on a delete unless the user chose to deliver (emitDeletes) or to drop (ignoreDeletes) them."""
    reveal = TimelineReveal(table, tmp_path / "hidden")
    reveal.reveal_next()
    reader = make_reader(str(table), str(tmp_path / "state"), **({choice: "true"} if choice else {}))
    batches = run_batches(reader)
    if choice is None:
        _restarted_with_emit_deletes_delivers_each_change_once(reveal, reader, batches, table, tmp_path)
        return
    while reveal.reveal_next():
        batches += resume(reader)
    kinds = {k for b in batches if b is not None for k in b.column("_change_type").to_pylist()}
    assert ("delete" in kinds) == (choice == "emitDeletes")


def _restarted_with_emit_deletes_delivers_each_change_once(reveal, reader, batches, table, tmp_path) -> None:
    """The remedy the error names: the stream restarted from its checkpoint with emitDeletes=true — a change of the
    row rules its state accepts — delivers what a stream with emitDeletes=true from the start delivers, once."""
    peer = make_reader(str(table), str(tmp_path / "peer"), emitDeletes="true")
    expected = run_batches(peer)
    with pytest.raises(DeleteError, match="instant \\d{17} deleted 1 row.* neither delivers deletes \\(option "
                                          "emitDeletes=true.* nor ignores them \\(option ignoreDeletes=true\\)"):
        while reveal.reveal_next():
            resume(peer, into=expected)
            resume(reader, into=batches)
    resume(peer, into=expected)  # the instant the stream stopped at
    restarted = make_reader(str(table), str(tmp_path / "state"), emitDeletes="true")
    run_batches(restarted, start=reader._last_offset, into=batches)
    while reveal.reveal_next():
        resume(peer, into=expected)
        resume(restarted, into=batches)

    def changes(tables: list) -> list[tuple]:
        columns = ("_hoodie_record_key", "_hoodie_commit_time", "_change_type")
        return sorted(row for t in tables if t is not None
                      for row in zip(*(t.column(c).to_pylist() for c in columns)))
    got, want = changes(batches), changes(expected)
    assert "delete" in {kind for _, _, kind in want}
    assert got == want


@pytest.mark.parametrize("option, value", [("readMode", "changelog"), ("ignoreDeletes", "true"),
                                           ("deduplicationMode", "dropCarryovers")])
def test_a_restart_that_would_count_records_differently_is_refused(option, value, table, tmp_path):
    """Inside a split, the checkpoint's record offset counts the rows of the query's read mode, deletes and
    carry-over options: a restart with another value is refused, naming it, and the same query resumes."""
    state, options = str(tmp_path / "state"), {"maxRowsPerTrigger": "3", "emitDeletes": "true"}
    reader = make_reader(str(table), state, **options)
    run_batches(reader, max_batches=1)
    offset = reader._last_offset
    assert offset["rec"] == 3, offset
    with pytest.raises(StateError, match=f"this stream ran with .*, the query now has {option}={value}"):
        changed = {**options, option: value} | ({"emitDeletes": "false"} if option == "ignoreDeletes" else {})
        reader = make_reader(str(table), state, **changed)
        reader.latestOffset(offset, reader.getDefaultReadLimit())
    reader = make_reader(str(table), state, **options)
    assert run_batches(reader, start=offset)
