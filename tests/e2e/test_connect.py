"""Spark Connect: the source streamed from a thin client through a Connect server that is SIGKILLed and restarted.

A real Spark Connect server runs as a separate process, started the way PySpark ships it
(``pyspark/sbin/start-connect-server.sh``, in the foreground: ``SPARK_NO_DAEMONIZE``), with ``local[2]`` and a
free port. The package is installed where a Connect deployment needs it: in the Python the server runs for its
data-source planners, executors and ``foreachBatch`` functions (``PYSPARK_PYTHON``, the test venv's). The
client is ``SparkSession.builder.remote("sc://127.0.0.1:<port>")`` with ``pyspark[connect]``'s client packages
(this project's ``connect`` extra); a client that cannot import the package at all reads the table too.

The project's writer changes the table (upserts, deletes, compaction, clean, archive) while two processing-time
queries read it in changelog mode: one into ``foreachBatch`` (the function runs in a Python process of the
server, so it writes parquet to a folder, not into a list of the client's), one into a table (``toTable``).
The server's whole process group is SIGKILLed while the ``foreachBatch`` query has a batch in flight, the
writer goes on, a new server is started and both queries are started again from their checkpoints. At the end
each sink holds exactly the change feed of the writer's own record of what it wrote; applied in order, its rows
rebuild the table's snapshot (``read_table``) in every column; and they equal, row for row and column for
column, what the source's reader hands to Spark — classic or Connect, the same Python code runs on the server's
side — for the same options, driven here without Spark (``tests/support/stream_sim.py``). A classic Spark stream of the
table is left out: its JVM start and planning would add some 45 s on two cores to a test that takes two minutes.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pyspark
import pytest
from harness import kill_group, live_writer
from support import waits
from support.stream_sim import make_reader, run_batches
from support.verify import _plain, apply_upserts, change_feed, delivered, feed_differences, state_differences
from support.waits import free_port

from hudi_streaming import read_table
from hudi_streaming.hoodie import HudiTable

pytest.importorskip("grpc", reason="Spark Connect's client packages are not installed (the `connect` extra)")

SPARK_HOME = Path(pyspark.__file__).parent
#: how long any one thing may take before the test gives up on it (a hang fails, with the server's log)
PATIENCE = 120.0
#: changelog mode (pre-images too: the change feed is checked entry by entry); several batches per query, cut
#: inside splits, so the kill and the restart fall inside planned work
OPTIONS = {"readMode": "changelog", "emitDeletes": "true", "maxRowsPerTrigger": "200"}
TABLE_NAME = "connect_sink"


class ConnectServer:
    """``start-connect-server.sh`` in the foreground, in its own process group (the JVM and the Python workers
    it starts die with it), its output in ``<root>/<name>.log``."""

    def __init__(self, root: Path, name: str):
        self.port = free_port()
        self.log = root / f"{name}.log"
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "SPARK_CONF_DIR", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
        env.update(SPARK_HOME=str(SPARK_HOME), SPARK_NO_DAEMONIZE="1", SPARK_LOCAL_IP="127.0.0.1",
                   SPARK_LOG_DIR=str(root / "logs"), SPARK_PID_DIR=str(root / "pids"),
                   # the Python with the package: the server's data-source planners, executors, foreachBatch
                   PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
        conf = {"spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": self.port,
                "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                "spark.sql.session.timeZone": "UTC", "spark.sql.warehouse.dir": root / "warehouse",
                # a progress event for an idle trigger every half second (not every 10 s): "caught up" shows
                "spark.sql.streaming.noDataProgressEventInterval": "500ms"}
        argv = [str(SPARK_HOME / "sbin" / "start-connect-server.sh"), "--master", "local[2]"]
        for k, v in conf.items():
            argv += ["--conf", f"{k}={v}"]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        self.url = f"sc://127.0.0.1:{self.port}"
        wait_for(self._listening, f"the Connect server on port {self.port}", self)

    def _listening(self) -> bool:
        assert self.proc.poll() is None, f"the Connect server exited {self.proc.returncode}:\n{self.tail()}"
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def kill(self) -> None:
        """SIGKILL the whole process group: the server's JVM and every Python process it started."""
        kill_group(self.proc)


def wait_for(condition, what: str, server: ConnectServer | None = None) -> None:
    waits.wait_for(condition, what, PATIENCE, explain=server.tail if server else lambda: "")


def batch_ids(checkpoint: Path, log: str) -> list[int]:
    """The batch ids in a checkpoint's ``offsets`` (planned) or ``commits`` (done) log."""
    folder = checkpoint / log
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else []


@contextmanager
def connect_mode():
    """PySpark marks the whole process as Spark Connect (``SPARK_CONNECT_MODE_ENABLED``) once a remote session is
    made, which would turn the other tests' classic sessions (and the child processes' Spark) into Connect ones:
    the mark is removed afterwards."""
    before = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        else:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = before


