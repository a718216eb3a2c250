"""Base files in every format Hudi writes (parquet, ORC, Lance), opened in one place.

Hudi writes a table's base files in one format, ``hoodie.table.base.file.format``, and names each with that
format's extension (``HoodieFileFormat.getFileExtension``). The readers of a base file — the slice reader,
which reads one a piece at a time, and the planner, which bounds a split's rows by the file's row count — need
the same three things of any format: the row count from the footer, the top-level column names, and the rows
in file order, a batch at a time, with a projection. :func:`open_base_file` gives those for every format, so
a new format is one class here and no reader branches on the format.

The format is told by the file's suffix, not by the table's property: the name is what Hudi's own readers
go by when a table mixes formats, and it is the one thing that cannot disagree with the file's content
before the file is read.

Each format reads a bounded part of the file at a time, so a task holds about a piece of the file, never the
whole of it:

- parquet: a column buffer at a time (:meth:`Storage.parquet_file`);
- ORC: a stripe at a time (``pyarrow.orc``: Arrow reads a stripe's column streams whole; Hudi's stripes are
  64 MB by default, ``hoodie.orc.stripe.size``, half a parquet row group);
- Lance: batches of :data:`LANCE_BATCH_ROWS` rows, :data:`LANCE_READ_AHEAD` of them read ahead by Lance's own
  threads (``pylance``, the optional extra ``hudi-streaming[lance]``).

Every format's columns come back as Arrow types that may differ from parquet's in their physical form (ORC
timestamps are nanoseconds, its lists and maps name their fields differently); the slice reader casts every
piece to the table's schema (``slice_reader.align``), so rows are the same whatever the format. A file that
cannot be decoded is one :class:`CorruptFileError` naming it; a file that is gone stays ``FileNotFoundError``,
which the stream reports as data loss.
"""
from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ..errors import CorruptFileError, UnsupportedTableError
from .storage import Storage

#: ``hoodie.table.base.file.format`` values this package reads, with the file-name suffix of each
#: (Hudi's ``HoodieFileFormat``; HFILE is the metadata table's format, never a data table's base file)
FORMATS = {"PARQUET": ".parquet", "ORC": ".orc", "LANCE": ".lance"}
#: rows per batch read from a Lance file, and how many batches Lance reads ahead (its default, 16 batches of
#: 1024 rows, is fine; 16 of a piece's 131,072 rows would hold sixteen pieces)
LANCE_BATCH_ROWS = 16_384
LANCE_READ_AHEAD = 2
#: bytes copied at a time when a Lance file on an object store is spooled to local disk
_SPOOL_CHUNK = 4 << 20
LANCE_EXTRA = "pip install 'hudi-streaming[lance]'"


