"""Users' existing checkpoints: the state folders earlier versions wrote (``tests/data/state``) read back field by
field, are written again byte for byte, and a state file or planner class that no longer fits the checkpoint's
schema is refused instead of being read with another meaning."""
from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import MISSING, dataclass, field, fields, make_dataclass, replace
from pathlib import Path

import pytest
from conftest import FIXTURES

from hudi_streaming.errors import StateError
from hudi_streaming.hoodie.fs_view import BaseFile, FileSlice, LogFile
from hudi_streaming.hoodie.split import Split
from hudi_streaming.monitor import Cursor
from hudi_streaming.state import PlannedSplit, StateStore, StreamState, records
from hudi_streaming.state import store as store_module
from hudi_streaming.state.row_rules import RowRules
from hudi_streaming.state.store import _canonical

STATE = FIXTURES / "state"
URL, NAME = "s3://example-bucket/tables/orders", "orders"
T0, T1, T2, T3, T4 = "20251101093000123", "20251101093512345", "20251101094020456", "20251101094533567", \
    "20251101095044678"
P = "region=eu/day=2025-11-01"
FID = ["3f6a9c1e-7b2d-4e8a-9c01-5d2e8f7a6b41-0", "a1b2c3d4-0000-4111-8222-333344445555-0",
       "0d9e8f7a-6b5c-4d3e-8f21-0a9b8c7d6e5f-0", "77aa88bb-99cc-4dde-8eef-001122334455-0",
       "c0ffee00-1234-4567-89ab-cdef01234567-0"]


def _slice(partition: str, i: int, instant: str, base_size: int | None, *logs: tuple[int, str, int]) -> FileSlice:
    """File group ``FID[i]``'s slice at ``instant``: its base file (write token 0-12-34) unless ``base_size`` is
    None, and its log files by (version, write token, size)."""
    prefix = f"{partition}/" if partition else ""
    base = None if base_size is None else BaseFile(f"{prefix}{FID[i]}_0-12-34_{instant}.parquet", FID[i], "0-12-34",
                                                   instant, base_size)
    return FileSlice(partition, FID[i], instant, base,
                     [LogFile(f"{prefix}.{FID[i]}_{instant}.log.{v}_{token}", FID[i], instant, v, token, size)
                      for v, token, size in logs])


#: the five splits the folders were written with (see tests/data/state/README.md); split 0 is committed
SPLITS = [
    Split(_slice(P, 0, T0, 435_112), max_instant=T0, instants=None, est_rows=1200, est_bytes=435_112),
    Split(_slice(P, 1, T0, 441_907, (1, "1-22-44", 9_876), (2, "1-22-44", 12_345)), max_instant=T2,
          instants=(T1, T2), est_rows=37, est_bytes=22_221),
    Split(_slice("", 2, T1, None, (1, "0-1-2", 4_242)), max_instant=T1, instants=(T1,), est_rows=5, est_bytes=4_242),
    Split(_slice(P, 3, T3, 450_001), max_instant=T3, instants=(T3,),
          prior=_slice(P, 3, T0, 449_500, (1, "1-22-44", 777)), prior_max_instant=T2, est_rows=812,
          est_bytes=450_001),
    Split(_slice(P, 4, T0, 430_000), max_instant=T4, instants=(), replaced_by=T4, est_rows=0, est_bytes=0),
]
PLANNED = [PlannedSplit(seq=i, round=0 if i < 3 else 1, instants_in_round=1 if i < 3 else 2, split=s)
           for i, s in enumerate(SPLITS)]


def _write_stream(store: StateStore) -> None:
    """The three saves the folders hold: round 0 planned, round 1 planned, split 0 committed."""
    st = StreamState(table_url=URL, table_name=NAME, cursor=Cursor(requested=T0, completion="20251101093001999"),
                     started=True, next_seq=3, next_round=1, splits=PLANNED[:3])
    store.save(st)
    st.cursor = Cursor(requested=T4, completion="20251101095045001")
    st.splits, st.next_seq, st.next_round = list(PLANNED), 5, 2
    store.save(st)
    st.splits, st.committed_seq = PLANNED[1:], 1
    store.save(st)


