"""Soak: a streaming job SIGKILLed and restarted again and again while a writer changes the table the whole time.

    python bench/soak.py [--cycles 100] [--work DIR] [--seed 0] [--block 10] [--version 9]
                         [--table-type MERGE_ON_READ] [--clock-skew 90] [--writer-pause 20] [--max-life 45]
                         [--point-timeout 90] [--sink overwrite|guarded] [--object-store [--fault-rate 0.05]]

Each cycle starts the e2e job (``tests/e2e/stream_driver.py``: a real local Spark query, changelog mode with
deletes, task retries on) and kills it, taking these in turn:

* a named fault point (``hudi_streaming._faults``) at its 1st to 6th visit: ``driver.poll``,
  ``state.before_write``, ``state.after_write`` and ``sink.after_write`` kill the job's process there;
  ``consumer.read`` kills a Python worker mid-split (Spark retries the task) and the cycle then ends with a
  kill at a random moment. A point not reached within ``--point-timeout`` seconds ends the cycle with a kill;
* a random moment 1 s to ``--max-life`` after the start (start-up, planning, a batch, idle): SIGKILL of the
  process group.

Meanwhile one writer process runs the project's load generator (upserts, every fifth step deletes;
compaction, clean and archive at fixed step intervals) and is itself SIGKILLed every 10–40 s while it writes
and restarted, so its write in flight fails and the next write rolls it back. The writer takes no lock (one
writer per table, see ``hudi_streaming.writer``), so there are not two writers: instead its instant
clock is skewed by ``+clock-skew`` and ``-clock-skew`` seconds, switching every four steps (the writer keeps
instants increasing: a clock behind the newest instant gives instants 1 ms apart, one ahead jumps). What two
writers with skewed clocks do to a reader, it does as well: on a v9 MOR table some delete steps complete
*late* — their completed file lands 1-10 s after the next step's, so the stream may have planned an instant
that completed after them (``write_late_pair``); the stream must still deliver them (``lateInstants``).

At the end the writer stops, the job drains the table (Trigger.AvailableNow) and the sink's rows are compared
with the change feed the load generator's steps make (the model replays the steps; each step's instant is the
commit that recorded its step number): changes expected, delivered, duplicated, lost and unexpected. The
report shows kills per point and, per block of ``--block`` cycles, the driver's peak RSS — its process group:
the job's Python process, Spark's JVM, the streaming source runner and the Python workers — and the size of
the source's state folder. Linux only (``/proc``). Exits 1 when a change was lost or duplicated or the job
failed with an error of the source.

``--object-store``: the table and the stream's state live on S3 (moto's server on loopback,
``tests/support/s3_server.py``) and the job reaches them through the fault-injecting proxy
(``tests/support/s3_fault_proxy.py``), which fails ``--fault-rate`` of its requests — 503 SlowDown, 500, a reset
before or after the headers, a stall past the job's read timeout (3 s), a truncated body (GETs), in equal shares —
and also applies that share of the conditional PUTs of state files and then answers 500 or resets. The writer writes
to the server directly (it is not what is tested) and commits no late pairs (they move files on a local disk). The
report adds the proxy's requests and faults per kind; a source error now includes ``StoreError`` (a store given up
after ``retry_deadline_seconds``).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "e2e")]
from harness import Driver  # noqa: E402
from support.verify import appended, change_feed, delivered, feed_differences  # noqa: E402

from hudi_streaming._faults import DIR_ENV, FAULT_ENV  # noqa: E402
from hudi_streaming.state import StateStore  # noqa: E402

POINTS = ["driver.poll", "state.before_write", "state.after_write", "sink.after_write", "consumer.read"]
#: a line of the job's output that means the source itself failed (not a kill)
SOURCE_ERROR = re.compile(r"\b(StateError|DataLossError|CorruptFileError|InvalidTableContentError|SchemaChangeError|"
                          r"OptionError|UnsupportedTableError|StoreError|HudiStreamingError)\b")
KEYS, PARTITIONS, BATCH, SEED = 2000, 4, 60, 7
#: the cleaner keeps the slices of the last 30 writes (minutes of the stream's lag); it only looks at the active
#: timeline, so archiving keeps more instants active than that
COMPACT_EVERY, CLEAN_EVERY, ARCHIVE_EVERY, RETAIN_COMMITS, KEEP_ACTIVE = 4, 6, 9, 30, 45
#: a named point fires at its 1st to 6th visit: the job delivers a few batches first, so that the stream keeps up
MAX_VISIT = 6
#: --object-store: the storage options that reach the S3 server directly (None: the table is a local folder)
STORE: dict | None = None


# -- the writer process -------------------------------------------------------------------------------------------

def skew_writer_clock(offset: dt.timedelta) -> None:
    """Make the writer read ``now`` ``offset`` away from the real clock (it reads the time in ``timeline_io``)."""
    from hudi_streaming.writer import timeline_io

    class Skewed(dt.datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[override]
            return dt.datetime.now(tz) + offset

    timeline_io.dt = types.SimpleNamespace(datetime=Skewed, timezone=dt.timezone, timedelta=dt.timedelta)


def writer_main(url: str, version: int, table_type: str, skew: float, pause: float, seed: int,
                storage_options: dict | None = None, busy_path: str | None = None) -> None:
    """Write load-generator steps with table services until killed (resuming after the last completed step);
    the file :func:`busy_file` (or ``busy_path``) exists while it writes. On a local v9 MOR table some delete
    steps complete late (see :func:`write_late_pair`)."""
    from hudi_streaming.writer.loadgen import LoadGenerator

    rng = random.Random(f"{seed}:{os.getpid()}")
    gen = LoadGenerator(url, keys=KEYS, partitions=PARTITIONS, seed=SEED, batch=BATCH, table_type=table_type,
                        version=version, late_share=0.0, name="soak", storage_options=storage_options)
    w = gen.writer
    assert w is not None
    table, busy = Path(url), Path(busy_path) if busy_path else busy_file(Path(url))
    while True:
        n = gen.steps_done + 1
        skew_writer_clock(dt.timedelta(seconds=skew if (n // 4) % 2 else -skew))
        busy.touch()
        if storage_options is None and version >= 8 and table_type == "MERGE_ON_READ" and not has_services(n) \
                and completes_late(gen):
            write_late_pair(gen, table, rng)
        else:
            gen.step()
        for m in range(n, gen.steps_done + 1):
            run_services(w, m, table_type)
        busy.unlink()
        time.sleep(rng.uniform(0, 2 * pause))


def has_services(n: int) -> bool:
    return n % COMPACT_EVERY == 0 or n % CLEAN_EVERY == 0 or n % ARCHIVE_EVERY == 0


def run_services(w, n: int, table_type: str) -> None:
    if n % COMPACT_EVERY == 0 and table_type == "MERGE_ON_READ":
        w.compact()
    if n % CLEAN_EVERY == 0:
        w.clean(retain_commits=RETAIN_COMMITS)
    if n % ARCHIVE_EVERY == 0:
        w.archive(keep_active=KEEP_ACTIVE)


def completes_late(gen) -> bool:
    """Whether the next step is a delete that shares no key with the step after it: such a step can complete
    after its successor and the change feed still holds the same changes (a shared key would make the successor's
    change type depend on what the stream could see, which the model does not follow)."""
    from hudi_streaming.writer.loadgen import LoadGenerator

    dry = LoadGenerator(None, keys=KEYS, partitions=PARTITIONS, seed=SEED, batch=BATCH, late_share=0.0)
    dry.present, dry.steps_done = dict(gen.present), gen.steps_done
    first, second = dry.plan(), dry.plan()
    return first.kind == "delete" and not set(first.data.column("key").to_pylist()) & set(
        second.data.column("key").to_pylist())


def late_folder(table: Path) -> Path:
    return table.with_name("late-commits")


def write_late_pair(gen, table: Path, rng: random.Random) -> None:
    """Steps n and n + 1, step n's completed file landing only after step n + 1's, 1-10 s later: what a stream
    sees when a second writer's clock is behind, or its completed file's rename is slow (the project's writer
    takes no lock, so one process plays both writers). Step n's completion time is then at or before the time
    of an instant the stream may have planned already: a *late* instant, which it must still deliver.

    The completed file is written aside (:func:`late_folder`) and moved in; a writer killed meanwhile is
    restarted only after :func:`reveal_late` moved it in (the commit lands late, it does not fail). Step n + 1
    is written as the second writer does: step n is pending on the timeline, not failed (no rollback), and its
    record index already holds step n's changes."""
    w = gen.writer
    timeline, aside = w.timeline, late_folder(table)
    aside.mkdir(exist_ok=True)
    held: list[str] = []

    def write_aside(ts: str, action: str, content: bytes) -> str:
        completion = timeline.new_time_after(ts)
        name = timeline.completed_name(ts, action, completion)
        tmp = aside / f".{name}.tmp"
        tmp.write_bytes(content)
        tmp.rename(aside / name)
        held.append(name)
        return completion

    timeline.write_completed = write_aside
    try:
        first = gen.step()
    finally:
        del timeline.write_completed
    index = w._index
    w.auto_recover, w.index = False, lambda _table: index
    try:
        second = gen.step()
    finally:
        w.auto_recover = True
        del w.index
    time.sleep(rng.uniform(1, 10))
    reveal_late(table)
    print(f"step {first.number} ({first.instant}, completed {held[0].split('_')[1].split('.')[0]}) completes late: "
          f"after step {second.number} ({second.instant})", flush=True)


