"""Makes ``format("hudi_streaming")`` work without ``spark.dataSource.register``.

PySpark 4 imports every top-level module named ``pyspark_*`` it finds on the Python path and registers the
``DefaultSource`` it defines (``pyspark/sql/worker/lookup_data_sources.py``), so installing the distribution
is enough for ``spark-submit`` jobs, notebooks and SQL (``CREATE TABLE ... USING hudi_streaming``).
"""
from hudi_streaming.streaming.source import HudiStreamingDataSource as DefaultSource

__all__ = ["DefaultSource"]
