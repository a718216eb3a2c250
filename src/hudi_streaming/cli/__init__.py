"""The tools at the project's edge: the ``hudi-streaming`` command line, its demo, and the local Spark session
they and the tests start. They import every layer below them; no layer imports them.

Nothing heavy is imported here: ``hudi-streaming inspect`` must start without PySpark (and a JVM).
"""
from .commands import main

__all__ = ["main"]
