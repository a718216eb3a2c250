"""Regenerate the oracle fixtures: Apache Hudi writes every configuration of ``matrix.py`` and answers its
queries, and each configuration is packed into ``tests/data/hudi/<name>.zip``.

    .venv/bin/python tests/oracle/hudi_oracle/generate.py [--only a,b] [--work DIR] [--dest DIR]

Builds or reuses Hudi's environment (``env.py``), runs the 1.2 writer and the 0.15 writer at once (one JVM
each, never inside the project's Spark, each with its own log), and prints each configuration's result and zip
size as its writer ends.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from env import HUDI, ensure  # noqa: E402
from fixture import FOLDER, pack  # noqa: E402
from matrix import configurations  # noqa: E402


def generate(only: list[str] | None, work: Path, dest: Path, log: Path | None = None) -> dict[str, str]:
    """Write and pack the configurations; returns name → "ok" or Hudi's error.

    The writers (a JVM per Hudi version, one more for Lance) run at the same time: each spends most of its time
    starting up and waiting for its own commits, so side by side they take little more than the longest alone
    (the suite's live oracle). ``log`` is split per writer (``writer-1.2.log``, ...), as JVMs' lines would mix."""
    env = ensure()
    configs = configurations()
    wanted = [n for n in configs if not only or n in only]
    unknown = set(only or []) - set(configs)
    if unknown:
        raise SystemExit(f"unknown configurations: {sorted(unknown)}")
    dest.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    groups = []  # (writer, with Lance, its configurations)
    for writer, lance in [(w, lance) for w in HUDI for lance in (False, True)]:
        names = [n for n in wanted if configs[n]["writer"] == writer and (configs[n]["base"] == "lance") == lance]
        if names:
            groups.append((writer, lance, names))

    def write(writer: str, lance: bool, names: list[str]) -> float:
        t0 = time.monotonic()
        tag = f"{writer}{'-lance' if lance else ''}"
        env.run_writer(writer, work, names, log=log and log.with_name(f"{log.stem}-{tag}{log.suffix}"), lance=lance)
        return time.monotonic() - t0

    with ThreadPoolExecutor(max(len(groups), 1)) as pool:
        running = [pool.submit(write, *group) for group in groups]
    results = {}
    for (writer, lance, names), done in zip(groups, running):
        print(f"hudi {HUDI[writer]}{' with Lance' if lance else ''}: {len(names)} configurations in "
              f"{done.result():.0f} s", flush=True)
        for n in names:
            manifest = json.loads((work / n / "manifest.json").read_text())
            size = pack(work / n, dest / f"{n}.zip")
            results[n] = manifest["error"] or "ok"
            print(f"  {n}: {len(manifest['steps'])} steps, {size / 1024:.0f} KiB, {results[n][:160]}", flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated configuration names (default: all)")
    ap.add_argument("--work", help="where Hudi writes (default: a temporary folder)")
    ap.add_argument("--dest", default=str(FOLDER), help="where the zips go")
    args = ap.parse_args()
    only = [n for n in args.only.split(",") if n] or None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.work or tmp)
        generate(only, work, Path(args.dest), log=work / "writer.log")


if __name__ == "__main__":
    main()
