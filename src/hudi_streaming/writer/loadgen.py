"""A load generator: a steady, reproducible stream of inserts, updates and deletes into a live Hudi table.

For demos (a table that changes while a stream reads it), tests (the same workload replayed in memory gives
the expected table) and benchmarks. ``N`` keys ``key-0000000`` … live in ``P`` partitions (key ``i`` in
``part=p<i % P>``); each :meth:`LoadGenerator.step` is one commit of ``batch`` operations:

* most steps upsert: inserts of absent keys and updates of present ones (event-time tables also get some
  *late* updates, whose ordering value is below the stored one, which Hudi's merge must ignore);
* every ``delete_every``-th step deletes present keys instead.

The ordering field ``ts`` grows with the step number, so apart from late updates the newest write wins under
every merge mode. What a step writes depends only on ``(seed, step number)`` and the keys present before it,
so :meth:`LoadGenerator.plan` replays a workload without a table; each commit records its step number in
its commit metadata (``hoodie.loadgen.step``), so a generator reopened on a table — after a crash, say —
resumes after the last completed step.

Command line::

    python -m hudi_streaming.writer.loadgen URL [--keys N] [--partitions P] [--rate ROWS_PER_S] [--batch B]
        [--commits C | --duration S] [--compact-every K] [--clean-every K] [--archive-every K]
        [--table-type MERGE_ON_READ|COPY_ON_WRITE] [--version 6|9] [--seed S]
"""
from __future__ import annotations

import argparse
import datetime as dt
import logging
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

from ..errors import OptionError
from ..hoodie.config import MergeMode, TableType
from ..hoodie.storage import Storage
from .core import HudiWriter, MergeModeName, TableTypeName, create_table

log = logging.getLogger(__name__)

STEP_KEY = "hoodie.loadgen.step"
SEED_KEY = "hoodie.loadgen.seed"
SCHEMA = pa.schema([
    ("key", pa.string()), ("part", pa.string()), ("ts", pa.int64()), ("amount", pa.float64()),
    ("qty", pa.int32()), ("note", pa.string()), ("flag", pa.bool_()), ("updated", pa.timestamp("us", tz="UTC")),
])
_EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


@dataclass
class Step:
    """One planned commit: ``kind`` is ``"upsert"`` or ``"delete"``; ``data`` the rows (delete: key columns)."""

    number: int  # 1-based
    kind: str
    data: pa.Table
    late_keys: frozenset = frozenset()  # updates expected to lose to the stored record (event time)
    instant: str | None = None


