"""A fault-injecting HTTP proxy on loopback in front of the S3 test server (:class:`s3_server.S3Server`).

Clients reach it exactly as they reach the server (``FaultProxy(server).storage_options``, ``.endpoint``). Every
request is forwarded to moto unless a *fault* picks it: a share (``rate``) of the requests of chosen operations
and key prefixes, drawn from a seeded random generator, so a run is repeatable request for request. Kinds:

* ``503`` / ``500`` / ``403`` — an S3 XML error (``SlowDown``, ``InternalError``, ``AccessDenied``), the request
  is not forwarded;
* ``reset_before`` — the connection is reset (TCP RST) before any byte of a response, not forwarded;
* ``reset_after`` — forwarded (applied to the store), the status line and headers sent, then the connection
  is reset before the body;
* ``stall`` — nothing is answered for ``stall_seconds`` (longer than the client's read timeout), then the
  connection is closed; not forwarded;
* ``truncate`` — forwarded; the response's ``Content-Length`` is the full size but only ``truncate_share`` of
  the body is sent, then the connection is reset (GETs with a body; other requests pass untouched);
* ``applied_500`` / ``applied_reset`` — forwarded and applied, then answered ``500 InternalError`` or reset: the
  client sees an error though the store did the write (a conditional PUT, ``If-None-Match: *``, then exists).

Operations: ``GET`` (an object), ``HEAD``, ``LIST`` (a bucket listing), ``PUT``, ``CPUT`` (a conditional PUT),
``DELETE`` (one object or a multi-object delete), ``OTHER``. A fault's ``prefix`` is matched against the key (a
listing's ``prefix`` parameter for ``LIST``). :meth:`FaultProxy.stats` counts the requests tried (per operation)
and the faults injected (per kind). Standard library only: ``http.server`` threads and ``http.client``.
"""
from __future__ import annotations

import http.client
import random
import socket
import struct
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from support.s3_server import BUCKET, S3Endpoint, S3Server

KINDS = ("503", "500", "403", "reset_before", "reset_after", "stall", "truncate", "applied_500", "applied_reset")
OPS = ("GET", "HEAD", "LIST", "PUT", "CPUT", "DELETE", "OTHER")
#: S3's error code and message for each answered error
_ERRORS = {503: ("SlowDown", "Please reduce your request rate."),
           500: ("InternalError", "We encountered an internal error. Please try again."),
           403: ("AccessDenied", "Access Denied")}
#: headers that belong to one connection, not to the message (never relayed)
_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "expect"}


@dataclass
class Fault:
    """Inject ``kind`` into a ``rate`` share of the requests of ``ops`` (all when empty) whose key starts with
    ``prefix``, at most ``limit`` times (None: no limit)."""

    kind: str
    rate: float = 1.0
    ops: frozenset[str] = frozenset()
    prefix: str = ""
    limit: int | None = None
    injected: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"fault kind {self.kind!r}: one of {KINDS}")
        self.ops = frozenset(op.upper() for op in self.ops)
        if not self.ops <= set(OPS):
            raise ValueError(f"fault operations {sorted(self.ops)}: of {OPS}")

    def applies(self, op: str, key: str, has_body: bool) -> bool:
        if self.ops and op not in self.ops:
            return False
        if self.limit is not None and self.injected >= self.limit:
            return False
        if self.kind == "truncate" and not has_body:
            return False
        return key.startswith(self.prefix)


def classify(method: str, target: str, headers) -> tuple[str, str]:
    """(operation, key) of a path-style S3 request ``method target``."""
    url = urlsplit(target)
    query = parse_qs(url.query, keep_blank_values=True)
    path = unquote(url.path).lstrip("/")
    bucket, _, key = path.partition("/")
    if method == "GET" and not key:
        return "LIST", query.get("prefix", [""])[0]
    if method == "POST" and "delete" in query:
        return "DELETE", ""
    if method == "PUT" and key:
        return ("CPUT" if headers.get("If-None-Match") == "*" else "PUT"), key
    if method in ("GET", "HEAD", "DELETE") and key:
        return method, key
    return "OTHER", key


