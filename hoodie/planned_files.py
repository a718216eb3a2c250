"""Whether the files a read was planned with are still there as planned, before any of them is read.

A split names its files with the sizes the planner saw, and a record offset counts rows in them: a file the
cleaner removed, or one shorter than planned, would shift every row after it. So the reader checks them first
and stops with a :class:`DataLossError` naming the file, rather than deliver other rows under the same offsets.
"""
from __future__ import annotations

from collections.abc import Iterator

from ..errors import DataLossError
from .fs_view import FileSlice
from .table import HudiTable


def missing_files(table: HudiTable, fs: FileSlice | None) -> Iterator[tuple[str, str]]:
    """(path, what became of it) for each file of ``fs`` that is gone or shorter than planned, in the slice's
    order, looked at one after the other as they are asked for."""
    if fs is None:
        return
    files = ([(fs.base_file.path, fs.base_file.size)] if fs.base_file else []) + [(lf.path, lf.size)
                                                                                  for lf in fs.log_files]
    for path, size in files:
        try:
            actual = table.storage.size(path)
        except FileNotFoundError:
            yield path, "was removed before it was read; the cleaner retains too few commits for this reader's lag"
            continue
        if actual < size:
            yield path, f"shrank from {size} to {actual} bytes since it was planned"


def verify_files(table: HudiTable, fs: FileSlice, where: str) -> None:
    """The planned files of ``fs`` (the range ``where``) must still exist with at least the planned sizes."""
    for path, problem in missing_files(table, fs):
        raise DataLossError(f"{table.url}: {path} of {where} {problem}")
