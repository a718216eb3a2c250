"""End to end: a real local Spark streaming query over a table that changes, SIGKILLed again and again.

A fixture table written by Apache Hudi is replayed instant by instant (its timeline revealed while the
stream runs), the driver process group — JVM included — is killed with SIGKILL at random points and restarted
from its checkpoint, and at the end what the ``foreachBatch`` sink received must be exactly the table's
changes: no version twice, and applied in order they rebuild the table's snapshot.
"""
from __future__ import annotations

import random
import shutil
import time
from pathlib import Path

import pytest
from harness import Driver, live_writer
from support.reveal import TimelineReveal
from support.verify import apply_upserts, change_feed, delivered, duplicates, feed, state_differences

from hudi_streaming import hoodie, read_table

pytestmark = pytest.mark.spark


def run_with_kills(table: Path, work: Path, options: dict, kills: int, seed: int, advance, finish) -> None:
    """Kill and restart the stream ``kills`` times while ``advance()`` changes the table, then drain it."""
    rng = random.Random(seed)
    for i in range(kills):
        driver = Driver(table, work, options)
        # kill at a random point: during start-up, planning, a batch, or a little after one completed
        after_batches = rng.choice([0, 1, 1, 2])
        delay, cap = rng.uniform(0.0, 2.0), time.monotonic() + rng.uniform(5, 14)
        change_at = time.monotonic() + rng.uniform(0, 5)  # before the earliest kill: every run sees a change
        while time.monotonic() < cap and driver.proc.poll() is None:
            if change_at and time.monotonic() > change_at:
                advance()  # the table changes while the stream runs
                change_at = 0
            if after_batches and driver.batches >= after_batches:
                time.sleep(delay)
                break
            time.sleep(0.2)
        driver.kill()
        assert not driver.errors(), f"run {i}: {driver.errors()[:5]}"
    finish()
    final = Driver(table, work, options, until_caught_up=True)
    assert final.wait(600) == 0, (final.errors() or final.lines[-20:])[:10]


def check_delivery(table: Path, work: Path) -> None:
    rows = delivered(work / "out")
    assert rows, "nothing was delivered"
    assert duplicates(rows) == []
    assert state_differences(apply_upserts(rows), read_table(str(table))) == []


@pytest.mark.parametrize("name,kills,options", [
    ("mor_avro__v9_txns_simple_meta", 12, {"emitDeletes": "true", "maxRowsPerTrigger": "3"}),
    ("mor_avro__v6_trips_8i3d", 2, {"emitDeletes": "true", "maxSplitsPerTrigger": "1"}),
])
def test_replayed_fixture_table_killed_stream_delivers_each_change_once(name, kills, options, unzip_fixture,
                                                                         tmp_path):
    """A table written by Apache Hudi (compaction, clustering, insert overwrite, deletes), replayed."""
    table, work = tmp_path / "table", tmp_path / "work"
    shutil.copytree(unzip_fixture(name).table, table)
    reveal = TimelineReveal(table, tmp_path / "hidden")
    reveal.reveal_next()
    run_with_kills(table, work, options, kills, len(name), reveal.reveal_next, reveal.reveal_all)
    check_delivery(table, work)


def test_live_writer_with_table_services_killed_stream_delivers_each_change_once(tmp_path):
    """The project's writer commits upserts and deletes, compacts, cleans and archives while the stream runs."""
    table, work = tmp_path / "table", tmp_path / "work"
    _, advance = live_writer(table, late_share=0.1)
    run_with_kills(table, work, {"emitDeletes": "true", "maxRowsPerTrigger": "60"}, 6, 3, advance, advance)
    assert hoodie.HudiTable(str(table)).timeline.archived.instants, "the writer archived nothing"
    check_delivery(table, work)


def test_changelog_killed_stream_delivers_each_committed_change_once(tmp_path):
    """readMode=changelog under kills: exactly the change feed of the writer's steps, pre-images included.

    The expected feed comes from the steps the load generator wrote (keys, ``ts`` versions, commit instants),
    not from any reader. Batches are cut inside splits (``maxRowsPerTrigger``), so restarts resume mid-split.
    """
    table, work = tmp_path / "table", tmp_path / "work"
    # the cleaner keeps enough slices for a stream that starts late (it may begin in the archived timeline)
    steps, advance = live_writer(table, late_share=0.0, retain_commits=12)
    # batches of up to 100 rows still end inside splits, and the final run drains the changes in 7 batches (as
    # measured; about 26 with 25 rows)
    options = {"readMode": "changelog", "emitDeletes": "true", "maxRowsPerTrigger": "100",
               "startingInstant": steps[0].instant}
    run_with_kills(table, work, options, 4, 5, advance, advance)
    expected = change_feed(steps)
    got = feed(delivered(work / "out"))
    assert len(got) == len(set(got)), "a change was delivered twice"
    assert sorted(got) == sorted(expected)
