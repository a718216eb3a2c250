"""The package as a user gets it: the built wheel, installed (not editable) into a fresh environment, used from a
working folder full of names that would shadow generic imports, with no ``register`` call.

The fresh venv (conftest's ``wheel_venv``) borrows the dependencies of the test environment, not its
editable hudi_streaming.
"""
from __future__ import annotations

import json
import os
import subprocess
import textwrap
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

from hudi_streaming import read_table

SHADOWS = ("state", "monitor", "streaming", "hoodie")


@pytest.mark.slow  # 6 s: builds the wheel
def test_the_wheel_has_exactly_two_top_level_names(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    top = {n.split("/")[0].removesuffix(".py") for n in names if ".dist-info/" not in n}
    assert top == {"hudi_streaming", "pyspark_hudi_streaming"}
    # every layer is inside, with the typing marker, and every module of the source tree made it
    for layer in SHADOWS:
        assert f"hudi_streaming/{layer}/__init__.py" in names
    assert "hudi_streaming/py.typed" in names
    tree = {str(p.relative_to(REPO)) for layer in SHADOWS for p in (REPO / layer).rglob("*.py")}
    assert {n.removeprefix("hudi_streaming/") for n in names if n.startswith(SHADOWS, len("hudi_streaming/"))} \
        == tree


def _shadowing_workdir(path: Path) -> Path:
    """Folders and modules named like the old top-level packages, each failing loudly if imported."""
    path.mkdir()
    for i, name in enumerate(SHADOWS):
        boom = f"raise ImportError('the user\\'s own {name} was imported instead of hudi_streaming\\'s')\n"
        if i % 2:  # a module state.py / streaming.py ...
            (path / f"{name}.py").write_text(boom)
        else:  # ... or a folder state/ / hoodie/ with an __init__
            (path / name).mkdir()
            (path / name / "__init__.py").write_text(boom)
    return path


STREAM_JOB = textwrap.dedent('''
    import json, sys
    import hudi_streaming
    from pyspark.sql import SparkSession

    table, out = sys.argv[1], sys.argv[2]
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    keys = []
    query = (spark.readStream.format("hudi_streaming").option("stateLocation", "state/hudi")  # a folder named state
             .load(table).writeStream
             .foreachBatch(lambda df, _: keys.extend(r[0] for r in df.select("_hoodie_record_key").collect()))
             .option("checkpointLocation", "checkpoint").trigger(availableNow=True).start())
    query.awaitTermination()
    json.dump({"keys": keys, "package": hudi_streaming.__file__}, open(out, "w"))
''')


def test_the_installed_wheel_streams_from_a_working_folder_that_shadows_generic_names(wheel_venv, tmp_path,
                                                                                      unzip_fixture):
    venv = wheel_venv(tmp_path / "venv")
    python, site = venv.python, venv.site

    work = _shadowing_workdir(tmp_path / "job")
    (work / "job.py").write_text(STREAM_JOB)
    table = str(unzip_fixture("mor_avro__v9_txns_simple_meta").table)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PYSPARK_PYTHON"] = str(python)
    proc = subprocess.run([str(python), "job.py", table, "result.json"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((work / "result.json").read_text())
    assert Path(result["package"]).is_relative_to(site), result["package"]  # the wheel's copy, not the checkout
    snapshot = read_table(table, columns=["_hoodie_record_key"]).column("_hoodie_record_key").to_pylist()
    assert sorted(result["keys"]) == sorted(snapshot) and snapshot
    assert (work / "state" / "hudi").is_dir()  # the stream's state went into the user's folder named state


def test_a_package_that_cannot_be_imported_where_spark_runs_says_why(wheel_venv, tmp_path, unzip_fixture):
    """Spark would report only DATA_SOURCE_NOT_FOUND; the registration module's stand-in names the import error
    (here a dependency shadowed by a broken module in the job's working folder, which Spark's Python processes
    put first on their path)."""
    venv = wheel_venv(tmp_path / "venv")
    work = tmp_path / "job"
    work.mkdir()
    (work / "fastavro.py").write_text("raise ImportError('this machine has a broken fastavro')\n")
    (work / "job.py").write_text(textwrap.dedent('''
        import sys
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        spark.read.format("hudi_streaming").load(sys.argv[1]).count()
    '''))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env["PYSPARK_PYTHON"] = str(venv.python)
    proc = subprocess.run([str(venv.python), "job.py", str(unzip_fixture("mor_avro__v9_txns_simple_meta").table)],
                          cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "DATA_SOURCE_NOT_FOUND" not in proc.stderr
    assert "hudi_streaming cannot be imported by" in proc.stderr and "this machine has a broken fastavro" in proc.stderr
