"""A stream task's memory and time on an object store: one MOR file slice read from a local S3 server.

Run: ``python bench/bench_s3_read.py [--keep DIR] [--sizes 1000000,4000000] [--updates 200000] [--repeat 2]``. The
tables are bench_slice_read.py's (``DIR/rows_<N>``, ``--updates`` log updates in 4 Avro blocks, gzip; built when
missing), uploaded to moto's S3 server, started as a process of its own on loopback so that its memory is not the
reader's.

For each size, a fresh worker process runs what a Spark task runs on the slice (``consume`` over the snapshot
split, batches dropped as they come: bench_slice_read's streaming path) against the ``s3://`` URL, twice:

* **ranged**, as the reader does (``Storage.parquet_file``): the base file's footer, then a column buffer per
  request (``REMOTE_READ_BUFFER``);
* **whole**, as it did before (``WHOLE_FETCH_MAX`` raised above the file): the base file fetched in one request
  and read from memory.

It prints the best wall time of ``--repeat`` runs, the peak RSS growth (the worker's VmHWM minus its RSS before
the first read), the requests
and bytes fetched from the base file, and at the end how each way's growth scales from the first size to the
last. Target (issue 12's, now on an object store): the ranged task's growth from 1M to 4M base rows < 1.25x.
Loopback has no latency, so the times say what the requests cost in CPU, not what they cost against a real
store's ~20-50 ms a request.
"""
from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_slice_read as slice_bench
import common

BUCKET = "bench"
SCALING_TARGET = 1.25
#: moto accepts any credentials; they only have to be present
OPTIONS = {"key": "bench", "secret": "bench"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _options(endpoint: str) -> dict:
    return {**OPTIONS, "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}


def start_server() -> tuple[subprocess.Popen, str]:
    """moto's S3 server in its own process on a free loopback port, with :data:`BUCKET`; (process, endpoint)."""
    import boto3
    from botocore.exceptions import EndpointConnectionError

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=OPTIONS["key"],
                          aws_secret_access_key=OPTIONS["secret"])
    for _ in range(100):
        try:
            client.create_bucket(Bucket=BUCKET)
            return server, endpoint
        except EndpointConnectionError:  # not listening yet
            time.sleep(0.1)
    server.kill()
    raise SystemExit("moto's S3 server did not start")


def upload(root: Path, endpoint: str, name: str) -> str:
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True, **_options(endpoint))
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        fs.pipe_file(f"{BUCKET}/{name}/{path.relative_to(root).as_posix()}", path.read_bytes())
    return f"s3://{BUCKET}/{name}"


def worker(url: str, endpoint: str, way: str, repeat: int) -> dict:
    """One way of reading, in this (fresh) process: bench_slice_read's stream task with the request log."""
    import s3fs

    from hudi_streaming.hoodie import storage

    if way == "whole":
        storage.WHOLE_FETCH_MAX = 1 << 62
    requests: list[int] = []
    fetch_range, cat_file = s3fs.core.S3File._fetch_range, s3fs.S3FileSystem._cat_file

    def ranged(self, start, end):
        if self.key.endswith(".parquet"):
            requests.append(end - start)
        return fetch_range(self, start, end)

    async def whole(self, path, *args, **kwargs):
        data = await cat_file(self, path, *args, **kwargs)
        if path.endswith(".parquet"):
            requests.append(len(data))
        return data
    s3fs.core.S3File._fetch_range, s3fs.S3FileSystem._cat_file = ranged, whole
    result = slice_bench.time_reads(slice_bench.stream_task(url, _options(endpoint)), repeat, streams=True)
    return {**result, "requests": len(requests) / repeat, "fetched": sum(requests) / repeat}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", help="folder of bench_slice_read.py's tables (rows_<N>), kept; default: a temporary one")
    ap.add_argument("--sizes", default="1000000,4000000")
    ap.add_argument("--updates", type=int, default=200_000, help="log updates of each table")
    ap.add_argument("--repeat", type=int, default=2, help="runs per measurement; the best is reported")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        common.worker_done(worker(args.url, args.endpoint, args.worker, args.repeat))
    keep = Path(args.keep or tempfile.mkdtemp(prefix="bench_s3_read_"))
    sizes = [int(s) for s in args.sizes.split(",")]
    server, endpoint = start_server()
    growth: dict[str, list[float]] = {"ranged": [], "whole": []}
    try:
        print(f"{'base rows':>10} | {'way':<6} | {'best s':>6} | {'rows/s':>10} | {'peak RSS growth':>15} | "
              f"{'requests':>8} | {'MiB fetched':>11} | base file")
        for n in sizes:
            table, _, _ = slice_bench.table_at(keep / f"rows_{n}", n, args.updates, 4, "gzip")
            url = upload(table, endpoint, f"rows_{n}")
            base = slice_bench.data_files(table)[0]
            for way in growth:
                r = common.run_worker(__file__, way, "--url", url, "--endpoint", endpoint, "--repeat", str(args.repeat))
                g = (r["vm_hwm"] - r["rss_before"]) / 2**20
                growth[way].append(g)
                print(f"{n:>10,} | {way:<6} | {r['seconds']:>6.2f} | {r['rows'] / r['seconds']:>10,.0f} | "
                      f"{g:>11.0f} MiB | {r['requests']:>8.0f} | {r['fetched'] / 2**20:>11.1f} | "
                      f"{base.stat().st_size / 2**20:.1f} MiB", flush=True)
    finally:
        server.kill()
    if len(sizes) > 1:
        for way, g in growth.items():
            scale = g[-1] / g[0]
            ok = common.verdict(scale < SCALING_TARGET)
            target = f" (target < {SCALING_TARGET}x: {ok})" if way == "ranged" else ""
            print(f"peak RSS growth {way}: {g[0]:.0f} -> {g[-1]:.0f} MiB from {sizes[0]:,} to {sizes[-1]:,} base "
                  f"rows, {scale:.2f}x{target}")
        print(f"ranged / whole at {sizes[-1]:,} base rows: {common.ratio(growth['ranged'][-1], growth['whole'][-1])}")
    if not args.keep:
        shutil.rmtree(keep, ignore_errors=True)


if __name__ == "__main__":
    main()
