"""Each Python worker PySpark starts for this source imports only what its role needs (``worker_roles``).

Why it matters: PySpark 4 runs the data-source lookup, ``schema()``, the planner, the stream reader's driver
calls and every task in Python workers of their own; what one imports, it pays for in start-up time and memory
in every such process (nine in a small local job). The lookup worker runs in every session that resolves a data
source by name, Hudi or not. Each role is replayed in a fresh Python (no Spark) on a MERGE_ON_READ table Hudi
wrote, and its own part's ``sys.modules`` is checked, so a module-level import that puts Arrow's readers, polars
or an object-store client back into these workers fails here. The roles that read the table's files (planner,
runner, task: a few seconds each on two cores) are the slow part.
"""
from __future__ import annotations

import pytest
from conftest import FIXTURES
from oracle.hudi_oracle.fixture import HudiFixture  # tests/oracle/hudi_oracle: Hudi-written tables
from support.worker_roles import RoleReport, Roles

#: object-store clients: a table on the local file system needs none of them, in any role
STORE_CLIENTS = ("s3fs", "aiobotocore", "botocore", "boto3")
#: what only reading rows needs: Arrow's file readers, the optional accelerator, Lance
READERS = ("pyarrow.parquet", "pyarrow.dataset", "pyarrow.orc", "pyarrow.fs", "polars", "lance")


@pytest.fixture(scope="module")
def roles(tmp_path_factory) -> Roles:
    work = tmp_path_factory.mktemp("roles")
    fx = HudiFixture(FIXTURES / "hudi" / "mor_v9_basic.zip", work / "fx")
    return Roles(fx.materialize(len(fx.steps) - 1, work / "table"), work / "run")


def loaded(report: RoleReport, modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if report.loads(m)]


def test_registration_imports_the_data_source_class_alone(roles):
    """The lookup worker needs the name: PySpark's data source API and our data source module, nothing else."""
    report = roles["registration"]
    assert report.done == {"name": "hudi_streaming"}
    ours = sorted(m for m in report.loaded if m == "pyspark_hudi_streaming" or m.startswith("hudi_streaming"))
    assert ours == ["hudi_streaming", "hudi_streaming.errors", "hudi_streaming.streaming",
                    "hudi_streaming.streaming.data_source", "pyspark_hudi_streaming"]
    assert loaded(report, ("pyarrow", "numpy", "pydantic", "fsspec", "fastavro") + READERS + STORE_CLIENTS) == []


def test_schema_imports_no_reader_and_no_store_client(roles):
    """``schema()`` reads the table's configuration and timeline for its schema, no rows."""
    report = roles["schema"]
    assert report.done["columns"] > 5  # Hudi's meta columns and the table's
    assert loaded(report, READERS + STORE_CLIENTS) == []


@pytest.mark.slow
def test_the_planner_imports_the_options_and_the_reader_class_alone(roles):
    """The planner makes a stream reader and pickles it for the tasks: it reads nothing, so it loads neither the
    format layer's table and readers nor the stream's planning, state or consumer (``source`` imports them where
    they are used), only the options it parses."""
    report = roles["planner"]
    assert report.done == {"reader": "HudiStreamReader"}
    assert loaded(report, ("pyarrow.compute", "fastavro", "fsspec") + READERS + STORE_CLIENTS) == []
    ours = sorted(m for m in report.loaded if m.startswith("hudi_streaming."))
    assert ours == ["hudi_streaming.errors", "hudi_streaming.hoodie", "hudi_streaming.hoodie.deletes",
                    "hudi_streaming.hoodie.zones", "hudi_streaming.streaming", "hudi_streaming.streaming.data_source",
                    "hudi_streaming.streaming.options", "hudi_streaming.streaming.packing",
                    "hudi_streaming.streaming.source", "hudi_streaming.streaming.storage_options"]


@pytest.mark.slow
def test_the_driver_calls_import_no_store_client_for_a_local_table(roles):
    report = roles["runner"]
    assert report.done["partitions"] > 0
    assert loaded(report, ("pyarrow.orc", "pyarrow.dataset", "lance") + STORE_CLIENTS) == []


@pytest.mark.slow
def test_a_task_imports_what_reading_needs(roles):
    report = roles["task"]
    assert report.done["rows"] > 0
    assert report.loads("pyarrow.parquet")  # the table's base files are parquet
    assert loaded(report, ("pyarrow.orc", "pyarrow.dataset", "lance") + STORE_CLIENTS) == []
