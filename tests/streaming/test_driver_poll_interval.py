"""Option ``pollIntervalSeconds``: how often a stream that has caught up lists the timeline (no Spark).

Spark asks a caught-up source for its latest offset every ~10 ms; :class:`StreamDriver` answers from its state
and lists the timeline (``HudiTable.reload``) again only when the interval has passed or — on a local file
system — when the timeline folder changed. The clock the driver reads is replaced by a fake one here.
"""
from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from hudi_streaming.streaming import driver as driver_module
from hudi_streaming.streaming.admission import BatchLimit
from hudi_streaming.streaming.driver import StreamDriver
from hudi_streaming.streaming.offsets import make_offset
from hudi_streaming.streaming.options import parse_options
from hudi_streaming.streaming.schema import source_schema
from hudi_streaming.writer import create_table

SCHEMA = pa.schema([("key", pa.string()), ("ts", pa.int64())])


class Clock:
    """Stands in for the ``time`` module the driver reads: monotonic and wall time under the test's control."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.wall = time.time() + 3600.0  # long after any file time: the folder's times count as settled

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.wall


def _rows(keys: range, ts: int) -> pa.Table:
    return pa.table({"key": [f"k{k}" for k in keys], "ts": [ts] * len(keys)}, schema=SCHEMA)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(driver_module, "time", c)
    return c


def _caught_up(tmp_path, interval: str) -> tuple[StreamDriver, list[int], object, dict]:
    """A v9 MOR table with one commit, a driver that has planned it and polled once more (caught up), a
    counter of its timeline listings, the writer, and the offset the stream is at."""
    writer = create_table(str(tmp_path / "table"), "t", SCHEMA, record_key="key", ordering_field="ts")
    writer.upsert(_rows(range(3), 1))
    opts = parse_options({"path": str(tmp_path / "table"), "stateLocation": str(tmp_path / "state"),
                          "pollIntervalSeconds": interval})
    driver = StreamDriver(opts, source_schema(opts))
    end = driver.latest_offset(make_offset(0, 0), BatchLimit())
    assert end["seq"] > 0  # the commit, planned
    driver.commit(end)
    assert driver.latest_offset(end, BatchLimit()) == end  # polls again at once: nothing new, caught up
    listings = [0]
    reload = driver.table.reload

    def counted():
        listings[0] += 1
        return reload()

    driver.table.reload = counted  # type: ignore[method-assign]
    return driver, listings, writer, end


def test_a_caught_up_stream_lists_the_timeline_once_per_interval(clock, tmp_path):
    driver, listings, _, end = _caught_up(tmp_path, "2")
    for _ in range(50):  # Spark's idle triggers, 10 ms apart
        clock.now += 0.01
        assert driver.latest_offset(end, BatchLimit()) == end
    assert listings[0] == 0  # 0.5 s < 2 s
    clock.now += 1.5 - 0.001
    driver.latest_offset(end, BatchLimit())
    assert listings[0] == 0  # 1.999 s since the last listing
    clock.now += 0.002
    driver.latest_offset(end, BatchLimit())
    assert listings[0] == 1  # the interval has passed
    driver.latest_offset(end, BatchLimit())
    assert listings[0] == 1  # and it starts again from that listing


def test_interval_zero_lists_on_every_call(clock, tmp_path):
    driver, listings, _, end = _caught_up(tmp_path, "0")
    for n in range(1, 6):
        driver.latest_offset(end, BatchLimit())
        assert listings[0] == n


def test_a_new_instant_in_a_local_table_is_planned_at_the_next_call(clock, tmp_path):
    """The timeline folder's modification time moves with every instant file: listed at once, not after the
    interval."""
    driver, listings, writer, end = _caught_up(tmp_path, "60")
    driver.latest_offset(end, BatchLimit())
    assert listings[0] == 0
    instant = writer.upsert(_rows(range(2, 5), 2))
    _bump_folder_time(tmp_path)
    new_end = driver.latest_offset(end, BatchLimit())
    assert listings[0] == 1 and new_end["seq"] > end["seq"]
    assert driver.state.cursor is not None and driver.state.cursor.requested == instant


def test_a_folder_time_read_soon_after_it_was_set_is_checked_once_more(clock, tmp_path):
    """File times come from a coarse clock: a change in the same tick as the listing leaves the folder's time
    as it was, so a listing that saw a fresh folder time is followed by one more, a second later."""
    driver, listings, _, end = _caught_up(tmp_path, "60")
    folder = tmp_path / "table" / ".hoodie" / "timeline"
    clock.wall = os.stat(folder).st_mtime_ns / 1e9 + 0.2  # the next listing sees a time set 0.2 s before
    clock.now += 61
    driver.latest_offset(end, BatchLimit())
    assert listings[0] == 1
    clock.now += 0.5
    clock.wall += 0.5
    driver.latest_offset(end, BatchLimit())
    assert listings[0] == 1  # the folder time is not a second old yet
    clock.wall += 0.5
    driver.latest_offset(end, BatchLimit())
    assert listings[0] == 2  # now it is: one more listing
    clock.wall += 5
    for _ in range(3):
        driver.latest_offset(end, BatchLimit())
    assert listings[0] == 2  # and no more


def test_without_a_local_folder_only_the_interval_counts(clock, tmp_path):
    """Object stores have no folder times: a new instant waits for the interval."""
    driver, listings, writer, end = _caught_up(tmp_path, "60")
    driver._timeline_folder = ""  # what a table on an object store gets
    writer.upsert(_rows(range(2, 5), 2))
    _bump_folder_time(tmp_path)
    assert driver.latest_offset(end, BatchLimit()) == end and listings[0] == 0
    clock.now += 60
    assert driver.latest_offset(end, BatchLimit())["seq"] > end["seq"] and listings[0] == 1


def _bump_folder_time(tmp_path) -> None:
    """Make sure the timeline folder's time differs from the one the last listing saw (a fast test may write
    within the same clock tick as that listing, which the driver covers with a later check instead)."""
    folder = tmp_path / "table" / ".hoodie" / "timeline"
    st = os.stat(folder)
    os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns + 7_000_000_000))
