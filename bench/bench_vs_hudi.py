"""Our stream against Apache Hudi's own Spark streaming source, on the same MERGE_ON_READ table written by Hudi.

Why: the other benchmarks hold the stream against Spark's parquet reader, a bare Python source and hudi-rs; a
user choosing a streaming reader for a Hudi table compares it with the one Hudi ships. Hudi has no bundle for
the project's PySpark 4.3, so its source runs on PySpark 3.5 in Hudi's oracle environment
(``tests/oracle/hudi_oracle/env.py``, set up here by ``ensure()`` when missing), ours on PySpark 4.3; the two never
share a process, and every job runs alone (one after the other), each a process tree of its own.

How: Hudi 1.2 writes the table once (table version 9, MERGE_ON_READ, four partitions: ``--rows`` inserts, then
an upsert of every tenth key, which lands in log files); ``--keep DIR`` keeps it for reruns. The jobs are in
``hudi_peer_job.py`` — the reader is the same code for both sources, only the format differs:
``spark.readStream.format("hudi")`` against ``format("hudi_streaming")`` (with ``stateLocation``, upsert mode),
both from ``hoodie.datasource.streaming.startOffset=earliest``, ``local[2]``, the driver's heap 3 GB (the
oracle session's), a ``foreachBatch`` sink. Both deliver the latest row of each key (Hudi's incremental
query merges the range; ours is in upsert mode), so the row counts must agree; they are printed and checked.

1. Throughput, Trigger.AvailableNow, the sink writes every column to Spark's ``noop`` sink: rows/s inside
   batches (rows delivered ÷ the ``triggerExecution`` time of the batches that delivered rows — each source's
   planning, reading and Spark's offset and commit logs; ``addBatch`` alone is printed too), and time to the
   first batch (from defining the query, ``readStream…load()``, to the sink having the first batch's rows).
2. Latency (unless ``--skip-latency``), on a fresh copy of the table per reader: the reader runs from
   ``latest`` with the default trigger while a Hudi writer process upserts 300 existing keys every 0.5 s for
   ``--latency-seconds`` (after 3 warm-up upserts; a Hudi upsert on this table may take longer than 0.5 s, then
   they follow back to back: the commit rate is printed). The sink collects each row's ``_hoodie_commit_time``.
   Latency of a commit = the time the sink has its rows − its completion: the modification time of its
   completed timeline file (``.hoodie/timeline/{requested}_{completed}.deltacommit``, noted by the writer right
   after the commit). The completion time in the name (yyyyMMddHHmmssSSS in the local time zone, as
   ``hoodie.table.timeline.timezone=LOCAL`` says) is checked against it and gives a second set of percentiles.
3. Memory: the peak of the summed PSS of each reader job's process tree (Python driver, the JVM — driver and
   executors in ``local[2]`` — and the Python workers: each worker role's daemon and the workers it forks, and
   the source runner), sampled every 0.5 s (``common.PeakRss``), split by role at that peak. PSS, because
   PySpark forks its Python workers from a daemon: a page a worker shares with its daemon is in the RSS of both,
   so a sum of RSS counts it twice (or three times); PSS divides each page among the processes that map it. The
   summed RSS (every 0.25 s) is printed beside it, split the same way. The throughput runs' PSS peaks make the
   ratio, the latency runs' are printed.

4. The floor (throughput phase): the same job with a bare Python streaming source on PySpark 4.3
   (``hudi_peer_job.py --source bare``: the base files' Arrow batches with a ``_change_type`` column, nothing
   else): what any Python source pays there in time to the first batch and memory — PySpark's worker processes
   per role, the JVM — before it reads a log or merges a row. Hudi's ÷ the floor says how close a Python source
   can come to Hudi's on those two; ours ÷ the floor, how much of the rest is ours.

The machine's load average is printed around each run. Ends with one line, each ratio above 1.0 when ours is
better: rows/s ours ÷ Hudi's, the others Hudi's ÷ ours. Targets: our rows/s ≥ Hudi's, our p99 latency ≤
Hudi's (PASS/FAIL). A job that fails — either source's reader in either phase, or Hudi's writer of the latency
phase — is reported (which source, which phase, how long it ran, its error in one line) and the other figures
still print, with the last line; exit status 1 when a job fails or the row counts differ.

    python bench/bench_vs_hudi.py [--rows 1000000] [--keep DIR] [--latency-seconds 60] [--skip-latency]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common import MIB, PeakRss, load, pct, ratio, verdict  # bench/: process trees, percentiles, report figures
from hudi_peer_job import telling_line  # bench/: the jobs (standard library only at import)

REPO = Path(__file__).resolve().parent.parent
JOB = Path(__file__).resolve().parent / "hudi_peer_job.py"
sys.path.insert(0, str(REPO / "tests" / "oracle" / "hudi_oracle"))
from env import OracleEnv, ensure  # noqa: E402  Hudi's own environment (PySpark 3.5 + the Hudi bundle)

HUDI = "1.2"  # the bundle that writes and reads (table version 9)
DRIVER_MEMORY = "3g"  # the oracle session's spark.driver.memory (writer_job.session); ours gets the same
SOURCES = {"hudi": "Hudi's source", "ours": "ours", "bare": "a bare Python source"}  # run in this order
PEERS = ("hudi", "ours")  # the two compared in every phase; "bare" is the throughput phase's floor


class JobFailed(RuntimeError):
    """A job that failed: what failed, and the error it reported or the log that tells why."""

    def __init__(self, what: str, error: str | None = None, log: Path | None = None):
        super().__init__(f"{what}; see {log}" if log else what)
        self.what, self.error, self.log = what, error, log


@dataclass
class Failure:
    """A source's job that failed in a phase, as the report shows it."""

    source: str
    phase: str
    seconds: float
    error: str  # one line

    def line(self) -> str:
        return f"{SOURCES[self.source]} failed in {self.phase} after {self.seconds:.1f} s: {self.error}"