def _copy(fmt: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(STATE / fmt, tmp_path / fmt))


def _edit(folder: Path, name: str, change) -> None:
    """Apply ``change`` to the JSON of file ``name``, then sign the newest state file again (segment digests and
    its own), so only the content is wrong, not the checksums."""
    path = folder / name
    doc = json.loads(path.read_bytes())
    change(doc)
    path.write_text(json.dumps(doc))
    _sign_again(folder)


def _sign_again(folder: Path) -> None:
    """Sign the newest state file again, over its segments' bytes and its own body, as a writer would have."""
    state_path = sorted(folder.glob("state-*.json"))[-1]
    state = json.loads(state_path.read_bytes())
    for seg in state["state"].get("segments", []):
        seg["sha256"] = hashlib.sha256((folder / seg["name"]).read_bytes()).hexdigest()
    state["sha256"] = hashlib.sha256(_canonical(state["state"])).hexdigest()
    state_path.write_text(json.dumps(state))


#: what the format-3 folder holds beyond format 2's content (see tests/data/state/README.md)
FORMAT3_STREAM = "5e1f0c2a9b7d4e3f8a6c1b2d3e4f5a6b"
FORMAT3_KNOWN = {T0: "20251101093001999", T3: "20251101094534000", T4: "20251101095045001"}
#: the row rules of a query over the folders' stream
RULES = RowRules(read_mode="changelog", deletes="emit", merge_type="payload_combine",
                 deduplication_mode="dropCarryovers", carryover_ignore_columns=["updated_at"], columns=None)


@pytest.mark.parametrize("fmt", ["format1", "format2", "format3"])
def test_a_checkpoint_of_each_format_reads_back_every_field(fmt):
    state = StateStore(str(STATE / fmt)).load(URL, NAME)
    assert state is not None
    assert (state.table_url, state.table_name, state.started) == (URL, NAME, True)
    assert state.cursor == Cursor(requested=T4, completion="20251101095045001")
    assert (state.committed_seq, state.next_seq, state.next_round) == (1, 5, 2)
    assert [(p.seq, p.round, p.instants_in_round) for p in state.splits] == [(1, 0, 1), (2, 0, 1), (3, 1, 2),
                                                                            (4, 1, 2)]
    for got, want in zip(state.splits, SPLITS[1:], strict=True):
        assert got.split == want  # every field, nested ones included
    assert state.pending_from(3) == PLANNED[3:]
    if fmt == "format3":
        assert (state.stream_id, state.known, state.late_instants) == (FORMAT3_STREAM, FORMAT3_KNOWN, 1)
    assert state.rules is None  # no format before 4 recorded them


def test_todays_store_writes_format4_with_the_format2_content_and_the_streams_identity(tmp_path):
    """The same saves write format 4: format 2's fields and segments' entries unchanged (but for the writer token
    in the segments' names, and their digests: a segment is written a line per split), plus the stream identity,
    the known instants, the late-instant count (format 3) and the row rules (none: this state is written by a
    test, not by a query)."""
    _write_stream(StateStore(str(tmp_path)))
    names = sorted(p.name for p in tmp_path.iterdir())
    old = sorted(p.name for p in (STATE / "format2").iterdir())
    assert [n.rsplit("-", 1)[0] if n.startswith("splits-") else n for n in names] == \
        [n.removesuffix(".json") if n.startswith("splits-") else n for n in old]
    for new_name, old_name in zip(names, old):
        new_doc, old_doc = json.loads((tmp_path / new_name).read_bytes()), json.loads((STATE / "format2" / old_name)
                                                                                     .read_bytes())
        if new_name.startswith("splits-"):
            assert new_doc == old_doc
            continue
        assert new_doc["format_version"] == 4
        extra = {k: new_doc["state"].pop(k) for k in ("stream_id", "known_instants", "late_instants", "row_rules")}
        assert len(extra["stream_id"]) == 32 and extra["known_instants"] is None and extra["late_instants"] == 0
        assert extra["row_rules"] is None
        for seg in new_doc["state"]["segments"]:  # the same entries, laid out a line each: other bytes
            assert seg["sha256"] == hashlib.sha256((tmp_path / seg["name"]).read_bytes()).hexdigest()
        for seg in new_doc["state"]["segments"] + old_doc["state"]["segments"]:
            seg.pop("name"), seg.pop("sha256")
        assert new_doc["state"] == old_doc["state"]