def reveal_late(table: Path) -> None:
    """Move completed files written aside into the timeline (a torn one, never finished, is dropped: its write
    stays pending and is rolled back)."""
    aside = late_folder(table)
    if not aside.exists():
        return
    for torn in aside.glob(".*.tmp"):
        torn.unlink()
    for name in sorted(p.name for p in aside.iterdir()):
        os.rename(aside / name, table / ".hoodie" / "timeline" / name)


def busy_file(table: Path) -> Path:
    return table.with_name("writer-busy")


class Writer:
    """The writer process, SIGKILLed at random moments and restarted by a thread of the soak."""

    def __init__(self, args, table: Path | str, log: Path):
        self.args, self.table, self.log = args, table, log
        #: exists while the writer writes: beside a local table, in the soak's folder for one on S3
        self.busy = busy_file(Path(table)) if STORE is None else log.with_name("writer-busy")
        self.kills = 0
        #: why the writer ended by itself (a writer bug: it only ever stops when killed)
        self.failure: str | None = None
        self._stop = threading.Event()
        self._proc = self._start()
        self._thread = threading.Thread(target=self._chaos, daemon=True)
        self._thread.start()

    def _start(self) -> subprocess.Popen:
        if STORE is None:
            reveal_late(Path(self.table))  # a commit the killed writer held back lands now, before the next write
        cmd = [sys.executable, __file__, "--writer-process", str(self.table), "--version", str(self.args.version),
               "--table-type", self.args.table_type, "--clock-skew", str(self.args.clock_skew),
               "--writer-pause", str(self.args.writer_pause), "--seed", str(self.args.seed)]
        if STORE is not None:
            cmd += ["--writer-storage-options", json.dumps(STORE), "--writer-busy", str(self.busy)]
        with open(self.log, "a") as out:
            return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def _chaos(self) -> None:
        """Every 10-40 s, kill the writer while it writes (a step or a table service): its instant fails."""
        rng = random.Random(self.args.seed)
        busy = self.busy
        while not self._stop.wait(rng.uniform(10, 40)):
            deadline = time.monotonic() + 60
            while not busy.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(rng.uniform(0, 0.5))
            self._proc.kill()
            self._proc.wait()
            if self._proc.returncode != -signal.SIGKILL:
                self.failure = f"the writer exited with {self._proc.returncode} before it was killed: see {self.log}"
                return
            self.kills += 1
            self._proc = self._start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._proc.kill()
        self._proc.wait()
        if STORE is None:
            reveal_late(Path(self.table))

    def late_commits(self) -> int:
        """Steps whose completed file landed after the next step's (counted from the writer's log)."""
        return self.log.read_text().count(" completes late: ") if self.log.exists() else 0


