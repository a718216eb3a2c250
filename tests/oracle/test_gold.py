"""Every fixture table read by ``hudi_streaming.read_table`` equals what Spark + Hudi returned (the gold outputs)."""
from __future__ import annotations

import csv
import json
import zipfile

import pytest
from conftest import FIXTURES, LOG_FILES, fixture_names
from support.gold import assert_same_rows, read_gold

from hudi_streaming import read_table

# Tables without gold output are still read by the codec and hudi-rs tests.
NO_GOLD = {"mor_avro__table_hfile_log_block": "the zip has no gold output (HFile blocks belong to the metadata "
                                              "table; the block itself is decoded in test_log_codec)"}



@pytest.mark.parametrize("name", [n for n in fixture_names() if n not in NO_GOLD])
def test_snapshot_equals_gold(name, unzip_fixture):
    fx = unzip_fixture(name)
    ours = read_table(str(fx.table))
    assert_same_rows(ours, read_gold(fx.root / "gold_data"), f"{name} snapshot")


def _option_cases():
    for name in fixture_names():
        with zipfile.ZipFile(FIXTURES / "tables" / f"{name}.zip") as z:
            manifest = [n for n in z.namelist() if n.endswith("gold_options/manifest.json")]
            if manifest:
                for case in json.loads(z.read(manifest[0]))["cases"]:
                    yield pytest.param(name, case, id=f"{name}-{case['name']}")


@pytest.mark.parametrize("name,case", list(_option_cases()))
def test_gold_options(name, case, unzip_fixture):
    fx = unzip_fixture(name)
    ours = read_table(str(fx.table), columns=case.get("projection"),
                             read_optimized=case.get("read_optimized", False),
                             start=case.get("start_timestamp"), end=case.get("end_timestamp"))
    assert_same_rows(ours, read_gold(fx.root / "gold_options" / case["name"]), f"{name} {case['name']}")


def _incremental_windows() -> list[dict]:
    with open(FIXTURES / "incremental_windows.csv", newline="") as f:
        return list(csv.DictReader(f))


def _incremental_cases():
    for w in _incremental_windows():
        yield pytest.param(w["table"], w["window"], w["start"], w["end"], id=f"{w['table']}-{w['window']}")


@pytest.mark.parametrize("name,window,start,end", list(_incremental_cases()))
def test_gold_incremental(name, window, start, end, unzip_fixture):
    fx = unzip_fixture(name)
    ours = read_table(str(fx.table), start=start, end=end)
    assert_same_rows(ours, read_gold(fx.table / "gold_incremental" / window), f"{name} {window}")


def test_the_fixture_set_is_complete():
    """The suite can never shrink silently: a lost zip, gold case or window fails here, not as fewer tests."""
    assert len(fixture_names()) == 56
    assert len([n for n in fixture_names() if n not in NO_GOLD]) == 55
    assert len(list(_option_cases())) == 148
    assert len(LOG_FILES) == 4
    assert sorted(p.name for p in (FIXTURES / "commit_metadata").iterdir()) == ["v6_commit.json",
                                                                             "v8_deltacommit.avro"]
    # every gold_incremental window in the zips is listed in incremental_windows.csv, and only those
    in_zips = set()
    for name in fixture_names():
        with zipfile.ZipFile(FIXTURES / "tables" / f"{name}.zip") as z:
            in_zips |= {(name, n.split("gold_incremental/")[1].split("/")[0]) for n in z.namelist()
                        if "gold_incremental/" in n and n.split("gold_incremental/")[1].split("/")[0]}
    assert {(w["table"], w["window"]) for w in _incremental_windows()} == in_zips
    assert len(in_zips) == 7
