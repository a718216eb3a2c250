"""Filters pushed into batch reads (``hoodie.filters``): a filtered read returns exactly the unfiltered read then
filtered, on every table Apache Hudi wrote for the oracle, while partitions that cannot match are not read.

Predicates are generated from each table's own rows (its partition values, a data column's median), so each
one selects some rows and leaves out others; what each one pruned is printed (``-s`` shows it)."""
from __future__ import annotations

import datetime
import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from oracle.hudi_oracle.fixture import FOLDER, HudiFixture, fixture_names
from support.tables import write_nulls_table

from hudi_streaming import read_changes, read_table
from hudi_streaming.errors import OptionError
from hudi_streaming.hoodie.filters import (
    ALL,
    And,
    ColumnStats,
    Compare,
    Not,
    Or,
    PartitionPruner,
    from_dnf,
    negate,
    pushed_filters,
    stats_may_match,
    value_outcomes,
    value_partition_columns,
)
from hudi_streaming.hoodie.read import plan_slices
from hudi_streaming.hoodie.table import HudiTable

WRITTEN = [n for n in fixture_names() if HudiFixture(FOLDER / f"{n}.zip", Path()).steps]


def rows_of(t: pa.Table) -> list[str]:
    return sorted(map(repr, t.to_pylist()))