# -- measuring --------------------------------------------------------------------------------------------------

def group_rss(pgid: int) -> tuple[int, int, int]:
    """(JVM, largest Python process, whole group) resident set sizes in bytes of the processes in ``pgid``."""
    jvm = python = total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[2]) != pgid:
            continue
        rss = next((int(ln.split()[1]) * 1024 for ln in status.splitlines() if ln.startswith("VmRSS:")), 0)
        total += rss
        name = stat.split("(", 1)[1].rsplit(")", 1)[0]
        if name == "java":
            jvm = max(jvm, rss)
        elif name.startswith("python"):
            python = max(python, rss)
    return jvm, python, total


class Peak:
    """The peak of :func:`group_rss` of one job while it runs, sampled every half second by a thread."""

    def __init__(self, driver: Driver):
        self.values = (0, 0, 0)
        self._pgid = driver.proc.pid
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.5):
            now = group_rss(self._pgid)
            self.values = tuple(max(a, b) for a, b in zip(self.values, now))  # type: ignore[assignment]

    def stop(self) -> tuple[int, int, int]:
        self._done.set()
        self._thread.join()
        return self.values


def folder_size(path: Path | str) -> tuple[int, int]:
    if STORE is not None:
        from hudi_streaming.hoodie.storage import Storage

        infos = Storage(str(path), STORE).list_dir("")
        return len(infos), sum(i.size for i in infos)
    path = Path(path)
    files = [p for p in path.iterdir() if p.is_file()] if path.exists() else []
    return len(files), sum(p.stat().st_size for p in files)


