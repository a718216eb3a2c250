"""Timeline rewinds (issue 26): a rollback of a completed write, or a restore, that undoes instants the stream
already delivered stops the stream in one line; one that undoes only what the stream has not reached does not.

The project's writer rolls back a completed write here (its rollback deletes the files the write made and its
timeline entry, writing rollback metadata as Hudi does); Hudi-written restores are in the oracle matrix.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

from hudi_streaming.errors import DataLossError
from hudi_streaming.streaming.admission import BatchLimit
from hudi_streaming.streaming.driver import StreamDriver
from hudi_streaming.streaming.offsets import make_offset
from hudi_streaming.streaming.options import parse_options
from hudi_streaming.streaming.schema import source_schema
from hudi_streaming.writer import create_table, services

SCHEMA = pa.schema([("key", pa.string()), ("ts", pa.int64())])
WRITE_ACTION = {"MERGE_ON_READ": "deltacommit", "COPY_ON_WRITE": "commit"}


def _rows(keys: range, ts: int) -> pa.Table:
    return pa.table({"key": [f"k{k}" for k in keys], "ts": [ts] * len(keys)}, schema=SCHEMA)


def _stream(tmp_path, **options: str) -> StreamDriver:
    opts = parse_options({"path": str(tmp_path / "table"), "stateLocation": str(tmp_path / "state"), **options})
    return StreamDriver(opts, source_schema(opts))


def _deliver_all(driver: StreamDriver, start: dict) -> dict:
    end = driver.latest_offset(start, BatchLimit())
    driver.commit(end)
    return end


@pytest.mark.parametrize("version,table_type", [(9, "MERGE_ON_READ"), (9, "COPY_ON_WRITE"), (6, "COPY_ON_WRITE")])
def test_a_rollback_of_a_delivered_write_stops_the_stream(tmp_path, version, table_type):
    writer = create_table(str(tmp_path / "table"), "t", SCHEMA, record_key="key", ordering_field="ts",
                          table_type=table_type, version=version)
    writer.upsert(_rows(range(10), 1))
    undone = writer.upsert(_rows(range(5, 15), 2))
    driver = _stream(tmp_path)
    end = _deliver_all(driver, make_offset(0, 0))
    rollback = services.rollback(writer, undone, WRITE_ACTION[table_type])
    with pytest.raises(DataLossError) as err:
        driver.latest_offset(end, BatchLimit())
    message = str(err.value)
    assert f"rollback {rollback} undid instant(s) {undone} that this stream already delivered" in message
    assert "\n" not in message
    # a restart from the state refuses the same way: the state still says the instant was delivered
    with pytest.raises(DataLossError, match=f"rollback {rollback} undid instant"):
        _stream(tmp_path).latest_offset(end, BatchLimit())


@pytest.mark.parametrize("version", [9, 6])
def test_an_available_now_run_after_a_rollback_stops_too(tmp_path, version):
    """An AvailableNow run's target is the latest write when it starts, which a rollback put behind the stream's
    cursor: the run has nothing to plan, and must still not pass the rollback in silence."""
    writer = create_table(str(tmp_path / "table"), "t", SCHEMA, record_key="key", ordering_field="ts",
                          table_type="COPY_ON_WRITE", version=version)
    writer.upsert(_rows(range(10), 1))
    undone = writer.upsert(_rows(range(5, 15), 2))
    end = _deliver_all(_stream(tmp_path), make_offset(0, 0))
    rollback = services.rollback(writer, undone, "commit")
    again = _stream(tmp_path)
    again.pin_target()
    with pytest.raises(DataLossError, match=f"rollback {rollback} undid instant"):
        again.latest_offset(end, BatchLimit())


@pytest.mark.parametrize("version", [9, 6])
def test_a_rollback_of_a_write_the_stream_has_not_reached_is_not_an_error(tmp_path, version):
    writer = create_table(str(tmp_path / "table"), "t", SCHEMA, record_key="key", ordering_field="ts",
                          table_type="COPY_ON_WRITE", version=version)
    writer.upsert(_rows(range(10), 1))
    driver = _stream(tmp_path)
    end = _deliver_all(driver, make_offset(0, 0))
    undone = writer.upsert(_rows(range(5, 15), 2))
    services.rollback(writer, undone, "commit")
    after = writer.upsert(_rows(range(20, 25), 3))
    end = _deliver_all(driver, end)
    assert driver.state.cursor is not None and driver.state.cursor.requested == after


def test_failondataloss_false_continues_from_the_restored_table(tmp_path):
    writer = create_table(str(tmp_path / "table"), "t", SCHEMA, record_key="key", ordering_field="ts",
                          table_type="COPY_ON_WRITE", version=9)
    kept = writer.upsert(_rows(range(10), 1))
    undone = writer.upsert(_rows(range(5, 15), 2))
    driver = _stream(tmp_path, failOnDataLoss="false")
    end = _deliver_all(driver, make_offset(0, 0))
    services.rollback(writer, undone, "commit")
    after = driver.latest_offset(end, BatchLimit())
    # the recovery replans the table as it is now: one snapshot round of the kept write's files alone
    replanned = [p.split for p in driver.state.splits if p.seq >= end["seq"]]
    assert replanned and {s.max_instant for s in replanned} == {kept}
    assert driver.state.cursor is not None and driver.state.cursor.requested == kept
    driver.commit(after)
    assert driver.latest_offset(after, BatchLimit()) == after  # and the rewind is not reported again
