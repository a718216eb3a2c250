"""The roles PySpark 4 gives a Python data source's worker processes, each replayed in a fresh Python without
Spark: what each imports, how long its own part takes and its memory.

PySpark runs the source's steps in separate Python worker processes, each of which
first imports its PySpark worker module and then ours:

* ``registration`` — ``pyspark.sql.worker.lookup_data_sources`` imports every ``pyspark_*`` module and reads
  its ``DefaultSource`` (every Spark session's first data-source lookup, whether or not it reads Hudi);
* ``schema`` — ``pyspark.sql.worker.create_data_source`` unpickles the class (by reference: an import) and
  calls ``schema()`` at ``load()``;
* ``planner`` — ``pyspark.sql.worker.plan_data_source_read`` makes a stream reader and pickles it for tasks;
* ``runner`` — ``pyspark.sql.streaming.python_streaming_source_runner`` holds the driver-side stream reader:
  ``initialOffset``, ``latestOffset``, ``partitions``, ``commit``;
* ``task`` — ``pyspark.worker`` unpickles the reader and a partition and calls ``read()``.

Each role runs in its own subprocess (:func:`run_role`; :class:`Roles` runs first the roles whose output a role
takes from ``work``) and reports the modules its own part loaded, its seconds and its RSS. Used by
``tests/streaming/test_worker_imports.py`` (which modules each role may load) and ``bench/bench_worker_roles.py``
(the figures).
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: role -> the PySpark worker module that runs it (imported first: what Spark's worker has loaded already)
WORKER_MODULES = {
    "registration": "pyspark.sql.worker.lookup_data_sources",
    "schema": "pyspark.sql.worker.create_data_source",
    "planner": "pyspark.sql.worker.plan_data_source_read",
    "runner": "pyspark.sql.streaming.python_streaming_source_runner",
    "task": "pyspark.worker",
}
ROLES = list(WORKER_MODULES)

#: the third-party modules whose loading matters: time and memory of their own, or an object-store client
WATCHED = ("pyarrow", "pyarrow.parquet", "pyarrow.dataset", "pyarrow.compute", "pyarrow.orc", "pyarrow.fs",
           "numpy", "polars", "fastavro", "pydantic", "fsspec", "s3fs", "aiobotocore", "botocore", "boto3",
           "lance", "rich", "pandas")

# One program per role; ``T`` is the table's path, ``W`` the work folder. Each ends with ``done`` holding what
# the role produced (row counts, the schema), so the caller can check the role did its work.
_PROGRAMS = {
    "registration": """
import pyspark_hudi_streaming
done = {"name": pyspark_hudi_streaming.DefaultSource.name()}
""",
    "schema": """
from hudi_streaming.streaming.data_source import HudiStreamingDataSource
schema = HudiStreamingDataSource(CaseInsensitiveDict({"path": T})).schema()
(W / "schema.json").write_text(schema.json())
done = {"columns": len(schema.fields)}
""",
    "planner": """
from pyspark.sql.types import StructType
from hudi_streaming.streaming.data_source import HudiStreamingDataSource
schema = StructType.fromJson(json.loads((W / "schema.json").read_text()))
reader = HudiStreamingDataSource(CaseInsensitiveDict(OPTIONS)).streamReader(schema)
(W / "reader.pickle").write_bytes(cloudpickle.dumps(reader))
done = {"reader": type(reader).__name__}
""",
    "runner": """
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import StructType
from hudi_streaming.streaming.data_source import HudiStreamingDataSource
schema = StructType.fromJson(json.loads((W / "schema.json").read_text()))
reader = HudiStreamingDataSource(CaseInsensitiveDict(OPTIONS)).streamReader(schema)
start = reader.initialOffset()
end = reader.latestOffset(start, ReadAllAvailable())
parts = reader.partitions(start, end)
(W / "partitions.pickle").write_bytes(cloudpickle.dumps(parts))
reader.commit(end)
done = {"partitions": len(parts)}
""",
    "task": """
reader = cloudpickle.loads((W / "reader.pickle").read_bytes())
parts = cloudpickle.loads((W / "partitions.pickle").read_bytes())
done = {"rows": sum(batch.num_rows for part in parts for batch in reader.read(part))}
""",
}

_HARNESS = """
import json, sys, time
from pathlib import Path
import {worker}
from pyspark import cloudpickle
from pyspark.sql.datasource import CaseInsensitiveDict

def rss():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return {{k: int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM")}}

T, W = sys.argv[1], Path(sys.argv[2])
OPTIONS = {{"path": T, "stateLocation": str(W / "state")}}
before, rss_before = set(sys.modules), rss()
t0 = time.perf_counter()
{program}
seconds = time.perf_counter() - t0
print(json.dumps({{"done": done, "seconds": seconds, "rss_before": rss_before, "rss": rss(),
                  "loaded": sorted(set(sys.modules) - before)}}))
"""


@dataclass
class RoleReport:
    role: str
    done: dict  # what the role produced
    seconds: float  # its own part: imports and calls, after the PySpark worker module's import
    rss_before: int  # bytes, once the PySpark worker module is imported
    rss: int  # bytes, at the role's end
    hwm: int  # bytes, the process's peak
    loaded: list[str]  # the modules its own part loaded

    def loads(self, module: str) -> bool:
        return module in self.loaded


def run_role(role: str, table: Path, work: Path, python: str = sys.executable,
             flags: tuple[str, ...] = ()) -> RoleReport:
    """One role in a fresh ``python`` (with ``flags``, e.g. ``-X importtime``); stderr goes to
    ``work/<role>.stderr``."""
    code = _HARNESS.format(worker=WORKER_MODULES[role], program=_PROGRAMS[role])
    with open(work / f"{role}.stderr", "w") as err:
        proc = subprocess.run([python, *flags, "-c", code, str(table), str(work)], stdout=subprocess.PIPE,
                              stderr=err, text=True)
    if proc.returncode:
        raise AssertionError(f"role {role} failed (exit {proc.returncode}): "
                             f"{(work / f'{role}.stderr').read_text()[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return RoleReport(role, out["done"], out["seconds"], out["rss_before"]["VmRSS"], out["rss"]["VmRSS"],
                      out["rss"]["VmHWM"], out["loaded"])


#: what a role reads that others leave in the work folder
NEEDS = {"registration": (), "schema": (), "planner": ("schema",), "runner": ("schema",), "task": ("planner", "runner")}


class Roles:
    """The roles on one table, each run once when first asked for, after the roles it needs (:data:`NEEDS`)."""

    def __init__(self, table: Path, work: Path, python: str = sys.executable):
        self.table, self.work, self.python = table, work, python
        self.reports: dict[str, RoleReport] = {}
        work.mkdir(parents=True, exist_ok=True)

    def __getitem__(self, role: str) -> RoleReport:
        if role not in self.reports:
            for need in NEEDS[role]:
                self[need]
            self.reports[role] = run_role(role, self.table, self.work, self.python)
        return self.reports[role]