# -- the soak ---------------------------------------------------------------------------------------------------

def run_cycle(args, rng: random.Random, table: Path, work: Path, cycle: int, options: dict, job_args: list[str],
              kills: Counter) -> tuple[tuple[int, int, int], list[str]]:
    """One start and kill of the job; returns its peak RSS and any line naming an error of the source."""
    what = (POINTS + ["random"])[cycle % (len(POINTS) + 1)]  # every point as often as random kills
    env, faults = {}, work / "faults" / f"{cycle:04d}"
    if what != "random":
        faults.mkdir(parents=True)
        env = {FAULT_ENV: f"{what}@{rng.randint(1, MAX_VISIT)}", DIR_ENV: str(faults)}
    driver = Driver(table, work, options, args=job_args, env=env)
    peak = Peak(driver)
    start = time.monotonic()
    if what == "random":
        deadline = start + rng.uniform(1, args.max_life)
        while time.monotonic() < deadline and driver.proc.poll() is None:
            time.sleep(0.1)
        kills["random"] += 1
    else:
        marker = faults / what
        deadline = start + args.point_timeout
        while not marker.exists() and driver.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if not marker.exists():
            kills[f"{what} (not reached: random)"] += 1
        elif what == "consumer.read":  # the task was retried: the job lives on until a random kill
            kills[what] += 1
            end = time.monotonic() + rng.uniform(0, args.max_life / 3)
            while time.monotonic() < end and driver.proc.poll() is None:
                time.sleep(0.1)
        else:
            kills[what] += 1
            try:
                driver.proc.wait(60)  # the job dies of its killed process (runner or itself)
            except subprocess.TimeoutExpired:
                kills[f"{what} (job hung after the kill)"] += 1
    driver.kill()
    return peak.stop(), [ln for ln in driver.lines if SOURCE_ERROR.search(ln)]


def model_feed(table: Path | str) -> tuple[list[tuple], int]:
    """The change feed of every step whose commit completed: the load generator's plans replayed, each with the
    instant of the commit that recorded its step number; and the number of steps."""
    from hudi_streaming import HudiTable
    from hudi_streaming.writer.loadgen import STEP_KEY, LoadGenerator

    t = HudiTable(str(table), STORE)
    instant_of = {}
    for e in t.timeline.completed_writes(include_archived=True):
        step = t.timeline.commit_metadata(e.requested_time).extra_metadata.get(STEP_KEY)
        if step:
            if int(step) in instant_of:
                raise SystemExit(f"step {step} was committed twice: {instant_of[int(step)]} and {e.requested_time}")
            instant_of[int(step)] = e.requested_time
    dry = LoadGenerator(None, keys=KEYS, partitions=PARTITIONS, seed=SEED, batch=BATCH, late_share=0.0)
    steps = []
    for n in range(1, max(instant_of, default=0) + 1):
        s = dry.plan()
        s.instant = instant_of[n]
        steps.append(s)
    return change_feed(steps), len(steps)


