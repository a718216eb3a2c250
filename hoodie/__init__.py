"""The Apache Hudi table format in Python: read Hudi tables exactly as Hudi does, without Spark.

:class:`~hudi_streaming.hoodie.table.HudiTable` and the timeline / file-system view objects behind it serve the
planner and the public reads (``hudi_streaming.read``: ``read_table``, ``read_changes``).
"""
from .table import HudiTable

__all__ = ["HudiTable"]
