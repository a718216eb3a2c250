"""The tools at the project's edge: the ``hudi-streaming`` command line, its demo, and the local Spark session
they and the tests start. They import every layer below them; no layer imports them.

Nothing heavy is imported here: ``hudi-streaming inspect`` must start without PySpark (and a JVM), and a Spark
driver that imports only ``local_spark`` (the demo's, the tests' and the benchmarks' jobs) must not load the
format layer with Arrow (~60 MiB and a second) that the command line imports: ``main`` loads ``commands`` when
first asked for.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .commands import main

__all__ = ["main"]


def __getattr__(name: str) -> object:
    if name == "main":
        from .commands import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
