"""Whether the files a read was planned with are still there as planned.

A split names its files with the sizes the planner saw, and a record offset counts rows in them: a file the
cleaner removed, or one shorter than planned, would shift every row after it. So the reader stops with a
:class:`DataLossError` naming the file, rather than deliver other rows under the same offsets.

The files are read with their planned sizes, so a read of one that is gone fails, and of one that is shorter is
refused (``Storage``: a :class:`CorruptFileError`), before the slice yields a row: a slice's log files are read
whole before its first piece, its base file's footer from the planned end. So the store is asked about the files
only when such a read failed (:func:`verified`), not before every read: that was a request per file on an object
store, a third of a task's requests.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from ..errors import CorruptFileError, DataLossError
from .fs_view import FileSlice
from .table import HudiTable

_T = TypeVar("_T")


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


def verified(table: HudiTable, fs: FileSlice, where: str, pieces: Iterator[_T]) -> Iterator[_T]:
    """``pieces`` (a read of ``fs``'s files), a read that failed on a file gone or short being
    :func:`verify_files`'s data loss naming it (any other failure stays what it is)."""
    try:
        yield from pieces
    except (FileNotFoundError, CorruptFileError):
        verify_files(table, fs, where)
        raise
