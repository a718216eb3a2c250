"""Small tables written by the project's writer that more than one test module reads."""
from __future__ import annotations

import datetime

import pyarrow as pa

from hudi_streaming.writer import create_table


def write_nulls_table(path: str) -> str:
    """A table whose partitions include Hudi's default partition, for null and empty values: keys k 1-5 in
    y/m = 2024/01, 2024/'' , 2025/null (d null too), 2025/02, 2026/02."""
    schema = pa.schema([("k", pa.int64()), ("y", pa.int32()), ("m", pa.string()), ("d", pa.date32())])
    w = create_table(path, "nulls", schema, record_key="k", partition_fields=["y", "m"], hive_style=False,
                     version=9, table_type="COPY_ON_WRITE")
    day = datetime.date(2024, 1, 1)
    w.upsert(pa.table({"k": [1, 2, 3, 4, 5], "y": [2024, 2024, 2025, 2025, 2026], "m": ["01", "", None, "02", "02"],
                       "d": [day, day, None, day, day]}, schema=schema))
    return path