class LoadGenerator:
    """Drives a :class:`~hudi_streaming.writer.HudiWriter` (creating the table when ``url`` has none).

    Parameters:
        url: the table's root folder; None: a dry generator, which only plans (:meth:`plan`).
        keys: the number of distinct keys (``N``).
        partitions: the number of partitions (``P``); 0: an unpartitioned table.
        rate: rows per second :meth:`run` writes at; None: as fast as it can.
        seed: what a step writes depends only on it, the step number and the keys present.
        batch: operations per step (commit).
        table_type, version, merge_mode: of a table the generator creates (:func:`create_table`); merge_mode
            also tells a dry generator whether updates may come late (event time).
        delete_every: every this many steps deletes keys instead of upserting (0: never).
        insert_share: the share of a step's rows that insert absent keys (once some are present).
        late_share: the share of updates that come late (event-time tables only).
        name: the name of a table the generator creates.
        max_file_records: the writer's ``max_file_records``.
        storage_options: fsspec options for the table's store.
    """

    def __init__(self, url: str | None, *, keys: int = 1000, partitions: int = 4, rate: float | None = None,
                 seed: int = 0, batch: int = 100, table_type: TableTypeName | TableType = "MERGE_ON_READ",
                 version: Literal[6, 9] = 9, merge_mode: MergeModeName | MergeMode | None = None,
                 delete_every: int = 5, insert_share: float = 0.3, late_share: float = 0.1, name: str = "loadgen",
                 max_file_records: int = 100_000, storage_options: dict | None = None):
        if keys < 1 or partitions < 0 or batch < 1:
            raise OptionError("keys and batch must be positive, partitions non-negative")
        self.url = url
        self.keys, self.partitions, self.rate, self.seed = keys, partitions, rate, seed
        self.batch, self.delete_every, self.insert_share = batch, delete_every, insert_share
        self.present: dict[int, int] = {}  # key number -> stored ts
        self.steps_done = 0
        self.writer: HudiWriter | None = None
        self.event_time = True
        if url is None:  # a dry generator: plans only
            self.event_time = (merge_mode or "EVENT_TIME_ORDERING").upper() == "EVENT_TIME_ORDERING"
            self.late_share = late_share if self.event_time else 0.0
            return
        if Storage(url, storage_options).exists(".hoodie/hoodie.properties"):
            writer = HudiWriter.open(url, storage_options=storage_options, max_file_records=max_file_records)
        else:
            schema = SCHEMA if partitions else SCHEMA.remove(SCHEMA.get_field_index("part"))
            writer = create_table(url, name, schema, record_key="key", partition_fields=["part"] if partitions else [],
                                  ordering_field="ts", table_type=table_type, version=version, merge_mode=merge_mode,
                                  storage_options=storage_options, max_file_records=max_file_records)
        self.writer = writer
        self.event_time = writer.config.merge_mode is MergeMode.EVENT_TIME_ORDERING
        self.late_share = late_share if self.event_time else 0.0
        self._resume(writer)

    # -- the workload ------------------------------------------------------------------------------------------
    def key_name(self, i: int) -> str:
        return f"key-{i:07d}"

    def partition_of(self, i: int) -> str:
        return f"p{i % self.partitions}"

    def plan(self, number: int | None = None) -> Step:
        """The next step (``number`` = steps done + 1) as data, and advance the key bookkeeping."""
        number = self.steps_done + 1 if number is None else number
        if number != self.steps_done + 1:
            raise OptionError(f"steps are planned in order: next is {self.steps_done + 1}, not {number}")
        rng = random.Random(f"hoodie-loadgen:{self.seed}:{number}")
        present = sorted(self.present)
        is_delete = self.delete_every > 0 and number % self.delete_every == 0 and present
        late: set[int] = set()
        if is_delete:
            chosen = rng.sample(present, min(len(present), max(1, self.batch // 4)))
            rows = [self._key_row(i) for i in sorted(chosen)]
            for i in chosen:
                del self.present[i]
            data = pa.Table.from_pylist(rows, schema=self._key_schema())
            kind = "delete"
        else:
            absent = self.keys - len(present)
            n_insert = min(absent, max(1, round(self.batch * self.insert_share)) if present else self.batch)
            n_update = min(len(present), self.batch - n_insert)
            updates = rng.sample(present, n_update)
            inserts: set[int] = set()
            while len(inserts) < n_insert:
                i = rng.randrange(self.keys)
                if i not in self.present:
                    inserts.add(i)
            rows = []
            for j, i in enumerate(sorted(set(updates) | inserts)):
                ts = number * 1_000_000 + j + 1
                if i in self.present and self.late_share and rng.random() < self.late_share:
                    ts = self.present[i] - 1
                    late.add(i)
                rows.append(self._row(i, ts, rng))
                if i not in late:
                    self.present[i] = ts
            data = pa.Table.from_pylist(rows, schema=self._schema())
            kind = "upsert"
        self.steps_done = number
        return Step(number, kind, data, frozenset(self.key_name(i) for i in late))

    def _schema(self) -> pa.Schema:
        return SCHEMA if self.partitions else SCHEMA.remove(SCHEMA.get_field_index("part"))

    def _key_schema(self) -> pa.Schema:
        return pa.schema([f for f in self._schema() if f.name in ("key", "part")])

    def _key_row(self, i: int) -> dict:
        row = {"key": self.key_name(i)}
        if self.partitions:
            row["part"] = self.partition_of(i)
        return row

    def _row(self, i: int, ts: int, rng: random.Random) -> dict:
        row = self._key_row(i)
        row.update(ts=ts, amount=round(rng.uniform(0, 1000), 2), qty=rng.randrange(-5, 100),
                   note=None if rng.random() < 0.1 else rng.choice(["new", "paid", "shipped", "returned", "ü-ñ"]),
                   flag=rng.random() < 0.5, updated=_EPOCH + dt.timedelta(microseconds=ts))
        return row

    # -- writing -----------------------------------------------------------------------------------------------
    def _live_writer(self) -> HudiWriter:
        if self.writer is None:
            raise OptionError("a dry LoadGenerator (url=None) only plans")
        return self.writer

    def step(self) -> Step:
        """Plan and write the next step (one commit); returns it with its instant time."""
        writer = self._live_writer()
        saved = (dict(self.present), self.steps_done)
        s = self.plan()
        writer.extra_metadata = {STEP_KEY: str(s.number), SEED_KEY: str(self.seed)}
        try:
            s.instant = writer.delete(s.data) if s.kind == "delete" else writer.upsert(s.data)
        except BaseException:
            self.present, self.steps_done = saved  # the commit may or may not have happened: re-read on resume
            raise
        return s

    def run(self, commits: int | None = None, *, duration: float | None = None, compact_every: int = 0,
            clean_every: int = 0, archive_every: int = 0, retain_commits: int = 10, keep_active: int = 20,
            on_step: Callable[[Step], object] | None = None) -> list[Step]:
        """Write ``commits`` steps (or for ``duration`` seconds) at ``rate`` rows/s, with table services every
        ``*_every`` steps (0: never). ``on_step(step)`` is called after each commit."""
        done: list[Step] = []
        start = time.monotonic()
        rows = 0
        while (commits is None or len(done) < commits) and (duration is None or time.monotonic() - start < duration):
            s = self.step()
            done.append(s)
            rows += s.data.num_rows
            n = s.number
            writer = self._live_writer()  # step() wrote with it
            if compact_every and n % compact_every == 0:
                writer.compact()
            if clean_every and n % clean_every == 0:
                writer.clean(retain_commits=retain_commits)
            if archive_every and n % archive_every == 0:
                writer.archive(keep_active=keep_active)
            if on_step is not None:
                on_step(s)
            if self.rate:
                lag = rows / self.rate - (time.monotonic() - start)
                if lag > 0:
                    time.sleep(lag)
        return done

    def _resume(self, writer: HudiWriter) -> None:
        """Continue after the last step completed on the table: replay the plans up to it (no writing)."""
        last = completed_steps(writer.url, writer.storage_options)
        while self.steps_done < last:
            self.plan()


def completed_steps(url: str, storage_options: dict | None = None) -> int:
    """The number of the last loadgen step whose commit completed on the table (0 if none)."""
    from ..hoodie.table import HudiTable
    t = HudiTable(url, storage_options)
    for e in reversed(t.timeline.completed_writes(include_archived=True)):
        md = t.timeline.commit_metadata(e.requested_time)
        step = md.extra_metadata.get(STEP_KEY)
        if step:
            return int(step)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m hudi_streaming.writer.loadgen", description=__doc__.split("\n\n")[0])
    p.add_argument("url")
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--rate", type=float, default=None, help="rows per second (default: as fast as possible)")
    p.add_argument("--batch", type=int, default=500, help="rows per commit")
    p.add_argument("--commits", type=int, default=None)
    p.add_argument("--duration", type=float, default=None, help="seconds")
    p.add_argument("--compact-every", type=int, default=10)
    p.add_argument("--clean-every", type=int, default=20)
    p.add_argument("--archive-every", type=int, default=40)
    p.add_argument("--retain-commits", type=int, default=10)
    p.add_argument("--keep-active", type=int, default=20)
    p.add_argument("--table-type", default="MERGE_ON_READ", choices=["MERGE_ON_READ", "COPY_ON_WRITE"])
    p.add_argument("--version", type=int, default=9, choices=[6, 9])
    p.add_argument("--merge-mode", default=None, choices=["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.commits is None and args.duration is None:
        args.commits = 100
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    gen = LoadGenerator(args.url, keys=args.keys, partitions=args.partitions, rate=args.rate, seed=args.seed,
                        batch=args.batch, table_type=args.table_type, version=args.version,
                        merge_mode=args.merge_mode)

    def report(s: Step) -> None:
        log.info("step %d: %s of %d rows at %s (%d keys present)", s.number, s.kind, s.data.num_rows, s.instant,
                 len(gen.present))

    gen.run(args.commits, duration=args.duration, compact_every=args.compact_every, clean_every=args.clean_every,
            archive_every=args.archive_every, retain_commits=args.retain_commits, keep_active=args.keep_active,
            on_step=report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
