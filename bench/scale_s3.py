"""An object store with an object store's latency, for ``bench_scale.py``: moto on loopback behind the tests'
counting proxy (``tests/support/s3_fault_proxy.py``), which here waits ``latency`` seconds before forwarding
each request.

Why: on loopback a request costs a fraction of a millisecond, so a planner that makes a request per file looks
free; S3 answers in ~20–50 ms. Each request waits on its own connection's thread, so concurrent requests overlap
as they do against a real store, and a client's parallelism counts as it would there. The proxy counts requests
per operation (``stats()``); tables are uploaded to moto directly, without the latency and not counted.
"""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import fsspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.s3_fault_proxy import FaultProxy  # noqa: E402
from support.s3_server import BUCKET, S3Server  # noqa: E402

LATENCY = 0.040  # seconds added to every request: a real object store's first-byte latency


class LatencyProxy(FaultProxy):
    """The counting proxy, each request held ``latency`` seconds before it is forwarded (no faults)."""

    def __init__(self, server: S3Server, latency: float = LATENCY):
        super().__init__(server)
        self.latency = latency

    def _pick(self, op: str, key: str, has_body: bool) -> str | None:
        time.sleep(self.latency)  # on the request's own thread: concurrent requests wait side by side
        return super()._pick(op, key, has_body)


class SlowStore:
    """moto and a :class:`LatencyProxy` in front of it; ``upload`` a local table, read it through ``proxy``."""

    def __init__(self, latency: float = LATENCY):
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request otherwise
        self.server = S3Server()
        self.proxy = LatencyProxy(self.server, latency)

    def upload(self, folder: Path, name: str) -> str:
        """``folder`` as ``s3://…/name`` (hidden files included, the local file system's ``.crc`` checksums left
        out: an object store has none), uploaded past the proxy in one concurrent ``pipe``."""
        fs = fsspec.filesystem("s3", skip_instance_cache=True, **self.server.storage_options)
        fs.pipe({f"{BUCKET}/{name}/{p.relative_to(folder).as_posix()}": p.read_bytes()
                 for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix != ".crc"})
        return self.server.url(name)

    def stop(self) -> None:
        self.proxy.stop()
        self.server.stop()
