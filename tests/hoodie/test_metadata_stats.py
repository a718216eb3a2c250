"""File skipping from the metadata table's ``column_stats``/``partition_stats`` and key lookups in its
``record_index`` (``hoodie.metadata_stats``), against Hudi-written tables (``tests/data/hudi``).

Soundness is checked slice by slice: every file slice of the table's latest snapshot is read once, and for each
predicate (made from the table's own rows: each column's smallest, middle and largest value, a value beyond
them, ranges, ``IN``, ``IS NULL``, AND and OR of them) the slices the planner skipped must hold no matching row;
so the filtered read equals the read then filtered. What each kind of predicate skipped, with the metadata
table's statistics and without them, is printed (``-s``). The record index is checked key by key against the
slices that hold each key."""
from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from oracle.hudi_oracle.fixture import FOLDER, HudiFixture, fixture_names

from hudi_streaming import read_table
from hudi_streaming.hoodie.filters import And, Compare, Filter, Or, pushed_filters
from hudi_streaming.hoodie.fs_view import FileSlice
from hudi_streaming.hoodie.metadata_stats import (
    COLUMN_STATS,
    RECORD_INDEX,
    SlicePruner,
    file_id_key,
    index_id,
    lookup_keys,
    open_metadata_partition,
    xxhash64,
)
from hudi_streaming.hoodie.read import plan_slices, read_schema
from hudi_streaming.hoodie.slice_reader import MergeType, SliceRead, read_slice
from hudi_streaming.hoodie.table import RECORD_KEY, HudiTable


def _has_stats(name: str) -> bool:
    fx = HudiFixture(FOLDER / f"{name}.zip", Path())
    if not fx.steps:
        return False
    return bool(fx.config.get("metadata", True)) and not name.endswith(("_no_metadata", "_lance", "_orc"))


WITH_METADATA = [n for n in fixture_names() if _has_stats(n)]
FAST = ["mor_v9_part_none"]
RLI = ["mor_v9_rli", "mor_v6_015_rli"]


def test_key_hashes_are_hudis():
    """XXH64's published check values, and ids read from a Hudi 1.2 ``column_stats`` key
    (``KYuVooVbzP4=`` + ``OZhw7bXTfHQ=`` + MD5 of the file name) of column ``region``."""
    assert xxhash64(b"", 0) == 0xEF46DB3751D8E999
    assert xxhash64(b"1234567890", 0) == 12237639266330420150
    assert xxhash64(bytes(range(100)), 0) != xxhash64(bytes(range(100)), 1)
    assert index_id("region") == "KYuVooVbzP4="
    assert index_id("_hoodie_commit_time") == "JBBzUToHtLc="
    assert file_id_key("9375dc47-49b9-4cf9-aea8-a5ca61fc4b56-0_2-21-24_20261126133409069.parquet") == \
        "+ioR5kL8SWk00Lthkuwwtw=="


def _materialize(name: str, tmp_path: Path) -> str:
    fx = HudiFixture(FOLDER / f"{name}.zip", tmp_path)
    return str(fx.materialize(len(fx.steps) - 1, tmp_path / "table"))


def _slice_rows(table: HudiTable) -> tuple[list[FileSlice], dict[tuple[str, str], pa.Table]]:
    slices, max_instant, _ = plan_slices(table)
    full = table.arrow_schema()
    req = SliceRead(table, read_schema(table, full, None, False), max_instant, None, MergeType.PAYLOAD_COMBINE,
                    False)
    return slices, {(s.partition, s.file_id): read_slice(req, s) for s in slices}


