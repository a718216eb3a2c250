"""Hudi log files: block framing, block contents (Avro, parquet, HFile data; delete; command), both directions."""