def test_a_segment_holds_a_split_per_line_and_a_bad_line_is_refused_naming_the_segment(tmp_path):
    """Segments are written and read a split per line (a stream's first save plans a split per file group:
    decoding them one at a time keeps the driver's peak flat); a line that is not JSON, signed again, is refused
    naming the segment, and the entries read back equal the planned splits."""
    _write_stream(StateStore(str(tmp_path)))
    segment = sorted(tmp_path.glob("splits-000000000003-*.json"))[0]
    lines = segment.read_bytes().split(b"\n")
    assert lines[0] == b"[" and lines[-1] == b"]" and len(lines) == 4  # splits 3 and 4
    assert [json.loads(x.rstrip(b",")) for x in lines[1:-1]] == json.loads(segment.read_bytes())
    assert StateStore(str(tmp_path)).load(URL, NAME).splits == PLANNED[1:]

    segment.write_bytes(b"\n".join([lines[0], lines[1], b'{"seq": 4,', lines[-1]]))
    _sign_again(tmp_path)
    with pytest.raises(StateError, match=rf"{segment.name}: invalid split segment \(Invalid JSON"):
        StateStore(str(tmp_path)).load(URL, NAME)


def test_a_save_of_many_new_splits_writes_several_segments_that_leave_as_they_are_committed(tmp_path, monkeypatch):
    """A snapshot of a wide table plans a split per file group in one save: they go into segments of at most
    SEGMENT_SPLITS each (one whole JSON document was the driver's memory peak), read back in order, and a segment
    leaves once every split in it is committed."""
    monkeypatch.setattr(store_module, "SEGMENT_SPLITS", 2)
    store = StateStore(str(tmp_path))
    state = StreamState(table_url=URL, table_name=NAME, cursor=Cursor(requested=T4), started=True, next_seq=5,
                        next_round=2, splits=list(PLANNED))
    store.save(state)
    assert sorted(p.name.rsplit("-", 1)[0] for p in tmp_path.glob("splits-*")) == [
        "splits-000000000000-000000000001", "splits-000000000002-000000000003", "splits-000000000004-000000000004"]
    assert StateStore(str(tmp_path)).load(URL, NAME) == state
    state.splits, state.committed_seq = PLANNED[3:], 3
    store.save(state)
    assert sorted(p.name.rsplit("-", 1)[0] for p in tmp_path.glob("splits-*")) == [
        "splits-000000000002-000000000003", "splits-000000000004-000000000004"]
    assert StateStore(str(tmp_path)).load(URL, NAME) == state


@pytest.mark.parametrize("fmt", ["format1", "format2", "format3"])
def test_a_loaded_checkpoint_saved_and_loaded_again_is_equal(fmt, tmp_path):
    """An older checkpoint continues in format 4 (format 1's pending splits go into a segment) without a change,
    and with the row rules of the query that loaded it."""
    folder = _copy(fmt, tmp_path)
    store = StateStore(str(folder))
    state = store.load(URL, NAME, RULES)
    assert state is not None and state.rules == RULES
    store.save(state)
    assert StateStore(str(folder)).load(URL, NAME) == state
    assert json.loads((folder / "state-000000000003.json").read_bytes())["format_version"] == 4
    state.splits, state.committed_seq = state.splits[2:], 3  # a commit after the upgrade
    store.save(state)
    assert StateStore(str(folder)).load(URL, NAME, RULES) == state


