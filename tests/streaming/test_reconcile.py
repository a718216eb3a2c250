"""``onRewind=reconcile`` (issue 26): after a rollback of delivered writes, the stream delivers what the rollback
changed, and an upsert sink that applies every batch ends equal to the table; without the keys it needs, it says
so in one line. The project's writer rolls back here; Hudi-written restores are in the oracle suite
(``tests/oracle/test_hudi_oracle.py``)."""
from __future__ import annotations

import pyarrow as pa
import pytest
from support.stream_sim import make_reader, resume, run_batches

from hudi_streaming import read_table
from hudi_streaming.errors import DataLossError, OptionError
from hudi_streaming.state.rewind_keys import FOLDER, KeyLedger
from hudi_streaming.streaming.options import parse_options
from hudi_streaming.writer import create_table, services

SCHEMA = pa.schema([("key", pa.string()), ("ts", pa.int64())])
WRITE_ACTION = {"MERGE_ON_READ": "deltacommit", "COPY_ON_WRITE": "commit"}


def _rows(keys: range, ts: int) -> pa.Table:
    return pa.table({"key": [f"k{k}" for k in keys], "ts": [ts] * len(keys)}, schema=SCHEMA)


def _apply(sink: dict[str, int], batches: list[pa.Table | None]) -> list[dict]:
    """An upsert sink keyed by the record key; the rows applied, in order."""
    applied = []
    for batch in batches:
        for row in batch.to_pylist() if batch is not None else []:
            if row["_change_type"] == "delete":
                sink.pop(row["key"], None)
            else:
                sink[row["key"]] = row["ts"]
            applied.append(row)
    return applied


def _table(path: str) -> dict[str, int]:
    rows = read_table(path, columns=["key", "ts"]).to_pylist()
    return {r["key"]: r["ts"] for r in rows}


@pytest.mark.parametrize("version,table_type", [(9, "MERGE_ON_READ"), (9, "COPY_ON_WRITE"), (6, "MERGE_ON_READ"),
                                                (6, "COPY_ON_WRITE")])
def test_a_reconciled_rollback_leaves_an_upsert_sink_equal_to_the_table(tmp_path, version, table_type):
    table, state = str(tmp_path / "table"), str(tmp_path / "state")
    writer = create_table(table, "t", SCHEMA, record_key="key", ordering_field="ts", table_type=table_type,
                          version=version)
    writer.upsert(_rows(range(10), 1))
    reader = make_reader(table, state, emitDeletes="true", onRewind="reconcile")
    sink: dict[str, int] = {}
    _apply(sink, run_batches(reader))
    undone = writer.upsert(_rows(range(5, 15), 2))  # updates k5..k9, inserts k10..k14
    _apply(sink, resume(reader))
    assert sink == {**{f"k{k}": 1 for k in range(5)}, **{f"k{k}": 2 for k in range(5, 15)}}

    rollback = services.rollback(writer, undone, WRITE_ACTION[table_type])
    applied = _apply(sink, resume(reader))
    assert sink == _table(table) == {f"k{k}": 1 for k in range(10)}
    deletes = [r for r in applied if r["_change_type"] == "delete"]
    assert sorted(r["key"] for r in deletes) == [f"k{k}" for k in range(10, 15)]
    assert {r["_hoodie_commit_time"] for r in deletes} == {rollback}
    assert {r["key"] for r in applied if r["_change_type"] != "delete"} >= {f"k{k}" for k in range(5, 10)}

    # the stream goes on from the rollback: later writes, and a restart from the state, deliver nothing twice
    writer.upsert(_rows(range(12, 16), 3))
    _apply(sink, resume(reader))
    assert sink == _table(table)
    again = make_reader(table, state, emitDeletes="true", onRewind="reconcile")
    assert run_batches(again, start=reader._last_offset) == []


def test_keys_delivered_before_recording_began_are_refused_in_one_line(tmp_path):
    table, state = str(tmp_path / "table"), str(tmp_path / "state")
    writer = create_table(table, "t", SCHEMA, record_key="key", ordering_field="ts", table_type="COPY_ON_WRITE",
                          version=9)
    writer.upsert(_rows(range(10), 1))
    undone = writer.upsert(_rows(range(5, 15), 2))
    reader = make_reader(table, state, emitDeletes="true")  # not recording
    run_batches(reader)
    rollback = services.rollback(writer, undone, "commit")
    again = make_reader(table, state, emitDeletes="true", onRewind="reconcile")
    again.driver._last_poll = 0.0
    with pytest.raises(DataLossError) as err:
        run_batches(again, start=reader._last_offset)
    message = str(err.value)
    assert f"rollback {rollback} undid instant(s) {undone}" in message
    assert f"onRewind=reconcile cannot say what instant(s) {undone} delivered" in message
    assert "\n" not in message


def test_key_files_leave_with_the_instants_a_rewind_can_no_longer_undo(tmp_path):
    state = str(tmp_path / "state")
    ledger = KeyLedger(state)
    assert ledger.begin("") == "" and ledger.begin("20260101000000000") == ""  # the first start stays
    rows = pa.table({"_hoodie_commit_time": ["20260101000000000", "20260102000000000"],
                     "_hoodie_partition_path": ["", ""], "_hoodie_record_key": ["a", "b"], "_file_id": ["f", "f"]})
    ledger.write("20260102000000000-20260101000000000-abc.parquet", rows)
    ledger.write("20260103000000000-20260103000000000-def.parquet", rows.slice(0, 1))
    assert ledger.undone(["20260102000000000"]).column("_hoodie_record_key").to_pylist() == ["b"]
    assert ledger.undone(["20260105000000000"]) is None
    assert ledger.prune("20260103000000000") == 1
    assert sorted(p.name for p in (tmp_path / "state" / FOLDER).iterdir()) == [
        "20260103000000000-20260103000000000-def.parquet", "since"]


def test_reconcile_needs_emitdeletes():
    with pytest.raises(OptionError, match="onRewind=reconcile delivers deletes"):
        parse_options({"path": "/t", "stateLocation": "/s", "onRewind": "reconcile"})
