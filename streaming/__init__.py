"""The Spark Structured Streaming source for Apache Hudi tables (and its batch reader): PySpark's Python Data
Source API over the planner and the checkpoint state. The command-line tool is in :mod:`hudi_streaming.cli`.
"""
