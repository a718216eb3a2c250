"""An object store with an object store's latency, for ``bench_scale.py``: moto on loopback behind the tests'
counting proxy (``tests/support/s3_fault_proxy.py``), which here waits ``latency`` seconds before forwarding
each request.

Why: on loopback a request costs a fraction of a millisecond, so a planner that makes a request per file looks
free; S3 answers in ~20–50 ms. Each request waits on its own connection's thread, so concurrent requests overlap
as they do against a real store, and a client's parallelism counts as it would there. The proxy counts requests
per operation (``stats()``) and, here, per operation and key (``by_key``); tables are uploaded to moto directly,
without the latency and not counted.

``python bench/scale_s3.py [PARTITIONS]``: the requests a batch's tasks make per data file, without Spark
(:func:`task_requests`), on the cached Hudi-written table of that many partitions (``scale_tables``, 100 by
default).
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import fsspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.s3_fault_proxy import FaultProxy  # noqa: E402
from support.s3_server import BUCKET, S3Server  # noqa: E402

LATENCY = 0.040  # seconds added to every request: a real object store's first-byte latency
UPLOAD_CHUNK = 500  # files per concurrent upload call (see SlowStore.upload)


class LatencyProxy(FaultProxy):
    """The counting proxy, each request held ``latency`` seconds before it is forwarded (no faults)."""

    def __init__(self, server: S3Server, latency: float = LATENCY):
        super().__init__(server)
        self.latency = latency
        #: requests per (operation, key) since the last reset
        self.by_key: Counter = Counter()
        self._keys_lock = threading.Lock()

    def reset_stats(self) -> None:
        super().reset_stats()
        with self._keys_lock:
            self.by_key.clear()

    def _pick(self, op: str, key: str, has_body: bool) -> str | None:
        with self._keys_lock:
            self.by_key[op, key] += 1
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
        out: an object store has none), uploaded past the proxy in concurrent ``pipe`` calls of
        :data:`UPLOAD_CHUNK` files each: moto keeps every object in this process's memory, so the bytes being
        sent are held once more only a chunk at a time (a 10,000-partition table is ~4 GiB)."""
        fs = fsspec.filesystem("s3", skip_instance_cache=True, **self.server.storage_options)
        files = [p for p in sorted(folder.rglob("*")) if p.is_file() and p.suffix != ".crc"]
        for i in range(0, len(files), UPLOAD_CHUNK):
            fs.pipe({f"{BUCKET}/{name}/{p.relative_to(folder).as_posix()}": p.read_bytes()
                     for p in files[i:i + UPLOAD_CHUNK]})
        return self.server.url(name)

    def stop(self) -> None:
        self.proxy.stop()
        self.server.stop()


def task_requests(store: SlowStore, url: str) -> dict:
    """The tasks of a snapshot read of ``url`` (``spark.read``'s plan: the same task reads a stream's batch makes),
    run one after another in this process, without Spark: their seconds, and their requests per data file by
    operation and file kind (base / log; a file's requests are those whose key is its path). The driver's
    planning is not counted."""
    from hudi_streaming.streaming.batch_read import plan_batch_read
    from hudi_streaming.streaming.options import parse_options
    from hudi_streaming.streaming.schema import source_schema
    from hudi_streaming.streaming.source import FileGroupPartition, _read_task

    opts = parse_options({"path": url, **store.proxy.spark_options})
    schema = source_schema(opts)
    tasks = plan_batch_read(opts, schema, FileGroupPartition)
    files = {fs.base_file.path: "base" for t in tasks for r in t.ranges if (fs := r.split.slice).base_file}
    files.update({lf.path: "log" for t in tasks for r in t.ranges for lf in r.split.slice.log_files})
    store.proxy.reset_stats()
    t0 = time.perf_counter()
    rows = sum(b.num_rows for t in tasks for b in _read_task(opts, t, schema))
    took = time.perf_counter() - t0
    prefix = url.split("/", 3)[3] + "/"
    per_kind: dict[str, Counter] = {"base": Counter(), "log": Counter(), "other": Counter()}
    for (op, key), n in store.proxy.by_key.items():
        per_kind[files.get(key[len(prefix):] if key.startswith(prefix) else key, "other")][op] += n
    counts = Counter(files.values())
    return {"tasks": len(tasks), "rows": rows, "seconds": took, "files": dict(counts),
            "per_file": {kind: {op: n / counts[kind] for op, n in ops.items()}
                         for kind, ops in per_kind.items() if kind in counts},
            "other": dict(per_kind["other"])}


def main() -> None:
    from scale_hudi import ensure  # bench/: Hudi's own environment (the cached table is written there)
    from scale_tables import hudi_table  # bench/

    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    table = hudi_table(ensure(progress=print), partitions, 5)
    store = SlowStore()
    try:
        url = store.upload(table, f"scale-{partitions}")
        got = task_requests(store, url)
    finally:
        store.stop()
    print(f"{partitions:,} partitions: {got['tasks']} tasks, {got['rows']:,} rows in {got['seconds']:.2f} s "
          f"(one after another, {LATENCY * 1000:.0f} ms per request); files {got['files']}")
    for kind, ops in got["per_file"].items():
        print(f"  requests per {kind} file: {sum(ops.values()):.2f} "
              f"({', '.join(f'{op} {n:.2f}' for op, n in sorted(ops.items()))})")
    print(f"  other requests: {got['other']}")


if __name__ == "__main__":
    main()