def one_line(exc: BaseException) -> str:
    """The line that says why a job failed: its reported error's, else its log's (see ``telling_line``)."""
    if isinstance(exc, JobFailed):
        text = exc.error or (exc.log.read_text(errors="replace") if exc.log and exc.log.exists() else "")
        why = telling_line(text) if text else ""
        return f"{exc.what}: {why}" if why else str(exc)
    return telling_line(f"{type(exc).__name__}: {exc}")


def attempt(phase: str, source: str, measure: Callable[[str], dict], failures: list[Failure]) -> dict | None:
    """A phase's measurement of one source, or None (noted in ``failures``) when its job failed: the peer
    failing must not cost the run the other source's figures and the last line."""
    t0 = time.monotonic()
    try:
        return measure(source)
    except Exception as exc:  # any failure of the job or of reading its output is that source's, in that phase
        failure = Failure(source, phase, time.monotonic() - t0, one_line(exc))
        failures.append(failure)
        print(f"{phase} {source}: FAILED: {failure.line()}", flush=True)
        return None


class Jobs:
    """Starts the jobs of ``hudi_peer_job.py`` in the right environment, each a process tree of its own."""

    def __init__(self, oracle: OracleEnv, work: Path):
        self.oracle, self.work = oracle, work

    def command(self, source: str, *args: str) -> tuple[list[str], dict[str, str]]:
        if source == "hudi":
            jar = str(self.oracle.jars[HUDI])
            return [str(self.oracle.python), str(JOB), *args, "--source", "hudi", "--jar", jar], self.oracle.spark_env()
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
                   PYSPARK_SUBMIT_ARGS=f"--driver-memory {DRIVER_MEMORY} pyspark-shell")
        return [sys.executable, str(JOB), *args, "--source", "ours"], env

    def start(self, source: str, log: Path, *args: str) -> subprocess.Popen:
        cmd, env = self.command(source, *args)
        with open(log, "a") as f:
            return subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)

    def run(self, source: str, log: Path, *args: str, timeout: float = 3600) -> PeakRss:
        """Runs a job to its end; the sampler of its memory. Fails on a non-zero exit."""
        proc = self.start(source, log, *args)
        peak = PeakRss(proc.pid)
        try:
            code = proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
            peak.stop()
        if code:
            raise JobFailed(f"{source} job {args[0]} failed (exit {code})", log=log)
        return peak


def read_lines(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line))
        except ValueError:  # a line being written
            pass
    return out


