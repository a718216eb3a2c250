"""Store requests of one snapshot listing: through the metadata table's ``files`` partition vs LIST.

An oracle table (``tests/data/hudi/<name>.zip``, after its last step) is uploaded to moto on loopback behind the
tests' counting proxy (``tests/support/s3_fault_proxy.py``, no faults); for each way of listing, a fresh ``HudiTable``
loads its timeline (not counted: both ways do it), then its file-system view and partitions are taken and the
proxy's requests counted. Both ways must give the same slices and partitions.

    .venv/bin/python bench/bench_metadata_listing.py mor_v9_basic mor_v6_015_compaction

LIST is one request per 1,000 objects under the table root (``.hoodie/`` included); the metadata table costs a
fixed number: its properties, its timeline folder and ``files`` folder listed, the base HFile's tail and data
block(s), and one ranged read per log file of the latest ``files`` slice.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from oracle.hudi_oracle.fixture import FOLDER, HudiFixture  # noqa: E402
from support.s3_fault_proxy import FaultProxy  # noqa: E402
from support.s3_server import S3Server  # noqa: E402

from hudi_streaming.hoodie.table import HudiTable  # noqa: E402


def measure(proxy: FaultProxy, url: str, metadata_enable: bool) -> tuple[dict, object]:
    table = HudiTable(url, proxy.storage_options, metadata_enable=metadata_enable)
    table.timeline  # noqa: B018 - loaded either way; only the listing is counted
    proxy.reset_stats()
    view, partitions = table.file_system_view(), table.partitions()
    stats = proxy.stats()["by_op"]
    return stats, ([(s.files, s.size) for s in view.latest_merged_slices()], partitions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zips", nargs="+", help="oracle table names (tests/data/hudi/<name>.zip)")
    args = parser.parse_args()
    server = S3Server()
    proxy = FaultProxy(server)
    try:
        print("| table | objects | LIST requests | metadata-table requests | same listing |")
        print("|---|---|---|---|---|")
        for name in args.zips:
            work = Path(tempfile.mkdtemp(prefix="bench_mdt_"))
            fx = HudiFixture(FOLDER / f"{name}.zip", work)
            root = fx.materialize(len(fx.steps) - 1, work / "table")
            url = server.upload(root, name)
            listed, by_list = measure(proxy, url, False)
            served, by_index = measure(proxy, url, True)
            objects = sum(1 for p in root.rglob("*") if p.is_file())
            print(f"| {name} | {objects} | {sum(listed.values())} {listed} | {sum(served.values())} {served} | "
                  f"{by_list == by_index} |")
    finally:
        proxy.stop()
        server.stop()


if __name__ == "__main__":
    main()