def first_write(table: Path | str, check: Callable[[], None] = lambda: None) -> str:
    """The requested time of the table's first completed write, once the writer has made it: the stream starts
    there, so that it delivers every step as a change (a start from ``earliest`` would be a snapshot). ``check``
    runs while it waits, and raises to give up (a writer that died)."""
    from hudi_streaming import HudiTable
    from hudi_streaming.hoodie.storage import Storage

    while True:
        if Storage(str(table), STORE).exists(".hoodie/hoodie.properties"):
            writes = HudiTable(str(table), STORE).timeline.completed_writes()
            if writes:
                return writes[0].requested_time
        check()
        time.sleep(0.2)


def actions(table: Path | str) -> tuple[Counter, int]:
    """Completed instants per action, active and archived (rollbacks are the writer's failed writes), and how
    many were archived."""
    from hudi_streaming import HudiTable

    t = HudiTable(str(table), STORE)
    done = Counter(e.instant.action.value for e in t.timeline.entries if e.is_completed)
    done.update(a.action.value for a in t.timeline.archived.instants)
    return done, len(t.timeline.archived.instants)


class ObjectStore:
    """--object-store: moto's S3 server and the fault-injecting proxy in front of it, in this process (threads)
    for the whole soak; the jobs reach the proxy, the writer the server."""

    def __init__(self, rate: float, seed: int):
        from support.s3_fault_proxy import Fault, FaultProxy
        from support.s3_server import S3Server

        self.server = S3Server()
        self.proxy = FaultProxy(self.server, seed=seed, stall_seconds=6.0)
        general = ["503", "500", "reset_before", "reset_after", "stall", "truncate"]
        # about ``rate`` of all requests in equal shares (truncation on GETs only), and as much again of the
        # conditional PUTs applied, then answered 500 or reset
        self.proxy.set_faults(*[Fault(k, rate=rate / len(general)) for k in general],
                              Fault("applied_500", rate=rate / 2, ops=frozenset({"CPUT"})),
                              Fault("applied_reset", rate=rate / 2, ops=frozenset({"CPUT"})))

    def job_options(self, state: str) -> dict[str, str]:
        return {**self.proxy.spark_options, "stateLocation": state,
                "fs.config_kwargs": json.dumps({"read_timeout": 3, "connect_timeout": 3})}

    def stop(self) -> dict:
        stats = self.proxy.stats()
        self.proxy.stop()
        self.server.stop()
        return stats