def predicates(table: HudiTable, rows: pa.Table) -> list[list]:
    """DNF predicates from the table's rows: on each value partition column (=, in, !=, a range) and on a data
    column (a range at its median), and an AND and an OR of both kinds."""
    out: list[list] = []
    part_cols = [c for c in table.config.partition_fields if c in rows.schema.names]
    for c in part_cols:
        values = sorted(v for v in set(rows.column(c).to_pylist()) if v is not None)
        if values:
            out += [[(c, "=", values[0])], [(c, "in", values[-2:])], [(c, "!=", values[0])], [(c, ">", values[0])]]
    data = next(f.name for f in rows.schema if f.name not in part_cols and not f.name.startswith("_hoodie")
                and pa.types.is_integer(f.type))
    values = sorted(v for v in rows.column(data).to_pylist() if v is not None)
    middle = values[len(values) // 2]
    out.append([(data, "<", middle)])
    if part_cols:
        first = rows.column(part_cols[0])[0].as_py()
        out.append([(part_cols[0], "=", first), (data, ">=", middle)])
        out.append([[(part_cols[0], "=", first)], [(data, "<", values[0] + 1)]])
    return out


@pytest.mark.parametrize("name", WRITTEN)
def test_filtered_reads_equal_the_read_then_filtered(name, tmp_path):
    fx = HudiFixture(FOLDER / f"{name}.zip", tmp_path)
    url = str(fx.materialize(len(fx.steps) - 1, tmp_path / "table"))
    table = HudiTable(url)
    # partitions only: the metadata table's statistics (tests/hoodie/test_metadata_stats.py) skip more
    listed = HudiTable(url, metadata_enable=False)
    everything = read_table(url)
    total = len(plan_slices(table)[0])
    pruned_any = False
    for dnf in predicates(table, everything):
        expected = everything.filter(pq.filters_to_expression(dnf))
        got = read_table(url, filters=dnf)
        assert rows_of(got) == rows_of(expected), f"{name}: filters={dnf}"
        planned = len(plan_slices(listed, filters=from_dnf(dnf, "test"))[0])
        with_stats = len(plan_slices(table, filters=from_dnf(dnf, "test"))[0])
        print(f"{name}: {dnf}: {got.num_rows}/{everything.num_rows} rows, {planned}/{total} file slices planned "
              f"by partition, {with_stats} with the metadata table's statistics")
        pruned_any |= planned < total
        assert expected.num_rows == 0 or planned > 0
    # pruning happens exactly where the partition path holds the column's value
    assert pruned_any == bool(value_partition_columns(table))
    # an Expression filters the rows and prunes as its DNF does; a projection returns only the columns asked for
    dnf = predicates(table, everything)[0]
    expr = pq.filters_to_expression(dnf)
    got = read_table(url, filters=expr, columns=["id"])
    assert got.schema.names == ["id"]
    assert rows_of(got) == rows_of(everything.filter(expr).select(["id"]))
    model = pushed_filters(expr, everything.schema, "test").model
    assert model is not None
    assert len(plan_slices(table, filters=model)[0]) == len(plan_slices(table, filters=from_dnf(dnf, "test"))[0])


@pytest.mark.parametrize("name", [n for n in WRITTEN if "part" in n or n.endswith("_basic")])
def test_filtered_change_feeds_equal_the_feed_then_filtered(name, tmp_path):
    fx = HudiFixture(FOLDER / f"{name}.zip", tmp_path)
    url = str(fx.materialize(len(fx.steps) - 1, tmp_path / "table"))
    if not HudiTable(url).config.populate_meta_fields:
        pytest.skip("no change feed without meta fields")
    for changelog in (False, True):
        feed = read_changes(url, changelog=changelog)
        for dnf in predicates(HudiTable(url), read_table(url))[:2]:
            got = read_changes(url, changelog=changelog, filters=dnf, columns=["id"] + [c for c, _, _ in dnf])
            expected = feed.filter(pq.filters_to_expression(dnf)).select(got.schema.names)
            assert rows_of(got) == rows_of(expected), f"{name} changelog={changelog}: filters={dnf}"


# -- partition pruning, exactly -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def nulls_table(tmp_path_factory) -> str:
    return write_nulls_table(str(tmp_path_factory.mktemp("filters") / "t"))


def partitions(table: HudiTable) -> list[str]:
    return sorted({s.partition for s in plan_slices(table)[0]})


def kept(path: str, f) -> list[str]:
    table = HudiTable(path)
    return [p for p in partitions(table) if PartitionPruner(table, f).may_match(p)]


def test_partitions_kept_are_exactly_those_that_can_match(nulls_table):
    default = "__HIVE_DEFAULT_PARTITION__"
    assert partitions(HudiTable(nulls_table)) == ["2024/01", f"2024/{default}", "2025/02",
                                                            f"2025/{default}", "2026/02"]
    assert kept(nulls_table, Compare("y", "=", 2025)) == ["2025/02", f"2025/{default}"]
    assert kept(nulls_table, Compare("y", "in", (2024, 2026))) == ["2024/01", f"2024/{default}", "2026/02"]
    assert kept(nulls_table, And((Compare("y", ">", 2024), Compare("y", "<=", 2025)))) == \
        ["2025/02", f"2025/{default}"]
    # a null or an empty value is written to the default partition: both may be there
    assert kept(nulls_table, Compare("m", "is_null")) == [f"2024/{default}", f"2025/{default}"]
    assert kept(nulls_table, Compare("m", "=", "")) == [f"2024/{default}", f"2025/{default}"]
    assert kept(nulls_table, Compare("m", "not_null")) == partitions(HudiTable(nulls_table))
    assert kept(nulls_table, Or((Compare("m", "=", "01"), Compare("y", "=", 2026)))) == ["2024/01", "2026/02"]
    assert kept(nulls_table, negate(Compare("y", "in", (2024, 2025)))) == ["2026/02"]
    # a null never equals: NOT (m = '02') keeps the default partitions only for their empty values
    assert kept(nulls_table, negate(Compare("m", "=", "02"))) == ["2024/01", f"2024/{default}", f"2025/{default}"]
    # a data column, or a value of another type, decides nothing
    assert len(kept(nulls_table, Compare("k", "=", 1))) == 5
    assert len(kept(nulls_table, Compare("y", "=", "2025"))) == 5
    assert len(kept(nulls_table, Compare("y", "=", 2025.0))) == 2  # an int and a float compare as numbers


def test_values_of_different_kinds_decide_nothing():
    zoned = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    assert value_outcomes(Compare("t", "=", datetime.datetime(2024, 1, 1)), zoned) == ALL  # Python says False
    assert value_outcomes(Compare("t", "!=", zoned), zoned) == {False}
    assert value_outcomes(Compare("x", "=", decimal.Decimal("0.1")), 0.1) == ALL
    assert value_outcomes(Compare("x", "<", decimal.Decimal("0.5")), 0) == {True}
    assert value_outcomes(Compare("x", "=", float("nan")), 1.0) == ALL
    assert value_outcomes(Compare("x", "in", (1, None)), 2) == {False, None}  # pyarrow: False, SQL: null
    assert value_outcomes(Compare("x", "not in", (1,)), None) == {True, None}


def test_decided_only_when_every_partition_is_all_or_nothing(nulls_table):
    table = HudiTable(nulls_table)
    parts = partitions(table)
    assert PartitionPruner(table, Compare("y", "=", 2025)).decides(parts)
    assert PartitionPruner(table, Compare("y", ">=", 2025)).decides(parts)
    assert not PartitionPruner(table, Compare("m", "is_null")).decides(parts)  # the default: null or ''
    assert not PartitionPruner(table, And((Compare("y", "=", 2025), Compare("k", "=", 1)))).decides(parts)


def test_a_formatted_partition_path_prunes_nothing(tmp_path):
    fx = HudiFixture(FOLDER / "mor_v9_part_timestamp.zip", tmp_path)
    url = str(fx.materialize(len(fx.steps) - 1, tmp_path / "table"))
    table = HudiTable(url)
    assert value_partition_columns(table) == []
    ms = read_table(url).column("event_ms")[0].as_py()
    assert PartitionPruner(table, Compare("event_ms", "=", ms)).used is False


def test_bad_filters_are_refused_by_name(nulls_table):
    with pytest.raises(OptionError, match="nope"):
        read_table(nulls_table, filters=[("nope", "=", 1)])
    with pytest.raises(OptionError, match="'~'"):
        read_table(nulls_table, filters=[("y", "~", 1)])
    with pytest.raises(OptionError, match="list of values"):
        read_table(nulls_table, filters=[("y", "in", 2024)])
    with pytest.raises(OptionError, match="non-empty list"):
        read_table(nulls_table, filters=[])


def test_rows_are_filtered_on_columns_not_returned(nulls_table):
    got = read_table(nulls_table, filters=[("y", "=", 2025), ("d", ">", datetime.date(2023, 1, 1))],
                            columns=["k"])
    assert got.to_pylist() == [{"k": 4}]
    assert read_table(nulls_table, filters=pc.field("m") == "", columns=["k"]).to_pylist() == [{"k": 2}]


# -- file skipping from column statistics -----------------------------------------------------------------------
def test_files_skipped_only_when_their_stats_rule_out_every_row():
    s = {"x": ColumnStats(min=10, max=20, null_count=0, value_count=5),
         "n": ColumnStats(min=None, max=None, null_count=5, value_count=5),
         "s": ColumnStats(min="b", max="d", null_count=1, value_count=5)}
    may = lambda f: stats_may_match(f, s)  # noqa: E731
    assert may(Compare("x", "=", 15)) and not may(Compare("x", "=", 21))
    assert may(Compare("x", ">", 19)) and not may(Compare("x", ">", 20))
    assert may(Compare("x", "<=", 10)) and not may(Compare("x", "<", 10))
    assert may(Compare("x", "in", (1, 12))) and not may(Compare("x", "in", (1, 30)))
    assert not may(Compare("x", "is_null")) and may(Compare("s", "is_null"))
    assert not may(Compare("n", "=", 1)) and may(Compare("n", "is_null")) and not may(Compare("n", "not_null"))
    assert not may(Compare("s", "=", "a")) and may(Compare("s", "<", "c"))
    assert may(Or((Compare("x", "=", 30), Compare("s", "=", "c"))))
    assert not may(And((Compare("x", "=", 15), Compare("s", "=", "z"))))
    assert may(negate(Compare("x", "=", 30)))  # NOT is kept possible
    assert not stats_may_match(Compare("x", "!=", 7), {"x": ColumnStats(7, 7, 0, 3)})
    # no stats, or stats of another type, decide nothing
    assert may(Compare("y", "=", 1)) and may(Compare("x", "=", "15"))


def test_an_expression_is_read_only_where_its_reading_is_exact():
    schema = pa.schema([("a", pa.int64()), ("s", pa.string()), ("d", pa.date32())])
    model = lambda e: pushed_filters(e, schema, "test").model  # noqa: E731
    assert model((pc.field("a") > 3) & ~pc.field("s").isin(["x", "y"]) | pc.field("d").is_null()) == Or((
        And((Compare("a", ">", 3), Not(Compare("s", "in", ("x", "y"))))), Compare("d", "is_null")))
    assert model(pc.field("s") == "x y") == Compare("s", "=", "x y")
    # a literal whose text does not say its type (3.0 prints as 3), a date, a quote: not read, rows filtered only
    assert model(pc.field("a") != 3.0) is None
    assert model(pc.field("d") == datetime.date(2024, 1, 1)) is None
    assert model(pc.field("s") == 'q"z') is None
    with pytest.raises(OptionError, match="nope"):
        pushed_filters(pc.field("nope") == 1, schema, "test")
