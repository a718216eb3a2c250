"""Table storage through fsspec.

A table is a URL (``/path``, ``file://``, ``s3://...``, ``memory://``); nothing in ``hoodie`` touches the
local file system directly. Paths handed out by :class:`Storage` are *relative to the table root* with
``/`` separators, because that is how Hudi's metadata names files, and every relative path coming from
table content is validated here before it is joined, so metadata cannot make us read outside the table.

Every listing and every file lookup asks the store itself, never fsspec's listing cache: a stream lives for
weeks in one process and must see the instants, data files and state files other processes write (see
:class:`Storage`). What never changes once written is cached above this layer, where it is known to be
immutable (decoded instant files in the timeline, partition listings the monitor keeps current from commit
metadata).
"""
from __future__ import annotations

import functools
import os
import posixpath
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Concatenate, ParamSpec, TypeVar

import fsspec
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import InvalidTableContentError, OptionError

try:  # s3fs's own credential errors, which it passes through untranslated; other stores have none of these
    from botocore.exceptions import NoCredentialsError, PartialCredentialsError
    _NO_CREDENTIALS: tuple[type[Exception], ...] = (NoCredentialsError, PartialCredentialsError)
except ImportError:  # pragma: no cover - botocore comes with s3fs
    _NO_CREDENTIALS = ()

_P = ParamSpec("_P")
_T = TypeVar("_T")


@dataclass(frozen=True)
class FileInfo:
    """One listed file: path relative to the table root, size in bytes, modification time (epoch seconds)."""

    path: str
    size: int
    mtime: float | None


