"""The source on a real Spark standalone cluster, shipped the ways the README gives, with the driver SIGKILLed.

A master and two workers (1 core, 1 GB each) run on 127.0.0.1 from the launcher the pyspark package ships
(``pyspark/bin/spark-class``, ``SPARK_HOME`` = the package). Jobs go in with ``spark-submit`` in client mode.
Every command — the master's, the workers', the load generator's, the job's — is read from
``docker/compose.yaml``, with its ``${CLUSTER_*}`` variables set to this machine's hosts, free ports and paths:
the compose file runs exactly what this test ran.

The package is installed from the built wheel (not editable) into a fresh venv that the driver and the
executors run (``PYSPARK_PYTHON``, ``PYSPARK_DRIVER_PYTHON``) — the recommended recipe — and the other two
recipes (a packed venv in ``--archives``; the wheel as a zip in ``--py-files`` plus ``PYTHONPATH``) are run too.
What a run delivered is checked against the table itself: the snapshot read with ``read_table``.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pyspark
import pytest
from cluster_job import parse_progress
from conftest import REPO, Venv
from support import waits
from support.verify import apply_upserts, delivered, state_differences
from support.waits import free_port

from hudi_streaming import read_table
from hudi_streaming.hoodie import HudiTable
from hudi_streaming.writer.loadgen import LoadGenerator

pytestmark = pytest.mark.spark

COMPOSE = REPO / "docker" / "compose.yaml"
JOB = Path(__file__).resolve().parent / "cluster_job.py"
SPARK_HOME = Path(pyspark.__file__).parent
WORKERS = ("worker1", "worker2")
#: how long anything may take before the test gives up on it (a hang fails, with the logs, instead of blocking)
PATIENCE = 300.0


def compose_commands(variables: dict[str, str]) -> dict[str, list[str]]:
    """Each service's ``command`` in docker/compose.yaml, its ``${NAME:-default}`` replaced as compose does."""
    text = COMPOSE.read_text()
    services = re.search(r"^services:\n(.*?)(?=^\S|\Z)", text, re.M | re.S)
    assert services, f"{COMPOSE}: no services"
    commands: dict[str, list[str]] = {}
    service: str | None = None
    used: set[str] = set()

    def value(v: re.Match) -> str:
        used.add(v[1])
        return variables.get(v[1], v[2])

    for m in re.finditer(r"^  ([\w-]+):\s*$|^    command: (\[.*?\])\s*$", services.group(1), re.M | re.S):
        if m.group(1):
            service = m.group(1)
        else:
            assert service, f"{COMPOSE}: a command outside a service"
            commands[service] = [re.sub(r"\$\{(\w+):-([^}]*)\}", value, a) for a in json.loads(m.group(2))]
    # a variable renamed in one place only would quietly leave the compose network's default in the command
    assert used == set(variables), f"{COMPOSE} uses {sorted(used)}, the test sets {sorted(variables)}"
    return commands


