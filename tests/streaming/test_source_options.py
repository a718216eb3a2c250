"""The stream options not covered elsewhere, each against results derived without the stream reader.

maxInstantsPerTrigger, maxBytesPerTrigger, skipInsertOverwrite, mergeType and miniBatchSize; driven like Spark
drives a source (no JVM). Expected results come from the operations the writer was given, or from hudi-rs.
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from hudi import HudiReadOptions, HudiTableBuilder
from support.reveal import TimelineReveal
from support.stream_sim import make_reader, resume, run_batches
from support.verify import apply_upserts, state_differences

from hudi_streaming import hoodie, read_table
from hudi_streaming.errors import DataLossError
from hudi_streaming.writer import create_table

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string())])


def _rows(batches) -> list[dict]:
    return [dict(r, _batch=i) for i, b in enumerate(batches) if b is not None for r in b.to_pylist()]


def _new_table(table: str):
    """An empty MOR table with small file groups, so that steps touch several."""
    return create_table(table, "opts", SCHEMA, record_key="id", ordering_field="ts", table_type="MERGE_ON_READ",
                        version=9, max_file_records=4)


def _upserts(writer, steps: list[dict[str, str]], first: int = 0) -> list[str]:
    """One upsert per step ({key: value}, ts = ``first`` + step number); their instants."""
    return [writer.upsert(pa.table({"id": list(step), "ts": [first + n] * len(step), "v": list(step.values())},
                                   schema=SCHEMA)) for n, step in enumerate(steps)]


STEPS = [{f"k{i}": "a" for i in range(10)}, {"k1": "b", "k2": "b", "k10": "b"}, {"k1": "c", "k7": "c"},
         {"k3": "d", "k11": "d"}, {"k2": "e"}]


def test_max_instants_per_trigger_bounds_each_batch(tmp_path):
    table = str(tmp_path / "table")
    writer = _new_table(table)
    reader = make_reader(table, str(tmp_path / "state"), maxInstantsPerTrigger="2")
    assert run_batches(reader) == []  # an empty table: nothing yet
    instants = _upserts(writer, STEPS)
    batches = resume(reader)
    per_batch = [sorted({r["_hoodie_commit_time"] for r in b.to_pylist()}) for b in batches]
    assert per_batch == [instants[0:2], instants[2:4], instants[4:5]]
    assert state_differences(apply_upserts(_rows(batches)), read_table(table)) == []


def test_max_bytes_per_trigger_admits_one_split_at_a_time(tmp_path):
    """A byte budget below any split still admits one split per batch: progress, and nothing lost."""
    table = str(tmp_path / "table")
    _upserts(_new_table(table), STEPS)
    batches = run_batches(make_reader(table, str(tmp_path / "state"), maxBytesPerTrigger="1"))
    groups = [{r["_hoodie_file_name"].split("_")[0] for r in b.to_pylist()} for b in batches]
    assert all(len(g) == 1 for g in groups) and len(batches) == len(hoodie.HudiTable(table).file_system_view()
                                                                     .latest_merged_slices())
    assert state_differences(apply_upserts(_rows(batches)), read_table(table)) == []


@pytest.mark.parametrize("name", ["mor_avro__v9_txns_simple_meta", "mor_avro__v9_txns_simple_overwrite"])
def test_a_stream_behind_an_insert_overwrite_delivers_the_table(name, unzip_fixture, tmp_path):
    """A stream that falls behind across an insert overwrite plans the writes before it in their own round: in
    one round with it, their file groups were gone from the round's view (the overwrite replaced them) and the
    stream stopped with a false DataLossError ("no longer readable"; seen when the e2e replay ran under load)."""
    table = tmp_path / "table"
    shutil.copytree(unzip_fixture(name).table, table)
    reveal = TimelineReveal(table, tmp_path / "hidden")
    reveal.reveal_next()
    reader = make_reader(str(table), str(tmp_path / "state"), emitDeletes="true")
    batches = run_batches(reader)
    reveal.reveal_all()  # the stream was down while everything else completed
    batches += resume(reader)
    assert state_differences(apply_upserts(_rows(batches)), read_table(str(table))) == []


@pytest.mark.parametrize("skip", [False, True])
def test_skip_insert_overwrite(skip, unzip_fixture, tmp_path):
    """INSERT OVERWRITE TABLE (Hudi's own table): delivered as deletes of the old rows and inserts of the new,
    or skipped, leaving the stream's state as the table was before it (hudi-rs time travel)."""
    table = tmp_path / "table"
    shutil.copytree(unzip_fixture("mor_avro__v9_txns_simple_overwrite").table, table)
    overwrite = next(p.name.split("_")[0] for p in (table / ".hoodie" / "timeline").glob("*.replacecommit"))
    reveal = TimelineReveal(table, tmp_path / "hidden")
    reveal.reveal_next()
    reader = make_reader(str(table), str(tmp_path / "state"), emitDeletes="true",
                         skipInsertOverwrite=str(skip).lower())
    batches = run_batches(reader)
    before = None
    while True:
        current = _hudi_rs_snapshot(table)
        revealed = reveal.reveal_next()
        if revealed is None:
            break
        if revealed.startswith(overwrite):
            before = current
        batches += resume(reader)
    rows = _rows(batches)
    written_by_overwrite = [r for r in rows if r["_hoodie_commit_time"] == overwrite]
    if skip:
        assert written_by_overwrite == []
        assert state_differences(apply_upserts(rows), before) == []
    else:
        assert Counter(r["_change_type"] for r in written_by_overwrite) == Counter(
            {"insert": read_table(str(table)).num_rows, "delete": before.num_rows})
        assert state_differences(apply_upserts(rows), read_table(str(table))) == []


def _hudi_rs_snapshot(table: Path) -> pa.Table:
    """hudi-rs's snapshot of the table as revealed so far."""
    t = HudiTableBuilder.from_base_uri(str(table)).build()
    return pa.Table.from_batches(t.read(HudiReadOptions()))


def test_skip_merge_delivers_base_rows_and_every_log_record(tmp_path):
    """mergeType=skip_merge: no merge — each file group's base rows, then every log record of the range."""
    table = str(tmp_path / "table")
    _upserts(_new_table(table), STEPS[:3])
    merged = _rows(run_batches(make_reader(table, str(tmp_path / "s1"))))
    unmerged = _rows(run_batches(make_reader(table, str(tmp_path / "s2"), mergeType="skip_merge")))
    versions = Counter((k, v) for step in STEPS[:3] for k, v in step.items())
    assert Counter((r["id"], r["v"]) for r in unmerged) == versions
    latest = {k: v for step in STEPS[:3] for k, v in step.items()}
    assert sorted((r["id"], r["v"]) for r in merged) == sorted(latest.items())


def test_mini_batch_size_cuts_record_batches(tmp_path):
    table = str(tmp_path / "table")
    _upserts(_new_table(table), STEPS[:2])
    reader = make_reader(table, str(tmp_path / "state"), miniBatchSize="3")
    end = reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
    sizes = [b.num_rows for p in reader.partitions(reader.initialOffset(), end) for b in reader.read(p)]
    assert max(sizes) == 3 and sum(sizes) == len({k for s in STEPS[:2] for k in s})


def test_retention_headroom_warns_before_the_cleaner_overtakes_the_stream(tmp_path, caplog):
    """The cleaner keeps the last N writes; a stream more than N writes behind is warned while its files exist."""
    table = str(tmp_path / "table")
    writer = _new_table(table)
    _upserts(writer, STEPS[:2])
    reader = make_reader(table, str(tmp_path / "state"))
    run_batches(reader)
    assert reader.reportLatestOffset()["retentionHeadroomInstants"] is None  # never cleaned
    _upserts(writer, STEPS[2:3], first=2)
    writer.compact()  # new file slices: the older ones become the cleaner's to remove once no kept write needs them
    _upserts(writer, STEPS[3:5], first=3)
    assert writer.clean(retain_commits=2) is not None
    reader.driver.table.reload()
    m = reader.reportLatestOffset()
    assert m["cleanRetainsFrom"] is not None
    # the clean kept the last 2 writes (upserts 4 and 5); the stream has read up to upsert 2, so it still reads
    # from upsert 3 on: 4 writes (upsert 3, the compaction, upserts 4 and 5), 2 more than the cleaner keeps
    assert m["retentionHeadroomInstants"] == 2 - 4
    assert "the next clean may remove files it needs" in caplog.text
    with pytest.raises(DataLossError, match="no longer readable"):  # and it did: never a silent loss
        resume(reader)
    fresh = make_reader(table, str(tmp_path / "fresh"))
    run_batches(fresh)  # a snapshot of the table as it is: caught up, it needs only what every clean keeps
    assert fresh.reportLatestOffset()["retentionHeadroomInstants"] == 2


def test_the_monitors_file_listings_forget_what_the_cleaner_removed(tmp_path):
    """A driver that runs for months keeps the table's current files, not every file it ever saw: its cached
    partition listings are dropped when a clean (or rollback) completes, and listed again on use."""
    table = str(tmp_path / "table")
    writer = _new_table(table)
    _upserts(writer, STEPS[:2])
    reader = make_reader(table, str(tmp_path / "state"))
    run_batches(reader)
    _upserts(writer, STEPS[2:3], first=2)
    writer.compact()
    _upserts(writer, STEPS[3:5], first=3)
    resume(reader)
    seen = {name for files in reader.driver.monitor._files.values() for name in files}
    assert writer.clean(retain_commits=1) is not None
    _upserts(writer, [{"k4": "f"}], first=5)  # a write after the clean: the monitor plans again
    resume(reader)
    cached = {name for files in reader.driver.monitor._files.values() for name in files}
    on_disk = {p.name for p in Path(table).rglob("*") if p.is_file() and ".hoodie" not in p.parts}
    assert seen - on_disk, "the scenario needs a clean that removed files the monitor had cached"
    assert cached <= on_disk
