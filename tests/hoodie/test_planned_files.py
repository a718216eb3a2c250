"""A planned file gone or shorter than planned is data loss naming it, found when its read fails (the store is not
asked about every file before the read)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from hudi_streaming.errors import DataLossError
from hudi_streaming.streaming.batch_read import plan_batch_read
from hudi_streaming.streaming.options import parse_options
from hudi_streaming.streaming.schema import source_schema
from hudi_streaming.streaming.source import FileGroupPartition, _read_task
from hudi_streaming.writer import create_table

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64())])


@pytest.mark.parametrize("damage", ["removed", "truncated"])
@pytest.mark.parametrize("kind", ["base", "log"])
def test_a_planned_file_gone_or_short_is_data_loss_naming_it(kind, damage, tmp_path):
    table = tmp_path / "t"
    w = create_table(str(table), "planned", SCHEMA, record_key="id", ordering_field="ts",
                     table_type="MERGE_ON_READ", version=9)
    w.insert(pa.table({"id": [f"k{i}" for i in range(50)], "ts": [1] * 50}, schema=SCHEMA))
    w.upsert(pa.table({"id": ["k1", "k2"], "ts": [2, 2]}, schema=SCHEMA))
    opts = parse_options({"path": str(table)})
    output = source_schema(opts)
    (task,) = plan_batch_read(opts, output, FileGroupPartition)
    fs = task.ranges[0].split.slice
    assert fs.base_file is not None and fs.log_files
    path = fs.base_file.path if kind == "base" else fs.log_files[0].path
    data = (table / path).read_bytes()
    if damage == "removed":
        (table / path).unlink()
        expected = "was removed before it was read"
    else:
        (table / path).write_bytes(data[: len(data) // 2])
        expected = f"shrank from {len(data)} to {len(data) // 2} bytes"
    with pytest.raises(DataLossError, match=f"{path} of file group .*{expected}"):
        list(_read_task(opts, task, output))
