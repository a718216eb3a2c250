"""The streaming job a Spark cluster runs: submitted by tests/e2e/test_cluster.py, and by docker/compose.yaml.

It is written as a user's job is: nothing but PySpark and the installed package — no ``register`` call (the
package's ``pyspark_hudi_streaming`` module registers the source), no master in the code (``spark-submit
--master`` names it). Paths are made absolute on the driver because executors resolve relative paths in their
own work directories. The ``foreachBatch`` sink overwrites ``<work>/out/batch=<id>``, so a batch that Spark
replays after a crash replaces what its interrupted run wrote: the sink is idempotent, as Spark requires.

After each trigger the job prints one line ``progress batch=<id> rows=<n> cursor=<instant> lag=<instants>``
(Spark's ``numInputRows`` and the source's own report): how a user — or the test — sees where it is.
``--available-now`` delivers what is committed when the query starts, then exits; otherwise a batch is
started every second until the process is stopped.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import time

from pyspark.sql import SparkSession

#: rows per batch at most: the first batches (the table as it was at the start) span several batches,
#: so restarts also resume inside a planned split
MAX_ROWS_PER_TRIGGER = "50"


#: one progress line, whole: a line another process's output split (a log line written into it) does not match
PROGRESS = re.compile(r"^progress batch=(?P<batch>\d+) rows=(?P<rows>\d+) cursor=(?P<cursor>\S+) lag=(?P<lag>\S+)$",
                      re.M)


def parse_progress(output: str) -> list[dict[str, str]]:
    """The ``progress`` lines in a job's output, as dicts. Only lines ended by a newline count: the output is read
    while the job writes it."""
    return [m.groupdict() for m in PROGRESS.finditer(output[:output.rfind("\n") + 1])]


def print_progress(progress: dict) -> None:
    # the source's report; null for a batch replayed from the checkpoint (its offsets were not asked for)
    report = json.loads(progress["sources"][0]["latestOffset"] or "null") or {}
    print(f"progress batch={progress['batchId']} rows={progress['numInputRows']} cursor={report.get('cursor')} "
          f"lag={report.get('lagInstants')}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", required=True, help="the Hudi table (path or URL)")
    ap.add_argument("--work", required=True, help="folder for the checkpoint, the source's state and the output")
    ap.add_argument("--available-now", action="store_true", help="deliver what is committed now, then exit")
    args = ap.parse_args()
    table, work = os.path.abspath(args.table), os.path.abspath(args.work)
    spark = SparkSession.builder.appName("hudi-streaming-cluster-job").getOrCreate()

    def sink(batch_df, batch_id: int) -> None:
        batch_df.write.mode("overwrite").parquet(f"{work}/out/batch={batch_id:06d}")

    writer = (spark.readStream.format("hudi_streaming")
              .option("stateLocation", f"{work}/state")
              .option("emitDeletes", "true")
              .option("maxRowsPerTrigger", MAX_ROWS_PER_TRIGGER)
              .load(table)
              .writeStream.foreachBatch(sink)
              .option("checkpointLocation", f"{work}/checkpoint"))
    query = (writer.trigger(availableNow=True) if args.available_now
             else writer.trigger(processingTime="1 second")).start()
    printed = ""  # the timestamp of the last progress printed
    while True:
        active = query.isActive  # read before the progress, so that the last one is printed after the end
        for progress in query.recentProgress:
            if progress["timestamp"] > printed:
                print_progress(progress)
                printed = progress["timestamp"]
        if not active:
            break
        time.sleep(0.5)
    query.awaitTermination()  # raises the query's error, if it failed
    spark.stop()


if __name__ == "__main__":
    main()
