"""Decode speed of Hudi Avro data blocks: the fastavro reference decoder against the polars fast path.

Run: ``python bench/bench_avro_decode.py [--records N] [--repeat R]``. Builds one block of N trips-like
records (the five Hudi meta fields and eight user columns: strings, a long, doubles, a timestamp-micros),
then times, end to end (structure check, decode, Arrow types of the base files):

* ``fastavro``: the reference decoder alone (``_decode_fastavro``);
* ``fast``: ``decode_avro_records`` (polars), all columns, with the block split over the decoding threads
  (one per core, at most 4) and, for comparison, in one thread;
* ``fast, 3 columns``: the same with a projection, as the merge does for key/ordering columns.

Prints records per second of each (best of R runs; wall clock, and per second of process CPU time, which a
busy machine disturbs less) and the wall-clock speed-up over fastavro. Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import io
import json
import random
import struct

import fastavro
from common import best_of  # bench/

from hudi_streaming.hoodie.logfile import avro_arrow  # noqa: E402

_META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
         "_hoodie_file_name"]
TRIPS_SCHEMA = {
    "type": "record", "name": "trips_record", "namespace": "hoodie.trips",
    "fields": [{"name": n, "type": ["null", "string"], "doc": "", "default": None} for n in _META] + [
        {"name": "ts", "type": ["null", "long"], "default": None},
        {"name": "uuid", "type": ["null", "string"], "default": None},
        {"name": "rider", "type": ["null", "string"], "default": None},
        {"name": "driver", "type": ["null", "string"], "default": None},
        {"name": "fare", "type": ["null", "double"], "default": None},
        {"name": "distance_km", "type": ["null", "double"], "default": None},
        {"name": "city", "type": ["null", "string"], "default": None},
        {"name": "event_time", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}],
         "default": None},
    ],
}
PROJECTION = ["_hoodie_record_key", "ts", "fare"]


def make_payload(n: int, seed: int = 1) -> bytes:
    """``n`` length-prefixed trips records, as in the content of an Avro data block after the count."""
    rng = random.Random(seed)
    schema = fastavro.parse_schema(TRIPS_SCHEMA)
    cities = ["san_francisco", "sao_paulo", "chennai", "new_york", "amsterdam"]
    out = io.BytesIO()
    record = io.BytesIO()
    for i in range(n):
        city = cities[i % len(cities)]
        record.seek(0)
        record.truncate()
        fastavro.schemaless_writer(record, schema, {
            "_hoodie_commit_time": "20240101093000123",
            "_hoodie_commit_seqno": f"20240101093000123_0_{i}",
            "_hoodie_record_key": f"{rng.getrandbits(128):032x}",
            "_hoodie_partition_path": f"city={city}",
            "_hoodie_file_name": "6e1d5cc4-72b9-4a8e-9d7d-3f0a0c5e1b2a-0",
            "ts": 1_700_000_000_000 + i,
            "uuid": f"{rng.getrandbits(128):032x}",
            "rider": f"rider-{rng.randrange(1000):03d}",
            "driver": f"driver-{rng.randrange(1000):03d}",
            "fare": round(rng.uniform(5, 120), 2),
            "distance_km": rng.uniform(0.5, 40),
            "city": None if i % 17 == 0 else city,
            "event_time": 1_700_000_000_000_000 + rng.randrange(10**12),
        })
        out.write(struct.pack(">i", record.tell()))
        out.write(record.getbuffer())
    return out.getvalue()


def best_seconds(fn, repeat: int) -> tuple[float, float]:
    """Best wall-clock and best process CPU seconds of ``repeat`` runs of ``fn``."""
    best = best_of(fn, repeat)
    return best.seconds, min(best.cpu_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.records
    schema_json = json.dumps(TRIPS_SCHEMA)
    payload = make_payload(n)
    print(f"{n} records, {len(payload) / 1e6:.1f} MB")

    plan = avro_arrow._plan(schema_json, None)
    view = memoryview(payload)

    def reference():
        lengths = avro_arrow._record_lengths(view, n, "bench")
        return avro_arrow._to_target(avro_arrow._decode_fastavro(plan, view, lengths, "bench"), plan, "bench")

    expected = reference()
    fast = avro_arrow.decode_avro_records(schema_json, payload, n)
    if not fast.equals(expected):
        raise SystemExit("fast path and fastavro disagree")
    if avro_arrow._decode_polars(plan, view, avro_arrow._record_lengths(view, n, "bench")) is None:
        raise SystemExit("the fast path fell back to fastavro")

    slow, slow_cpu = best_seconds(reference, max(1, args.repeat // 2))
    print(f"{'':<28} {'rec/s (wall)':>14} {'rec/CPU-s':>12}")
    print(f"{'fastavro':<28} {n / slow:>14,.0f} {n / slow_cpu:>12,.0f}")
    workers = avro_arrow._WORKERS
    for threads in sorted({1, workers}):
        avro_arrow._WORKERS = threads
        for label, columns in (("", None), (", 3 columns", PROJECTION)):
            wall, cpu = best_seconds(
                lambda columns=columns: avro_arrow.decode_avro_records(schema_json, payload, n, columns=columns),
                args.repeat)
            print(f"{f'fast, {threads} thread(s){label}':<28} {n / wall:>14,.0f} {n / cpu:>12,.0f}"
                  f"   {slow / wall:.1f}x fastavro")
    avro_arrow._WORKERS = workers

if __name__ == "__main__":
    main()
