"""Bounded memory for the log records of a file slice: beyond a budget, decoded blocks go to disk.

The merge needs every counted log record of a slice at once (a later block can change any key). Keys and
merge flags are small and stay in memory; the record columns are what grows. Once the buffered columns
exceed the budget they are written to an Arrow IPC file and read back memory-mapped, so the operating
system pages them in on demand instead of the process holding them.
"""
from __future__ import annotations

import os
import tempfile

import pyarrow as pa

DEFAULT_BUDGET_BYTES = 512 * 1024 * 1024


class SpillBuffer:
    """Collects Arrow tables of one schema, spilling to memory-mapped IPC files past ``budget_bytes``."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES, spill_dir: str | None = None):
        self.budget_bytes = budget_bytes
        self.spill_dir = spill_dir
        self.spilled_bytes = 0
        self._memory: list[pa.Table] = []
        self._memory_bytes = 0
        self._mapped: list[pa.Table] = []

    def append(self, table: pa.Table) -> None:
        self._memory.append(table)
        self._memory_bytes += table.nbytes
        if self._memory_bytes > self.budget_bytes:
            self._spill()

    def _spill(self) -> None:
        buffered = pa.concat_tables(self._memory)
        fd, path = tempfile.mkstemp(prefix="hoodie-spill-", suffix=".arrow", dir=self.spill_dir)
        os.close(fd)
        try:
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, buffered.schema) as writer:
                writer.write_table(buffered)
            source = pa.memory_map(path, "r")
            self._mapped.append(pa.ipc.open_file(source).read_all())
        finally:
            os.unlink(path)  # the mapping stays valid; the disk space goes when the table is released
        self.spilled_bytes += buffered.nbytes
        self._memory, self._memory_bytes = [], 0

    def table(self) -> pa.Table | None:
        parts = self._mapped + self._memory
        return pa.concat_tables(parts) if parts else None