@pytest.mark.parametrize("option, value, named", [
    ("read_mode", "upsert", "readMode=changelog, the query now has readMode=upsert"),
    ("deletes", "ignore", "emitDeletes=true, the query now has ignoreDeletes=true"),
    ("deletes", "fail", "emitDeletes=true, the query now has neither emitDeletes nor ignoreDeletes"),
    ("merge_type", "skip_merge", "mergeType=payload_combine, the query now has mergeType=skip_merge"),
    ("deduplication_mode", "none", "deduplicationMode=dropCarryovers, the query now has deduplicationMode=none"),
    ("carryover_ignore_columns", [], "carryoverIgnoreColumns=updated_at, the query now has no carryoverIgnoreCol"),
    ("columns", ["id", "amount"], "no columns, the query now has columns=id,amount"),
])
def test_a_query_that_counts_records_differently_is_refused_naming_the_option(option, value, named, tmp_path):
    """Record offsets count the rows a split yields under the query's rules: a restart with a rule changed
    would skip or repeat changes, so it is refused in one line naming the option and both values."""
    folder = _copy("format3", tmp_path)
    store = StateStore(str(folder))
    store.save(store.load(URL, NAME, RULES))
    with pytest.raises(StateError, match=rf"format3/state-000000000003.json: this stream ran with "
                                         rf"{named}.*start a new stream"):
        StateStore(str(folder)).load(URL, NAME, RULES.model_copy(update={option: value}))
    assert StateStore(str(folder)).load(URL, NAME, RULES) is not None  # the state is as it was


def test_changes_that_count_records_alike_are_taken_and_recorded(tmp_path):
    """Failing on deletes becomes delivering or ignoring them (the stopped stream's remedy); the projection
    changes while carry-overs are delivered (it changes no row count)."""
    folder = _copy("format3", tmp_path)
    failing = RULES.model_copy(update={"deletes": "fail", "deduplication_mode": "none",
                                       "carryover_ignore_columns": []})
    store = StateStore(str(folder))
    store.save(store.load(URL, NAME, failing))
    for later in (failing.model_copy(update={"deletes": "ignore"}),
                  failing.model_copy(update={"deletes": "ignore", "columns": ["id"]})):
        store = StateStore(str(folder))
        state = store.load(URL, NAME, later)
        assert state is not None and state.rules == later
        store.save(state)
    with pytest.raises(StateError, match="ignoreDeletes=true, the query now has emitDeletes=true"):
        StateStore(str(folder)).load(URL, NAME, failing.model_copy(update={"deletes": "emit"}))


@pytest.mark.parametrize("fmt, name, change, where", [
    ("format2", "state-000000000002.json", lambda d: d["state"].update(paused=True), "paused"),
    ("format2", "state-000000000002.json", lambda d: d["state"]["cursor"].update(zone="UTC"), "cursor.zone"),
    ("format2", "state-000000000002.json", lambda d: d["state"]["segments"][1].update(rows=5), "segments.1.rows"),
    ("format2", "splits-000000000003-000000000004.json", lambda d: d[0]["split"].update(columns=["a"]),
     "0.split.columns"),
    ("format2", "splits-000000000003-000000000004.json",
     lambda d: d[0]["split"]["prior"]["logs"][0].update(offset=3), "0.split.prior.logs.0.offset"),
    ("format1", "state-000000000002.json", lambda d: d["state"]["splits"][0]["split"].update(columns=["a"]),
     "splits.0.split.columns"),
])
def test_a_field_unknown_to_the_checkpoint_is_refused_naming_the_file(fmt, name, change, where, tmp_path):
    folder = _copy(fmt, tmp_path)
    _edit(folder, name, change)
    with pytest.raises(StateError, match=rf"{fmt}/{name}: invalid .*{where}: Extra inputs are not permitted"):
        StateStore(str(folder)).load(URL, NAME)


def test_a_format2_split_without_a_field_is_refused(tmp_path):
    """Every format-2 writer wrote every field: a missing one is damage, not a default."""
    folder = _copy("format2", tmp_path)
    _edit(folder, "splits-000000000003-000000000004.json", lambda d: d[1]["split"].pop("replaced_by"))
    with pytest.raises(StateError, match=r"splits-000000000003-000000000004.json: .*1.split.replaced_by: Field "
                                         "required"):
        StateStore(str(folder)).load(URL, NAME)