def mib(n: int) -> str:
    return f"{n / 2**20:7.0f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--work", default=None, help="folder for the table and the job (default: a temporary one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--block", type=int, default=10, help="cycles per line of the memory report")
    ap.add_argument("--version", type=int, default=9, choices=[6, 9])
    ap.add_argument("--table-type", default="MERGE_ON_READ", choices=["MERGE_ON_READ", "COPY_ON_WRITE"])
    ap.add_argument("--clock-skew", type=float, default=90.0, help="seconds the writer's clock is off, ±")
    ap.add_argument("--writer-pause", type=float, default=20.0,
                    help="mean seconds between the writer's steps: the stream, killed every minute or so, must keep "
                         "up (changelog mode plans one instant per micro-batch) or the cleaner removes what it reads")
    ap.add_argument("--max-life", type=float, default=45.0, help="seconds after its start a random kill comes at most")
    ap.add_argument("--point-timeout", type=float, default=90.0)
    ap.add_argument("--sink", default="overwrite", choices=["overwrite", "guarded"])
    ap.add_argument("--object-store", action="store_true",
                    help="table and state on S3 (moto on loopback) behind the fault-injecting proxy")
    ap.add_argument("--fault-rate", type=float, default=0.05, help="--object-store: the share of requests failed")
    ap.add_argument("--writer-process", metavar="URL", help=argparse.SUPPRESS)
    ap.add_argument("--writer-storage-options", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--writer-busy", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.writer_process:
        writer_main(args.writer_process, args.version, args.table_type, args.clock_skew, args.writer_pause,
                    args.seed, json.loads(args.writer_storage_options) if args.writer_storage_options else None,
                    args.writer_busy)
        return 0
    root = Path(args.work or tempfile.mkdtemp(prefix="hudi-streaming-soak-"))
    table: Path | str = root / "table"
    work = root / "job"
    state: Path | str = work / "state"
    work.mkdir(parents=True, exist_ok=True)
    job_args = ["--sinks", args.sink, "--task-retries", "4"]
    store = ObjectStore(args.fault_rate, args.seed) if args.object_store else None
    if store is not None:
        global STORE
        STORE = store.server.storage_options
        table, state = store.server.url("soak/table"), store.server.url("soak/state")
    print(f"soak in {root}: {args.cycles} cycles, seed {args.seed}, table v{args.version} {args.table_type} "
          f"at {table}, writer clock ±{args.clock_skew:g} s"
          + (f", S3 through the proxy at {args.fault_rate:.0%} faults" if store else ""), flush=True)
    writer = Writer(args, table, root / "writer.log")
    rng = random.Random(args.seed)
    kills: Counter = Counter()
    blocks: list[tuple] = []
    block_peak = (0, 0, 0)
    block_start = began = time.monotonic()
    errors: list[str] = []
    try:
        options = {"readMode": "changelog", "emitDeletes": "true", "maxRowsPerTrigger": "400", "miniBatchSize": "64",
                   "startingInstant": first_write(table)}
        if store is not None:
            options.update(store.job_options(str(state)))
        for cycle in range(args.cycles):
            peak, errors = run_cycle(args, rng, table, work, cycle, options, job_args, kills)
            block_peak = tuple(max(a, b) for a, b in zip(block_peak, peak))  # type: ignore[assignment]
            if errors or writer.failure:
                print(f"cycle {cycle}: stopped: {writer.failure or ''}\n  " + "\n  ".join(errors[:10]), flush=True)
                break
            if (cycle + 1) % args.block == 0 or cycle + 1 == args.cycles:
                blocks.append((cycle + 1, time.monotonic() - block_start, *block_peak, *folder_size(state)))
                print(f"cycle {cycle + 1}: {time.monotonic() - began:.0f} s, kills {dict(kills)}", flush=True)
                block_peak, block_start = (0, 0, 0), time.monotonic()
    finally:
        writer.stop()
    drain = Driver(table, work, options, until_caught_up=True, args=job_args)
    peak, drained = Peak(drain), time.monotonic()
    rc = drain.wait(1800)
    blocks.append(("drain", time.monotonic() - drained, *peak.stop(), *folder_size(state)))
    errors += [ln for ln in drain.lines if SOURCE_ERROR.search(ln)]
    expected, n_steps = model_feed(table)
    rows = appended(work / "guarded") if args.sink == "guarded" else delivered(work / "out")
    diff = feed_differences(expected, rows)
    hours = (time.monotonic() - began) / 3600
    print(f"\n== soak report ({hours:.2f} h, seed {args.seed}) ==")
    print(f"cycles {sum(kills.values())} of {args.cycles}; job kills per point: "
          + ", ".join(f"{k} {v}" for k, v in sorted(kills.items())))
    done, archived = actions(table)
    print(f"writer: {n_steps} steps committed, killed {writer.kills} times, instants per action {dict(done)} "
          f"({archived} archived), clock ±{args.clock_skew:g} s")
    newest = StateStore(str(state), STORE).newest()
    print(f"late commits: {writer.late_commits()} steps completed after the next step; the stream planned "
          f"{newest.late_instants if newest else 0} instants late (lateInstants)")
    if store is not None:
        stats = store.stop()
        print(f"object store: {stats['requests']} requests through the proxy ({stats['by_op']}), "
              f"{stats['injected']} faults injected ({stats['faults']})")
    print(f"changes expected {len(expected)}, delivered {len(rows)}, duplicated {len(diff['duplicated'])}, "
          f"lost {len(diff['lost'])}, unexpected {len(diff['unexpected'])}; final drain exit code {rc}")
    print("driver peak RSS (MiB) and state folder per block of cycles:")
    print("  cycles  minutes    JVM  Python  group  state files  state KiB")
    for upto, secs, jvm, python, total, files, size in blocks:
        print(f"  {upto:>6}  {secs / 60:7.1f}  {mib(jvm)} {mib(python)} {mib(total)}  {files:11d}  {size / 1024:9.1f}")
    for name in ("duplicated", "lost", "unexpected"):
        if diff[name]:
            print(f"{name} (first 5): {diff[name][:5]}")
    if errors:
        print("source errors (first 5):\n  " + "\n  ".join(errors[:5]))
    if writer.failure:
        print(writer.failure)
    return 1 if errors or writer.failure or rc != 0 or any(diff.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
