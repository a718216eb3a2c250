"""readMode=changelog: every committed change once, with pre-images, against a model of the operations.

The table is written by the project's writer one operation per instant while the stream follows it (driven
like Spark drives it, no JVM). The expected change feed comes from a dict model of the operations alone, not
from any reader: an upsert of a key the table holds is an ``update_preimage`` (the values before) plus an
``update_postimage``, of a new key an ``insert``; a delete of a held key is a ``delete`` with its last values.
The scenario puts the earlier version of a key in places a base file alone does not show: an update of an
update (both in logs), a re-insert after a delete, a compaction (skipped by the stream) in between.
"""
from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from support.stream_sim import make_reader, resume, run_batches

from hudi_streaming.writer import create_table

SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("v", pa.string())])

#: (operation, [(key, value)]) per instant; "compact" writes no change
SCENARIO = [
    ("upsert", [("k0", "a"), ("k1", "a"), ("k2", "a"), ("k3", "a"), ("k4", "a")]),
    ("upsert", [("k1", "b"), ("k2", "b")]),
    ("upsert", [("k1", "c"), ("k5", "c")]),
    ("delete", ["k2"]),
    ("upsert", [("k2", "e"), ("k3", "e")]),  # k2 comes back after its delete
    ("compact", []),
    ("upsert", [("k0", "g"), ("k1", "g"), ("k2", "g")]),
    ("delete", ["k1", "k9"]),  # k9 never existed: no change
    ("upsert", [("k3", "i")]),
]


def _expected(ops) -> list[tuple]:
    """(step, key, change type, value) of every change the operations make, from a dict model."""
    state: dict[str, str] = {}
    out = []
    for step, (op, items) in enumerate(ops):
        if op == "upsert":
            for key, value in items:
                if key in state:
                    out += [(step, key, "update_preimage", state[key]), (step, key, "update_postimage", value)]
                else:
                    out.append((step, key, "insert", value))
                state[key] = value
        elif op == "delete":
            out += [(step, key, "delete", state.pop(key)) for key in items if key in state]
    return out


@pytest.mark.parametrize("version,table_type", [(9, "MERGE_ON_READ"), (6, "MERGE_ON_READ"), (9, "COPY_ON_WRITE"),
                                                (6, "COPY_ON_WRITE")])
def test_changelog_delivers_each_change_once_with_pre_images(version, table_type, tmp_path):
    """On copy-on-write tables every update rewrites the base file: the earlier state is the prior slice."""
    table = str(tmp_path / "table")
    w = create_table(table, "changes", SCHEMA, record_key="id", ordering_field="ts", table_type=table_type,
                     version=version)
    reader = None
    delivered, instant_step = [], {}
    for step, (op, items) in enumerate(SCENARIO):
        if op == "upsert":
            instant = w.upsert(pa.table({"id": [k for k, _ in items], "ts": [step] * len(items),
                                         "v": [v for _, v in items]}, schema=SCHEMA))
        elif op == "delete":
            instant = w.delete(pa.table({"id": items}))
        elif table_type == "COPY_ON_WRITE":
            continue  # nothing to compact
        else:
            instant = w.compact()
            assert instant is not None, "the scenario needs a real compaction"
        instant_step[instant] = step
        if reader is None:  # start on the first instant's snapshot, then follow
            reader = make_reader(table, str(tmp_path / "state"), readMode="changelog", emitDeletes="true")
            batches = run_batches(reader)
        else:
            batches = resume(reader)
        delivered += [r for b in batches if b is not None for r in b.to_pylist()]
    got = [(instant_step[r["_hoodie_commit_time"]], r["id"], r["_change_type"], r["v"]) for r in delivered]
    assert Counter(got) == Counter(_expected(SCENARIO))
    assert len(got) == len(set(got))


def test_upsert_mode_marks_inserts_and_updates_by_the_earlier_state(tmp_path):
    """Upsert mode carries no pre-images, but an update is still told from an insert across log-only history."""
    table = str(tmp_path / "table")
    w = create_table(table, "kinds", SCHEMA, record_key="id", ordering_field="ts", table_type="MERGE_ON_READ",
                     version=9)
    w.upsert(pa.table({"id": ["k0", "k1"], "ts": [0, 0], "v": ["a", "a"]}, schema=SCHEMA))
    reader = make_reader(table, str(tmp_path / "state"), emitDeletes="true")
    first = run_batches(reader)
    w.delete(pa.table({"id": ["k1"]}))
    w.upsert(pa.table({"id": ["k1"], "ts": [2], "v": ["c"]}, schema=SCHEMA))  # re-insert, in a log
    w.upsert(pa.table({"id": ["k1", "k0"], "ts": [3, 3], "v": ["d", "d"]}, schema=SCHEMA))
    later = resume(reader, max_batches=1)  # one batch: every instant so far merged per key
    kinds = {r["id"]: r["_change_type"] for b in first for r in b.to_pylist()}
    assert kinds == {"k0": "insert", "k1": "insert"}
    got = sorted((r["id"], r["_change_type"], r["v"]) for b in later if b is not None for r in b.to_pylist())
    # within one batch k1 is deleted and written again: its newest version, as an update of the earlier state
    assert got == [("k0", "update_postimage", "d"), ("k1", "update_postimage", "d")]


