"""Makes ``format("hudi_streaming")`` work without ``spark.dataSource.register``.

PySpark 4 imports every top-level module named ``pyspark_*`` it finds on the Python path and registers the
``DefaultSource`` it defines (``pyspark/sql/worker/lookup_data_sources.py``), so installing the distribution
is enough for ``spark-submit`` jobs, notebooks and SQL (``CREATE TABLE ... USING hudi_streaming``).

PySpark imports this module in the data-source lookup worker of every session that resolves a source by name,
Hudi or not, for the ``DefaultSource`` name alone: it imports only the data source class (``data_source``,
which imports PySpark's data source API and nothing of Arrow, polars or the store clients; its methods import
what they use).

When the package cannot be imported in the Python that Spark runs (a dependency missing there, say), Spark
would only say ``DATA_SOURCE_NOT_FOUND``; a stand-in source of the same name is registered instead, and using it
says which Python failed to import what.
"""
import sys
from typing import NoReturn

try:
    from hudi_streaming.streaming.data_source import HudiStreamingDataSource as DefaultSource
except ImportError as e:
    from pyspark.sql.datasource import DataSource

    _REASON = f"{type(e).__name__}: {e}"

    class DefaultSource(DataSource):  # type: ignore[no-redef]  # the stand-in when the real one cannot load
        """Reports why ``hudi_streaming`` cannot be imported, where Spark looks it up."""

        @classmethod
        def name(cls) -> str:
            return "hudi_streaming"

        def schema(self) -> NoReturn:
            raise ImportError(f"hudi_streaming cannot be imported by {sys.executable} ({_REASON}); install the "
                              "package and its dependencies into the Python that Spark runs (PYSPARK_PYTHON and "
                              "PYSPARK_DRIVER_PYTHON)")

__all__ = ["DefaultSource"]
