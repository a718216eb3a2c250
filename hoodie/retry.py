"""Retries of a failing store, bounded in time, and the errors that end them.

An object store fails now and then — it throttles (503 SlowDown), errs (500), drops a connection, stalls, or sends
a short body — and a stream that runs for weeks meets all of these. Three layers retry, each what it sees:

* botocore, inside each S3 call, in its ``standard`` retry mode (:data:`BOTOCORE_RETRIES`: HTTP 500/502/503/504,
  throttling codes, connection errors and read timeouts, with exponential backoff and jitter) — set by
  :class:`~hudi_streaming.hoodie.storage.Storage` unless the options give ``config_kwargs["retries"]``;
* not s3fs's own loop: it nests (a read's loop wraps the call's loop, ``retries²`` attempts, each a whole
  botocore retry sequence) and has no deadline, so ``Storage`` sets it to one attempt and this module's loop
  takes its place (it covered body reads cut short and throttling after botocore gave up);
* this module's :func:`call`, around each operation of ``Storage`` as a whole (a request *and* reading its
  body, a conditional PUT *and* finding out whose the object is): any transient failure is retried with
  exponential backoff (:data:`BACKOFF_BASE` doubling to :data:`BACKOFF_MAX`, full jitter) until the
  operation has lasted ``retry_deadline_seconds`` (:data:`DEFAULT_DEADLINE`); then one :class:`StoreError`
  line names the store, the operation, the path and the last error. A failure that no retry mends (access
  denied, a full or read-only file system) is that error at once.

Every retry of botocore (counted from its ``request-created`` event, attempt > 1) and of this module is counted
process-wide: :func:`retry_counts`.
"""
from __future__ import annotations

import errno
import logging
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TypeVar

from ..errors import HudiStreamingError, StoreError

log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: seconds an operation may keep failing before it is given up (option ``retry_deadline_seconds``)
DEFAULT_DEADLINE = 120.0
#: the first backoff of this module's loop, doubled per retry up to :data:`BACKOFF_MAX` (full jitter)
BACKOFF_BASE = 0.2
BACKOFF_MAX = 10.0
#: botocore's retry settings ``Storage`` gives s3fs unless the options set ``config_kwargs["retries"]``: five
#: attempts (botocore's standard default is three), because calls made on ``Storage.fs`` directly have no other
#: retry; one attempt of this module's loop then lasts at most five read timeouts plus botocore's backoffs
BOTOCORE_RETRIES = {"mode": "standard", "total_max_attempts": 5}
#: S3 error codes that mean "try again" whatever their HTTP status
_TRANSIENT_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "InternalError",
                              "ServiceUnavailable", "RequestLimitExceeded", "TooManyRequests",
                              "RequestTimeoutException", "PriorRequestNotComplete", "OperationAborted"})
#: local errors no retry mends soon: the operation fails at once
_LOCAL_FATAL = frozenset({errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EFBIG})

_lock = threading.Lock()
_counts: Counter = Counter()


def count(kind: str, n: int = 1) -> None:
    """Add ``n`` to the process-wide counter ``kind`` (see :func:`retry_counts`)."""
    with _lock:
        _counts[kind] += n


def retry_counts() -> dict[str, int]:
    """Process-wide counters since the process started:

    * ``clientRetries`` — requests botocore sent again (5xx, throttling, connection errors, read timeouts);
    * ``storageRetries`` — operations this module's loop ran again (what botocore does not retry or gave up on:
      a body cut short, a connection reset while reading, botocore's attempts used up);
    * ``ownWrites`` — exclusive creates whose object existed after an ambiguous failure and held exactly the
      bytes written: the store applied an attempt whose answer was lost, so the write succeeded;
    * ``storeErrors`` — operations given up (:class:`StoreError`).
    """
    with _lock:
        return {k: _counts[k] for k in ("clientRetries", "storageRetries", "ownWrites", "storeErrors")}


class ShortRead(OSError):
    """A read returned fewer bytes than the object holds (a body cut short the client did not notice)."""


def _chain(e: BaseException) -> Iterator[BaseException]:
    """``e`` and the errors it came from (``raise ... from``, or raised while handling)."""
    seen = set()
    at: BaseException | None = e
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        yield at
        at = at.__cause__ or at.__context__


#: the store clients' errors a retry may mend, by the module that defines them
_CLIENT_TRANSIENT = {
    "botocore.exceptions": ("ConnectionError", "HTTPClientError", "IncompleteReadError"),
    "botocore.parsers": ("ResponseParserError",),
    "aiohttp": ("ClientPayloadError", "ClientConnectionError"),
    "urllib3.exceptions": ("IncompleteRead", "ProtocolError"),
    "fsspec.exceptions": ("FSTimeoutError",),
}