def test_format1_splits_written_before_replaced_by_and_prior_existed_read_as_none(tmp_path):
    folder = _copy("format1", tmp_path)

    def drop(doc):
        for p in doc["state"]["splits"]:
            if p["split"]["prior"] is None and p["split"]["replaced_by"] is None:
                del p["split"]["prior"], p["split"]["replaced_by"]
    _edit(folder, "state-000000000002.json", drop)
    assert "replaced_by" not in json.loads((folder / "state-000000000002.json").read_bytes())["state"]["splits"][0][
        "split"]
    # formats 1 and 2 name no stream: each load gives the state a new identity
    assert replace(StateStore(str(folder)).load(URL, NAME), stream_id="") == \
        replace(StateStore(str(STATE / "format1")).load(URL, NAME), stream_id="")


#: the format layer's Split with ``est_rows`` renamed: the serialisation's ``est_rows`` no longer maps onto it
_RenamedSplit = make_dataclass("_RenamedSplit", [
    ("rows_estimate" if f.name == "est_rows" else f.name, f.type, field(default=f.default))
    if f.default is not MISSING else (f.name, f.type) for f in fields(Split)], frozen=True)


@dataclass(frozen=True)
class _GrownSplit(Split):
    """The format layer's Split with a field the checkpoint does not know."""

    columns: list[str] = field(default_factory=list)


@pytest.mark.parametrize("variant", [_RenamedSplit, _GrownSplit])
def test_a_split_that_no_longer_maps_onto_the_record_cannot_load(variant, monkeypatch):
    monkeypatch.setattr(records, "Split", variant)
    with pytest.raises(StateError, match=f"state/records.py: {variant.__name__} .* is not what a split's record "
                                         "maps"):
        StateStore(str(STATE / "format2")).load(URL, NAME)


def test_a_split_with_a_field_the_checkpoint_lacks_cannot_be_saved(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "Split", _GrownSplit)
    grown = _GrownSplit(**{f.name: getattr(SPLITS[1], f.name) for f in fields(Split)}, columns=["amount"])
    state = StreamState(table_url=URL, table_name=NAME, next_seq=1,
                        splits=[PlannedSplit(seq=0, round=0, instants_in_round=1, split=grown)])
    with pytest.raises(StateError, match="_GrownSplit .* is not what a split's record maps"):
        StateStore(str(tmp_path)).save(state)
    assert not list(tmp_path.iterdir()), "nothing is written"


def test_a_record_refuses_a_missing_unknown_or_mistyped_field():
    values = records.split_json(SPLITS[3])
    assert records.split_from_json(values, "s") == SPLITS[3]
    with pytest.raises(StateError, match="s.est_rows: Field required"):
        records.split_from_json({k: v for k, v in values.items() if k != "est_rows"}, "s")
    with pytest.raises(StateError, match="s.rows_estimate: Extra inputs are not permitted"):
        records.split_from_json({**values, "rows_estimate": 1}, "s")
    with pytest.raises(StateError, match="s.prior.base_size: Input should be a valid integer"):
        records.split_from_json({**values, "prior": {**values["prior"], "base_size": "449500"}}, "s")


def test_a_split_not_bounded_yet_round_trips_as_null_and_only_null(tmp_path):
    """``est_rows`` None (the planner could not bound a whole slice from write stats) is written as null and read
    back as None; the field stays required and typed (every older checkpoint's integers still load: above)."""
    unbounded = replace(SPLITS[0], est_rows=None)
    values = records.split_json(unbounded)
    assert values["est_rows"] is None and records.split_from_json(values, "s") == unbounded
    with pytest.raises(StateError, match="s.est_rows: Field required"):
        records.split_from_json({k: v for k, v in values.items() if k != "est_rows"}, "s")
    with pytest.raises(StateError, match="s.est_rows: Input should be a valid integer"):
        records.split_from_json({**values, "est_rows": "1200"}, "s")
    store = StateStore(str(tmp_path))
    state = StreamState(table_url=URL, table_name=NAME, cursor=Cursor(requested=T0), started=True, next_seq=2,
                        next_round=1, splits=[PlannedSplit(0, 0, 1, unbounded), PlannedSplit(1, 0, 1, SPLITS[1])])
    store.save(state)
    assert StateStore(str(tmp_path)).load(URL, NAME) == state
