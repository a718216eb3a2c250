"""A streaming query as a user runs it: hudi_streaming → foreachBatch sinks.

Run as a separate process so tests can SIGKILL it at any point and start it again from its checkpoint.
``--until-caught-up`` uses Trigger.AvailableNow (drain and exit); otherwise it runs until killed.

Spark replays a batch whose offsets it logged but whose completion it did not (a crash after the sink wrote):
same batch id, same rows. What that means for a sink is shown by ``--sinks`` (each into its own folder of
``--work``; the batch is read once and cached):

* ``overwrite`` (``out/batch=<id>``): each batch replaces its own folder — idempotent, as Spark expects;
* ``append`` (``append/``): appends every batch with its id in ``_batch`` — a replay appends the batch again;
* ``guarded`` (``guarded/``): the same append, skipping a batch id the output already holds. The batch id is
  stored in the rows it came with, so "written" and "recorded" are one event; the append is one file, so its
  job commit is one rename, and leftovers of a killed write (``_temporary``) are removed first, because
  Hadoop's committer adopts the task files it finds there into the next job's output.

The fault point ``sink.after_write`` (``hudi_streaming._faults``) is after every sink wrote, before Spark
records the batch as done.
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from hudi_streaming._faults import fault_point

SINKS = ("overwrite", "append", "guarded")


def last_applied(spark, out: str) -> int:
    """The greatest batch id an appending sink's output holds (-1: none)."""
    if not any(Path(out).glob("*.parquet")):
        return -1
    from pyspark.sql import functions as F

    last = spark.read.parquet(out).agg(F.max("_batch")).first()[0]
    return -1 if last is None else last


def clear_interrupted_first_offset(checkpoint: Path) -> None:
    """Remove the temporary file Spark leaves in ``offsets/`` when it is killed while writing its first offset.

    Spark 4 refuses to start a query whose checkpoint has no committed offset but a non-empty ``offsets``
    folder (SPARK-53103: "offsets should be empty on batch 0"), and counts that orphaned ``.0.<uuid>.tmp``
    file, so such a query could never restart. The README tells operators to delete it; the job does the same.
    Nothing committed is touched: the file was never renamed into place, and nothing reads it.
    """
    offsets = checkpoint / "offsets"
    if not offsets.is_dir() or any(p.name.isdigit() for p in offsets.iterdir()):
        return
    for p in offsets.iterdir():
        if p.name.startswith(".") and (p.name.endswith(".tmp") or p.name.endswith(".tmp.crc")):
            p.unlink()
            print(f"removed Spark's interrupted first offset {p.name}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", required=True)
    ap.add_argument("--work", required=True, help="folder for the checkpoint, state and output")
    ap.add_argument("--options", default="{}", help="JSON object of extra source options")
    ap.add_argument("--until-caught-up", action="store_true")
    ap.add_argument("--sinks", default="overwrite", help=f"comma-separated, of {', '.join(SINKS)}")
    ap.add_argument("--task-retries", type=int, default=1, help="attempts per task (a crashed worker is retried)")
    args = ap.parse_args()
    sinks = args.sinks.split(",")
    if not set(sinks) <= set(SINKS):
        ap.error(f"--sinks: {args.sinks!r}")
    from pyspark.sql import functions as F

    from hudi_streaming.cli.local_spark import local_spark

    clear_interrupted_first_offset(Path(args.work) / "checkpoint")
    spark = local_spark("hudi-streaming-e2e", f"local[2,{args.task_retries}]")
    reader = spark.readStream.format("hudi_streaming").option("stateLocation", f"{args.work}/state")
    for k, v in json.loads(args.options).items():
        reader = reader.option(k, v)
    df = reader.load(args.table)

    def sink(batch_df, batch_id):
        batch_df.persist()
        if "overwrite" in sinks:
            batch_df.write.mode("overwrite").parquet(f"{args.work}/out/batch={batch_id:06d}")
        tagged = batch_df.withColumn("_batch", F.lit(batch_id))
        if "append" in sinks:
            tagged.write.mode("append").parquet(f"{args.work}/append")
        if "guarded" in sinks:
            out = f"{args.work}/guarded"
            shutil.rmtree(f"{out}/_temporary", ignore_errors=True)
            if batch_id > last_applied(spark, out):
                tagged.coalesce(1).write.mode("append").parquet(out)
        fault_point("sink.after_write")
        print(f"batch {batch_id} rows {batch_df.count()}", flush=True)
        batch_df.unpersist()

    writer = df.writeStream.foreachBatch(sink).option("checkpointLocation", f"{args.work}/checkpoint")
    writer = (writer.trigger(availableNow=True) if args.until_caught_up
              else writer.trigger(processingTime="500 milliseconds"))
    query = writer.start()
    if args.until_caught_up:
        query.awaitTermination()
    else:
        while query.isActive:
            time.sleep(0.2)
        query.awaitTermination()


if __name__ == "__main__":
    main()
