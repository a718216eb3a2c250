"""Spark's change-feed columns: ``_commit_version`` and ``_commit_timestamp`` on every row, as Delta's change data
feed names them, so a sink written for Delta's feed runs on ours unchanged.

Checked against Hudi's own timeline (tables Hudi wrote): the version is the completion time of the row's commit
(its requested time on table version 6), the timestamp that moment in UTC, and for each key both never decrease
in delivery order.
"""
from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from oracle.hudi_oracle.fixture import FOLDER, HudiFixture
from support.stream_sim import make_reader, run_batches

from hudi_streaming import OptionError, read_changes, read_table
from hudi_streaming.hoodie.table import HudiTable


def _oracle_table(name: str, tmp: Path) -> Path:
    fx = HudiFixture(FOLDER / f"{name}.zip", tmp / "fx")
    return fx.materialize(len(fx.steps) - 1, tmp / "table")


def _completion(table: Path) -> dict[str, str]:
    """Requested → completion time; on table version 6, which records none, the requested time."""
    hudi = HudiTable(str(table))
    v8 = hudi.config.version >= 8
    return {e.requested_time: (e.completion_time if v8 else None) or e.requested_time
            for e in hudi.timeline.completed_writes(include_archived=True)}


@pytest.mark.parametrize("name", ["mor_v9_basic", "mor_v8_basic", "mor_v6_basic", "mor_v6_015_basic",
                                  "cow_v9_deletes", "mor_v9_deletes"])
def test_commit_columns_follow_hudis_timeline(name, tmp_path):
    table = _oracle_table(name, tmp_path)
    done = _completion(table)
    rows = read_changes(str(table), changelog=True).to_pylist()
    assert rows
    last: dict[str, tuple] = {}
    for r in rows:
        completion = done[r["_hoodie_commit_time"]]
        assert r["_commit_version"] == int(completion.ljust(17, "0"))
        moment = dt.datetime.strptime(completion[:14], "%Y%m%d%H%M%S").replace(
            microsecond=int(completion.ljust(17, "0")[14:]) * 1000, tzinfo=dt.timezone.utc)
        assert r["_commit_timestamp"] == moment  # Hudi's writer ran in UTC: LOCAL is UTC here
        seen = (r["_commit_version"], r["_commit_timestamp"])
        assert seen >= last.get(r["_hoodie_record_key"], seen), r["_hoodie_record_key"]
        last[r["_hoodie_record_key"]] = seen


def _utc_and_local(tmp: Path) -> tuple[Path, Path]:
    """Two copies of one table Hudi wrote: its timeline declared UTC, and LOCAL (a writer in some zone)."""
    utc = _oracle_table("mor_v9_basic", tmp / "utc")
    local = tmp / "local"
    shutil.copytree(utc, local)
    for table, zone in ((utc, "UTC"), (local, "LOCAL")):
        props = table / ".hoodie" / "hoodie.properties"
        lines = [ln for ln in props.read_text().splitlines() if not ln.startswith("hoodie.table.timeline.timezone=")]
        props.write_text("\n".join(lines + [f"hoodie.table.timeline.timezone={zone}"]) + "\n")
        assert HudiTable(str(table)).config.timeline_timezone == zone
    return utc, local


def test_a_local_timeline_is_read_in_the_writers_zone(tmp_path):
    """The same instants read as written in UTC and, with the writer's zone given, in New York: the versions
    (the instants' digits) stay, the moments move by New York's offset."""
    utc, local = _utc_and_local(tmp_path)
    a = read_changes(str(utc))
    b = read_changes(str(local), timeline_zone="America/New_York")
    assert a["_commit_version"] == b["_commit_version"]
    shifts = {(y - x) for x, y in zip(a["_commit_timestamp"].to_pylist(), b["_commit_timestamp"].to_pylist())}
    assert shifts <= {dt.timedelta(hours=5), dt.timedelta(hours=4)} and shifts  # EST or EDT
    with pytest.raises(OptionError, match="timeline_zone='Mars/Olympus'"):
        read_changes(str(local), timeline_zone="Mars/Olympus")
    # a UTC table says its zone: another one is refused by read_changes as by the stream, not ignored
    with pytest.raises(OptionError, match="read_changes: timeline_zone='America/New_York': the table writes its "
                                          "instant times in UTC"):
        read_changes(str(utc), timeline_zone="America/New_York")
    assert read_changes(str(utc), timeline_zone="UTC").equals(a)


