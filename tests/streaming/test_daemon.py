"""``hudi_streaming.streaming.daemon``: the executors' worker daemon imports the reading stack before it forks,
the other daemons nothing more than Spark's own, and a worker forked after the preload reads a table.

In fresh Pythons (no Spark): the daemon's preload is what runs before ``pyspark.daemon.manager()`` forks.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES
from oracle.hudi_oracle.fixture import HudiFixture  # tests/oracle/hudi_oracle: Hudi-written tables
from support.worker_roles import WATCHED, Roles

PRELOADED = """
import json, os, sys
from hudi_streaming.streaming import daemon
before = set(sys.modules)
daemon.preload(sys.argv[1])
print(json.dumps(sorted(set(sys.modules) - before)))
"""

READ_IN_A_FORKED_CHILD = """
import gc, os, sys, zipfile, tempfile, pathlib
from hudi_streaming.streaming import daemon
daemon.prepare("pyspark.worker")
assert "polars" not in sys.modules
import pyarrow as pa
assert pa.default_memory_pool().backend_name == os.environ["EXPECTED_POOL"], pa.default_memory_pool().backend_name
assert gc.get_freeze_count() > 10000, gc.get_freeze_count()  # the preload's objects, out of the collector's reach
pid = os.fork()
if pid == 0:  # what a forked task worker does: read rows (Arrow's threads, parquet), in the child
    sys.path.insert(0, sys.argv[2])
    from fixture import HudiFixture
    from hudi_streaming import read_table
    work = pathlib.Path(tempfile.mkdtemp())
    fx = HudiFixture(pathlib.Path(sys.argv[1]), work / "fx")
    rows = read_table(str(fx.materialize(len(fx.steps) - 1, work / "table"))).num_rows
    gc.collect()
    os._exit(0 if rows > 0 else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


TASK_AFTER_THE_PRELOAD = """
import json, sys
from pathlib import Path
from hudi_streaming.streaming import daemon
daemon.preload("pyspark.worker")
before = set(sys.modules)
from pyspark import cloudpickle
work = Path(sys.argv[1])
reader = cloudpickle.loads((work / "reader.pickle").read_bytes())
parts = cloudpickle.loads((work / "partitions.pickle").read_bytes())
rows = sum(batch.num_rows for part in parts for batch in reader.read(part))
print(json.dumps({"rows": rows, "loaded": sorted(set(sys.modules) - before)}))
"""


def preloaded(worker: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PRELOADED, worker], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_the_executors_daemon_imports_the_reading_stack_and_no_polars():
    modules = preloaded("pyspark.worker")
    assert {"pyspark.worker", "pyarrow.parquet", "pandas", "hudi_streaming.streaming.source"} <= set(modules)
    assert not [m for m in modules if m.split(".")[0] in ("polars", "s3fs", "aiobotocore", "botocore")]


def test_the_one_worker_daemons_import_nothing_ahead():
    for worker in ("pyspark.sql.worker.lookup_data_sources", "pyspark.sql.worker.create_data_source",
                   "pyspark.sql.worker.plan_data_source_read"):
        assert preloaded(worker) == []


@pytest.mark.parametrize("given, pool", [(None, "jemalloc"), ("system", "system")])
def test_a_worker_forked_after_the_preload_reads_a_table(given, pool):
    """The executors' daemon reads with Arrow's jemalloc pool unless the environment names one (then that one),
    freezes the preload's objects, and a worker it forks then reads a table (and collects its garbage)."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    env["EXPECTED_POOL"] = pool
    if given is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = given
    proc = subprocess.run([sys.executable, "-c", READ_IN_A_FORKED_CHILD, str(FIXTURES / "hudi" / "mor_v9_basic.zip"),
                           str(FIXTURES.parent / "oracle" / "hudi_oracle")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_one_worker_daemons_keep_arrows_default_pool():
    """Only the executors' daemon chooses Arrow's pool: the planner roles' daemons leave the environment alone."""
    code = ("import os; from hudi_streaming.streaming import daemon; "
            "daemon.prepare('pyspark.sql.worker.plan_data_source_read'); "
            "print(os.environ.get('ARROW_DEFAULT_MEMORY_POOL'))")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "None"


@pytest.mark.slow
def test_a_task_after_the_preload_imports_nothing_heavy_of_its_own(tmp_path):
    """What a task worker imports after the fork it pays for in every worker: of the heavy modules only polars
    (not safe to import before a fork), when it decodes a log block; of this package's, the log decoder's
    polars part at most (``source`` imports the reading stack where it is used, so the preload names it)."""
    fx = HudiFixture(FIXTURES / "hudi" / "mor_v9_basic.zip", tmp_path / "fx")
    roles = Roles(fx.materialize(len(fx.steps) - 1, tmp_path / "table"), tmp_path / "run")
    roles["planner"], roles["runner"]  # the pickled reader and partitions a task gets
    out = subprocess.run([sys.executable, "-c", TASK_AFTER_THE_PRELOAD, str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    task = json.loads(out.stdout.strip().splitlines()[-1])
    assert task["rows"] > 0
    assert [m for m in task["loaded"] if m in WATCHED and m != "polars"] == []
    assert [m for m in task["loaded"] if m.startswith("hudi_streaming.")] == []
