"""The Apache Hudi table format in Python: read (and write) Hudi tables exactly as Hudi does, without Spark.

``read_table`` is the batch API; :class:`~hudi_streaming.hoodie.table.HudiTable` and the timeline /
file-system view objects behind it serve the streaming monitor.
"""
from .read import read_table
from .table import HudiTable

__all__ = ["read_table", "HudiTable"]