class FaultProxy(S3Endpoint):
    """The proxy on 127.0.0.1 (a free port) in front of ``server``; :meth:`stop` ends it.

    ``stall_seconds``: how long a stalled request hangs (set it above the client's read timeout);
    ``truncate_share``: the share of a truncated body that is sent.
    """

    def __init__(self, server: S3Server, seed: int = 0, stall_seconds: float = 2.0, truncate_share: float = 0.5):
        self.server = server
        self.upstream = urlsplit(server.endpoint)
        self.stall_seconds, self.truncate_share = stall_seconds, truncate_share
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self.requests: Counter = Counter()
        self.faults: Counter = Counter()
        self._closing = threading.Event()
        self._httpd = _Server(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        self.endpoint = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # -- faults ----------------------------------------------------------------------------------------------
    def set_faults(self, *faults: Fault) -> None:
        """Replace the active faults (none: every request is forwarded untouched)."""
        with self._lock:
            self._faults = list(faults)

    def clear(self) -> None:
        self.set_faults()

    def reset_stats(self) -> None:
        with self._lock:
            self.requests.clear()
            self.faults.clear()

    def stats(self) -> dict:
        """``{"requests": total, "by_op": {op: n}, "faults": {kind: n}, "injected": total}``."""
        with self._lock:
            return {"requests": sum(self.requests.values()), "by_op": dict(self.requests),
                    "faults": dict(self.faults), "injected": sum(self.faults.values())}

    def _pick(self, op: str, key: str, has_body: bool) -> str | None:
        """Count the request; the fault it gets, if any. One draw per request and applicable fault, in order."""
        with self._lock:
            self.requests[op] += 1
            for f in self._faults:
                if f.applies(op, key, has_body) and self._rng.random() < f.rate:
                    f.injected += 1
                    self.faults[f.kind] += 1
                    return f.kind
        return None

    def stop(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """A client that went away (a killed job, a client's own timeout) is no error of the proxy's."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as S3 clients expect
        wbufsize = 1 << 16  # a response leaves in one write (flushed after each request), not header by header
        _upstream: http.client.HTTPConnection | None = None

        def handle_expect_100(self) -> bool:
            ok = super().handle_expect_100()
            self.wfile.flush()  # the client sends the body only once it has the 100 Continue
            return ok

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no Nagle/delayed-ACK stalls

        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            pass

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = bytearray()
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return bytes(out)
                    out += self.rfile.read(size)
                    self.rfile.readline()
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def _forward(self, body: bytes) -> tuple[int, str, list[tuple[str, str]], bytes]:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                headers.pop("Content-Length", None)
                headers.pop("content-length", None)
            if body or self.command in ("PUT", "POST"):
                headers["Content-Length"] = str(len(body))
            for attempt in (1, 2):  # a kept-alive upstream connection may have been closed by moto meanwhile
                try:
                    if self._upstream is None:
                        self._upstream = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port,
                                                                    timeout=60)
                        self._upstream.connect()
                        self._upstream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    self._upstream.request(self.command, self.path, body=body or None, headers=headers)
                    resp = self._upstream.getresponse()
                    data = resp.read() if self.command != "HEAD" else b""
                    if resp.will_close:
                        self._upstream.close()
                        self._upstream = None
                    return resp.status, resp.reason, resp.getheaders(), data
                except (http.client.HTTPException, OSError):
                    if self._upstream is not None:
                        self._upstream.close()
                    self._upstream = None
                    if attempt == 2:
                        raise
            raise AssertionError("unreachable")

        def _reset(self) -> None:
            """Close with a TCP RST (SO_LINGER 0), not a polite FIN."""
            self.close_connection = True
            try:
                self.wfile.flush()
            except OSError:
                pass
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            try:
                self.connection.close()
            except OSError:
                pass

        def _error(self, status: int, key: str) -> None:
            code, message = _ERRORS[status]
            body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
                    f"<Resource>/{BUCKET}/{key}</Resource><RequestId>FAULTPROXY</RequestId></Error>").encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body) if self.command != "HEAD" else 0))
            self.send_header("x-amz-request-id", "FAULTPROXY")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _relay(self, status: int, reason: str, headers: list[tuple[str, str]], data: bytes,
                   send: int | None = None) -> None:
            self.send_response(status, reason)
            length = None
            for k, v in headers:
                if k.lower() in _HOP or k.lower() in ("date", "server"):
                    continue
                if k.lower() == "content-length":
                    length = v
                    continue
                self.send_header(k, v)
            self.send_header("Content-Length", length if self.command == "HEAD" and length else str(len(data)))
            self.end_headers()
            self.wfile.write(data if send is None else data[:send])

        def _handle(self) -> None:
            body = self._body()
            op, key = classify(self.command, self.path, self.headers)
            kind = proxy._pick(op, key, has_body=self.command == "GET" and op == "GET")
            if kind in ("503", "500", "403"):
                self._error(int(kind), key)
                return
            if kind == "reset_before":
                self._reset()
                return
            if kind == "stall":
                proxy._closing.wait(proxy.stall_seconds)
                self.close_connection = True
                return
            status, reason, headers, data = self._forward(body)
            if kind == "applied_500":
                self._error(500, key)
                return
            if kind == "applied_reset":
                self._reset()
                return
            if kind == "reset_after":
                self._relay(status, reason, headers, data, send=0)
                self._reset()
                return
            if kind == "truncate" and len(data) > 1:
                self._relay(status, reason, headers, data, send=max(1, int(len(data) * proxy.truncate_share)))
                self._reset()
                return
            self._relay(status, reason, headers, data)

        def do_GET(self): self._handle()  # noqa: E704
        def do_HEAD(self): self._handle()  # noqa: E704
        def do_PUT(self): self._handle()  # noqa: E704
        def do_POST(self): self._handle()  # noqa: E704
        def do_DELETE(self): self._handle()  # noqa: E704

        def finish(self) -> None:
            try:
                super().finish()
            except OSError:
                pass
            if self._upstream is not None:
                self._upstream.close()

    return Handler
