"""A local Spark session set up the way this project's tools, demo and tests need it.

Python workers must import this package, so ``PYSPARK_PYTHON`` and ``PYTHONPATH`` point at this
environment and checkout (without them workers fail with a misleading "Python worker failed to connect
back"); the UI and progress bars are off; timestamps are shown in UTC, like Hudi's instant times.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = str(Path(__file__).resolve().parents[1])


def worker_environment() -> None:
    """Make Spark's Python workers use this interpreter and find this checkout."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if REPO not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [REPO, *paths] if p)


def local_spark(app_name: str):
    """``local[2]`` session with ``hudi_streaming`` registered (reused when one is already running)."""
    worker_environment()
    from pyspark.sql import SparkSession

    from .source import HudiStreamingDataSource

    spark = (SparkSession.builder.master("local[2]").appName(app_name)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(HudiStreamingDataSource)
    return spark
