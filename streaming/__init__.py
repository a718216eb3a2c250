"""Spark Structured Streaming source for Apache Hudi tables, and the ``hudi-streaming`` command-line tool.

Nothing is imported here on purpose: ``streaming.cli`` must start without importing PySpark (and a JVM), so
that ``hudi-streaming inspect`` works on machines that only have the format layer installed.
"""