def _orderable(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_date(t) or pa.types.is_decimal(t)


def predicates(rows: pa.Table) -> list[tuple[str, Filter]]:
    """(kind, predicate) from the rows: per orderable column, = and range at its smallest, middle and largest
    value and beyond, IN of two values, IS NULL; then ANDs and ORs of two columns' middles."""
    out: list[tuple[str, Filter]] = []
    middles = []
    for field in rows.schema:
        if not _orderable(field.type) or field.name in ("_hoodie_commit_seqno",):
            continue
        values = sorted(v for v in rows.column(field.name).to_pylist() if v is not None)
        if not values:
            continue
        lo, mid, hi = values[0], values[len(values) // 2], values[-1]
        c = field.name
        out += [("=", Compare(c, "=", lo)), ("=", Compare(c, "=", mid)), ("=", Compare(c, "=", hi)),
                ("<", Compare(c, "<", mid)), (">", Compare(c, ">", mid)), (">=", Compare(c, ">=", hi)),
                ("in", Compare(c, "in", (lo, hi))), ("is_null", Compare(c, "is_null"))]
        if isinstance(hi, int) and not isinstance(hi, bool):
            out.append(("= beyond", Compare(c, "=", hi + 1)))
        middles.append(Compare(c, "=", mid))
    for a, b in zip(middles, middles[1:]):
        out += [("and", And((a, b))), ("or", Or((a, b)))]
    return out


def _expression(f: Filter) -> pc.Expression:
    if isinstance(f, And):
        return _expression(f.parts[0]) & _expression(f.parts[1])
    if isinstance(f, Or):
        return _expression(f.parts[0]) | _expression(f.parts[1])
    assert isinstance(f, Compare)
    field = pc.field(f.column)
    if f.op == "is_null":
        return field.is_null()
    if f.op == "in":
        return field.isin(list(f.value))
    return {"=": field == f.value, "<": field < f.value, ">": field > f.value, ">=": field >= f.value}[f.op]


def check_skipping(name: str, url: str) -> Counter:
    """Every predicate's skipped slices hold no matching row; returns slices planned/total per kind of
    predicate, with statistics and without (the metadata table off)."""
    table, listed = HudiTable(url), HudiTable(url, metadata_enable=False)
    slices, rows = _slice_rows(table)
    everything = pa.concat_tables(rows.values()) if rows else table.arrow_schema().empty_table()
    counts: Counter = Counter()
    for kind, f in predicates(everything):
        kept = {(s.partition, s.file_id) for s in plan_slices(table, filters=f, schema=everything.schema)[0]}
        without = plan_slices(listed, filters=f, schema=everything.schema)[0]
        expr = _expression(f)
        for key, part in rows.items():
            if key not in kept:
                assert part.filter(expr).num_rows == 0, f"{name}: {f} skipped slice {key} holding matching rows"
        counts[(kind, "planned")] += len(kept)
        counts[(kind, "without stats")] += len(without)
        counts[(kind, "total")] += len(slices)
    return counts


def _report(name: str, counts: Counter) -> None:
    kinds = sorted({k for k, _ in counts})
    print(f"\n{name}: " + "; ".join(f"{k} {counts[(k, 'planned')]}/{counts[(k, 'total')]} "
                                      f"(no stats {counts[(k, 'without stats')]})" for k in kinds))


@pytest.mark.parametrize("name", FAST)
def test_skipped_slices_hold_no_matching_row(name, tmp_path):
    counts = check_skipping(name, _materialize(name, tmp_path))
    _report(name, counts)
    # the statistics skip something beyond the partitions on these tables (column_stats is complete there)
    assert sum(v for (k, w), v in counts.items() if w == "planned") < \
        sum(v for (k, w), v in counts.items() if w == "without stats")


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in WITH_METADATA if n not in FAST])
def test_skipped_slices_hold_no_matching_row_everywhere(name, tmp_path):
    _report(name, check_skipping(name, _materialize(name, tmp_path)))


def _states(name: str, tmp_path: Path):
    """The table after each step, and while each step was under way (its later instants pending, the metadata
    table possibly holding their delta commits already)."""
    fx = HudiFixture(FOLDER / f"{name}.zip", tmp_path)
    for step in range(len(fx.steps)):
        for visible in range(len(fx.new_instants(step)) + 1):
            what = f"{name} step {step}, {visible} of its instants completed"
            yield what, str(fx.materialize_between(step, visible, tmp_path / "table")) if step else \
                str(fx.materialize(step, tmp_path / "table"))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mor_v9_compaction", "mor_v9_pending_compaction", "mor_v9_deletes",
                                  "mor_v9_clustering", "mor_v9_evolve", "mor_v9_rename_drop", "mor_v8_compaction",
                                  "cow_v9_overwrite", "mor_v9_rli"])
def test_skipping_holds_after_and_during_every_step(name, tmp_path):
    for what, url in _states(name, tmp_path):
        if HudiTable(url).timeline.latest_write_time() is not None:
            check_skipping(what, url)


@pytest.mark.parametrize("name", ["mor_v9_basic"])
def test_filtered_reads_equal_the_read_then_filtered(name, tmp_path):
    """End to end through ``read_table(filters=)``: the rows equal those of the unfiltered read, filtered."""
    url = _materialize(name, tmp_path)
    everything = read_table(url)
    for dnf in ([("id", "<", 3)], [("id", "in", [0, 40])], [("name", ">=", "n5")], [("qty", ">", 400)],
                [[("id", "=", 1)], [("region", "=", "c")]]):
        expected = everything.filter(pushed_filters(dnf, everything.schema, "test").expression)
        got = read_table(url, filters=dnf)
        assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, expected.to_pylist())), dnf


