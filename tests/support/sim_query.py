"""Spark's micro-batch loop with its checkpoint, in-process: streams that fail and restart, without Spark.

``stream_sim.run_batches`` drives the reader the way a query that never fails does; :class:`SimQuery` adds what
Spark does around failures, so tests can fail the store under a stream and check what a restart delivers.
"""
from __future__ import annotations

import pyarrow as pa
from pyspark.sql.streaming.datasource import ReadAllAvailable

from hudi_streaming.errors import StoreError
from support.stream_sim import make_reader


class SimQuery:
    """Spark's micro-batch loop over the real reader, with Spark's checkpoint kept here.

    A batch's offsets are logged before it runs and committed after its rows reach the sink (a replayed batch
    replaces its rows), then the source's ``commit`` runs, as in Spark. An error ends the "query"; the next
    :meth:`run` is a restart: a new reader (a new driver process), the logged but uncommitted batch first.
    """

    def __init__(self, table: str, state: str, options: dict[str, str]):
        self.table, self.state, self.options = table, state, options
        self.committed: dict | None = None
        self.logged: tuple[int, dict, dict] | None = None
        self.batches: dict[int, list[dict]] = {}
        self.reader = None
        self.restarts = 0

    def run(self) -> None:
        """Batches until the stream has caught up with the table."""
        try:
            if self.reader is None:
                self.reader = make_reader(self.table, self.state, **self.options)
            reader = self.reader
            reader.driver._last_poll = 0.0  # poll now, not after the idle interval
            if self.logged is not None:
                self._batch(*self.logged)
            start = self.committed or reader.initialOffset()
            while True:
                end = reader.latestOffset(start, ReadAllAvailable())
                if end == start:
                    return
                self.logged = (len(self.batches), start, end)
                self._batch(*self.logged)
                start = end
        except BaseException:
            self.reader = None
            self.restarts += 1
            raise

    def _batch(self, batch_id: int, start: dict, end: dict) -> None:
        reader = self.reader
        rows = [r for p in reader.partitions(start, end) for b in reader.read(p)
                for r in pa.Table.from_batches([b]).to_pylist()]
        self.batches[batch_id] = rows  # the sink: a replayed batch replaces its rows
        self.committed, self.logged = end, None  # Spark's commit log, then the source's commit
        reader.commit(end)

    def run_until_caught_up(self, attempts: int = 20, errors: tuple[type[BaseException], ...] = (StoreError,)):
        """:meth:`run`, restarting after ``errors`` (a query that failed and was restarted)."""
        for _ in range(attempts):
            try:
                return self.run()
            except errors:
                continue
        raise AssertionError(f"the stream did not catch up in {attempts} restarts")

    @property
    def rows(self) -> list[dict]:
        return [r for i in sorted(self.batches) for r in self.batches[i]]