class Proc:
    """A command in its own process group (so the JVM and the Python processes it starts die with it), its
    output in a log file (a daemon's output would fill a pipe nobody reads)."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], log: Path):
        self.log = log
        self.out = log.with_suffix(".stdout")  # apart from the JVM's log lines, which would split its lines
        with open(log, "wb") as err, open(self.out, "wb") as out:
            self.popen = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True)

    def text(self) -> str:
        """What the process printed: its standard output, then its log (standard error)."""
        return self.out.read_text(errors="replace") + self.log.read_text(errors="replace")

    def signal(self, sig: int) -> None:
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.popen.wait()

    def stop(self) -> None:
        """SIGTERM (Spark's daemons shut down their executors), then SIGKILL for whatever is left."""
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(30)
        except subprocess.TimeoutExpired:
            pass  # killed below
        self.kill()

    def wait_ok(self) -> None:
        try:
            rc: int | None = self.popen.wait(PATIENCE)
        except subprocess.TimeoutExpired:
            rc = None
        assert rc == 0, f"{self.log.name} exited {rc}:\n{self.text()[-4000:]}"

    def progress(self) -> list[dict[str, str]]:
        """The job's ``progress`` lines (cluster_job.py), as dicts."""
        return parse_progress(self.out.read_text(errors="replace"))

    def app_id(self) -> str:
        m = re.search(r"Connected to Spark cluster with app ID (app-[\d-]+)", self.text())
        assert m, f"{self.log.name}: no application id"
        return m.group(1)


def wait_for(condition, what: str, *logs: Proc) -> None:
    waits.wait_for(condition, what, PATIENCE,
                   explain=lambda: "\n".join(f"--- {p.log.name}\n{p.text()[-3000:]}" for p in logs))


@dataclass
class Cluster:
    root: Path
    commands: dict[str, list[str]]
    env: dict[str, str]  # SPARK_HOME, SPARK_LOCAL_IP, PATH, and the Pythons of the recommended recipe
    webui: str
    started: itertools.count = field(default_factory=itertools.count)  # numbers the log files

    def start(self, service: str, cwd: Path, argv: list[str] | None = None, **env: str) -> Proc:
        """Run ``service``'s compose command (or ``argv``) in ``cwd``, with extra environment ``env``."""
        return Proc(argv or self.commands[service], cwd, {**self.env, **env},
                    self.root / f"{next(self.started):02d}-{service}.log")

    def submit_options(self) -> list[str]:
        """The stream's spark-submit command up to the application file: to submit the job another way."""
        argv = self.commands["stream"]
        return argv[:argv.index(str(JOB))]

    def tasks_on_workers(self, app: str) -> dict[str, int]:
        """Tasks the application's executors finished, per worker (from the executors' logs in the work dirs)."""
        return {w: sum(f.read_text(errors="replace").count("Finished task")
                       for f in (self.root / w / "work" / app).glob("*/stderr")) for w in WORKERS}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, wheel_venv):
    root = tmp_path_factory.mktemp("cluster")
    venv: Venv = wheel_venv(root / "venv")
    master_port, webui_port = free_port(), free_port()
    commands = compose_commands({
        "CLUSTER_MASTER_HOST": "127.0.0.1", "CLUSTER_MASTER_PORT": str(master_port),
        "CLUSTER_MASTER_WEBUI_PORT": str(webui_port), "CLUSTER_WORKER1_HOST": "127.0.0.1",
        "CLUSTER_WORKER2_HOST": "127.0.0.1", "CLUSTER_WORKER_WEBUI_PORT": "0",  # 0: any free port
        "CLUSTER_JOB": str(JOB)})
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_CONF_DIR")}
    # spark-class, spark-submit and python resolve as in the image: the package's launchers, the venv's Python
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
               PATH=os.pathsep.join([str(SPARK_HOME / "bin"), str(venv.python.parent), env.get("PATH", "")]),
               PYSPARK_PYTHON=str(venv.python), PYSPARK_DRIVER_PYTHON=str(venv.python))
    c = Cluster(root, commands, env, f"http://127.0.0.1:{webui_port}/json/")
    daemons = [c.start("master", root)]
    try:
        for w in WORKERS:
            (root / w).mkdir()
            daemons.append(c.start(w, root / w))

        def registered() -> bool:
            try:
                with urllib.request.urlopen(c.webui, timeout=5) as r:
                    return json.load(r)["aliveworkers"] == len(WORKERS)
            except (OSError, ValueError):  # not listening yet, or a starting UI's empty answer (not JSON)
                return False

        wait_for(registered, "both workers to register with the master", *daemons)
        yield c
    finally:
        for d in reversed(daemons):
            d.stop()


def check_sink(out: Path, table: Path) -> int:
    """The sink's batches applied in order rebuild the table's snapshot, no version arrived twice; rows read."""
    rows = delivered(out)
    assert rows, "nothing was delivered"
    twice = [k for k, n in Counter((r["_hoodie_record_key"], r["_hoodie_commit_time"]) for r in rows).items() if n > 1]
    assert twice == [], f"delivered more than once: {twice[:10]}"
    snapshot = read_table(str(table))
    assert snapshot.num_rows
    assert state_differences(apply_upserts(rows), snapshot) == []
    return len(rows)