def _key_slices(rows: dict[tuple[str, str], pa.Table]) -> dict[str, tuple[str, str]]:
    return {k: key for key, part in rows.items() for k in part.column(RECORD_KEY).to_pylist()}


@pytest.mark.slow
@pytest.mark.parametrize("name", RLI)
def test_record_index_after_and_during_every_step(name, tmp_path):
    """Key by key as of each state of the table: pending writes' entries, which the metadata table may hold
    already, are not taken."""
    for what, url in _states(name, tmp_path):
        table = HudiTable(url)
        if table.timeline.latest_write_time() is None:
            continue
        where = _key_slices(_slice_rows(table)[1])
        part = open_metadata_partition(table, RECORD_INDEX)
        if part is None:
            continue
        assert lookup_keys(part, list(where) + ["no such key"]) == where, what
        for key, group in where.items():
            planned = plan_slices(table, filters=Compare(RECORD_KEY, "=", key))[0]
            assert [(s.partition, s.file_id) for s in planned] == [group], f"{what}: {key}"


@pytest.mark.parametrize("name", RLI)
def test_record_index_finds_each_key_where_the_table_holds_it(name, tmp_path):
    """Each key of the latest snapshot: the record index names the slice that holds it, a key filter plans
    only that slice and reads the key's row; keys the table lacks plan nothing."""
    url = _materialize(name, tmp_path)
    table = HudiTable(url)
    slices, rows = _slice_rows(table)
    where = _key_slices(rows)
    part = open_metadata_partition(table, RECORD_INDEX)
    assert part is not None
    found = lookup_keys(part, list(where) + ["no such key"])
    assert found == where
    schema = table.arrow_schema()
    everything = pa.concat_tables(rows.values())
    for key, group in sorted(where.items())[:8]:
        planned = plan_slices(table, filters=Compare(RECORD_KEY, "=", key), schema=schema)[0]
        assert [(s.partition, s.file_id) for s in planned] == [group]
        got = read_table(url, filters=[(RECORD_KEY, "=", key)])
        assert got.to_pylist() == everything.filter(pc.field(RECORD_KEY) == key).to_pylist()
    keys = sorted(where)[:3]
    planned = plan_slices(table, filters=Compare(RECORD_KEY, "in", (*keys, "no such key")), schema=schema)[0]
    assert {(s.partition, s.file_id) for s in planned} == {where[k] for k in keys}
    assert plan_slices(table, filters=Compare(RECORD_KEY, "=", "no such key"), schema=schema)[0] == []
    print(f"\n{name}: {len(where)} keys looked up, each in the one of {len(slices)} file slices holding it")


def test_fallbacks_skip_nothing_and_say_why_once(tmp_path, caplog):
    """Off (``hoodie.metadata.enable=false``) or with ``column_stats`` not completed, every slice the
    partitions keep is planned; the reason is logged once per table."""
    url = _materialize("mor_v9_part_none", tmp_path)
    f = Compare("id", "<", 1)
    total = len(plan_slices(HudiTable(url))[0])
    assert len(plan_slices(HudiTable(url), filters=f)[0]) < total
    assert len(plan_slices(HudiTable(url, metadata_enable=False), filters=f)[0]) == total
    props = Path(url) / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    props.write_text(re.sub(r"(hoodie\.table\.metadata\.partitions=)column_stats,", r"\1", text))
    with caplog.at_level(logging.INFO, logger="hudi_streaming.hoodie.metadata_table"):
        for _ in range(3):
            assert len(plan_slices(HudiTable(url), filters=f)[0]) == total
    said = [r.getMessage() for r in caplog.records if COLUMN_STATS in r.getMessage()]
    assert len(said) == 1 and "not a completed metadata partition" in said[0], said


def test_slice_pruner_counts_what_each_step_kept(tmp_path):
    url = _materialize("mor_v9_rli", tmp_path)
    table = HudiTable(url)
    slices = plan_slices(table)[0]
    pruner = SlicePruner(table, And((Compare(RECORD_KEY, "in", ("1", "2")), Compare("id", "<", 0))),
                         table.arrow_schema(), latest=True)
    assert pruner.prune(slices) == []
    assert pruner.counts["total"] == len(slices) and 1 <= pruner.counts["record_index"] <= 2
    assert pruner.counts["column_stats"] == 0