def _credentials_checked(method: Callable[Concatenate[Storage, _P], _T]) -> Callable[Concatenate[Storage, _P], _T]:
    """Missing object-store credentials become one line naming the URL and what to set.

    botocore raises ``NoCredentialsError: Unable to locate credentials`` from deep inside the first request,
    which tells a Spark user neither which location needed them nor which option gives them.
    """
    @functools.wraps(method)
    def checked(self: Storage, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return method(self, *args, **kwargs)
        except _NO_CREDENTIALS as e:
            raise OptionError(
                f"{self.url}: no usable credentials for the object store ({e}); set the options fs.key and "
                "fs.secret (Hadoop names: fs.s3a.access.key, fs.s3a.secret.key), fs.anon=true for a public "
                "bucket, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY where the driver and executors run"
            ) from None
    return checked


class Storage:
    """Reads and writes files below one table root URL.

    fsspec keeps one file system instance per set of options for the life of the process, and its listing
    cache never expires: a stream would list the timeline once and then never see a new instant (0 rows, no
    error, forever), and a lookup of a file created after its folder was listed would say it does not
    exist. So the cache is off (``use_listings_cache=False``, whatever the options say): every ``ls``,
    ``info`` and ``exists`` asks the store. Local and memory file systems never cache; on object stores a
    listing is one request either way.
    """

    def __init__(self, url: str, storage_options: dict | None = None):
        self.url = url.rstrip("/") or "/"
        self.fs, root = fsspec.core.url_to_fs(self.url, **{**(storage_options or {}), "use_listings_cache": False})
        self.root = root.rstrip("/") or "/"

    def full(self, rel: str) -> str:
        """Absolute fsspec path of ``rel``, which must stay inside the table root — symbolic links included: a
        local table's link to a file outside it is refused, not followed (a table copied with links into another
        tree would otherwise read, or its cleaner remove, files that are not the table's)."""
        if rel in ("", "."):
            return self.root
        path = f"{self.root}/{safe_relpath(rel)}"
        if self._local:
            real = os.path.realpath(path)
            if real != path and os.path.commonpath([real, self._real_root]) != self._real_root:
                raise InvalidTableContentError(f"{self.url}/{rel}: a symbolic link to {real}, outside the table "
                                               "root; not followed")
        return path

    @functools.cached_property
    def _real_root(self) -> str:
        return os.path.realpath(self.root)

    @_credentials_checked
    def exists(self, rel: str) -> bool:
        return self.fs.exists(self.full(rel))

    @_credentials_checked
    def read_bytes(self, rel: str) -> bytes:
        return self.fs.cat_file(self.full(rel))

    @_credentials_checked
    def open(self, rel: str, mode: str = "rb"):
        return self.fs.open(self.full(rel), mode)

    @_credentials_checked
    def parquet_file(self, rel: str) -> pq.ParquetFile:
        """A parquet file read a column buffer at a time, so that a slice read in pieces holds about one piece.

        By default Arrow reads every column chunk of a row group whole before decoding its first page, and Hudi
        writes a base file as one big row group: a slice read in pieces would hold the whole file's compressed
        columns anyway (bench_slice_read: peak RSS growth 696 -> 484 MiB at 4M rows). So each column is read as
        a stream of buffers (``buffer_size``, no ``pre_buffer``) from :meth:`input_file`: locally
        :data:`PARQUET_READ_BUFFER` bytes per column, read and decoded by Arrow's threads; on an object store
        :data:`REMOTE_READ_BUFFER` bytes per column and request (a small object is fetched whole instead).
        """
        source = self.input_file(rel)
        if isinstance(source, pa.BufferReader):
            return pq.ParquetFile(source)
        return pq.ParquetFile(source, buffer_size=PARQUET_READ_BUFFER if self._local else REMOTE_READ_BUFFER,
                              pre_buffer=False)

    @_credentials_checked
    def input_file(self, rel: str) -> pa.NativeFile | IO[bytes]:
        """A file opened for Arrow's random-access readers (parquet, ORC), which read its footer and then the
        ranges they decode, never the whole file unless it is small:

        - local files through Arrow's own file system, read and decoded by Arrow's threads;
        - object stores through fsspec with ranged requests: a task's memory does not grow with the object
          (a 120 MB base file fetched whole into each task would). Objects up to :data:`WHOLE_FETCH_MAX` bytes
          are fetched in one request, which costs no more memory than the buffers and saves a request per
          column. A file object of Python must be read from the calling thread only (Arrow threads calling back
          into Python now and then abort the process at interpreter exit, apache/arrow#33975): readers pass
          ``use_threads=storage.arrow_threads``.
        """
        if self._local:
            return _LOCAL.open_input_file(self.full(rel))
        f = self.fs.open(self.full(rel), "rb", cache_type="none")  # no fsspec cache: each read is one request
        size = getattr(f, "size", None)
        if size is None or size <= WHOLE_FETCH_MAX:
            with f:
                return pa.BufferReader(f.read())
        return f

    @property
    def arrow_threads(self) -> bool:
        """Whether Arrow's threads may read this store's files (``use_threads``): local files only, see
        :meth:`input_file`."""
        return self._local

    @property
    def local(self) -> bool:
        """Whether the table is on the local file system (readers that cannot go through fsspec read it in
        place)."""
        return self._local

    @property
    def _local(self) -> bool:
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        return protocol in ("file", "local")

    @_credentials_checked
    def size(self, rel: str) -> int:
        return int(self.fs.size(self.full(rel)))

    def list_dir(self, rel: str) -> list[FileInfo]:
        """Files (not directories) directly in ``rel``; empty when the directory does not exist."""
        return [info for info, is_dir in self._ls(rel) if not is_dir]

    def list_subdirs(self, rel: str) -> list[str]:
        """Directory names directly in ``rel``."""
        return [posixpath.basename(info.path) for info, is_dir in self._ls(rel) if is_dir]

    @_credentials_checked
    def _ls(self, rel: str) -> list[tuple[FileInfo, bool]]:
        base = self.full(rel)
        try:
            entries = self.fs.ls(base, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        prefix = self.root.rstrip("/") + "/"
        for e in entries:
            name = e["name"].rstrip("/")
            if name == base.rstrip("/"):
                continue
            relname = name[len(prefix):] if name.startswith(prefix) else posixpath.join(rel, posixpath.basename(name))
            mtime = e.get("mtime") or e.get("LastModified") or e.get("created")
            if hasattr(mtime, "timestamp"):
                mtime = mtime.timestamp()
            out.append((FileInfo(relname, int(e.get("size") or 0), mtime), e.get("type") == "directory"))
        return out

    @_credentials_checked
    def write_bytes_atomic(self, rel: str, data: bytes) -> None:
        """Write ``data`` so that readers see either nothing or the whole file.

        Local and memory file systems: write a temporary sibling then rename. Object stores have no rename
        but make an object visible only when its upload completes: ``pipe_file`` is one PUT (s3fs: below
        100 MB; larger ones are a multipart upload, also visible only once complete), so a crash leaves the
        old object or none, never a torn one. There are no folders to create there either (s3fs's
        ``makedirs`` would probe, and may even try to create, the bucket).
        """
        target = self.full(rel)
        if self._local or "memory" in (self.fs.protocol if isinstance(self.fs.protocol, tuple)
                                       else (self.fs.protocol,)):
            tmp = self._temporary(target, data)
            self.fs.mv(tmp, target)
        else:
            self.fs.pipe_file(target, data)

    @_credentials_checked
    def create(self, rel: str, data: bytes) -> None:
        """Write a new file whole and only if no file of that name exists (``FileExistsError``): what an owner
        that must not be overwritten by a second writer (a stream's state) needs.

        Local disks: a complete temporary file hard-linked to the name (``link`` fails if it exists). Object
        stores: a conditional PUT (s3fs's ``mode="create"``: ``If-None-Match: *``), visible only when complete.
        Other fsspec stores check first, which is exclusive within a process only.
        """
        target = self.full(rel)
        if not self._local:
            self.fs.pipe_file(target, data, mode="create")
            return
        tmp = self._temporary(target, data)
        try:
            os.link(tmp, target)
        finally:
            os.unlink(tmp)

    def _temporary(self, target: str, data: bytes) -> str:
        """``data`` in a complete sibling of ``target`` under a name no Hudi reader takes for a data file, even if
        a crash leaves it behind (local and memory file systems, which have a rename)."""
        self.fs.makedirs(posixpath.dirname(target), exist_ok=True)
        tmp = f"{posixpath.dirname(target)}/.hoodie-streaming-tmp-{uuid.uuid4().hex}"
        with self.fs.open(tmp, "wb") as f:
            f.write(data)
            if self._local:
                f.flush()
                os.fsync(f.fileno())
        return tmp


_LOCAL = pafs.LocalFileSystem()
#: bytes a local parquet read buffers per column it reads (see :meth:`Storage.parquet_file`)
PARQUET_READ_BUFFER = 1 << 20
#: bytes an object-store parquet read asks for per request and column: fewer, larger requests than locally
REMOTE_READ_BUFFER = 4 << 20
#: objects up to this size are fetched whole, in one request (see :meth:`Storage.input_file`)
WHOLE_FETCH_MAX = 16 << 20


def safe_relpath(rel: str) -> str:
    """Normalise a table-relative path from untrusted metadata, refusing absolute paths and ``..``."""
    if rel is None or "\x00" in rel:
        raise InvalidTableContentError(f"invalid path in table metadata: {rel!r}")
    norm = posixpath.normpath(rel.replace("\\", "/"))
    if norm.startswith("/") or norm == ".." or norm.startswith("../") or ":" in norm.split("/")[0]:
        raise InvalidTableContentError(f"path in table metadata escapes the table root: {rel!r}")
    return "" if norm == "." else norm
