"""Spark's filters pushed into ``spark.read.format("hudi_streaming")`` (PySpark 4.1+): the rows equal the
unfiltered read then filtered, and partitions that cannot match are really not read (their files are made
unreadable, and the filtered read still succeeds)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from oracle.hudi_oracle.fixture import FOLDER, HudiFixture
from support.tables import write_nulls_table

from hudi_streaming.hoodie.table import HudiTable

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


@pytest.fixture
def pushdown(spark):
    spark.conf.set(PUSHDOWN, "true")
    yield spark
    spark.conf.unset(PUSHDOWN)


def oracle_table(name: str, tmp_path: Path) -> str:
    fx = HudiFixture(FOLDER / f"{name}.zip", tmp_path)
    return str(fx.materialize(len(fx.steps) - 1, tmp_path / name))


def rows(df) -> list[str]:
    return sorted(repr(sorted(r.asDict().items())) for r in df.collect())


def spoil_partition(url: str, partition: str) -> int:
    """Make every data file of one partition unreadable; how many there were."""
    files = [p for p in (Path(url) / partition).iterdir() if p.is_file() and not p.name.startswith(".hoodie")]
    for p in files:
        p.write_bytes(b"not a data file")
    return len(files)


@pytest.mark.parametrize("name, where, spoiled", [
    ("mor_v9_part_multi", "region = 'a' AND bucket >= 1", "b/0"),
    ("mor_v9_part_multi", "region IN ('a', 'c') OR qty > 1000", None),
    ("mor_v9_part_multi", "NOT (region <> 'b') AND id > 3", "a/1"),
    ("cow_v6_015_part_hive", "region > 'a' AND amount > 20", "region=a"),
    ("mor_v9_part_timestamp", "event_ms = 1704067200000", None),
])
def test_pushed_filters_return_the_filtered_rows_and_skip_what_cannot_match(pushdown, tmp_path, name, where,
                                                                            spoiled):
    url = oracle_table(name, tmp_path)
    expected = rows(pushdown.read.format("hudi_streaming").load(url).filter(where))
    assert expected, f"{name}: {where} selects no row; choose one that does"
    if spoiled:
        assert spoil_partition(url, spoiled) > 0
    assert rows(pushdown.read.format("hudi_streaming").load(url).filter(where)) == expected


def test_without_pushdown_the_spoiled_partition_is_read(spark, tmp_path):
    """The check above can fail: without Spark's pushdown setting every partition is read (and reads work)."""
    url = oracle_table("mor_v9_part_multi", tmp_path)
    assert spark.read.format("hudi_streaming").load(url).filter("region = 'a'").count() > 0
    spoil_partition(url, "b/0")
    with pytest.raises(Exception, match="b/0"):
        spark.read.format("hudi_streaming").load(url).filter("region = 'a'").count()


def test_null_partitions_and_filters_decided_by_partitions(pushdown, tmp_path):
    df = pushdown.read.format("hudi_streaming").load(write_nulls_table(str(tmp_path / "t")))
    assert sorted(r.k for r in df.filter("m IS NULL").collect()) == [3]
    assert sorted(r.k for r in df.filter("m = ''").collect()) == [2]
    assert sorted(r.k for r in df.filter("y = 2025 AND d IS NULL").collect()) == [3]
    # y = 2025 is decided by the partitions kept: Spark is not asked to filter it again; m IS NULL is not (the
    # default partition holds '' and null alike)
    assert not spark_filters(df.filter("y = 2025"))
    assert spark_filters(df.filter("m IS NULL"))
    assert spark_filters(df.filter("y = 2025 AND k = 3"))


def spark_filters(df) -> bool:
    """Whether Spark's physical plan filters the rows itself."""
    return re.search(r"(^|[\s*)-])Filter ", df._jdf.queryExecution().executedPlan().toString(), re.M) is not None


@pytest.mark.parametrize("mode", ["upsert", "changelog"])
def test_a_range_read_is_pruned_too(pushdown, tmp_path, mode):
    """``spark.read`` of a range reads the change feed: its splits are pruned by the same filters."""
    url = oracle_table("mor_v9_part_multi", tmp_path)
    first = HudiTable(url).timeline.completed_writes()[0]
    df = (pushdown.read.format("hudi_streaming").option("startingInstant", first.completion_time)
          .option("readMode", mode).option("emitDeletes", "true").load(url))
    where = "region = 'b' AND _change_type <> 'insert'"
    expected = rows(df.filter(where))
    assert expected, f"{where} selects no change; choose one that does"
    spoil_partition(url, "a/0")
    spoil_partition(url, "c/1")
    assert rows(df.filter(where)) == expected


def test_file_slices_the_metadata_tables_statistics_rule_out_are_not_read(pushdown, tmp_path):
    """Hudi's ``column_stats`` skip file slices of a non-partitioned table: the slices that ``id < 1`` cannot
    match are made unreadable and the filtered read still returns the rows."""
    from hudi_streaming.hoodie.filters import Compare
    from hudi_streaming.hoodie.read import plan_slices

    url = oracle_table("mor_v9_part_none", tmp_path)
    where = "id < 1"
    expected = rows(pushdown.read.format("hudi_streaming").load(url).filter(where))
    assert expected
    table = HudiTable(url)
    every = plan_slices(table)[0]
    kept = {s.file_id for s in plan_slices(table, filters=Compare("id", "<", 1))[0]}
    skipped = [s for s in every if s.file_id not in kept]
    assert kept and skipped
    for s in skipped:
        for f in s.files:
            (Path(url) / f).write_bytes(b"not a data file")
    assert rows(pushdown.read.format("hudi_streaming").load(url).filter(where)) == expected