def test_a_stream_over_a_utc_table_refuses_another_timeline_zone(tmp_path):
    utc, _ = _utc_and_local(tmp_path)
    with pytest.raises(OptionError, match="option timelineTimeZone='America/New_York': the table writes its "
                                          "instant times in UTC"):
        run_batches(make_reader(str(utc), str(tmp_path / "state"), timelineTimeZone="America/New_York"))
    assert run_batches(make_reader(str(utc), str(tmp_path / "state"), timelineTimeZone="UTC"))


def test_a_sink_written_for_deltas_change_feed_runs_unchanged(spark, tmp_path):
    """The upsert sink of Delta's change data feed documentation, as written for Delta: drop pre-images, keep
    each key's row with the highest _commit_version, merge into the target by _change_type. Run on this source's
    stream, its target equals the table."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from hudi_streaming.writer import create_table

    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("amount", pa.int64())])
    writer = create_table(str(tmp_path / "t"), "orders", schema, record_key="id", ordering_field="ts", version=9)
    writer.upsert(pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1], "amount": [1, 2, 3]}, schema=schema))
    writer.upsert(pa.table({"id": ["a", "d"], "ts": [2, 2], "amount": [10, 4]}, schema=schema))
    writer.delete(pa.table({"id": ["b"]}))
    writer.upsert(pa.table({"id": ["a", "b"], "ts": [3, 3], "amount": [100, 20]}, schema=schema))
    target = tmp_path / "target"

    def upsert_to_target(batch_df, batch_id):  # Delta CDF's documented foreachBatch pattern, verbatim in spirit
        latest = (batch_df.filter(F.col("_change_type") != "update_preimage")
                  .withColumn("rn", F.row_number().over(
                      Window.partitionBy("id").orderBy(F.col("_commit_version").desc())))
                  .filter("rn = 1").drop("rn"))
        rows = {r["id"]: r.asDict() for r in latest.collect()}
        current = json.loads(target.read_text()) if target.exists() else {}
        for key, r in rows.items():
            if r["_change_type"] == "delete":
                current.pop(key, None)
            else:
                current[key] = {"amount": r["amount"], "version": r["_commit_version"],
                                "at": r["_commit_timestamp"].isoformat()}
        target.write_text(json.dumps(current))

    first = HudiTable(str(tmp_path / "t")).timeline.completed_writes()[0].completion_time
    df = (spark.readStream.format("hudi_streaming").option("stateLocation", str(tmp_path / "state"))
          .option("startingInstant", first).option("readMode", "changelog")
          .option("emitDeletes", "true").load(str(tmp_path / "t")))
    assert df.schema["_commit_version"].dataType.simpleString() == "bigint"
    assert df.schema["_commit_timestamp"].dataType.simpleString() == "timestamp"
    q = (df.writeStream.foreachBatch(upsert_to_target).trigger(availableNow=True)
         .option("checkpointLocation", str(tmp_path / "cp")).start())
    q.awaitTermination(300)
    assert q.exception() is None
    got = json.loads(target.read_text())
    table = read_table(str(tmp_path / "t"))
    assert {k: v["amount"] for k, v in got.items()} == dict(zip(table["id"].to_pylist(), table["amount"].to_pylist()))
    done = _completion(tmp_path / "t")
    by_key = dict(zip(table["id"].to_pylist(), table["_hoodie_commit_time"].to_pylist()))
    assert {k: v["version"] for k, v in got.items()} == {k: int(done[c]) for k, c in by_key.items()}


def test_a_starting_timestamp_names_the_same_moment_on_a_local_timeline(tmp_path):
    """Two tables with the same instants, one written in UTC and one by a writer in New York (a LOCAL timeline):
    a starting timestamp given in UTC starts each stream at the write that completed at that moment."""
    from support.stream_sim import make_reader, run_batches

    utc, local = _utc_and_local(tmp_path)
    writes = HudiTable(str(utc)).timeline.completed_writes()
    third = writes[2]
    c = third.completion_time
    wall = dt.datetime.strptime(c[:14], "%Y%m%d%H%M%S").replace(microsecond=int(c[14:17]) * 1000)
    ny = wall.replace(tzinfo=ZoneInfo("America/New_York")).astimezone(dt.timezone.utc)  # the moment in New York
    for table, moment, options in ((utc, wall.replace(tzinfo=dt.timezone.utc), {}),
                                   (local, ny, {"timelineTimeZone": "America/New_York"})):
        stamp = moment.isoformat(sep=" ", timespec="milliseconds")
        reader = make_reader(str(table), str(tmp_path / f"state-{table.name}"), startingInstant=stamp,
                             readMode="changelog", emitDeletes="true", **options)
        rows = pa.concat_tables([b for b in run_batches(reader) if b is not None])
        assert min(rows["_hoodie_commit_time"].to_pylist()) == third.requested_time, table.name
        assert min(rows["_commit_timestamp"].to_pylist()) == moment