def make_table(jobs: Jobs, work: Path, rows: int) -> Path:
    """Hudi's table of ``rows`` rows, written once per ``--keep`` folder."""
    table, marker = work / f"table-{rows}", work / f"table-{rows}.json"
    if marker.exists() and (table / ".hoodie" / "hoodie.properties").exists():
        print(f"reusing the table {table} ({json.loads(marker.read_text())})", flush=True)
        return table
    shutil.rmtree(table, ignore_errors=True)
    print(f"Hudi {HUDI} writes {rows:,} rows, then updates {rows // 10:,} keys, into {table} ...", flush=True)
    log = work / "write.log"
    t0 = time.monotonic()
    jobs.run("hudi", log, "write", "--table", str(table), "--rows", str(rows))
    text = log.read_text()
    info = json.loads(text[text.rindex('{"insert_s"'):].splitlines()[0])  # the job's report (after progress bars)
    info.update({"rows": rows, "seconds": round(time.monotonic() - t0, 1), "written": dt.datetime.now().isoformat()})
    marker.write_text(json.dumps(info))
    return table


def describe_table(table: Path) -> str:
    files = [p for p in table.rglob("*") if p.is_file() and ".hoodie" not in p.parts]
    base = [p for p in files if p.suffix == ".parquet"]
    logs = [p for p in files if ".log." in p.name]
    mib = sum(p.stat().st_size for p in base + logs) / MIB
    parts = len({p.parent for p in base})
    return f"{parts} partitions, {len(base)} base files, {len(logs)} log files, {mib:.1f} MiB"


# -- throughput --------------------------------------------------------------------------------------------------
def throughput(jobs: Jobs, source: str, table: Path, work: Path) -> dict:
    run = work / f"throughput-{source}"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    out, before = run / "out.jsonl", load()
    mem = jobs.run(source, run / "job.log", "stream", "--mode", "throughput", "--table", str(table),
                           "--work", str(run), "--out", str(out), "--start", "earliest")
    lines = read_lines(out)
    if not lines or "progress" not in lines[-1]:
        raise JobFailed(f"{source}: the query ended without its report", log=run / "job.log")
    end = lines[-1]
    if end.get("error"):
        raise JobFailed(f"{source}: the query failed", error=end.get("cause") or end["error"])
    batches = [b for b in lines if "batch" in b and b["rows"]]
    prog = {p["batchId"]: p["durationMs"] for p in end["progress"]}
    rows = sum(b["rows"] for b in batches)
    in_batches = sum(prog[b["batch"]].get("triggerExecution", 0) for b in batches) / 1000
    add_batch = sum(prog[b["batch"]].get("addBatch", 0) for b in batches) / 1000
    planning = sum(prog[b["batch"]].get("queryPlanning", 0) + prog[b["batch"]].get("getBatch", 0)
                   + prog[b["batch"]].get("latestOffset", 0) for b in batches) / 1000
    return {"spark": end["spark"], "rows": rows, "batches": len(batches), "in_batches": in_batches,
            "add_batch": add_batch, "planning": planning, "rate": rows / in_batches if in_batches else 0.0,
            "first": min(b["t_recv"] for b in batches) - end["t_start"] if batches else float("nan"),
            "trigger": iso_time(end["progress"][0]["timestamp"]) - end["t_start"] if end["progress"] else float("nan"),
            "total": end["t_end"] - end["t_start"], "peak": mem.peak, "pss": mem.peak_pss, "split": mem.split,
            "split_pss": mem.split_pss,
            "load": (before, load())}