class Writer(threading.Thread):
    """The project's writer: two steps a second (upserts, every fifth step deletes; compaction, clean, archive),
    at most ``limit`` times, whatever happens to the server meanwhile."""

    def __init__(self, advance, limit: int):
        super().__init__(daemon=True)
        self.advance, self.limit = advance, limit
        self.advances = 0
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while self.advances < self.limit and not self.halt.wait(1.0):
                self.advance()
                self.advances += 1
        except BaseException as e:  # noqa: B036 - raised again by finish(), not lost in the thread
            self.error = e

    def finish(self) -> None:
        self.halt.set()
        self.join(PATIENCE)
        assert not self.is_alive(), "the writer did not stop"
        if self.error:
            raise self.error


def start_queries(spark, table: Path, work: Path, options: dict):
    """The two queries, started (or started again: same checkpoints, same source states) on ``spark``.

    The server's catalog lives in its memory (no Hive metastore), so the sink table is declared again on every
    server: an external parquet table over the same folder, which ``toTable`` appends to through Spark's file
    sink (its ``_spark_metadata`` log makes a replayed batch's files count once).
    """
    out = str(work / "foreach" / "out")

    def sink(batch_df, batch_id: int) -> None:  # runs in the server's Python: writes where the test can read
        batch_df.write.mode("overwrite").parquet(f"{out}/batch={batch_id:06d}")

    def stream(name: str):
        reader = spark.readStream.format("hudi_streaming").option("stateLocation", str(work / name / "state"))
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load(str(table))

    foreach = stream("foreach")
    spark.catalog.createTable(TABLE_NAME, path=str(work / "table" / "data"), source="parquet",
                              schema=foreach.schema)
    q_foreach = (foreach.writeStream.foreachBatch(sink).queryName("foreach")
                 .option("checkpointLocation", str(work / "foreach" / "checkpoint"))
                 .trigger(processingTime="1 second").start())
    q_table = (stream("table").writeStream.queryName("table")
               .option("checkpointLocation", str(work / "table" / "checkpoint"))
               .trigger(processingTime="1 second").toTable(TABLE_NAME))
    return q_foreach, q_table


def caught_up(query, last: str, seen: dict) -> bool:
    """The query's last trigger found nothing to read (no batch: all it planned was delivered), with the
    source's cursor at the table's last instant. ``seen[query name]``: the last trigger's batch id, rows and
    the source's report, for the message of a failure."""
    error = query.exception()
    assert error is None, error
    p = query.lastProgress
    if p is None:
        return False
    report = json.loads(p.sources[0].latestOffset or "null") or {}
    seen[query.name] = (p.batchId, p.numInputRows, report)
    return p.numInputRows == 0 and report.get("cursor") == last


def plain_rows(rows: list[dict]) -> Counter:
    """Rows as comparable values (a timestamp as its UTC instant without a zone), the batch id left out."""
    return Counter(tuple(sorted((k, _plain(v)) for k, v in r.items() if k != "_batch")) for r in rows)


def read_without_the_package(url: str, table: Path, tmp: Path) -> list[str]:
    """Count the table's rows and keys through the server from a client that cannot import hudi_streaming: a
    venv with PySpark and the Connect client packages (borrowed from the test environment's site-packages,
    whose ``.pth`` lines — the editable install's — are not run that way), without the package."""
    venv = tmp / "client-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    script = ("import importlib.util, sys\n"
              "assert importlib.util.find_spec('hudi_streaming') is None, 'the client can import hudi_streaming'\n"
              "from pyspark.sql import SparkSession\n"
              "spark = SparkSession.builder.remote(sys.argv[1]).create()\n"
              "df = spark.read.format('hudi_streaming').load(sys.argv[2])\n"
              "print(df.count(), df.select('_hoodie_record_key').distinct().count())\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    run = subprocess.run([str(python), "-c", script, url, str(table)], env=env, capture_output=True, text=True,
                         timeout=PATIENCE)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.split()