def test_start_at_an_archived_instant_reads_the_archived_timeline(tmp_path):
    """startingInstant older than the active timeline: the archived instants' changes come first, none lost."""
    from hudi_streaming.hoodie import HudiTable
    from hudi_streaming.writer.loadgen import LoadGenerator

    table = str(tmp_path / "table")
    gen = LoadGenerator(table, keys=50, partitions=2, seed=3, batch=10, late_share=0.0, delete_every=0)
    steps = [gen.step() for _ in range(8)]
    gen.writer.archive(keep_active=3)
    assert HudiTable(table).timeline.is_archived(steps[1].instant), "the scenario needs archived instants"
    reader = make_reader(table, str(tmp_path / "state"), readMode="changelog", startingInstant=steps[1].instant)
    got = Counter(r["_hoodie_commit_time"] for b in run_batches(reader) if b is not None for r in b.to_pylist()
                  if r["_change_type"] != "update_preimage")
    assert got == Counter({s.instant: s.data.num_rows for s in steps[1:]})


@pytest.mark.parametrize("emit_deletes", [False, True])
def test_prior_slice_cleaned_before_the_read(emit_deletes, tmp_path, caplog):
    """Copy-on-write: when the cleaner removed the prior slice between planning and reading, upsert mode labels
    the rows inserts (with a warning); delivering deletes or pre-images needs it, so that is data loss."""
    from hudi_streaming.errors import DataLossError

    table = str(tmp_path / "table")
    w = create_table(table, "prior", SCHEMA, record_key="id", ordering_field="ts", table_type="COPY_ON_WRITE",
                     version=9)
    w.upsert(pa.table({"id": ["k0", "k1"], "ts": [0, 0], "v": ["a", "a"]}, schema=SCHEMA))
    reader = make_reader(table, str(tmp_path / "state"), emitDeletes=str(emit_deletes).lower())
    run_batches(reader)
    start = reader._last_offset
    w.upsert(pa.table({"id": ["k1"], "ts": [1], "v": ["b"]}, schema=SCHEMA))
    reader.driver._last_poll = 0.0
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    parts = reader.partitions(start, end)
    prior = parts[0].ranges[0].split.prior
    assert prior is not None and prior.base_file is not None
    (tmp_path / "table" / prior.base_file.path).unlink()
    if emit_deletes:
        with pytest.raises(DataLossError, match="prior slice"):
            [b for p in parts for b in reader.read(p)]
        return
    rows = [r for p in parts for b in reader.read(p) for r in b.to_pylist()]
    assert [(r["id"], r["_change_type"]) for r in rows] == [("k1", "insert")]
    assert "delivered as inserts" in caplog.text


def _write_scenario(table: str, version: int = 9) -> dict[str, int]:
    """The whole scenario written at once; instant → step."""
    w = create_table(table, "changes", SCHEMA, record_key="id", ordering_field="ts", table_type="MERGE_ON_READ",
                     version=version)
    instant_step = {}
    for step, (op, items) in enumerate(SCENARIO):
        if op == "upsert":
            instant = w.upsert(pa.table({"id": [k for k, _ in items], "ts": [step] * len(items),
                                         "v": [v for _, v in items]}, schema=SCHEMA))
        elif op == "delete":
            instant = w.delete(pa.table({"id": items}))
        else:
            instant = w.compact()
        instant_step[instant] = step
    return instant_step


@pytest.mark.parametrize("limit,most_batches", [({}, 1), ({"maxInstantsPerTrigger": "3"}, 3)])
def test_a_changelog_stream_behind_catches_up_in_few_batches(limit, most_batches, tmp_path):
    """A stream behind by many instants (a restart, a slow sink) plans one round per instant but admits many
    rounds per batch, so it catches up in as few batches as its limits allow, not one batch per instant."""
    table = str(tmp_path / "table")
    instant_step = _write_scenario(table)
    first = min(instant_step)
    reader = make_reader(table, str(tmp_path / "state"), readMode="changelog", emitDeletes="true",
                         startingInstant=first, **limit)
    batches = [b for b in run_batches(reader) if b is not None]
    assert len(batches) <= most_batches
    got = [(instant_step[r["_hoodie_commit_time"]], r["id"], r["_change_type"], r["v"])
           for b in batches for r in b.to_pylist()]
    assert Counter(got) == Counter(_expected(SCENARIO))
    if "maxInstantsPerTrigger" in limit:
        assert all(len(set(b.column("_hoodie_commit_time").to_pylist())) <= 3 for b in batches)
