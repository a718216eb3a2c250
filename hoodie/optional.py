"""polars, the optional accelerator (Avro decoding in :mod:`.logfile.avro_arrow`, key hashing in :mod:`.merge`),
imported by the first call that uses it.

Why not at import: polars costs about 0.35 s and 60 MiB in each process that imports it, and most of the Python
workers PySpark starts for this source (registration, schema, planning, the driver's calls on a table without
log files) never decode a log block or hash a key. A process that forks after importing it (PySpark's worker
daemon) would also hand its children a polars whose thread pool did not survive the fork.
"""
from __future__ import annotations

import functools
import importlib.util
from types import ModuleType


@functools.cache
def has_polars() -> bool:
    """Whether polars is installed, without importing it."""
    return importlib.util.find_spec("polars") is not None


@functools.cache
def optional_polars() -> ModuleType | None:
    """The polars module, imported now if it was not; None when it is not installed."""
    if not has_polars():
        return None
    import polars

    return polars
