"""What each Python worker role of the stream imports, how long its own part takes and its memory (issue 27.1).

Why: PySpark 4 runs a Python data source's steps in worker processes of their own (the lookup of the source's
name, ``schema()``, the planner, the streaming source's runner, each task); what a role imports it pays for in
start-up time and memory in every such process. ``tests/support/worker_roles.py`` replays each role in a fresh Python
without Spark (after importing the PySpark worker module Spark would have loaded), on a MERGE_ON_READ table
Hudi wrote; this prints, per role: its own seconds (imports and calls), its RSS before (the PySpark worker
module alone) and after, its peak (``VmHWM``), the modules it loaded and which of the heavy ones
(``worker_roles.WATCHED``) are among them. With ``--importtime`` the role's ten slowest imports too
(``python -X importtime``, cumulative microseconds).

    python bench/bench_worker_roles.py [--table PATH | --fixture mor_v9_basic] [--importtime]
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

from common import MIB, load  # bench/: report figures

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from oracle.hudi_oracle.fixture import HudiFixture  # noqa: E402  tests/oracle/hudi_oracle: Hudi-written tables
from support.worker_roles import ROLES, WATCHED, Roles, run_role  # noqa: E402  tests/support: roles without Spark

_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)")


def slowest(stderr: Path, loaded: set[str], n: int = 10) -> list[tuple[str, int]]:
    """The ``n`` slowest top-level imports (cumulative µs) among the role's own (``loaded``)."""
    found = []
    for line in stderr.read_text().splitlines():
        m = _IMPORT_LINE.match(line)
        if m and m.group(4) in loaded and "." not in m.group(4):
            found.append((m.group(4), int(m.group(2))))
    return sorted(found, key=lambda x: -x[1])[:n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", help="a Hudi table (default: the fixture's last step)")
    ap.add_argument("--fixture", default="mor_v9_basic", help="tests/data/hudi/<name>.zip, when no --table")
    ap.add_argument("--importtime", action="store_true", help="also each role's slowest imports (-X importtime)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-worker-roles-") as tmp:
        work = Path(tmp)
        table = Path(a.table) if a.table else None
        if table is None:
            fx = HudiFixture(REPO / "tests" / "data" / "hudi" / f"{a.fixture}.zip", work / "fx")
            table = fx.materialize(len(fx.steps) - 1, work / "table")
        roles = Roles(table, work / "run")
        print(f"load {load()}")
        print(f"{'role':<13} | {'seconds':>7} | {'RSS before':>10} | {'RSS after':>9} | {'peak':>8} | {'modules':>7} "
              "| heavy modules loaded")
        for role in ROLES:
            r = roles[role]
            heavy = ", ".join(m for m in WATCHED if r.loads(m)) or "-"
            print(f"{role:<13} | {r.seconds:7.2f} | {r.rss_before / MIB:6.0f} MiB | {r.rss / MIB:5.0f} MiB | "
                  f"{r.hwm / MIB:4.0f} MiB | {len(r.loaded):7d} | {heavy}")
        if a.importtime:
            timed = work / "importtime"
            timed.mkdir()
            for f in (work / "run").glob("*.*"):  # the schema and pickles the later roles read
                (timed / f.name).write_bytes(f.read_bytes())
            for role in ROLES:
                r = run_role(role, table, timed, flags=("-X", "importtime"))
                top = slowest(timed / f"{role}.stderr", set(r.loaded))
                print(f"{role}: " + ", ".join(f"{name} {us / 1e6:.2f} s" for name, us in top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
