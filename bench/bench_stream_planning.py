"""Planning cost of the stream monitor on a wide table: one new instant on a table of 100,000 file groups.

Target (issue: streaming source): planning one new instant costs in proportion to the files that instant
wrote, under 100 ms — not in proportion to the table. The table is synthetic but laid out exactly like a
Hudi v9 MOR table (properties and Avro commit metadata re-encoded from a real fixture); the data files are
empty, because planning never opens them.

    python bench/bench_stream_planning.py [--groups 100000] [--partitions 100]
"""
from __future__ import annotations

import argparse
import io
import shutil
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

import fastavro

from hudi_streaming.hoodie.table import HudiTable
from hudi_streaming.monitor.monitor import MonitorOptions, StreamMonitor

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "tables" / "mor_avro__v9_txns_simple_meta.zip"
T1, C1 = "20260101000000000", "20260101000001000"


def _template(z: zipfile.ZipFile) -> tuple[dict, dict, str]:
    name = next(n for n in z.namelist() if n.endswith("_20260307162601961.deltacommit"))
    reader = fastavro.reader(io.BytesIO(z.read(name)))
    record = next(reader)
    props = z.read(next(n for n in z.namelist() if n.endswith(".hoodie/hoodie.properties"))).decode()
    return reader.writer_schema, record, props


def _commit(schema: dict, template: dict, stats: dict[str, list[dict]]) -> bytes:
    record = dict(template)
    record["partitionToWriteStats"] = stats
    out = io.BytesIO()
    fastavro.writer(out, schema, [record])
    return out.getvalue()


def _stat(template_stat: dict, part: str, file_id: str, path: str) -> dict:
    s = dict(template_stat)
    s.update(fileId=file_id, path=path, partitionPath=part, numWrites=1, numInserts=0, numUpdateWrites=1,
             logFiles=[path.rsplit("/", 1)[-1]], fileSizeInBytes=1, totalWriteBytes=1)
    return s


def build(root: Path, groups: int, partitions: int) -> tuple[list[tuple[str, str]], dict, dict]:
    with zipfile.ZipFile(FIXTURE) as z:
        schema, template, props = _template(z)
    (root / ".hoodie" / "timeline").mkdir(parents=True)
    props = "\n".join(ln for ln in props.splitlines()
                      if not ln.startswith(("hoodie.table.metadata.partitions", "hoodie.table.checksum")))
    (root / ".hoodie" / "hoodie.properties").write_text(props.replace("region", "p") + "\n")
    per = groups // partitions
    ids = []
    for p in range(partitions):
        part = f"p={p:03d}"
        d = root / part
        d.mkdir()
        (d / ".hoodie_partition_metadata").write_text("commitTime=0\npartitionDepth=1\n")
        for _ in range(per):
            fid = f"{uuid.uuid4()}-0"
            (d / f"{fid}_0-1-1_{T1}.parquet").touch()
            ids.append((part, fid))
    first_stat = next(iter(template["partitionToWriteStats"].values()))[0]
    tl = root / ".hoodie" / "timeline"
    (tl / f"{T1}_{C1}.deltacommit").write_bytes(_commit(schema, template, {
        "p=000": [_stat(first_stat, "p=000", ids[0][1], f"p=000/{ids[0][1]}_0-1-1_{T1}.parquet")]}))
    return ids, schema, {"template": template, "stat": first_stat}


def new_instant(root: Path, ids, schema, tmpl, n_groups: int, seq: int) -> None:
    t, c = f"2026010100{seq:02d}00000", f"2026010100{seq:02d}01000"
    step = max(len(ids) // n_groups, 1)
    stats: dict[str, list[dict]] = {}
    for part, fid in ids[::step][:n_groups]:
        name = f".{fid}_{t}.log.1_0-1-1"
        (root / part / name).touch()
        stats.setdefault(part, []).append(_stat(tmpl["stat"], part, fid, f"{part}/{name}"))
    (root / ".hoodie" / "timeline" / f"{t}_{c}.deltacommit").write_bytes(_commit(schema, tmpl["template"], stats))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=100)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-plan-")) / "t"
    try:
        t0 = time.perf_counter()
        ids, schema, tmpl = build(root, args.groups, args.partitions)
        print(f"built {args.groups:,} file groups in {args.partitions} partitions in {time.perf_counter() - t0:.1f} s")
        table = HudiTable(str(root))
        mon = StreamMonitor(table, MonitorOptions())
        print(f"{'files written by the instant':>30} | {'partitions first seen':>21} | {'plan_next ms':>12} | splits")
        for seq, n in enumerate((1, 10, 100, 1000, 1, 10, 100, 1000), start=1):
            new_instant(root, ids, schema, tmpl, n, seq)
            table.reload()
            cursor = mon.cursor_of(table.timeline.completed_writes()[-2])
            cold = len(mon._files)
            t0 = time.perf_counter()
            plan = mon.plan_next(cursor)
            took = time.perf_counter() - t0
            print(f"{n:>30,} | {len(mon._files) - cold:>21} | {took * 1000:>12.1f} | {len(plan.splits)}")
        print("a partition is listed once, the first time the stream sees a write to it; after that a poll "
              "costs in proportion to the files its instants wrote")
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
