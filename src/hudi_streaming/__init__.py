"""hudi-streaming: a Spark Structured Streaming source for Apache Hudi tables, exactly once across restarts.

The one import name of the distribution. What users need is here::

    from hudi_streaming import read_table, read_changes, HudiTable, HudiStreamingDataSource, HudiStreamingError

The layers are subpackages: ``hoodie`` (the table format, no Spark), ``monitor`` (the driver's planner),
``state`` (the stream's checkpoint) and ``streaming`` (the Spark data source, the CLI and the demo). Spark
finds the data source without a ``register`` call through the module ``pyspark_hudi_streaming``.

``HudiStreamingDataSource`` is imported on first use: it needs PySpark, while the format layer and the
command-line tool do not (``hudi-streaming inspect`` starts without a JVM).
"""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .errors import (
    CorruptFileError,
    DataLossError,
    DeleteError,
    HudiStreamingError,
    InvalidTableContentError,
    NotFoundError,
    OptionError,
    SchemaChangeError,
    StateError,
    StoreError,
    UnsupportedTableError,
)
from .hoodie import HudiTable, read_table
from .monitor.feed import read_changes

try:
    __version__ = version("hudi-streaming")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["read_table", "read_changes", "HudiTable", "HudiStreamingDataSource", "HudiStreamingError",
           "CorruptFileError", "DataLossError", "DeleteError", "InvalidTableContentError", "NotFoundError",
           "OptionError", "SchemaChangeError", "StateError", "StoreError", "UnsupportedTableError",
           "__version__"]


def __getattr__(name: str):
    if name == "HudiStreamingDataSource":
        from .streaming.source import HudiStreamingDataSource

        return HudiStreamingDataSource
    raise AttributeError(f"module 'hudi_streaming' has no attribute {name!r}")
