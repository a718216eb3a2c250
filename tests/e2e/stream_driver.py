"""A streaming query as a user runs it: hudi_streaming → foreachBatch sink, one parquet folder per batch id.

Run as a separate process so tests can SIGKILL it at any point and start it again from its checkpoint.
``--until-caught-up`` uses Trigger.AvailableNow (drain and exit); otherwise it runs until killed.
The sink overwrites ``<out>/batch=<id>``, which makes a replayed batch idempotent, as Spark expects of sinks.
"""
from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", required=True)
    ap.add_argument("--work", required=True, help="folder for the checkpoint, state and output")
    ap.add_argument("--options", default="{}", help="JSON object of extra source options")
    ap.add_argument("--until-caught-up", action="store_true")
    args = ap.parse_args()
    from hudi_streaming.streaming.local_spark import local_spark

    spark = local_spark("hudi-streaming-e2e")
    reader = spark.readStream.format("hudi_streaming").option("stateLocation", f"{args.work}/state")
    for k, v in json.loads(args.options).items():
        reader = reader.option(k, v)
    df = reader.load(args.table)

    def sink(batch_df, batch_id):
        batch_df.write.mode("overwrite").parquet(f"{args.work}/out/batch={batch_id:06d}")
        print(f"batch {batch_id} rows {batch_df.count()}", flush=True)

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
