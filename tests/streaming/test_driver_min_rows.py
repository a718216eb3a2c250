"""Fewer tiny batches: ``minRowsPerTrigger`` holds a batch back until that many rows are pending, and
``maxTriggerDelay`` bounds the wait (Spark's Kafka source: ``minOffsetsPerTrigger``, ``maxTriggerDelay``).

A writer commits 10 new rows every 0.5 s while the source is asked for a batch every 0.1 s, as a processing-time
trigger of 100 ms asks. Measured: the number of batches, their rows, and each row's delay from its commit to its
batch.
"""
from __future__ import annotations

import datetime as dt
import statistics
import threading
import time

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from support.stream_sim import make_reader

from hudi_streaming.writer import create_table

pytestmark = pytest.mark.slow  # waits for trigger delays: 28 s and 10 s

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("amount", pa.int64())])
COMMITS, EVERY = 16, 0.5


def _run(tmp_path, name: str, **options: str) -> tuple[list[int], list[list[float]], float]:
    """(rows per batch, per batch the seconds from each row's commit to its batch, the seconds the writer took)
    over a writer committing every 0.5 s."""
    writer = create_table(str(tmp_path / name), name, SCHEMA, record_key="id", ordering_field="ts", version=9)
    writer.upsert(pa.table({"id": ["seed"], "ts": [0], "amount": [0]}, schema=SCHEMA))
    reader = make_reader(str(tmp_path / name), str(tmp_path / f"{name}-state"), startingInstant="latest",
                         pollIntervalSeconds="0.05", **options)
    start = reader.initialOffset()
    reader.latestOffset(start, ReadAllAvailable())  # the stream starts (at latest) before the writer

    def write():
        for c in range(COMMITS):
            time.sleep(EVERY)
            writer.upsert(pa.table({"id": [f"c{c}-{i}" for i in range(10)], "ts": [c] * 10, "amount": [i for i in
                                                                                                   range(10)]},
                                   schema=SCHEMA))
    thread = threading.Thread(target=write)
    began = time.monotonic()
    thread.start()
    sizes, delays = [], []
    deadline = time.monotonic() + COMMITS * EVERY + 15
    while time.monotonic() < deadline and sum(sizes) < COMMITS * 10:
        time.sleep(0.1)
        end = reader.latestOffset(start, ReadAllAvailable())
        if end == start:
            continue
        rows = pa.Table.from_batches([b for p in reader.partitions(start, end) for b in reader.read(p)])
        now = dt.datetime.now(dt.timezone.utc)
        reader.commit(end)
        start = end
        sizes.append(rows.num_rows)
        delays.append([(now - t).total_seconds() for t in rows["_commit_timestamp"].to_pylist()])
    thread.join()
    return sizes, delays, time.monotonic() - began


def test_min_rows_per_trigger_makes_fewer_batches_within_the_delay(tmp_path):
    plain, plain_delays, _ = _run(tmp_path, "plain")
    held, held_delays, _ = _run(tmp_path, "held", minRowsPerTrigger="50", maxTriggerDelay="10s")
    report = {name: (len(sizes), sum(sizes), statistics.median(sum(d, [])), max(sum(d, [])))
              for name, sizes, d in (("plain", plain, plain_delays), ("held", held, held_delays))}
    print("batches, rows, delay p50 s, delay max s:", report)
    assert sum(plain) == sum(held) == COMMITS * 10
    # about one batch per commit without the option (a loaded machine may bunch a few commits into one)
    assert len(plain) >= COMMITS // 2
    assert all(n >= 50 for n in held[:-1])  # every batch but the last waited for 50 rows ...
    assert len(held) <= COMMITS * 10 // 50 + 1
    # ... and went as soon as they were there: its newest row (the commit that made the 50) had waited little,
    # however long the writer took to write them
    assert max(min(d) for d in held_delays[:-1]) < 1.5
    assert max(held_delays[-1]) < 10 + 1.5  # the rest waited for maxTriggerDelay at most


def test_max_trigger_delay_releases_a_small_batch(tmp_path):
    """Fewer rows than minRowsPerTrigger ever arrive: the delay releases them."""
    sizes, delays, writing = _run(tmp_path, "delayed", minRowsPerTrigger="100000", maxTriggerDelay="3s")
    assert sum(sizes) == COMMITS * 10
    assert max(sum(delays, [])) < 3 + 1.5  # no row waited much longer than the delay
    # and a batch went about every 3 s while the writer wrote (0.5 s apart, and each write's own time)
    assert len(sizes) <= writing / 3 + 2