def _transient_types() -> tuple[type[BaseException], ...]:
    """The errors a retry may mend: the built-in ones, and those of the store clients loaded by now. A client not
    loaded raised nothing, and importing them all (botocore, aiohttp) would cost each Spark worker that never opens
    an object store."""
    types: list[type[BaseException]] = [ConnectionError, TimeoutError, ShortRead]
    for module, names in _CLIENT_TRANSIENT.items():
        loaded = sys.modules.get(module)
        if loaded is not None:
            types += [getattr(loaded, name) for name in names]
    return tuple(types)


def _client_error(e: BaseException) -> tuple[str, int, str] | None:
    """(error code, HTTP status, message) of a botocore ``ClientError``, else None."""
    response = getattr(e, "response", None)
    if not isinstance(response, dict) or "Error" not in response:
        return None
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    return str(response["Error"].get("Code") or ""), status, str(response["Error"].get("Message") or "")


def transient(e: BaseException) -> bool:
    """Whether ``e``, or an error it came from, is a failure a retry may mend."""
    for x in _chain(e):
        if isinstance(x, HudiStreamingError):
            return False
        if isinstance(x, _transient_types()):
            return True
        ce = _client_error(x)
        if ce is not None:
            code, status, _ = ce
            return code in _TRANSIENT_CODES or status >= 500 or status == 429
    return False


def fatal(e: BaseException) -> bool:
    """Whether ``e`` is a store failure no retry mends: access denied, a full or read-only file system, another
    answer of the store that is an error (a 4xx but 404/412, which callers take as "missing"/"exists")."""
    if isinstance(e, (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError)):
        return False
    if isinstance(e, PermissionError) or (isinstance(e, OSError) and e.errno in _LOCAL_FATAL):
        return True
    return any(_client_error(x) is not None for x in _chain(e))


def describe(e: BaseException) -> str:
    """The error in one line: an S3 error as ``Code (HTTP status): message``, anything else ``Type: message``."""
    for x in _chain(e):
        ce = _client_error(x)
        if ce is not None:
            return _one_line(f"{ce[0]} (HTTP {ce[1]}): {ce[2]}")
    return _one_line(f"{type(e).__name__}: {e}")


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def backoff(retry: int) -> float:
    """Seconds to wait before retry number ``retry`` (0-based): full jitter over a doubling window."""
    return random.uniform(0, min(BACKOFF_MAX, BACKOFF_BASE * (2 ** retry)))


def call(fn: Callable[[], _T], *, where: str, op: str, deadline: float, store: str = "") -> _T:
    """``fn()``, retried on transient failures until ``deadline`` seconds have passed since the first attempt
    (the last retry starts at the deadline at the latest, so a store that stays down is given up after between
    ``deadline`` and ``deadline`` plus one attempt).

    ``where`` is the file or folder (a URL), ``op`` the operation, ``store`` the store (an endpoint) if not in
    ``where``. Errors callers act on (missing, exists, not a folder, this package's own) pass through; a
    transient failure still failing at the deadline, or one no retry mends, is a :class:`StoreError` line.
    """
    start = time.monotonic()
    retries = 0
    while True:
        try:
            return fn()
        except Exception as e:
            if isinstance(e, HudiStreamingError):
                raise
            at = f"{where}{f' (object store {store})' if store else ''}: {op}"
            if transient(e):
                elapsed = time.monotonic() - start
                wait = min(backoff(retries), deadline - elapsed)  # the last attempt at the deadline
                if elapsed < deadline:
                    count("storageRetries")
                    log.info("hudi_streaming: %s failed (%s); retry %d in %.2f s", at, describe(e), retries + 1, wait)
                    time.sleep(wait)
                    retries += 1
                    continue
                count("storeErrors")
                raise StoreError(f"{at} failed for {elapsed:.1f} s over {retries + 1} attempts and is given up "
                                 f"(retry_deadline_seconds={deadline:g}); last error: {describe(e)}") from e
            if fatal(e):
                count("storeErrors")
                raise StoreError(f"{at} failed: {describe(e)}") from e
            raise


def count_client_retry(request: object = None, **_kwargs: object) -> None:
    """botocore ``request-created`` handler: a request created for attempt 2 or later is a retry."""
    context = getattr(request, "context", None) or {}
    if (context.get("retries") or {}).get("attempt", 1) > 1:
        count("clientRetries")
