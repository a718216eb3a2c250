"""The batch API beyond the gold cases: any fsspec URL, partition filters, errors, and deterministic output."""
from __future__ import annotations

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.gold import assert_same_rows, read_gold

import hudi_streaming
from hudi_streaming import hoodie, read_table

V9 = "mor_avro__v9_txns_simple_meta"


def _copy_to_memory(local_root, name: str) -> str:
    mem = fsspec.filesystem("memory")
    for path in local_root.rglob("*"):
        if path.is_file():
            with mem.open(f"/{name}/{path.relative_to(local_root).as_posix()}", "wb") as f:
                f.write(path.read_bytes())
    return f"memory://{name}"


@pytest.mark.parametrize("name", [V9, "mor_avro__v6_trips_8i3d", "mor_parquet__v6_nonpartitioned_rollback"])
def test_reads_through_fsspec_memory_url(name, unzip_fixture):
    fx = unzip_fixture(name)
    url = _copy_to_memory(fx.table, f"mem-{name}")
    assert_same_rows(read_table(url), read_gold(fx.root / "gold_data"), f"{name} via memory://")


def test_partition_filter_dict_and_callable(unzip_fixture):
    fx = unzip_fixture(V9)
    full = read_table(str(fx.table))
    for pf in ({"region": "us"}, {"region": ["us", "eu"]}, lambda v: v["region"] != "apac"):
        got = read_table(str(fx.table), partition_filter=pf)
        wanted = {"us"} if pf == {"region": "us"} else {"us", "eu"}
        expected = full.filter(pc.is_in(full.column("region"), value_set=pa.array(sorted(wanted))))
        assert_same_rows(got, expected, f"partition filter {pf}")
        assert got.num_rows < full.num_rows


def test_partition_filter_on_unknown_field_is_an_error(unzip_fixture):
    with pytest.raises(hudi_streaming.OptionError, match="not partition fields"):
        read_table(str(unzip_fixture(V9).table), partition_filter={"country": "x"})


def test_unknown_column_is_an_error_listing_the_columns(unzip_fixture):
    with pytest.raises(hudi_streaming.OptionError, match="unknown columns.*nope.*txn_id"):
        read_table(str(unzip_fixture(V9).table), columns=["txn_id", "nope"])


def test_options_are_keyword_only_and_checked(unzip_fixture):
    url = str(unzip_fixture(V9).table)
    with pytest.raises(TypeError):
        read_table(url, ["txn_id"])  # options are keyword-only
    with pytest.raises(hudi_streaming.OptionError, match="merge_type"):
        read_table(url, merge_type="latest")
    assert read_table(url, merge_type="skip_merge").num_rows >= read_table(url).num_rows


def test_output_is_deterministic(unzip_fixture):
    url = str(unzip_fixture(V9).table)
    assert read_table(url).equals(read_table(url))


def test_as_of_each_instant_only_sees_instants_up_to_it(unzip_fixture):
    url = str(unzip_fixture(V9).table)
    table = hoodie.HudiTable(url)
    for entry in table.timeline.completed_writes():
        t = read_table(url, as_of=entry.requested_time)
        times = t.column("_hoodie_commit_time").to_pylist()
        assert all(x <= entry.requested_time for x in times), entry


def test_incremental_read_of_each_instant_matches_the_generating_sql(unzip_fixture):
    """One window per completed write of the v9 table: (previous completion, own completion]."""
    url = str(unzip_fixture(V9).table)
    writes = sorted(hoodie.HudiTable(url).timeline.completed_writes(), key=lambda e: e.completion_time)
    counts, previous = [], None
    for e in writes:
        counts.append(read_table(url, start=previous, end=e.completion_time).num_rows)
        previous = e.completion_time
    # the generating SQL, statement by statement: insert 8, update 1, delete, update 1, delete, update 1,
    # insert 2, insert overwrite 2, insert 2, insert 2, compaction and clustering (rows keep their commit
    # times, so none belong to them), insert 2
    assert counts == [8, 1, 0, 1, 0, 1, 2, 2, 2, 2, 0, 0, 2]


def test_a_symbolic_link_out_of_the_table_is_refused_not_followed(unzip_fixture, tmp_path):
    """Data files replaced by links to files outside the table root: reading names one instead of following it;
    links that stay inside the root are ordinary files."""
    import shutil
    table = tmp_path / "table"
    shutil.copytree(unzip_fixture(V9).table, table)
    rows = read_table(str(table)).num_rows
    outside, inside = tmp_path / "elsewhere", table / ".hoodie" / ".aux" / "copies"
    outside.mkdir()
    inside.mkdir(parents=True)
    data = [p for p in table.rglob("*.parquet") if ".hoodie" not in p.relative_to(table).parts]
    for f in data:
        shutil.move(f, outside / f.name)
        f.symlink_to(outside / f.name)
    with pytest.raises(hudi_streaming.InvalidTableContentError,
                       match=f"\\.parquet: a symbolic link to {outside}/.*, outside the table root; not followed"):
        read_table(str(table))
    for f in data:
        shutil.copy(outside / f.name, inside / f.name)
        f.unlink()
        f.symlink_to(inside / f.name)
    assert read_table(str(table)).num_rows == rows
