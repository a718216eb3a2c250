"""hudi-streaming: a Spark Structured Streaming source for Apache Hudi tables, exactly once across restarts.

The one import name of the distribution. What users need is here::

    from hudi_streaming import read_table, read_changes, HudiTable, HudiStreamingDataSource, HudiStreamingError

The layers are subpackages: ``hoodie`` (the table format, no Spark), ``monitor`` (the driver's planner),
``state`` (the stream's checkpoint) and ``streaming`` (the Spark data source); ``read`` holds the public batch
reads, and the tools sit at the edges (``writer``, the project's own Hudi writer; ``cli``, the command line,
the demo and the local Spark session). Spark
finds the data source without a ``register`` call through the module ``pyspark_hudi_streaming``.

Only the error types are imported with the package; the other public names are imported on first use (module
``__getattr__``). ``HudiStreamingDataSource`` needs PySpark, while the format layer and the command-line tool
do not (``hudi-streaming inspect`` starts without a JVM). And PySpark imports this package in Python workers
that read nothing — the data-source lookup of every session, the ``schema()`` call — where the format layer's
Arrow readers and store clients would cost each worker a second and 100 MiB.
"""
from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:  # the names __getattr__ imports, as type checkers see them
    from .hoodie.table import HudiTable
    from .read import read_changes, read_table
    from .streaming.data_source import HudiStreamingDataSource

try:
    __version__ = version("hudi-streaming")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["read_table", "read_changes", "HudiTable", "HudiStreamingDataSource", "HudiStreamingError",
           "CorruptFileError", "DataLossError", "DeleteError", "InvalidTableContentError", "NotFoundError",
           "OptionError", "SchemaChangeError", "StateError", "StoreError", "UnsupportedTableError",
           "__version__"]


#: the public names imported on first use, and the module each comes from
_LAZY = {"read_table": "read", "HudiTable": "hoodie.table", "read_changes": "read",
         "HudiStreamingDataSource": "streaming.data_source"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'hudi_streaming' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value  # found directly from now on
    return value
