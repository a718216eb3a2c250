"""A short AvailableNow job with Spark's own Python worker daemon against this package's
(``spark.python.daemon.module=hudi_streaming.streaming.daemon``): time to the first batch and the memory of the
job's process tree.

Why: users run short AvailableNow jobs every few minutes, where the Python workers' start-up (each imports
Arrow, PySpark's SQL modules and this package) is much of the job; the daemon imports them once and forks.

How: each job runs alone in a fresh process (``local_spark``, ``local[2]``), ``--repeat`` times per
configuration, alternating: ``readStream.format("hudi_streaming")`` from the earliest commit into a
``foreachBatch`` sink that counts the rows. Time to the first batch: from defining the query (``load()``) to
the sink having the first batch; the session's start is printed apart. Memory: the peak of the summed RSS of
the job's process tree and of its PSS (``common.PeakRss``; PSS counts pages forked workers share with their
daemon once). The table: ``--table`` or a Hudi-written MERGE_ON_READ table of the test data
(``tests/data/hudi/<--fixture>.zip``, its last step).

    python bench/bench_worker_daemon.py [--table PATH | --fixture mor_v9_basic] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import LAUNCHER, MIB, PeakRss, load, ratio  # bench/: process trees, report figures

REPO = Path(__file__).resolve().parent.parent
CONFIGS = {"Spark's daemon": "{}", "hudi_streaming's daemon": "recommended"}


def job(table: str, work: str, conf: str) -> None:
    """The measured job (``--worker``): prints its timings as one JSON line."""
    t0 = time.time()
    from hudi_streaming.cli.local_spark import RECOMMENDED_CONF, local_spark

    spark = local_spark("bench-worker-daemon", conf=RECOMMENDED_CONF if conf == "recommended" else json.loads(conf))
    t_session = time.time()
    batches: list[tuple[float, int]] = []

    def sink(df, batch_id: int) -> None:
        batches.append((time.time(), df.count()))

    t_define = time.time()
    query = (spark.readStream.format("hudi_streaming").option("stateLocation", f"{work}/state").load(table)
             .writeStream.foreachBatch(sink).option("checkpointLocation", f"{work}/checkpoint")
             .trigger(availableNow=True).start())
    query.awaitTermination()
    t_end = time.time()
    print(json.dumps({"session": t_session - t0, "first": batches[0][0] - t_define if batches else None,
                      "query": t_end - t_define, "rows": sum(n for _, n in batches), "batches": len(batches)}),
          flush=True)
    spark.stop()


def measure(table: str, conf: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-worker-daemon-") as work:
        cmd = [sys.executable, "-c", LAUNCHER, sys.executable, __file__, "--worker", table, work, conf]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        peak = PeakRss(proc.pid)
        out, err = proc.communicate()
        peak.stop()
        if proc.returncode:
            raise SystemExit(f"job failed (exit {proc.returncode}):\n{err[-4000:]}")
        result = json.loads(out.strip().splitlines()[-1])
        result.update(peak=peak.peak, pss=peak.peak_pss, split=peak.split)
        return result


def fixture_table(name: str, dest: Path) -> str:
    sys.path.insert(0, str(REPO / "tests" / "oracle" / "hudi_oracle"))
    from fixture import HudiFixture  # tests/oracle/hudi_oracle: Hudi-written tables

    fx = HudiFixture(REPO / "tests" / "data" / "hudi" / f"{name}.zip", dest / "fx")
    return str(fx.materialize(len(fx.steps) - 1, dest / "table"))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        job(*sys.argv[2:5])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", help="a Hudi table (default: the fixture's)")
    ap.add_argument("--fixture", default="mor_v9_basic", help="tests/data/hudi/<name>.zip, when no --table")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-worker-daemon-table-") as tmp:
        table = a.table or fixture_table(a.fixture, Path(tmp))
        runs: dict[str, list[dict]] = {name: [] for name in CONFIGS}
        for i in range(a.repeat):
            for name, conf in CONFIGS.items():
                before = load()
                r = measure(table, conf)
                runs[name].append(r)
                print(f"run {i + 1} {name}: first batch {r['first']:.2f} s, query {r['query']:.2f} s, session "
                      f"{r['session']:.2f} s, {r['rows']} rows in {r['batches']} batches, peak RSS "
                      f"{r['peak'] / MIB:,.0f} MiB, PSS {r['pss'] / MIB:,.0f} MiB (load {before} -> {load()})",
                      flush=True)
    med = {name: {k: statistics.median(r[k] for r in rs) for k in ("first", "query", "session", "peak", "pss")}
           for name, rs in runs.items()}
    rows = {name: rs[0]["rows"] for name, rs in runs.items()}
    if len(set(rows.values())) != 1:
        print(f"ROWS DIFFER: {rows}")
        return 1
    print(f"\nmedians of {a.repeat} runs each ({rows[next(iter(rows))]} rows):")
    for name, m in med.items():
        print(f"  {name:24s} first batch {m['first']:.2f} s, query {m['query']:.2f} s, peak RSS "
              f"{m['peak'] / MIB:,.0f} MiB, peak PSS {m['pss'] / MIB:,.0f} MiB")
    base, ours = med["Spark's daemon"], med["hudi_streaming's daemon"]
    print(f"daemon vs Spark's: first batch {ratio(base['first'], ours['first'])}, query "
          f"{ratio(base['query'], ours['query'])}, RSS {ratio(base['peak'], ours['peak'])}, PSS "
          f"{ratio(base['pss'], ours['pss'])} (above 1.0: the daemon better)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
