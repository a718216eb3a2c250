"""The Apache Hudi table format in Python: read Hudi tables exactly as Hudi does, without Spark.

:class:`~hudi_streaming.hoodie.table.HudiTable` and the timeline / file-system view objects behind it serve the
planner and the public reads (``hudi_streaming.read``: ``read_table``, ``read_changes``).

``HudiTable`` is imported on first use (module ``__getattr__``), not with the package: importing any module of
this layer imports the package first, and the stream's options (``hoodie.zones``, ``hoodie.deletes``) are
imported in PySpark workers that read no table (the planner's), where the table's modules, with Arrow's compute
functions, fsspec and fastavro, would cost each of them its own copy.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .table import HudiTable

__all__ = ["HudiTable"]


def __getattr__(name: str) -> Any:
    if name != "HudiTable":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .table import HudiTable

    return HudiTable