def test_killed_driver_on_a_standalone_cluster_delivers_each_change_once(cluster, tmp_path):
    """The load generator writes (upserts, deletes, compaction, clean) while the stream runs; the driver's
    process group is SIGKILLed while the sink writes a batch, and the job is submitted again from its checkpoint.

    The writer runs twice (it resumes after its last commit): once from the stream's start, once after the
    restarted stream has delivered a batch — so the restarted stream surely tails a table being written,
    however slowly the cluster starts. The kill comes in batch 2 or later: the writer's first run leaves more
    than 200 keys, each delivered at least once, at most 50 rows a batch.
    """
    data = tmp_path  # compose's shared volume: the writer and the job run here, with its relative paths
    out = data / "stream" / "out"
    writer = cluster.start("writer", data)
    procs = [writer]
    try:
        wait_for((data / "table" / ".hoodie" / "hoodie.properties").exists, "the table", writer)  # the healthcheck
        first = cluster.start("stream", data)
        procs.append(first)

        def writing_a_batch() -> bool:
            """The sink is writing a batch that has not completed (its folder is there, its progress is not)."""
            started = [int(p.name.split("=")[1]) for p in out.glob("batch=*")]
            done = [int(p["batch"]) for p in first.progress()]
            return bool(started) and max(started) >= 2 and max(started) > max(done, default=-1)

        wait_for(writing_a_batch, "the stream's sink to write its third batch", first, writer)
        first.kill()
        second = cluster.start("stream", data)
        procs.append(second)
        writer.wait_ok()
        wait_for(lambda: second.progress() != [], "the restarted stream's first batch", second)
        writer = cluster.start("writer", data)
        procs.append(writer)
        writer.wait_ok()
        last = HudiTable(str(data / "table")).timeline.latest_write_time()

        def caught_up() -> bool:
            return any(p["cursor"] == last and p["rows"] == "0" for p in second.progress())

        wait_for(caught_up, f"the restarted stream to reach the writer's last instant {last}", second)
    finally:
        for p in procs:
            p.kill()
    assert check_sink(out, data / "table") > 0
    # the tasks ran in the workers' executors; the live batches span all three partitions, so both workers'
    assert sum(cluster.tasks_on_workers(first.app_id()).values()) > 0
    tasks = cluster.tasks_on_workers(second.app_id())
    assert all(tasks.values()), tasks


@pytest.fixture(scope="module")
def small_table(tmp_path_factory) -> Path:
    """A MOR table with updates, deletes and a compaction, for the one-shot recipe runs."""
    table = tmp_path_factory.mktemp("recipes") / "table"
    LoadGenerator(str(table), keys=120, partitions=2, seed=5, batch=30).run(10, compact_every=4)
    return table


def test_archives_and_py_files_recipes_deliver_the_table(cluster, small_table, wheel, wheel_venv, tmp_path):
    """The README's other two ways to ship the package, each an AvailableNow run of the same job.

    ``--archives venv.tar.gz#environment``: the executors run the packed venv unpacked in their work
    directories; the driver needs the package too (a Python data source is looked up and planned in Python
    processes on the driver), so the same archive is unpacked beside the job. ``--py-files``: a wheel is a zip
    of pure Python, but Spark puts only ``.zip``, ``.egg`` and ``.jar`` files on the workers' paths, and
    nothing on the driver's data-source processes: copied to ``hudi_streaming.zip`` and put on ``PYTHONPATH``
    as well, with the compiled dependencies already on every node (a venv without the package).
    """
    def submit(name: str, cwd: Path, options: list[str], **env: str) -> None:
        run = cluster.start(name, cwd, cluster.submit_options() + options + [
            str(JOB), "--table", str(small_table), "--work", "stream", "--available-now"], **env)
        try:
            run.wait_ok()
        finally:
            run.kill()
        assert check_sink(cwd / "stream" / "out", small_table) > 0
        tasks = cluster.tasks_on_workers(run.app_id())
        assert any(tasks.values()), tasks

    archives = tmp_path / "archives"
    (archives / "environment").mkdir(parents=True)
    packed = wheel_venv(tmp_path / "packed", copies=True).root
    subprocess.run(["tar", "czf", "venv.tar.gz", "-C", str(packed), "."], cwd=archives, check=True)
    subprocess.run(["tar", "xzf", "venv.tar.gz", "-C", "environment"], cwd=archives, check=True)  # for the driver
    submit("archives", archives, ["--archives", "venv.tar.gz#environment"],
           PYSPARK_PYTHON="./environment/bin/python", PYSPARK_DRIVER_PYTHON="./environment/bin/python")

    py_files = tmp_path / "py-files"
    py_files.mkdir()
    shutil.copy(wheel, py_files / "hudi_streaming.zip")
    bare = str(wheel_venv(tmp_path / "deps", install=False).python)
    submit("py-files", py_files, ["--py-files", "hudi_streaming.zip"], PYTHONPATH="hudi_streaming.zip",
           PYSPARK_PYTHON=bare, PYSPARK_DRIVER_PYTHON=bare)


def test_progress_lines_split_by_other_output_are_not_read():
    """The job's output is read while it runs, and a log line may land inside one of its lines."""
    out = ("progress batch=1 rows=50 cursor=20261126 lag=2\n"
           "progress batch=2 rows=50 cursor=20261127 lag=1 WARN a log line\n"
           "progress batch=3 rows=0 cursor=2026")  # still being written
    assert parse_progress(out) == [{"batch": "1", "rows": "50", "cursor": "20261126", "lag": "2"}]
