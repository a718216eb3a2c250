"""Counting the data files a piece of code opens through ``Storage``: what the driver reads that a task reads too
(issue 25.2: none, unless a row limit needs a split's bound)."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from hudi_streaming.hoodie.storage import Storage


@contextlib.contextmanager
def data_reads(monkeypatch, table: str) -> Iterator[list[str]]:
    """The data files of ``table`` (outside ``.hoodie/``) read while inside, as paths under the table (one entry
    per read: a file read twice is listed twice)."""
    root = str(Path(table).resolve())
    opened: list[str] = []
    for name in ("read_bytes", "open", "parquet_file", "input_file"):
        original = getattr(Storage, name)

        def counting(self, rel, *args, _original=original, **kwargs):
            full = str(Path(self.full(rel)).resolve())
            if full.startswith(root + "/") and "/.hoodie/" not in full + "/":
                opened.append(full[len(root) + 1:])
            return _original(self, rel, *args, **kwargs)
        monkeypatch.setattr(Storage, name, counting)
    yield opened
    monkeypatch.undo()