class BaseFileReader(ABC):
    """One base file opened for reading: row count, column names, and rows a batch at a time. ``size``: the
    file's size when known (a split's, a listing's; None or 0: not known), which spares an object store the
    request asking for it (:meth:`Storage.input_file`)."""

    def __init__(self, storage: Storage, path: str, size: int | None = None):
        self.storage = storage
        self.path = path
        self.size = size or None

    @property
    def where(self) -> str:
        """The file as users name it, for errors."""
        return f"{self.storage.url}/{self.path}"

    @property
    @abstractmethod
    def num_rows(self) -> int:
        """Rows in the file, from its footer (no data is read)."""

    @property
    @abstractmethod
    def names(self) -> list[str]:
        """The file's top-level column names."""

    @abstractmethod
    def _batches(self, columns: list[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        """The file's rows of ``columns`` in file order (the format's own decode errors not yet translated)."""

    def batches(self, columns: list[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        """The rows of ``columns`` (all present in the file, in that order) in file order, in batches of at most
        ``batch_rows`` rows (ORC: one stripe each, whatever its rows); a corrupt file raises
        :class:`CorruptFileError` naming it."""
        with self.decoding():
            for batch in self._batches(columns, batch_rows):
                yield batch.select(columns)  # in the order asked for (ORC gives the file's order)

    def close(self) -> None:  # noqa: B027 - a hook: most formats hold nothing beyond memory
        """Release what the reader holds beyond memory (a spooled copy)."""

    @contextlib.contextmanager
    def decoding(self) -> Iterator[None]:
        """The format library's errors about the file's bytes as one :class:`CorruptFileError` naming it. A
        missing file stays ``FileNotFoundError`` (the stream's data-loss check reads it so), a store that failed
        (connection, timeout, permission: ``OSError`` subclasses too) stays what it is, and credential errors are
        the storage layer's."""
        try:
            yield
        except (FileNotFoundError, ConnectionError, TimeoutError, PermissionError):
            raise  # the file is gone or the store failed: not a statement about the file's bytes
        except self.corrupt_errors as e:
            raise CorruptFileError(f"{self.where}: not a readable {self.format_name} file ({e})") from e

    format_name = ""
    #: the exceptions the format's library raises for bytes it cannot decode
    corrupt_errors: tuple[type[BaseException], ...] = (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError)


#: rows from which a parquet file's columns are decoded by Arrow's threads (where the store allows them): handing
#: a small file's columns to the threads costs more than decoding them here (issue 25's wide tables, 20 rows a
#: file: ~0.3 -> ~0.2 ms of CPU per file)
THREADED_DECODE_ROWS = 4096


class _ParquetFile(BaseFileReader):
    """Parquet through :meth:`Storage.parquet_file` (a column buffer at a time, ranged requests remotely)."""

    format_name = "parquet"

    def __init__(self, storage: Storage, path: str, size: int | None = None):
        super().__init__(storage, path, size)
        with self.decoding():
            self.file = storage.parquet_file(path, self.size)

    @property
    def num_rows(self) -> int:
        return self.file.metadata.num_rows

    @property
    def names(self) -> list[str]:
        return self.file.schema_arrow.names

    def _batches(self, columns: list[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        threads = self.storage.arrow_threads and self.file.metadata.num_rows >= THREADED_DECODE_ROWS
        return self.file.iter_batches(batch_size=batch_rows, columns=columns, use_threads=threads)


class _OrcFile(BaseFileReader):
    """ORC through ``pyarrow.orc``, one stripe at a time, from the same random-access input as parquet
    (:meth:`Storage.input_file`): a local file, a small object fetched whole, or ranged requests."""

    format_name = "ORC"

    def __init__(self, storage: Storage, path: str, size: int | None = None):
        super().__init__(storage, path, size)
        with self.decoding():
            import pyarrow.orc as po  # here: only ORC tables need Arrow's ORC reader

            self.file = po.ORCFile(storage.input_file(path, self.size))

    @property
    def num_rows(self) -> int:
        return self.file.nrows

    @property
    def names(self) -> list[str]:
        return self.file.schema.names

    def _batches(self, columns: list[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        for i in range(self.file.nstripes):
            yield self.file.read_stripe(i, columns=columns)


class _LanceFile(BaseFileReader):
    """A Lance file (Hudi writes one per base file with Lance's ``LanceFileWriter``) through ``pylance``.

    Lance reads with its own Rust I/O, which cannot read through fsspec: a local file is read in place; a file
    on another store is first copied to a local temporary file (a chunk at a time, so it costs disk, not
    memory), removed again by :meth:`close`.
    """

    format_name = "Lance"
    #: pylance reports I/O and format errors as OSError, ValueError or RuntimeError ("LanceError(...)")
    corrupt_errors = (OSError, ValueError, RuntimeError)

    def __init__(self, storage: Storage, path: str, size: int | None = None):
        super().__init__(storage, path, size)
        self._lance_file = _import_lance(self.where)
        self._spooled: str | None = None
        self.local = storage.full(path) if storage.local else self._spool()
        with self.decoding():
            self.meta = self._open(None)

    def _open(self, columns: list[str] | None) -> Any:
        return self._lance_file.LanceFileReader(self.local, columns=columns)

    def _spool(self) -> str:
        fd, local = tempfile.mkstemp(prefix="hudi-streaming-", suffix=".lance")
        self._spooled = local
        try:
            with os.fdopen(fd, "wb") as out, self.storage.open(self.path) as src:
                shutil.copyfileobj(src, out, _SPOOL_CHUNK)
        except BaseException:
            self.close()
            raise
        return local

    @property
    def num_rows(self) -> int:
        return int(self.meta.num_rows())

    @property
    def names(self) -> list[str]:
        return self.meta.metadata().schema.names

    def _batches(self, columns: list[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        results = self._open(columns).read_all(batch_size=min(batch_rows, LANCE_BATCH_ROWS),
                                               batch_readahead=LANCE_READ_AHEAD)
        yield from results.to_batches()

    def close(self) -> None:
        if self._spooled is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._spooled)
            self._spooled = None


_READERS: dict[str, type[BaseFileReader]] = {".parquet": _ParquetFile, ".orc": _OrcFile, ".lance": _LanceFile}
assert set(_READERS) == set(FORMATS.values())


def open_base_file(storage: Storage, path: str, size: int | None = None) -> BaseFileReader:
    """The reader of base file ``path`` (relative to the table root; ``size`` its size when known), chosen by
    its suffix. Close it when done (it may hold a local copy), e.g. with :func:`contextlib.closing`."""
    suffix = posixpath.splitext(path)[1].lower()
    reader = _READERS.get(suffix)
    if reader is None:
        raise UnsupportedTableError(f"{storage.url}/{path}: base files of this kind are not supported (readable: "
                                    f"{', '.join(FORMATS)})")
    return reader(storage, path, size)


def base_file_rows(storage: Storage, path: str, size: int | None = None) -> int:
    """Rows in base file ``path`` (``size``: its size when known), from its footer."""
    with contextlib.closing(open_base_file(storage, path, size)) as f:
        return f.num_rows


def _import_lance(where: str) -> Any:
    """``lance.file`` (the optional extra), or one line naming the file and what to install."""
    try:
        import lance.file
    except ImportError:
        raise UnsupportedTableError(f"{where}: a Lance base file; reading it needs the pylance package: "
                                    f"{LANCE_EXTRA}") from None
    return lance.file
