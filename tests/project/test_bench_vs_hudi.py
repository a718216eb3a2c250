"""``bench/bench_vs_hudi.py`` survives its peer: when Hudi's source fails, the run says which source failed, in
which phase, after how long and why (one line), and still prints our own figures and its last line.

No Spark here: the phases' measurements are stand-ins (``attempt`` takes any callable), the report is the real one.
"""
from __future__ import annotations

import sys
from argparse import Namespace

import pytest
from conftest import REPO

BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))
import bench_vs_hudi as bench  # noqa: E402  bench/ is no package
from hudi_peer_job import telling_line  # noqa: E402

JVM_ERROR = """[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted due to stage failure
org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)
Caused by: org.apache.hudi.exception.HoodieIOException: IOException when reading log file
\tat org.apache.hudi.common.table.log.HoodieLogFileReader.<init>(HoodieLogFileReader.java:120)
Caused by: java.nio.channels.ClosedByInterruptException
\tat java.base/java.nio.channels.spi.AbstractInterruptibleChannel.end(AbstractInterruptibleChannel.java:199)
"""


def ours() -> dict:
    """Our throughput figures, as ``bench_vs_hudi.throughput`` returns them."""
    return {"spark": "4.3.0", "rows": 1000, "batches": 2, "in_batches": 2.0, "add_batch": 1.5, "planning": 0.25,
            "rate": 500.0, "first": 3.5, "trigger": 1.25, "total": 6.0, "peak": 900 << 20, "pss": 700 << 20,
            "split": {"jvm": (500 << 20, 1)}, "split_pss": {"jvm": (450 << 20, 1)}, "load": ("0.10", "0.20")}


def test_telling_line_picks_the_deepest_cause_else_the_last_named_exception():
    assert telling_line(JVM_ERROR) == "java.nio.channels.ClosedByInterruptException"
    traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad offset\n"
    assert telling_line(traceback) == "ValueError: bad offset"
    assert telling_line("no exception named\nsecond line") == "no exception named"
    assert len(telling_line("x" * 1000)) == 300


@pytest.mark.parametrize("phase", ["throughput", "latency"])
def test_a_failing_peer_is_reported_and_our_figures_and_the_last_line_still_print(phase, tmp_path, capsys):
    log = tmp_path / "reader.log"
    log.write_text("starting\n" + JVM_ERROR)

    def measure(source: str) -> dict:
        if source == "hudi":
            raise bench.JobFailed("hudi: the reader ended without its report", log=log)
        return ours() if phase == "throughput" else {"lat": [0.5]}

    failures: list[bench.Failure] = []
    results = {source: bench.attempt(phase, source, measure, failures) for source in bench.SOURCES}
    assert results["hudi"] is None and results["ours"] is not None
    [failure] = failures
    assert (failure.source, failure.phase) == ("hudi", phase) and failure.seconds >= 0
    assert failure.error == ("hudi: the reader ended without its report: "
                             "java.nio.channels.ClosedByInterruptException")

    tp = results if phase == "throughput" else {"hudi": ours(), "ours": ours()}
    lat = {} if phase == "throughput" else {"hudi": None, "ours": latency_figures()}
    status = bench.report(Namespace(rows=1000), "a table", tp, lat, failures)
    out = capsys.readouterr().out
    assert status == 1  # a job failed: the comparison is incomplete
    lines = out.strip().splitlines()
    last = lines[-1]
    assert last.startswith("vs hudi: ") and "Hudi's source failed in " + phase in last
    assert "ClosedByInterruptException" in last
    assert f"FAILED: Hudi's source failed in {phase} after" in out
    if phase == "throughput":  # our figures print beside the failed peer's
        first = next(line for line in lines if line.startswith("time to first batch"))
        assert "failed" in first and "3.50 s" in first
        assert "first batch n/a" in last and "memory (PSS) n/a" in last
    else:  # throughput of both compares; latency shows ours only
        assert "first batch 1.00x" in last and "p99 n/a" in last and "memory (PSS) 1.00x" in last
        p99 = next(line for line in lines if "p99 commit → sink, from file mtime" in line)
        assert "failed" in p99 and "0.500 s" in p99


def latency_figures() -> dict:
    return {"commits": 2, "rate": 2.0, "commit_s": 0.4, "rows_committed": 600, "rows_delivered": 600, "missing": 0,
            "lat": [0.5, 0.25], "lat_completion": [0.5, 0.25], "skew": 0.01, "peak": 800 << 20, "pss": 600 << 20,
            "batches": 2, "load": ("0.10", "0.20")}


def test_a_query_error_is_reported_by_its_cause():
    failures: list[bench.Failure] = []

    def measure(source: str) -> dict:
        raise bench.JobFailed(f"{source}: the query failed", error=telling_line(JVM_ERROR))

    assert bench.attempt("throughput", "ours", measure, failures) is None
    assert failures[0].line().startswith("ours failed in throughput after ")
    assert failures[0].line().endswith(": ours: the query failed: java.nio.channels.ClosedByInterruptException")


def test_the_memory_split_tells_a_worker_daemon_from_the_workers_it_forks():
    """PSS is summed per role: a daemon's pages are shared with its forked workers, so the split keeps them apart."""
    from common import Proc, spark_role

    java = "/usr/lib/jvm/bin/java -cp x org.apache.spark.deploy.SparkSubmit pyspark-shell"
    tasks = "/venv/bin/python -m hudi_streaming.streaming.daemon pyspark.worker"
    lookup = "/venv/bin/python -m pyspark.daemon pyspark.sql.worker.lookup_data_sources"
    procs = {p.pid: p for p in [Proc(1, 0, "/venv/bin/python job.py", 0, 0), Proc(2, 1, java, 0, 0),
                                Proc(3, 2, tasks, 0, 0), Proc(4, 3, tasks, 0, 0), Proc(5, 2, lookup, 0, 0),
                                Proc(6, 5, lookup, 0, 0), Proc(7, 2, "/venv/bin/python -m "
                                     "pyspark.sql.streaming.python_streaming_source_runner", 0, 0)]}
    roles = {pid: spark_role(p, 1, procs) for pid, p in procs.items()}
    assert roles == {1: "Python driver", 2: "JVM (driver + executors)", 3: "Python tasks daemon",
                     4: "Python tasks workers", 5: "Python lookup daemon", 6: "Python lookup workers",
                     7: "Python source runner"}


def test_the_floor_prints_beside_the_peers_and_in_the_last_line(capsys):
    """The bare Python source's throughput run is the floor: its first batch and memory print against Hudi's and
    ours, and the last line carries Hudi's ÷ the floor; it never runs in the latency phase."""
    floor = {**ours(), "first": 1.75, "pss": 1400 << 20}
    status = bench.report(Namespace(rows=1000), "a table", {"hudi": ours(), "ours": ours(), "bare": floor}, {}, [])
    lines = capsys.readouterr().out.strip().splitlines()
    assert status == 0
    assert lines[-1].endswith("memory (PSS) 1.00x (a bare Python source: first batch 2.00x, memory 0.50x)")
    [detail] = [line for line in lines if line.startswith("  Hudi's / floor:")]
    assert detail == "  Hudi's / floor: first batch 2.00x, memory 0.50x; floor / ours: first batch 0.50x, memory 2.00x"
    assert "bare" not in bench.PEERS and set(bench.PEERS) < set(bench.SOURCES)
