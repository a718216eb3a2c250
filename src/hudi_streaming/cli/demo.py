"""The end-to-end demo: a live Hudi table, a Spark streaming query on it, and a check that nothing was lost.

A load generator writes a MERGE_ON_READ table (inserts, updates, deletes, compaction, clean, archive) in a
background thread while ``spark.readStream.format("hudi_streaming")`` tails it with a ``foreachBatch`` sink
that keeps a key → row state, as a user's upsert sink would. When the writer stops, the stream drains, and
the state it built must equal the table's snapshot read directly.
"""
from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # pyspark is imported only when the demo runs
    from pyspark.sql import DataFrame


def run_demo(workdir: str | None = None, commits: int = 12, keys: int = 400, out: TextIO = sys.stdout) -> bool:
    """Run the demo; returns True when the streamed state equals the table (prints a report to ``out``)."""
    from .. import hoodie, read_table
    from ..writer.loadgen import LoadGenerator
    from .local_spark import local_spark

    def say(msg: str) -> None:
        print(msg, file=out, flush=True)

    with tempfile.TemporaryDirectory(prefix="hudi-streaming-demo-") as tmp:
        root = Path(workdir or tmp)
        table = str(root / "table")
        gen = LoadGenerator(table, keys=keys, partitions=4, seed=7, batch=max(keys // 8, 1), name="demo")
        gen.step()  # the table exists before the stream starts
        say(f"table: {table} (MERGE_ON_READ, table version 9)")
        say("starting local Spark ...")
        spark = local_spark("hudi-streaming-demo")
        state: dict[str, dict] = {}
        seen = {"batches": 0, "rows": 0}

        def sink(df: DataFrame, batch_id: int) -> None:
            rows = [r.asDict() for r in df.collect()]
            kinds: dict[str, int] = {}
            for r in sorted(rows, key=lambda r: (r["_hoodie_commit_time"], r["_change_type"] != "delete")):
                kinds[r["_change_type"]] = kinds.get(r["_change_type"], 0) + 1
                if r["_change_type"] == "delete":
                    state.pop(r["_hoodie_record_key"], None)
                else:
                    state[r["_hoodie_record_key"]] = r
            seen["batches"] += 1
            seen["rows"] += len(rows)
            summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "no rows"
            say(f"  batch {batch_id:>3}: {summary:<48} keys in sink state: {len(state)}")

        query = (spark.readStream.format("hudi_streaming").option("stateLocation", str(root / "state"))
                 .option("emitDeletes", "true").option("maxRowsPerTrigger", str(keys)).load(table)
                 .writeStream.foreachBatch(sink).option("checkpointLocation", str(root / "checkpoint"))
                 .trigger(processingTime="1 second").start())
        while seen["batches"] == 0 and query.isActive:
            time.sleep(0.5)  # the first batch is the table as it was when the stream started
        say(f"writing {commits} more commits, about one a second (upserts, deletes; compaction every 4, "
            "clean every 6) ...")
        gen.rate = gen.batch  # rows per second: one commit a second
        writer = threading.Thread(target=gen.run, kwargs=dict(commits=commits, compact_every=4, clean_every=6,
                                                             retain_commits=4))
        writer.start()
        writer.join()
        latest = hoodie.HudiTable(table).timeline.latest_write_time()
        say(f"writer done at instant {latest}; letting the stream catch up ...")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            progress = query.lastProgress
            if progress and latest and f'"cursor": "{latest}"' in progress["sources"][0].get("latestOffset", "") \
                    and progress["numInputRows"] == 0:
                break
            time.sleep(1)
        query.stop()
        snapshot = {r["_hoodie_record_key"]: r for r in read_table(table).to_pylist()}
        same_keys = set(snapshot) == set(state)
        same_values = same_keys and all(state[k]["amount"] == snapshot[k]["amount"] and
                                        state[k]["_hoodie_commit_time"] == snapshot[k]["_hoodie_commit_time"]
                                        for k in snapshot)
        say(f"streamed {seen['rows']} changes in {seen['batches']} batches; table snapshot has {len(snapshot)} "
            f"rows, the sink's state has {len(state)}")
        say("OK: the streamed state equals the table" if same_values else
            "MISMATCH: the streamed state differs from the table")
        return same_values
