"""Carry-over removal (Spark's ``deduplicationMode=dropCarryovers``): an update that changed no delivered value is
no change. Hudi writers often rewrite records unchanged (a whole batch upserted again); each such record reached
the sink as an update.

The table: 60 keys inserted, then three upserts of 30 keys each, of which 10 carry exactly their current values.
"""
from __future__ import annotations

import pyarrow as pa
import pytest
from support.stream_sim import make_reader, run_batches

from hudi_streaming import OptionError, read_changes
from hudi_streaming.streaming.options import parse_options
from hudi_streaming.writer import create_table

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("amount", pa.int64()), ("note", pa.string())])


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("carry") / "t"
    writer = create_table(str(path), "carry", SCHEMA, record_key="id", ordering_field="ts", version=9)
    current = {f"k{i:02d}": (1, i, "n") for i in range(60)}
    writer.upsert(_rows(current))
    for step in range(3):
        keys = [f"k{(step * 20 + i) % 60:02d}" for i in range(30)]
        changed = {k: (current[k][0] + 1, current[k][1] + 100, current[k][2]) for k in keys[:20]}
        same = {k: current[k] for k in keys[20:]}  # rewritten with the values they hold: carry-overs
        writer.upsert(_rows({**changed, **same}))
        current.update(changed)
    writer.upsert(_rows({"k59": (current["k59"][0], current["k59"][1], "only the note changed")}))
    return str(path)


def _rows(values: dict) -> pa.Table:
    return pa.table({"id": list(values), "ts": [v[0] for v in values.values()],
                     "amount": [v[1] for v in values.values()], "note": [v[2] for v in values.values()]},
                    schema=SCHEMA)


def _first(table: str) -> str:
    from hudi_streaming.hoodie.table import HudiTable
    return HudiTable(table).timeline.completed_writes()[0].completion_time


def _kinds(t: pa.Table) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in t["_change_type"].to_pylist():
        out[k] = out.get(k, 0) + 1
    return out


def test_carryovers_are_left_out_in_both_modes(table):
    start = _first(table)
    kept = read_changes(table, start, None, changelog=True)
    dropped = read_changes(table, start, None, changelog=True, drop_carryovers=True)
    assert _kinds(kept) == {"update_preimage": 91, "update_postimage": 91}
    assert _kinds(dropped) == {"update_preimage": 61, "update_postimage": 61}  # 30 unchanged rewrites left out
    post = dropped.filter(pa.compute.equal(dropped["_change_type"], "update_postimage"))
    pre = dropped.filter(pa.compute.equal(dropped["_change_type"], "update_preimage"))
    for a, b in zip(sorted(pre.select(["id", "_commit_version", "ts", "amount", "note"]).to_pylist(), key=repr),
                    sorted(post.select(["id", "_commit_version", "ts", "amount", "note"]).to_pylist(), key=repr)):
        assert (a["ts"], a["amount"], a["note"]) != (b["ts"], b["amount"], b["note"])
    upsert = read_changes(table, start, None, drop_carryovers=True)
    assert _kinds(read_changes(table, start, None)) == {"update_postimage": 60} and _kinds(upsert) == {
        "update_postimage": 60}  # one round: a key rewritten unchanged after a real change keeps the change
    from hudi_streaming.hoodie.table import HudiTable
    second, third = (e.completion_time for e in HudiTable(table).timeline.completed_writes()[1:3])
    one_write = read_changes(table, second, third, drop_carryovers=True)  # upsert mode, one write: 30 rewritten
    assert _kinds(one_write) == {"update_postimage": 20}  # ... of which 10 unchanged
    ignoring = read_changes(table, start, None, changelog=True, drop_carryovers=True,
                            carryover_ignore_columns=["note"])
    assert _kinds(ignoring) == {"update_preimage": 60, "update_postimage": 60}  # k59's note-only update too


def test_a_stream_restarted_inside_splits_drops_the_same_records(table, tmp_path):
    """Offsets count the rows left after carry-overs are dropped: a stream stopped after every 7 rows and
    restarted from its state delivers exactly the rows read_changes returns."""
    options = {"startingInstant": _first(table), "readMode": "changelog", "deduplicationMode": "dropCarryovers",
               "maxRowsPerTrigger": "7"}
    state, start, got = str(tmp_path / "state"), None, []
    from pyspark.sql.streaming.datasource import ReadMaxRows
    for _ in range(100):  # a new reader (a restarted query) for every batch
        reader = make_reader(table, state, **options)
        batches = run_batches(reader, start=start, limit=ReadMaxRows(7), max_batches=1)
        if not batches:
            break
        got += [r for b in batches if b is not None for r in b.to_pylist()]
        start = reader._last_offset
    want = read_changes(table, None, None, changelog=True, drop_carryovers=True).to_pylist()  # the first write too
    key = ("id", "_change_type", "_commit_version")
    assert sorted(tuple(r[k] for k in key) for r in got) == sorted(tuple(r[k] for k in key) for r in want)
    assert len(got) == 60 + 122


def test_bad_deduplication_options_are_refused_at_definition(table):
    with pytest.raises(OptionError, match="netChanges is not offered"):
        parse_options({"path": table, "deduplicationMode": "netChanges"})
    from hudi_streaming.streaming.schema import source_schema
    with pytest.raises(OptionError, match="carryoverIgnoreColumns: .* has no column nope"):
        source_schema(parse_options({"path": table, "deduplicationMode": "dropCarryovers",
                                     "carryoverIgnoreColumns": "nope"}))
