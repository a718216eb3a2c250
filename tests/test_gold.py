"""Every fixture table read by ``hoodie.read_table`` equals what Spark + Hudi returned (the gold outputs)."""
from __future__ import annotations

import json

import pytest

import hoodie
from conftest import FIXTURES, fixture_names
from gold import assert_same_rows, read_gold, scala_windows

# Tables without gold output are still read by the codec and hudi-rs tests.
NO_GOLD = {"mor_avro__table_hfile_log_block": "the zip has no gold output (HFile blocks belong to the metadata "
                                              "table; the block itself is decoded in test_log_codec)"}



@pytest.mark.parametrize("name", [n for n in fixture_names() if n not in NO_GOLD])
def test_snapshot_equals_gold(name, unzip_fixture):
    fx = unzip_fixture(name)
    ours = hoodie.read_table(str(fx.table))
    assert_same_rows(ours, read_gold(fx.root / "gold_data"), f"{name} snapshot")


def _option_cases():
    import zipfile
    for name in fixture_names():
        with zipfile.ZipFile(FIXTURES / "tables" / f"{name}.zip") as z:
            manifest = [n for n in z.namelist() if n.endswith("gold_options/manifest.json")]
            if manifest:
                for case in json.loads(z.read(manifest[0]))["cases"]:
                    yield pytest.param(name, case, id=f"{name}-{case['name']}")


@pytest.mark.parametrize("name,case", list(_option_cases()))
def test_gold_options(name, case, unzip_fixture):
    fx = unzip_fixture(name)
    ours = hoodie.read_table(str(fx.table), columns=case.get("projection"),
                             read_optimized=case.get("read_optimized", False),
                             start=case.get("start_timestamp"), end=case.get("end_timestamp"))
    assert_same_rows(ours, read_gold(fx.root / "gold_options" / case["name"]), f"{name} {case['name']}")


def _incremental_cases():
    for script in sorted((FIXTURES / "sql").glob("*.gold.scala")):
        name = script.name.removesuffix(".gold.scala")
        for window, (start, end) in scala_windows(script).items():
            yield pytest.param(name, window, start, end, id=f"{name}-{window}")


@pytest.mark.parametrize("name,window,start,end", list(_incremental_cases()))
def test_gold_incremental(name, window, start, end, unzip_fixture):
    fx = unzip_fixture(name)
    ours = hoodie.read_table(str(fx.table), start=start, end=end)
    assert_same_rows(ours, read_gold(fx.table / "gold_incremental" / window), f"{name} {window}")