def iso_time(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


# -- latency -----------------------------------------------------------------------------------------------------
def latency(jobs: Jobs, source: str, table: Path, work: Path, a: argparse.Namespace) -> dict:
    run = work / f"latency-{source}"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    copy = run / "table"
    shutil.copytree(table, copy)  # the writer changes it: each reader gets its own writer run on a fresh copy
    out, ready, stop, commit_log = run / "out.jsonl", run / "ready", run / "stop", run / "commits.jsonl"
    before = load()
    reader = jobs.start(source, run / "reader.log", "stream", "--mode", "latency", "--table", str(copy),
                        "--work", str(run), "--out", str(out), "--start", "latest", "--ready", str(ready),
                        "--stop", str(stop))
    peak = PeakRss(reader.pid)
    writer = None
    try:
        deadline = time.monotonic() + 600
        while not ready.exists():
            if reader.poll() is not None or time.monotonic() > deadline:
                raise JobFailed(f"{source}: the reader did not start", log=run / "reader.log")
            time.sleep(0.1)
        writer = jobs.start("hudi", run / "writer.log", "load", "--table", str(copy), "--keys", str(a.rows),
                            "--seconds", str(a.latency_seconds), "--interval", "0.5", "--batch", "300",
                            "--log", str(commit_log))
        writer_code = writer.wait(timeout=a.latency_seconds + 900)
        if writer_code:
            raise JobFailed(f"the Hudi writer failed (exit {writer_code})", log=run / "writer.log")
        commits = [c for c in read_lines(commit_log) if "requested" in c]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and reader.poll() is None:
            got = delivered(read_lines(out))
            if all(got.get(c["requested"], (0, 0))[0] >= c["rows"] for c in commits):
                break
            time.sleep(0.2)
    finally:
        stop.touch()
        try:
            reader.wait(timeout=120)
        except subprocess.TimeoutExpired:
            reader.kill()
        if writer is not None and writer.poll() is None:
            writer.kill()
        peak.stop()
    lines = read_lines(out)
    if not lines or "progress" not in lines[-1]:
        raise JobFailed(f"{source}: the reader ended without its report", log=run / "reader.log")
    if lines[-1].get("error"):
        raise JobFailed(f"{source}: the query failed", error=lines[-1].get("cause") or lines[-1]["error"])
    got = delivered(lines)
    timed = [c for c in commits if c["phase"] == "timed"]
    by_mtime, by_completion, skew, missing = [], [], [], 0
    for c in timed:
        n, t_recv = got.get(c["requested"], (0, 0.0))
        completion = dt.datetime.strptime(c["completed"], "%Y%m%d%H%M%S%f").timestamp()  # local time zone
        skew.append(c["mtime"] - completion)
        if n < c["rows"]:
            missing += 1
            continue
        by_mtime.append(t_recv - c["mtime"])
        by_completion.append(t_recv - completion)
    span = timed[-1]["t1"] - timed[0]["t0"] if len(timed) > 1 else float("nan")
    return {"commits": len(timed), "rate": len(timed) / span if span else float("nan"),
            "commit_s": pct([c["t1"] - c["t0"] for c in timed], 50) if timed else float("nan"),
            "rows_committed": sum(c["rows"] for c in timed),
            "rows_delivered": sum(min(got.get(c["requested"], (0, 0))[0], c["rows"]) for c in timed),
            "missing": missing, "lat": by_mtime, "lat_completion": by_completion,
            "skew": pct(skew, 50) if skew else float("nan"), "peak": peak.peak, "pss": peak.peak_pss,
            "batches": sum(1 for b in lines if b.get("rows")), "load": (before, load())}


def delivered(lines: list[dict]) -> dict[str, tuple[int, float]]:
    """requested time → (rows the sink received with that ``_hoodie_commit_time``, when it had the last of them)."""
    out: dict[str, tuple[int, float]] = {}
    for b in lines:
        for ct, n in b.get("commits", {}).items():
            rows, t = out.get(ct, (0, 0.0))
            out[ct] = (rows + n, max(t, b["t_recv"]))
    return out


# -- the report --------------------------------------------------------------------------------------------------
def split(parts: dict[str, tuple[int, int]], role: str) -> str:
    size, n = parts.get(role, (0, 0))
    return f"{size / MIB:,.0f} MiB ({n})"


Result = dict | None  # a source's figures in a phase; None: its job failed (see the failures)


def row(label: str, h: Result, o: Result, show: Callable[[dict], str],
        compare: Callable[[dict, dict], str] | None = None) -> tuple[str, str, str, str]:
    """One line of the table: each source's figure (``failed`` where its job failed), their comparison."""
    return (label, show(h) if h else "failed", show(o) if o else "failed",
            compare(h, o) if compare and h and o else "")


def latency_rows(h: Result, o: Result) -> list[tuple[str, str, str, str]]:
    rows = [row("LATENCY: writer's timed commits", h, o, lambda v: str(v["commits"])),
            row("  commits a second (median upsert s)", h, o, lambda v: f"{v['rate']:.2f} ({v['commit_s']:.2f} s)"),
            row("  rows committed / delivered", h, o, lambda v: f"{v['rows_committed']:,} / {v['rows_delivered']:,}",
                lambda h, o: "agree" if all(v["rows_delivered"] == v["rows_committed"] for v in (h, o)) else "MISSING"),
            row("  batches with rows", h, o, lambda v: str(v["batches"]))]
    for name, key in (("file mtime", "lat"), ("completion time", "lat_completion")):
        for p in (50, 95, 99):
            rows.append(row(f"  p{p} commit → sink, from {name}", h, o,
                            lambda v, key=key, p=p: f"{late(v, key, p):.3f} s",
                            lambda h, o, key=key, p=p: ratio(late(h, key, p), late(o, key, p))))
    return rows + [
        row("  max, from file mtime", h, o, lambda v: f"{max(v['lat'], default=float('nan')):.3f} s"),
        row("  mtime − completion time (median)", h, o, lambda v: f"{v['skew'] * 1000:.0f} ms"),
        row("  peak RSS, reader's process tree", h, o, lambda v: f"{v['peak'] / MIB:,.0f} MiB",
            lambda h, o: ratio(h["peak"], o["peak"])),
        row("  peak PSS, reader's process tree", h, o, lambda v: f"{v['pss'] / MIB:,.0f} MiB",
            lambda h, o: ratio(h["pss"], o["pss"])),
        row("  load average before / after", h, o, lambda v: " / ".join(v["load"]))]


def late(v: dict, key: str, p: float) -> float:
    """The p-th percentile of a latency run's ``key`` latencies (NaN: none)."""
    return pct(v[key], p) if v[key] else float("nan")


def report(a, table_info: str, tp: dict[str, Result], lat: dict[str, Result], failures: list[Failure]) -> int:
    """Prints the table, the targets, the failures and the last line; the exit status."""
    h, o = tp.get("hudi"), tp.get("ours")
    rows = [row("Spark", h, o, lambda v: v["spark"]),
            row("rows delivered", h, o, lambda v: f"{v['rows']:,}",
                lambda h, o: "agree" if h["rows"] == o["rows"] else "DIFFER"),
            row("batches with rows", h, o, lambda v: str(v["batches"])),
            row("time in batches (triggerExecution)", h, o, lambda v: f"{v['in_batches']:.2f} s"),
            row("  of which addBatch (read + sink)", h, o, lambda v: f"{v['add_batch']:.2f} s"),
            row("  of which latestOffset+getBatch+planning", h, o, lambda v: f"{v['planning']:.2f} s"),
            row("rows/s in batches", h, o, lambda v: f"{v['rate']:,.0f}", lambda h, o: ratio(o["rate"], h["rate"])),
            row("rows/s by addBatch alone", h, o, lambda v: f"{v['rows'] / v['add_batch']:,.0f}",
                lambda h, o: ratio(o["rows"] / o["add_batch"], h["rows"] / h["add_batch"])),
            row("time to first batch", h, o, lambda v: f"{v['first']:.2f} s",
                lambda h, o: ratio(h["first"], o["first"])),
            row("  of which before the first trigger", h, o, lambda v: f"{v['trigger']:.2f} s"),
            row("query, start to end", h, o, lambda v: f"{v['total']:.2f} s",
                lambda h, o: ratio(h["total"], o["total"])),
            row("peak PSS, job's process tree (fair: shared pages once)", h, o,
                lambda v: f"{v['pss'] / MIB:,.0f} MiB", lambda h, o: ratio(h["pss"], o["pss"]))]
    for role in sorted(set(h["split_pss"] if h else ()) | set(o["split_pss"] if o else ())):
        rows.append(row(f"  {role} at the PSS peak (processes)", h, o,
                        lambda v, role=role: split(v["split_pss"], role)))
    rows.append(row("peak RSS, job's process tree (forked pages counted in each)", h, o,
                    lambda v: f"{v['peak'] / MIB:,.0f} MiB", lambda h, o: ratio(h["peak"], o["peak"])))
    for role in sorted(set(h["split"] if h else ()) | set(o["split"] if o else ())):
        rows.append(row(f"  {role} at the RSS peak (processes)", h, o, lambda v, role=role: split(v["split"], role)))
    rows.append(row("load average before / after", h, o, lambda v: " / ".join(v["load"])))
    if lat:
        rows += latency_rows(lat.get("hudi"), lat.get("ours"))
    print()
    print(f"bench_vs_hudi: Hudi {HUDI} MERGE_ON_READ table v9, {a.rows:,} rows + {a.rows // 10:,} updated keys "
          f"({table_info}); local[2], driver heap {DRIVER_MEMORY}, foreachBatch; {os.cpu_count()} CPUs")
    widths = [max(len(r[i]) for r in rows + [("measurement", "Hudi's source", "ours", "ours vs Hudi")])
              for i in range(4)]
    for r in [("measurement", "Hudi's source", "ours", "ours vs Hudi"), tuple("-" * w for w in widths)] + rows:
        print(" | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    for failure in failures:
        print(f"FAILED: {failure.line()}")
    speed = o["rate"] / h["rate"] if h and o and h["rate"] else float("nan")
    print(f"target: our rows/s >= Hudi's: {speed:.2f}x {verdict(speed >= 1.0) if speed == speed else 'n/a'}")
    p50 = p99 = "n/a"
    hl, ol = lat.get("hudi"), lat.get("ours")
    if hl and ol and hl["lat"] and ol["lat"]:
        hp99, op99 = pct(hl["lat"], 99), pct(ol["lat"], 99)
        print(f"target: our p99 latency <= Hudi's: {op99:.3f} s vs {hp99:.3f} s {verdict(op99 <= hp99)}")
        p50, p99 = ratio(pct(hl["lat"], 50), pct(ol["lat"], 50)), ratio(hp99, op99)
    fl = tp.get("bare")
    if fl:
        roles = ", ".join(f"{role} {split(fl['split_pss'], role)}" for role in sorted(fl["split_pss"]))
        print(f"floor, {SOURCES['bare']} on PySpark {fl['spark']} (the base files' batches, nothing else): first "
              f"batch {fl['first']:.2f} s ({fl['trigger']:.2f} s before the first trigger), peak PSS "
              f"{fl['pss'] / MIB:,.0f} MiB ({roles})")
        if h and o:
            print(f"  Hudi's / floor: first batch {ratio(h['first'], fl['first'])}, memory "
                  f"{ratio(h['pss'], fl['pss'])}; floor / ours: first batch {ratio(fl['first'], o['first'])}, "
                  f"memory {ratio(fl['pss'], o['pss'])}")
    first = ratio(h["first"], o["first"]) if h and o else "n/a"
    memory = ratio(h["pss"], o["pss"]) if h and o else "n/a"
    failed = "".join(f"; {SOURCES[f.source]} failed in {f.phase} after {f.seconds:.0f} s: {f.error}" for f in failures)
    floor = (f" (a bare Python source: first batch {ratio(h['first'], fl['first'])}, memory "
             f"{ratio(h['pss'], fl['pss'])})" if h and fl else "")
    print(f"vs hudi: rows/s {speed:.2f}x, first batch {first}, latency p50 {p50} p99 {p99}, "
          f"memory (PSS) {memory}{floor}{failed}")
    bad = failures or (h and o and h["rows"] != o["rows"]) or any(v and v["missing"] for v in lat.values())
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows Hudi inserts (a tenth of the keys updated)")
    ap.add_argument("--keep", help="folder to keep the table (and the runs' files) in, reused by later runs")
    ap.add_argument("--latency-seconds", type=float, default=60.0, help="timed phase of the writer (s)")
    ap.add_argument("--skip-latency", action="store_true", help="throughput and memory only")
    a = ap.parse_args()
    oracle = ensure(progress=lambda msg: print(msg, flush=True))
    work = Path(a.keep or tempfile.mkdtemp(prefix="bench-vs-hudi-"))
    work.mkdir(parents=True, exist_ok=True)
    jobs = Jobs(oracle, work)
    try:
        table = make_table(jobs, work, a.rows)
        info = describe_table(table)
        print(f"table: {info}", flush=True)
        failures: list[Failure] = []
        tp: dict[str, Result] = {}
        lat: dict[str, Result] = {}
        for source in SOURCES:
            t = tp[source] = attempt("throughput", source, lambda s: throughput(jobs, s, table, work), failures)
            if t:
                print(f"throughput {source}: {t['rows']:,} rows, {t['in_batches']:.2f} s in batches, first batch "
                      f"after {t['first']:.2f} s, peak PSS {t['pss'] / MIB:,.0f} MiB, RSS {t['peak'] / MIB:,.0f} MiB "
                      f"(load {t['load'][1]})",
                      flush=True)
        if not a.skip_latency:
            for source in PEERS:
                v = lat[source] = attempt("latency", source, lambda s: latency(jobs, s, table, work, a), failures)
                if v:
                    print(f"latency {source}: {v['commits']} commits, p50 {late(v, 'lat', 50):.3f} s "
                          f"p99 {late(v, 'lat', 99):.3f} s (load {v['load'][1]})", flush=True)
        return report(a, info, tp, lat, failures)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
