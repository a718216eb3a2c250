"""A local Spark session set up the way this project's tools, demo and tests need it.

Spark's Python workers must run this interpreter (``PYSPARK_PYTHON``), where the package is installed:
without it they start whatever ``python3`` is first on ``PATH`` and fail with a misleading "Python worker
failed to connect back". The source needs no ``register`` call (``pyspark_hudi_streaming``). The UI and
progress bars are off, catalog tables go to a temporary warehouse (not the working folder); timestamps are
shown in UTC, like Hudi's instant times. The Python workers start from this package's worker daemon
(:data:`RECOMMENDED_CONF`, README "Recommended Spark configuration").
"""
from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # PySpark (and its JVM) start only when a session is asked for
    from pyspark.sql import SparkSession

#: the Spark configuration README recommends for this source: Python workers forked from a daemon that has
#: imported Arrow, PySpark's worker modules and this package once (``hudi_streaming.streaming.daemon``), and
#: reused across tasks (Spark's default, stated so that a cluster's defaults cannot turn it off)
RECOMMENDED_CONF = {"spark.python.daemon.module": "hudi_streaming.streaming.daemon",
                    "spark.python.worker.reuse": "true"}


def local_spark(app_name: str, master: str = "local[2]", conf: Mapping[str, str] = RECOMMENDED_CONF) -> SparkSession:
    """A ``master`` session (reused when one is already running); ``local[2,4]`` tries a failed task up to 4
    times (plain ``local[n]`` never retries one: a crashed Python worker fails the query). ``conf``: settings
    over this module's (``{}``: Spark's own worker daemon)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="hudi-streaming-warehouse-")))
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
