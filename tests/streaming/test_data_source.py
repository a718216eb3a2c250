"""The data source inside a real local Spark: streaming with AvailableNow and limits, batch reads, schema."""
from __future__ import annotations

import shutil

import pyarrow as pa
import pytest
from support.gold import assert_same_rows, normalise_gold, read_gold

from hudi_streaming import read_table
from hudi_streaming.writer import create_table, services

pytestmark = pytest.mark.spark

V9 = "mor_avro__v9_txns_simple_meta"


def _collect(spark, df) -> pa.Table:
    return pa.Table.from_pylist([r.asDict(recursive=True) for r in df.collect()])


def test_available_now_with_row_limit_delivers_the_snapshot_in_several_batches(spark, unzip_fixture, tmp_path):
    fx = unzip_fixture(V9)
    table = tmp_path / "t"
    shutil.copytree(fx.table, table)
    got: dict[int, list] = {}

    def sink(df, batch_id):
        got[batch_id] = [r.asDict() for r in df.collect()]

    q = (spark.readStream.format("hudi_streaming").option("stateLocation", str(tmp_path / "state"))
         .option("maxRowsPerTrigger", "4").load(str(table))
         .writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None
    sizes = [len(got[b]) for b in sorted(got)]
    assert len(sizes) >= 3 and all(0 < n <= 4 for n in sizes), sizes
    keys = sorted(r["_hoodie_record_key"] for rows in got.values() for r in rows)
    snapshot = read_table(str(table))
    assert keys == sorted(snapshot.column("_hoodie_record_key").to_pylist())
    assert {r["_change_type"] for rows in got.values() for r in rows} == {"insert"}
    progress = q.lastProgress["sources"][0]
    assert '"pendingSplits"' in progress["latestOffset"], progress


def test_batch_read_equals_spark_hudi_gold(spark, unzip_fixture):
    fx = unzip_fixture(V9)
    df = spark.read.format("hudi_streaming").load(str(fx.table))
    assert df.schema["txn_datetime"].dataType.simpleString() == "timestamp"
    ours = _collect(spark, df.drop("_change_type", "_commit_version", "_commit_timestamp"))
    gold = read_gold(fx.root / "gold_data")
    # rows crossed the JVM: compare values, with Spark's own types on both sides
    want = normalise_gold(gold).schema
    ours = ours.cast(pa.schema([pa.field(f.name, want.field(f.name).type) for f in ours.schema]))
    assert_same_rows(ours, gold, f"{V9} via spark.read.format('hudi_streaming')")


@pytest.mark.parametrize("mode", ["upsert", "changelog"])
def test_batch_read_of_a_range_equals_read_changes(spark, unzip_fixture, mode):
    """spark.read with a range and a read mode returns the change feed read_changes returns (the same rounds)."""
    from hudi_streaming import read_changes
    from hudi_streaming.hoodie.table import HudiTable

    table = str(unzip_fixture(V9).table)
    writes = HudiTable(table).timeline.completed_writes()
    start = writes[0].completion_time
    df = (spark.read.format("hudi_streaming").option("startingInstant", start).option("readMode", mode)
          .option("emitDeletes", "true").load(table))
    ours = _collect(spark, df)
    want = read_changes(table, start, None, changelog=mode == "changelog")
    assert want.num_rows > 0
    key = ("_hoodie_record_key", "_hoodie_commit_time", "_change_type")
    assert sorted(ours.select(key).to_pylist(), key=repr) == sorted(want.select(key).to_pylist(), key=repr)


def test_missing_state_location_is_one_clear_error(spark, unzip_fixture):
    with pytest.raises(Exception, match="stateLocation is required") as err:
        (spark.readStream.format("hudi_streaming").load(str(unzip_fixture(V9).table))
         .writeStream.format("noop").start().awaitTermination(60))
    assert "UnboundLocalError" not in str(err.value)  # PySpark's own error no longer buries ours


@pytest.mark.parametrize("option, value, message", [
    ("columns", "amount,nosuch", "has no column nosuch; its columns: txn_id"),
    ("partitions", "country=us", "country is not a partition field"),
    ("startingInstant", "notatime", "option startingInstant='notatime': expected an instant time"),
    ("hoodie.datasource.query.type", "incremental", "is not read by hudi_streaming"),
])
def test_bad_options_fail_when_the_query_is_defined(option, value, message, spark, unzip_fixture, tmp_path):
    """``load()`` itself fails (Spark asks the source for its schema there), not the query after it started."""
    with pytest.raises(Exception, match=message):
        (spark.readStream.format("hudi_streaming").option("stateLocation", str(tmp_path / "state"))
         .option(option, value).load(str(unzip_fixture(V9).table)))


def test_a_catalog_table_streams_and_reads_with_its_definitions_options(spark, unzip_fixture, tmp_path):
    """``CREATE TABLE ... USING hudi_streaming``: Spark's own table options (owner, location, provider) are
    accepted, the definition's options reach later reads, and a read's own options override them."""
    table = str(unzip_fixture(V9).table)
    snapshot = sorted(read_table(table).column("_hoodie_record_key").to_pylist())
    spark.sql(f"CREATE TABLE hudi_feed USING hudi_streaming OPTIONS (path '{table}', "
              f"stateLocation '{tmp_path}/defined_state', maxRowsPerTrigger '5')")
    try:
        assert sorted(r[0] for r in spark.table("hudi_feed").select("_hoodie_record_key").collect()) == snapshot
        assert sorted(r[0] for r in spark.sql("SELECT _hoodie_record_key FROM hudi_feed").collect()) == snapshot
        batches: list[list[str]] = []
        q = (spark.readStream.option("stateLocation", str(tmp_path / "query_state")).table("hudi_feed")
             .writeStream.foreachBatch(lambda df, _: batches.append([r[0] for r in df.select("_hoodie_record_key")
                                                                     .collect()]))
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert q.exception() is None
        assert sorted(k for b in batches for k in b) == snapshot
        assert len(batches) >= 3 and all(len(b) <= 5 for b in batches)  # the definition's maxRowsPerTrigger
        assert (tmp_path / "query_state").is_dir() and not (tmp_path / "defined_state").exists()  # overridden
    finally:
        spark.sql("DROP TABLE IF EXISTS hudi_feed")
    spark.sql(f"CREATE TABLE hudi_secret USING hudi_streaming OPTIONS (path '{table}', fs.secret 'hunter2')")
    try:  # credentials do not travel in the schema (printed and logged freely); they come with each read
        assert "hunter2" not in spark.table("hudi_secret").schema.json()
    finally:
        spark.sql("DROP TABLE IF EXISTS hudi_secret")
    with pytest.raises(Exception, match="unknown option 'maxrowspertriger'.*valid options"):
        spark.sql(f"CREATE TABLE hudi_typo USING hudi_streaming OPTIONS (path '{table}', maxRowsPerTriger '5')")


def test_a_rollback_reconciled_through_spark_leaves_an_upsert_sink_equal_to_the_table(spark, tmp_path):
    """``onRewind=reconcile`` as a user runs it: the keys are recorded by the tasks in Spark's Python workers,
    and the batch after a rollback of a delivered write brings a foreachBatch upsert sink back to the table."""
    schema = pa.schema([("key", pa.string()), ("ts", pa.int64())])
    table = str(tmp_path / "table")
    writer = create_table(table, "t", schema, record_key="key", ordering_field="ts", table_type="MERGE_ON_READ")
    sink: dict[str, int] = {}

    def upsert(df, _):
        for r in df.select("key", "ts", "_change_type").collect():
            if r["_change_type"] == "delete":
                sink.pop(r["key"], None)
            else:
                sink[r["key"]] = r["ts"]

    def run() -> None:
        q = (spark.readStream.format("hudi_streaming").option("stateLocation", str(tmp_path / "state"))
             .option("emitDeletes", "true").option("onRewind", "reconcile").load(table)
             .writeStream.foreachBatch(upsert).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert q.exception() is None

    def write(keys: range, ts: int) -> str:
        return writer.upsert(pa.table({"key": [f"k{k}" for k in keys], "ts": [ts] * len(keys)}, schema=schema))

    write(range(10), 1)
    run()
    undone = write(range(5, 15), 2)
    run()
    assert len(sink) == 15 and list((tmp_path / "state" / "rewind-keys").glob("*.parquet"))
    services.rollback(writer, undone, "deltacommit")
    run()
    assert sink == {f"k{k}": 1 for k in range(10)}
    assert sink == {r["key"]: r["ts"] for r in read_table(table, columns=["key", "ts"]).to_pylist()}
