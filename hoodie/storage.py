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

An object store that fails now and then (throttling, 5xx, dropped connections, stalls, short bodies) is retried
with backoff, bounded in time (the storage option ``retry_deadline_seconds``, see :mod:`.retry`); every retry is
counted process-wide (:func:`storage_retries`). A store that keeps failing, refuses access, or a local file system
that is full or read-only is one :class:`~hudi_streaming.errors.StoreError` line naming the file, the operation
and the last error. Errors callers act on — a missing file, an existing one — stay what they are.
"""
from __future__ import annotations

import functools
import inspect
import logging
import os
import posixpath
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import fsspec
import pyarrow as pa

if TYPE_CHECKING:  # imported where used: pyarrow.parquet and pyarrow.fs cost every Spark worker that lists only
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

from ..errors import CorruptFileError, InvalidTableContentError, OptionError
from . import retry as _retry


def _no_credentials() -> tuple[type[Exception], ...]:
    """s3fs's own credential errors (botocore's), which it passes through untranslated; other stores have none.
    Looked up once botocore is loaded (s3fs loads it): no process that never opens an object store imports it."""
    exceptions = sys.modules.get("botocore.exceptions")
    return (exceptions.NoCredentialsError, exceptions.PartialCredentialsError) if exceptions else ()


_P = ParamSpec("_P")
_T = TypeVar("_T")
log = logging.getLogger(__name__)

#: the storage option (Spark: ``fs.retry_deadline_seconds``) bounding how long a failing operation is retried
RETRY_DEADLINE_OPTION = "retry_deadline_seconds"


def storage_retries() -> int:
    """Requests and operations retried in this process since it started, by botocore and by :class:`Storage`'s
    own bounded loop (details: :func:`.retry.retry_counts`). Process-wide: a stream's driver counts its own."""
    counts = _retry.retry_counts()
    return counts["clientRetries"] + counts["storageRetries"]


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
        except _no_credentials() as e:
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
        options = dict(storage_options or {})
        #: seconds a failing operation is retried before it is a StoreError (see :mod:`.retry`)
        self.retry_deadline = _deadline(options.pop(RETRY_DEADLINE_OPTION, None))
        s3 = fsspec.core.split_protocol(self.url)[0] in ("s3", "s3a")
        if s3:
            options = _s3_retry_settings(options)
        self.fs, root = fsspec.core.url_to_fs(self.url, **{**options, "use_listings_cache": False})
        self.root = root.rstrip("/") or "/"
        #: the object store's endpoint, named in errors (empty: the URL names it)
        self._endpoint = str((options.get("client_kwargs") or {}).get("endpoint_url") or "") if s3 else ""
        #: options of a whole-file read of unknown size: one GET (s3fs 2025+ asks for the size first, to fetch
        #: large objects in concurrent parts; the files read whole here are metadata of kilobytes)
        self._whole_read = {"max_concurrency": 1} if s3 and _takes(self.fs, "_cat_file", "max_concurrency") else {}
        if s3 and hasattr(self.fs, "retries"):
            self.fs.retries = 1  # s3fs's own loop nests and has no deadline: this class's loop replaces it
            _count_client_retries(self.fs)

    def _retrying(self, op: str, rel: str, fn: Callable[[], _T]) -> _T:
        """``fn()`` under the bounded retry of :func:`.retry.call`, errors naming ``rel`` and ``op``."""
        where = self.url if rel in ("", ".") else f"{self.url}/{rel}"
        return _retry.call(fn, where=where, op=op, deadline=self.retry_deadline, store=self._endpoint)

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
        full = self.full(rel)
        return self._retrying("exists", rel, lambda: self.fs.exists(full))

    @_credentials_checked
    def read_bytes(self, rel: str, size: int | None = None) -> bytes:
        """The whole file; with ``size`` (the bytes the table's metadata or a listing recorded for it) exactly
        its first ``size`` bytes, in one ranged request (:meth:`read_range`): a whole-object read of s3fs asks
        for the object's size first, a request per file that a known size makes needless; and a file appended
        to since (a v6 log file) reads as it was recorded. Fewer bytes than recorded are retried as a failed read,
        and an object the store itself holds shorter is a :class:`CorruptFileError` naming it (never fewer bytes,
        which would read as fewer rows)."""
        if size:
            return self.read_range(rel, 0, size)
        full = self.full(rel)
        return self._retrying("read", rel, lambda: self.fs.cat_file(full, **self._whole_read))

    @_credentials_checked
    def read_range(self, rel: str, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` in one ranged request (an HFile's trailer, index or data block); fewer
        bytes than asked is a short read (retried) or, when the object is that short, a corrupt file."""
        full = self.full(rel)

        def once() -> bytes:
            data = self.fs.cat_file(full, start=offset, end=offset + length)
            if len(data) < length:
                self._short_read(rel, offset + len(data), offset + length)
            return data
        return self._retrying("read", rel, once)

    def _short_read(self, rel: str, got: int, expected: int) -> None:
        """Raise for a read of ``got`` bytes where ``expected`` were due: the object is that short (corrupt), or
        the read was cut (:class:`.retry.ShortRead`, retried)."""
        actual = int(self.fs.size(self.full(rel)))
        if actual < expected:
            raise CorruptFileError(f"{self.url}/{rel}: the store holds {actual} bytes, fewer than the {expected} "
                                   "bytes the table's metadata recorded (truncated or replaced)")
        raise _retry.ShortRead(f"read {got} of {expected} bytes")

    @_credentials_checked
    def open(self, rel: str, mode: str = "rb") -> Any:
        """The file opened by fsspec; on an object store, reads of a file opened for reading are retried (see
        :class:`_RetryingFile`)."""
        full = self.full(rel)
        f = self._retrying("open", rel, lambda: self.fs.open(full, mode))
        if mode == "rb" and self._remote:
            return _RetryingFile(self, rel, f)
        return f

    @_credentials_checked
    def parquet_file(self, rel: str, size: int | None = None) -> pq.ParquetFile:
        """A parquet file read a column buffer at a time, so that a slice read in pieces holds about one piece.

        By default Arrow reads every column chunk of a row group whole before decoding its first page, and Hudi
        writes a base file as one big row group: a slice read in pieces would hold the whole file's compressed
        columns anyway (bench_slice_read: peak RSS growth 696 -> 484 MiB at 4M rows). So each column is read as
        a stream of buffers (``buffer_size``, no ``pre_buffer``) from :meth:`input_file`: locally
        :data:`PARQUET_READ_BUFFER` bytes per column, read and decoded by Arrow's threads; on an object store
        :data:`REMOTE_READ_BUFFER` bytes per column and request (a small object is fetched whole instead).
        ``size``: the file's size when known (see :meth:`input_file`).
        """
        import pyarrow.parquet as pq  # here: the planning and schema workers read no parquet

        source = self.input_file(rel, size)
        if isinstance(source, pa.BufferReader):
            return pq.ParquetFile(source)
        return pq.ParquetFile(source, buffer_size=PARQUET_READ_BUFFER if self._local else REMOTE_READ_BUFFER,
                              pre_buffer=False)

    @_credentials_checked
    def input_file(self, rel: str, size: int | None = None) -> pa.NativeFile | IO[bytes]:
        """A file opened for Arrow's random-access readers (parquet, ORC), which read its footer and then the
        ranges they decode, never the whole file unless it is small:

        - local files through Arrow's own file system, read and decoded by Arrow's threads;
        - object stores through fsspec with ranged requests: a task's memory does not grow with the object
          (a 120 MB base file fetched whole into each task would). Objects up to :data:`WHOLE_FETCH_MAX` bytes
          are fetched in one request, which costs no more memory than the buffers and saves a request per
          column. A file object of Python must be read from the calling thread only (Arrow threads calling back
          into Python now and then abort the process at interpreter exit, apache/arrow#33975): readers pass
          ``use_threads=storage.arrow_threads``.

        ``size``: the file's size when the caller knows it (a split carries the size its listing gave; 0 or None:
        not known): an object
        store is then not asked for it, so a small object is one request (a GET), a larger one its footer's and
        its columns' ranged GETs, no HEAD. An object the store holds shorter than that is a
        :class:`CorruptFileError` naming it, as for :meth:`read_bytes`.
        """
        full = self.full(rel)
        if self._local:
            return self._retrying("open", rel, lambda: _local_fs().open_input_file(full))
        if size and size <= WHOLE_FETCH_MAX:
            return pa.BufferReader(self.read_bytes(rel, size))

        def once() -> pa.NativeFile | IO[bytes]:
            # no fsspec cache: each read is one request; a known size spares s3fs's HEAD
            f = self.fs.open(full, "rb", cache_type="none", **({"size": size} if size else {}))
            known = getattr(f, "size", None)
            if known is None or known <= WHOLE_FETCH_MAX:
                with f:
                    data = f.read()
                if known is not None and len(data) < known:
                    raise _retry.ShortRead(f"read {len(data)} of {known} bytes")
                return pa.BufferReader(data)
            return _RetryingFile(self, rel, f)
        return self._retrying("read", rel, once)

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

    @property
    def _remote(self) -> bool:
        """Neither local nor in memory: a store reached over a network, whose reads may fail half way."""
        protocols = {self.fs.protocol} if isinstance(self.fs.protocol, str) else set(self.fs.protocol)
        return not protocols & {"file", "local", "memory"}

    @_credentials_checked
    def size(self, rel: str) -> int:
        full = self.full(rel)
        return int(self._retrying("stat", rel, lambda: self.fs.size(full)))

    @_credentials_checked
    def remove(self, rel: str) -> None:
        """Remove one file; one that is gone already is no error."""
        full = self.full(rel)

        def once() -> None:
            try:
                self.fs.rm(full)
            except FileNotFoundError:
                pass
        self._retrying("remove", rel, once)

    @_credentials_checked
    def find(self, rel: str = "") -> dict[str, dict]:
        """Every file below ``rel`` (recursively) as fsspec's ``find(detail=True)`` gives them, retried like every
        operation of this class (``hoodie.fs_view`` lists a table's data files so)."""
        base = self.full(rel)
        return self._retrying("list", rel, lambda: self.fs.find(base, detail=True))

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
            entries = self._retrying("list", rel, lambda: self.fs.ls(base, detail=True))
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

        def once() -> None:
            if self._remote:
                self.fs.pipe_file(target, data)  # a PUT again is the same PUT
                return
            tmp = self._temporary(target, data)
            self.fs.mv(tmp, target)
        self._retrying("write", rel, once)

    @_credentials_checked
    def create(self, rel: str, data: bytes, make_parents: bool = True) -> None:
        """Write a new file whole and only if no file of that name exists (``FileExistsError``): what an owner
        that must not be overwritten by a second writer (a stream's state) needs.

        Local disks: a complete temporary file hard-linked to the name (``link`` fails if it exists). Object
        stores: a conditional PUT (s3fs's ``mode="create"``: ``If-None-Match: *``), visible only when complete.
        Other fsspec stores check first, which is exclusive within a process only. ``make_parents=False``: a
        missing folder is ``FileNotFoundError`` (local and memory file systems), not created again.

        A conditional PUT the store applied but whose answer was lost (a 500, a reset) is retried — by botocore
        or here — and then finds the object existing. So ``FileExistsError`` is raised only when the object
        holds other bytes than ``data``: the same bytes are this write (whoever sent them, the file is exactly
        what this call was to create), counted in ``ownWrites`` (:func:`.retry.retry_counts`).
        """
        target = self.full(rel)

        def once() -> None:
            try:
                self._create_once(target, data, make_parents)
            except FileExistsError:
                if self.fs.cat_file(target) != data:
                    raise
                _retry.count("ownWrites")
                log.info("hudi_streaming: %s/%s existed with exactly the bytes written: the store applied a write "
                         "whose answer was lost; taken as done", self.url, rel)
        self._retrying("create", rel, once)

    def _create_once(self, target: str, data: bytes, make_parents: bool) -> None:
        if not self._local:
            self.fs.pipe_file(target, data, mode="create")
            return
        tmp = self._temporary(target, data, make_parents)
        try:
            os.link(tmp, target)
        finally:
            os.unlink(tmp)

    def _temporary(self, target: str, data: bytes, make_parents: bool = True) -> str:
        """``data`` in a complete sibling of ``target`` under a name no Hudi reader takes for a data file, even if
        a crash leaves it behind (local and memory file systems, which have a rename). A write that fails (a
        full disk) removes its temporary file."""
        if make_parents:
            self.fs.makedirs(posixpath.dirname(target), exist_ok=True)
        tmp = f"{posixpath.dirname(target)}/.hoodie-streaming-tmp-{uuid.uuid4().hex}"
        try:
            with self.fs.open(tmp, "wb") as f:
                f.write(data)
                if self._local:
                    f.flush()
                    os.fsync(f.fileno())
        except BaseException:
            try:
                self.fs.rm(tmp)
            except OSError:
                pass
            raise
        return tmp


class _RetryingFile:
    """A file of an object store opened for reading whose every read is retried from where it started (a body
    cut short, a reset) under the bounded retry of :class:`Storage`, and must return every byte up to the end of
    the file it asks for (a shorter answer is a failed read, :class:`.retry.ShortRead`). Everything else is the
    wrapped fsspec file's."""

    def __init__(self, storage: Storage, rel: str, f: Any):
        self._storage, self._rel, self._f = storage, rel, f
        self.size = getattr(f, "size", None)

    def read(self, length: int = -1) -> bytes:
        pos = self._f.tell()
        due = None
        if self.size is not None:
            left = max(self.size - pos, 0)
            due = left if length is None or length < 0 else min(length, left)

        def once() -> bytes:
            self._f.seek(pos)
            data = self._f.read(length)
            if due is not None and len(data) < due:  # a cut read (retried), or an object shorter than its size
                self._storage._short_read(self._rel, pos + len(data), pos + due)
            return data
        return self._storage._retrying("read", self._rel, once)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._f.seek(offset, whence)

    def tell(self) -> int:
        return self._f.tell()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return self._f.closed

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> _RetryingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


def _deadline(value: Any) -> float:
    """The retry deadline option's value in seconds (default :data:`.retry.DEFAULT_DEADLINE`)."""
    if value is None:
        return _retry.DEFAULT_DEADLINE
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if not seconds >= 0:
        raise OptionError(f"option fs.{RETRY_DEADLINE_OPTION}={value!r}: must be a number of seconds >= 0")
    return seconds


def _s3_retry_settings(options: dict) -> dict:
    """s3fs options with botocore's retry settings (:data:`.retry.BOTOCORE_RETRIES`) unless the options or the
    AWS environment (``AWS_RETRY_MODE``, ``AWS_MAX_ATTEMPTS``) choose them."""
    config = dict(options.get("config_kwargs") or {})
    if "retries" in config or os.environ.get("AWS_RETRY_MODE") or os.environ.get("AWS_MAX_ATTEMPTS"):
        return options
    config["retries"] = dict(_retry.BOTOCORE_RETRIES)
    return {**options, "config_kwargs": config}


def _takes(fs: Any, method: str, parameter: str) -> bool:
    """Whether ``fs``'s ``method`` takes ``parameter`` (options that newer fsspec implementations added)."""
    try:
        return parameter in inspect.signature(getattr(fs, method)).parameters
    except (AttributeError, TypeError, ValueError):
        return False


def _count_client_retries(fs: Any) -> None:
    """Count botocore's retries of an s3fs file system's client (:func:`.retry.count_client_retry`), once per
    client. The client is made now (no request is sent) so that its first requests are counted too."""
    try:
        if getattr(fs, "_s3", None) is None:
            fs.connect()
        client = fs._s3
        if client is None or getattr(client, "_hudi_streaming_counted", False):
            return
        client.meta.events.register("request-created.s3", _retry.count_client_retry,
                                    unique_id="hudi-streaming-count-retries")
        client._hudi_streaming_counted = True
    except Exception as e:  # counting is a metric: a client that cannot be made now fails at its first request
        log.debug("hudi_streaming: botocore retries of %s not counted: %s", fs, e)


@functools.cache
def _local_fs() -> pafs.LocalFileSystem:
    """Arrow's local file system, made on first use (pyarrow.fs loads Arrow's S3 bindings too)."""
    import pyarrow.fs as pafs

    return pafs.LocalFileSystem()


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