def test_connect_stream_survives_a_killed_server_and_delivers_each_change_once(tmp_path):
    """Two queries through a Connect server; the server SIGKILLed with a batch in flight, the table written while
    it is down, the queries started again on a new server, the table written while they catch up."""
    t0 = time.monotonic()
    table, work = tmp_path / "table", tmp_path / "work"
    # the cleaner keeps every slice (retain 50 > the commits written): the classic stream that reads the same
    # table afterwards, from the same first instant, finds what the Connect streams found
    steps, advance = live_writer(table, late_share=0.0, retain_commits=50)
    advance()
    options = {**OPTIONS, "startingInstant": steps[0].instant}
    writers = [Writer(advance, limit=4), Writer(advance, limit=3)]  # before the kill, after the restart
    servers: list[ConnectServer] = []
    sessions: list = []
    evidence: dict = {}
    fcp, tcp = work / "foreach" / "checkpoint", work / "table" / "checkpoint"

    def mark(what: str) -> None:
        evidence.setdefault("seconds", {})[what] = round(time.monotonic() - t0, 1)

    try:
        with connect_mode():
            from pyspark.sql import SparkSession

            servers.append(ConnectServer(tmp_path, "server-1"))
            mark("server 1 up")
            spark = SparkSession.builder.remote(servers[0].url).create()
            sessions.append(spark)
            q_foreach, q_table = start_queries(spark, table, work, options)
            first = {"foreach": (q_foreach.id, q_foreach.runId), "table": (q_table.id, q_table.runId)}
            writers[0].start()

            def foreach_batch_in_flight() -> bool:
                """Both queries completed a batch, and the foreachBatch query has one planned, not done."""
                for q in (q_foreach, q_table):
                    assert q.exception() is None, q.exception()
                done, planned = batch_ids(fcp, "commits"), batch_ids(fcp, "offsets")
                return bool(done) and bool(batch_ids(tcp, "commits")) and planned[-1] > done[-1]

            wait_for(foreach_batch_in_flight, "a foreachBatch batch in flight after one done", servers[0])
            servers[0].kill()
            mark("server 1 killed")
            # the dead server's session is closed on the client only: releasing it (at exit, too) would retry
            # against a dead port for minutes
            spark.client.close()
            evidence["killed"] = {name: {"planned": batch_ids(cp, "offsets")[-1], "done": batch_ids(cp, "commits")[-1]}
                                  for name, cp in (("foreach", fcp), ("table", tcp))}
            writers[0].finish()
            evidence["steps written"] = {"before the kill": len(steps)}
            for _ in range(2):  # while no server runs
                advance()
            evidence["steps written"]["while down"] = len(steps) - evidence["steps written"]["before the kill"]

            servers.append(ConnectServer(tmp_path, "server-2"))
            mark("server 2 up")
            spark = SparkSession.builder.remote(servers[1].url).create()
            sessions.append(spark)
            q_foreach, q_table = start_queries(spark, table, work, options)
            # the same queries (their ids are the checkpoints'), in new runs
            assert (q_foreach.id, q_table.id) == (first["foreach"][0], first["table"][0])
            assert q_foreach.runId != first["foreach"][1] and q_table.runId != first["table"][1]
            writers[1].start()
            before = len(steps)
            writers[1].join(PATIENCE)
            writers[1].finish()
            evidence["steps written"]["after the restart"] = len(steps) - before
            last = HudiTable(str(table)).timeline.latest_write_time()
            seen: dict = {}
            try:
                wait_for(lambda: caught_up(q_foreach, last, seen) & caught_up(q_table, last, seen),
                         f"both queries to reach the writer's last instant {last}", servers[1])
            except AssertionError as e:
                raise AssertionError(f"{e}\nlast progress (batch, rows, source's report): {seen}") from None
            mark("caught up")
            evidence["resumed_at"] = {name: min(b for b in batch_ids(cp, "commits")
                                                if b > evidence["killed"][name]["done"])
                                      for name, cp in (("foreach", fcp), ("table", tcp))}
            evidence["last batch"] = {name: batch_ids(cp, "commits")[-1] for name, cp in (("foreach", fcp),
                                                                                        ("table", tcp))}
            q_foreach.stop()
            q_table.stop()
            table_rows = spark.read.table(TABLE_NAME).toArrow().to_pylist()
            without_package = read_without_the_package(servers[1].url, table, tmp_path)
            spark.stop()
    finally:
        for w in writers:
            w.halt.set()
        for s in servers:
            s.kill()
        for session in sessions:  # closed already unless the test failed: see the first server's kill
            if not session.client.is_closed:
                session.client.close()
    print(f"restart evidence: {json.dumps(evidence)}")
    # each query went on with the first batch it had not completed (a batch in flight is run again, not skipped)
    for name in ("foreach", "table"):
        assert evidence["resumed_at"][name] == evidence["killed"][name]["done"] + 1, evidence

    # exactly the writer's changes, once each, in both sinks
    expected = change_feed(steps)
    foreach_rows = delivered(work / "foreach" / "out")
    assert feed_differences(expected, foreach_rows) == {"duplicated": [], "lost": [], "unexpected": []}
    assert feed_differences(expected, table_rows) == {"duplicated": [], "lost": [], "unexpected": []}
    # a client without the package read the table through the server
    assert without_package == [str(read_table(str(table)).num_rows)] * 2

    # every column as the table has it: applied in order, each sink's rows rebuild the table's snapshot
    snapshot = read_table(str(table))
    assert state_differences(apply_upserts(foreach_rows), snapshot) == []
    assert state_differences(apply_upserts([{**r, "_batch": 0} for r in table_rows]), snapshot) == []
    # and row for row, every column, what the source's reader hands to Spark for the same options (classic
    # Spark runs the same reader), driven in this process as Spark drives it (tests/support/stream_sim.py)
    reader = make_reader(str(table), str(tmp_path / "reference-state"), **options)
    reference = plain_rows([r for b in run_batches(reader) if b is not None for r in b.to_pylist()])
    assert sum(reference.values()) == len(expected)
    assert plain_rows(foreach_rows) == reference
    assert plain_rows(table_rows) == reference
    mark("checked")
    print(f"timings: {evidence['seconds']}")
