"""Exactly once through a crash at every named fault point, and what a sink must do about Spark's replays.

Random kills (``test_streaming_e2e``) almost never land in the windows that matter — a state write lasts
milliseconds — so here the job dies exactly there (``hudi_streaming._faults``): while planning before the
state is saved, before and after a state file is created, in an executor's ``read()`` mid-split (the Python
worker dies, Spark retries the task) and after the sink wrote but before Spark recorded the batch. A real
Spark job in its own process streams a changelog of a table the project's writer changes (upserts, deletes,
compaction, clean, archive), is restarted from its checkpoint after each kill, and at the end every sink's
rows are compared with the change feed the writer's own record of its steps makes.

The job writes every batch into three sinks (``tests/e2e/stream_driver.py``): one overwriting a folder per
batch id, one appending, and one appending but skipping batch ids its output already holds. The kill after
the sinks' write makes Spark replay that batch: the overwriting and guarded sinks hold each change once, the
plain append holds exactly the replayed batch twice.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from harness import DRIVER, Driver, live_writer
from support.verify import (
    appended,
    apply_upserts,
    change_feed,
    delivered,
    feed,
    feed_differences,
    state_differences,
)

import hudi_streaming
from hudi_streaming import read_table
from hudi_streaming._faults import DIR_ENV, FAULT_ENV

#: one run per entry, each until its points fired; consumer.read does not end a run (Spark retries the task)
RUNS = ["driver.poll", "state.before_write", "state.after_write@2", "consumer.read,sink.after_write"]
SINK_ARGS = ["--sinks", "overwrite,append,guarded", "--task-retries", "4"]
RUN_TIMEOUT = 240


def run_until_fired(driver: Driver, faults: Path, points: list[str], advance) -> None:
    """Change the table after every batch until each of ``points`` fired, then wait for the job to die of it."""
    deadline, seen = time.monotonic() + RUN_TIMEOUT, -1
    try:
        while not all((faults / p).exists() for p in points) or driver.proc.poll() is None:
            assert time.monotonic() < deadline, f"{points}: not fired in {RUN_TIMEOUT} s: {driver.lines[-15:]}"
            assert driver.proc.poll() is None or all((faults / p).exists() for p in points), \
                f"the job ended before {points} fired: {driver.lines[-15:]}"
            if driver.batches > seen:
                seen = driver.batches
                advance()
            time.sleep(0.2)
    finally:
        driver.kill()  # the JVM and workers of a job whose Python process died


@pytest.fixture(scope="module")
def faulted(tmp_path_factory):
    """Run the job through every fault point and drain it; returns what the test functions check."""
    root = tmp_path_factory.mktemp("faults")
    table, work = root / "table", root / "work"
    steps, advance = live_writer(table, late_share=0.0, retain_commits=12)
    # up to 100 rows a batch, still cut inside splits (most batches hold exactly 100): the last run drains the
    # writer's 740 changes in 8 batches of three sink writes each (31 batches with 25 rows, the suite's slowest part)
    options = {"readMode": "changelog", "emitDeletes": "true", "maxRowsPerTrigger": "100", "miniBatchSize": "4",
               "startingInstant": steps[0].instant}
    fired: dict[str, Path] = {}
    replayed: list[dict] = []
    for i, spec in enumerate(RUNS):
        faults = root / f"faults-{i}"
        faults.mkdir()
        points = [p.partition("@")[0] for p in spec.split(",")]
        driver = Driver(table, work, options, args=SINK_ARGS, env={FAULT_ENV: spec, DIR_ENV: str(faults)})
        run_until_fired(driver, faults, points, advance)
        fired.update({p: faults / p for p in points})
        if "sink.after_write" in points:  # the batch the sinks wrote when the job died: Spark replays it
            rows = appended(work / "append")
            replayed = [r for r in rows if r["_batch"] == rows[-1]["_batch"]]
    advance()
    final = Driver(table, work, options, until_caught_up=True, args=SINK_ARGS)
    assert final.wait(600) == 0, (final.errors() or final.lines[-20:])[:10]
    return {"table": table, "work": work, "expected": change_feed(steps), "fired": fired, "replayed": replayed}


def points_in_code() -> set[str]:
    """Every ``fault_point("<name>")`` call in the package and the e2e job: a new point must be visited here too."""
    sources = [*Path(hudi_streaming.__file__).parent.rglob("*.py"), DRIVER]
    return {m for f in sources for m in re.findall(r'fault_point\("([^"]+)"\)', f.read_text())}


def test_every_fault_point_fires_and_each_change_is_delivered_once(faulted):
    """Every point killed the job (its marker exists), and the idempotent sinks hold exactly the writer's feed."""
    assert set(faulted["fired"]) == points_in_code()
    assert [p for p, marker in faulted["fired"].items() if not marker.exists()] == []
    work, expected = faulted["work"], faulted["expected"]
    rows = delivered(work / "out")
    assert feed_differences(expected, rows) == {"duplicated": [], "lost": [], "unexpected": []}
    assert state_differences(apply_upserts(rows), read_table(str(faulted["table"]))) == []
    assert feed_differences(expected, appended(work / "guarded")) == {"duplicated": [], "lost": [],
                                                                      "unexpected": []}


def test_appending_sink_without_a_batch_id_guard_holds_the_replayed_batch_twice(faulted):
    """The plain append received the batch killed after its write again: exactly its changes are doubled."""
    replayed = feed(faulted["replayed"])
    assert replayed, "the batch the job died after was empty: the replay shows nothing"
    got = Counter(feed(appended(faulted["work"] / "append")))
    assert sorted(k for k, n in got.items() if n == 2) == sorted(replayed)
    assert feed_differences(faulted["expected"], appended(faulted["work"] / "append")) == {
        "duplicated": sorted(replayed), "lost": [], "unexpected": []}


def test_a_fault_point_fires_once_per_marker_folder_at_its_nth_visit(tmp_path):
    """The 2nd visit kills the process (SIGKILL) and leaves the marker; a rerun passes the point alive."""
    code = ("from hudi_streaming._faults import fault_point\n"
            "for i in (1, 2, 3):\n    print('visit', i, flush=True)\n    fault_point('here')\n")
    env = dict(os.environ, **{FAULT_ENV: "elsewhere,here@2", DIR_ENV: str(tmp_path)})

    def run() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)

    first = run()
    assert (first.returncode, first.stdout.split("\n")) == (-9, ["visit 1", "visit 2", ""])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]
    again = run()
    assert (again.returncode, again.stdout.split()) == (0, ["visit", "1", "visit", "2", "visit", "3"])
