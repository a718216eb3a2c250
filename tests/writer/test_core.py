"""The table writer (``hudi_streaming.writer``): tables it writes read the same in our reader, in hudi-rs, and in a
model.

Every scenario keeps its own expected state: a plain dict (partition path, record key) → latest record, to
which each write is applied by hand with the table's merge rules (commit time: the newer write wins;
event time: the greater ``ts`` wins, ties to the newer; deletes without ordering value always win). After
every operation — writes, a failed (killed) write and its rollback, compaction (also killed and re-run),
clean, archive (also killed half way) — the latest snapshot of our reader and of hudi-rs must equal that
state, meta columns included (``_hoodie_commit_time`` is the instant that last changed the record); and as
of every completed write instant whose files the cleaner kept, both readers must return the state the
model had right after that instant (archived instants included; hudi-rs then reads with its archived
timeline option).
"""
from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import zlib

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi import HudiReadOptions, HudiTableBuilder

import hudi_streaming
from hudi_streaming import hoodie, read_table
from hudi_streaming.hoodie.config import MergeMode, load_table_config
from hudi_streaming.hoodie.fs_view import list_data_files
from hudi_streaming.hoodie.logfile.blocks import decode_data_block
from hudi_streaming.hoodie.logfile.format import BlockType, HeaderKey
from hudi_streaming.hoodie.logfile.reader import read_log_file
from hudi_streaming.hoodie.storage import Storage
from hudi_streaming.hoodie.timeline import Timeline
from hudi_streaming.writer import HudiWriter, avro_meta, create_table
from hudi_streaming.writer.index import INDEX_DIR, MAX_DELTAS
from hudi_streaming.writer.loadgen import SCHEMA, LoadGenerator, completed_steps
from hudi_streaming.writer.props import escape_java_property, render_properties
from hudi_streaming.writer.timeline_io import TimelineFiles

ARCHIVED_OPTION = "hoodie.internal.timeline.archived.enabled"
KEY = ("_hoodie_partition_path", "_hoodie_record_key")
COMBOS = [pytest.param(v, t, m, id=f"v{v}-{'mor' if t == 'MERGE_ON_READ' else 'cow'}-{m.split('_')[0].lower()}")
          for v in (9, 6) for t in ("MERGE_ON_READ", "COPY_ON_WRITE")
          for m in ("COMMIT_TIME_ORDERING", "EVENT_TIME_ORDERING")]


class Killed(Exception):
    """Stands for the process dying at the patched point."""


# -- the model ----------------------------------------------------------------------------------------------------

class Model:
    """The expected table: (partition, key) → record (data columns + ``_hoodie_commit_time``)."""

    def __init__(self, event_time: bool, partition_field: str | None = "part", key_field: str = "key"):
        self.event_time = event_time
        self.partition_field = partition_field
        self.key_field = key_field
        self.rows: dict[tuple[str, str], dict] = {}

    def ident(self, row: dict) -> tuple[str, str]:
        part = f"{self.partition_field}={row[self.partition_field]}" if self.partition_field else ""
        return part, str(row[self.key_field])

    @staticmethod
    def combine(rows: list[dict], ident, ordering: str | None = "ts") -> list[dict]:
        """preCombine within one batch, by hand: greatest ordering value, ties to the later row."""
        best: dict = {}
        for r in rows:
            k = ident(r)
            if k not in best or ordering is None or (r[ordering] or 0) >= (best[k][ordering] or 0):
                best[k] = r
        return list(best.values())

    def upsert(self, rows: list[dict], instant: str) -> None:
        for r in self.combine(rows, self.ident):
            k = self.ident(r)
            old = self.rows.get(k)
            if old is not None and self.event_time and (r["ts"] or 0) < (old["ts"] or 0):
                continue  # an older event: the stored record stays
            self.rows[k] = {**r, "_hoodie_commit_time": instant}

    def insert(self, rows: list[dict], instant: str) -> None:
        for r in self.combine(rows, self.ident):
            self.rows.setdefault(self.ident(r), {**r, "_hoodie_commit_time": instant})

    def delete(self, rows: list[dict]) -> None:
        for r in rows:
            k = self.ident(r)
            old = self.rows.get(k)
            if old is None:
                continue
            if self.event_time and r.get("ts") is not None and r["ts"] < (old["ts"] or 0):
                continue  # an ordered delete older than the record loses
            del self.rows[k]

    def apply(self, step, instant: str) -> None:
        rows = step.data.to_pylist()
        self.delete(rows) if step.kind == "delete" else self.upsert(rows, instant)

    def snapshot(self) -> dict:
        return {k: dict(v) for k, v in self.rows.items()}


# -- reading both ways --------------------------------------------------------------------------------------------

def state_of(t: pa.Table, columns: list[str], what: str) -> dict:
    out = {}
    for r in t.select([*KEY, *columns]).to_pylist():
        k = (r["_hoodie_partition_path"], r["_hoodie_record_key"])
        assert k not in out, f"{what}: key {k} returned twice"
        out[k] = {c: r[c] for c in columns}
    return out


def read_rs(path: str, as_of: str | None = None, archived: bool = False) -> pa.Table | None:
    b = HudiTableBuilder.from_base_uri(path)
    if archived:
        b = b.with_hudi_option(ARCHIVED_OPTION, "true")
    table = b.build()
    opts = HudiReadOptions()
    if as_of is not None:
        opts = opts.with_as_of_timestamp(as_of)
    batches = table.read(opts)
    return pa.Table.from_batches(batches) if batches else None


def to_schema(t: pa.Table | None, schema: pa.Schema) -> pa.Table:
    """hudi-rs's answer in our types (only lossless casts: string views, timestamp zones, list names)."""
    if t is None:
        return schema.empty_table()
    assert sorted(t.column_names) == sorted(schema.names), f"hudi-rs columns {t.column_names} vs {schema.names}"
    return pa.table({f.name: t.column(f.name).cast(f.type) for f in schema}, schema=schema)


def assert_state(path: str, expected: dict, what: str, as_of: str | None = None, archived: bool = False) -> None:
    """Our reader and hudi-rs both return exactly ``expected`` (data columns and commit time)."""
    ours = read_table(path, as_of=as_of)
    columns = [c for c in ours.column_names if not c.startswith("_hoodie_") or c == "_hoodie_commit_time"]
    got = state_of(ours, columns, f"{what} (ours)")
    exp = {k: {c: v.get(c) for c in columns} for k, v in expected.items()}
    _diff(got, exp, f"{what}: our reader")
    rs = to_schema(read_rs(path, as_of, archived), ours.schema)
    _diff(state_of(rs, columns, f"{what} (hudi-rs)"), exp, f"{what}: hudi-rs")
    # the other meta columns agree between the readers too
    assert sorted(map(json.dumps, ours.select([*KEY, "_hoodie_file_name", "_hoodie_commit_seqno"]).to_pylist())) \
        == sorted(map(json.dumps, rs.select([*KEY, "_hoodie_file_name", "_hoodie_commit_seqno"]).to_pylist())), what


def _diff(got: dict, exp: dict, what: str) -> None:
    if got == exp:
        return
    missing = sorted(set(exp) - set(got))[:3]
    extra = sorted(set(got) - set(exp))[:3]
    changed = [(k, got[k], exp[k]) for k in sorted(set(got) & set(exp)) if got[k] != exp[k]][:3]
    raise AssertionError(f"{what} differs from the model ({len(got)} rows vs {len(exp)} expected)\n"
                         f"  missing: {missing}\n  unexpected: {extra}\n  changed (got, expected): {changed}")


# -- failure injection --------------------------------------------------------------------------------------------

def kill_before_completion(monkeypatch, action: str):
    """The next ``action`` dies right before its completed file would be written (data files all written)."""
    orig = TimelineFiles.write_completed

    def boom(self, ts, act, content):
        if act == action:
            monkeypatch.setattr(TimelineFiles, "write_completed", orig)
            raise Killed(f"{act} {ts}")
        return orig(self, ts, act, content)
    monkeypatch.setattr(TimelineFiles, "write_completed", boom)


def kill_in_archive(monkeypatch):
    """The next archive dies after writing the archived timeline, before any active instant file is deleted."""
    orig = TimelineFiles.delete_instant

    def boom(self, ts):
        monkeypatch.setattr(TimelineFiles, "delete_instant", orig)
        raise Killed(f"archive at {ts}")
    monkeypatch.setattr(TimelineFiles, "delete_instant", boom)


def active(path: str) -> list:
    t = hoodie.HudiTable(path)
    return t.timeline.active.entries


def actions(path: str) -> list[str]:
    return [f"{e.instant.action.value}:{e.instant.state.name}" for e in active(path)]


# -- the scenario ------------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("version,table_type,mode", COMBOS)
def test_writes_and_services_read_the_same_everywhere(tmp_path, monkeypatch, version, table_type, mode):
    path = str(tmp_path / "t")
    mor = table_type == "MERGE_ON_READ"
    event = mode == "EVENT_TIME_ORDERING"
    w = create_table(path, "scenario", SCHEMA, record_key="key", partition_fields="part", ordering_field="ts",
                     table_type=table_type, version=version, merge_mode=mode, max_file_records=12)
    gen = LoadGenerator(None, keys=60, partitions=3, seed=version, batch=16, merge_mode=mode, delete_every=4,
                        late_share=0.25)
    model = Model(event)
    history: list[tuple[str, dict]] = []  # (completed write instant, model right after it)
    late: list[str] = []

    def write(what: str) -> str:
        step = gen.plan()
        late.extend(step.late_keys)
        instant = w.delete(step.data) if step.kind == "delete" else w.upsert(step.data)
        model.apply(step, instant)
        history.append((instant, model.snapshot()))
        assert_state(path, model.rows, f"after {what} ({step.kind} #{step.number})")
        return instant

    for i in range(6):
        write(f"write {i}")
    assert bool(late) == event, "event-time scenarios (only) include late updates, which must lose"

    # a write killed before completing: invisible to readers, rolled back by the next write
    stray = pa.Table.from_pylist([{"key": "key-9999999", "part": "p0", "ts": 1, "amount": 1.0}], schema=None)
    kill_before_completion(monkeypatch, "commit" if not mor else "deltacommit")
    with pytest.raises(Killed):
        w.upsert(stray)
    assert any(s.endswith("INFLIGHT") for s in actions(path))
    assert_state(path, model.rows, "with a failed write pending")
    write("the write after the failed one")
    assert not any(s.endswith(("INFLIGHT", "REQUESTED")) for s in actions(path)), actions(path)
    assert "rollback:COMPLETED" in actions(path)

    if mor:
        c = w.compact()
        assert c is not None
        history.append((c, model.snapshot()))
        assert_state(path, model.rows, "after compaction")
    for i in range(3):
        write(f"write after compaction {i}")
    if mor:  # a compaction killed before completing: readers merge as before; the next write re-runs it
        kill_before_completion(monkeypatch, "compaction")
        with pytest.raises(Killed):
            w.compact()
        assert "compaction:INFLIGHT" in actions(path)
        assert_state(path, model.rows, "with a killed compaction pending")
        write("the write after the killed compaction")
        assert "compaction:INFLIGHT" not in actions(path)
        compaction = [e.requested_time for e in active(path) if e.is_compaction][-1]
        history.append((compaction, dict(history[-2][1])))
        history.sort(key=lambda h: h[0])

    # archive (killed half way first) while every file is still there: as of every instant, archived or not
    kill_in_archive(monkeypatch)
    with pytest.raises(Killed):
        w.archive(keep_active=4)
    assert_state(path, model.rows, "after an archive killed half way")
    archived = w.archive(keep_active=4)
    assert archived, "the archive moved nothing"
    t = Timeline.load(Storage(path), load_table_config(Storage(path)))
    assert {a.requested_time for a in t.archived.instants} >= set(archived)
    assert all(e.requested_time not in archived for e in t.active.entries)
    assert sum(instant in archived for instant, _ in history) >= 4
    for instant, snap in history:
        assert_state(path, snap, f"as of {instant}{' (archived)' if instant in archived else ''}", as_of=instant,
                     archived=True)
    write("after archiving")

    # clean: only file slices no query at or after the earliest retained commit needs go
    cleaned = w.clean(retain_commits=3)
    assert cleaned is not None
    assert "clean:COMPLETED" in actions(path)
    assert_state(path, model.rows, "after clean", archived=True)
    write("after clean")
    retained = [e.requested_time for e in Timeline.load(Storage(path), load_table_config(Storage(path)))
                .completed_writes()][-4]  # the 3 retained before the clean plus the write after it
    for instant, snap in history:
        if instant >= retained:
            assert_state(path, snap, f"as of {instant} after clean", as_of=instant, archived=True)
    assert w.archive(keep_active=2), "a second archive run appends to the archived timeline"
    write("after the second archive")
    assert_state(path, model.rows, "final", archived=True)


# -- table layout as Hudi writes it ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [9, 6])
def test_properties_timeline_and_file_names(tmp_path, version):
    path = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("city", pa.string()), ("ts", pa.int64()), ("fare", pa.float64())])
    w = create_table(path, "trips", schema, record_key="id", partition_fields="city", ordering_field="ts",
                     version=version)
    storage = Storage(path)
    cfg = load_table_config(storage)
    assert (cfg.version, cfg.table_type.value, cfg.record_key_fields, cfg.partition_fields, cfg.ordering_fields) \
        == (version, "MERGE_ON_READ", ["id"], ["city"], ["ts"])
    assert cfg.merge_mode is MergeMode.EVENT_TIME_ORDERING and cfg.hive_style_partitioning
    raw = cfg.raw
    assert raw["hoodie.table.checksum"] == str(zlib.crc32(b"default.trips"))
    assert json.loads(raw["hoodie.table.create.schema"])["name"] == "trips_record"
    text = storage.read_bytes(".hoodie/hoodie.properties").decode("latin-1")
    assert "hoodie.table.create.schema={\"type\"\\:\"record\"" in text  # Java escaping of ':'
    if version == 9:
        assert raw["hoodie.timeline.layout.version"] == "2" and raw["hoodie.record.merge.mode"] == "EVENT_TIME_ORDERING"
        assert raw["hoodie.table.keygenerator.type"] == "SIMPLE"
    else:
        assert raw["hoodie.timeline.layout.version"] == "1"
        assert raw["hoodie.compaction.payload.class"].endswith("DefaultHoodieRecordPayload")
        assert raw["hoodie.table.keygenerator.class"].endswith("SimpleKeyGenerator")

    t1 = w.upsert(pa.table({"id": [1, 2, 3], "city": ["sf", "sf", "nyc"], "ts": [1, 1, 1], "fare": [1.0, 2, 3]},
                           schema=schema))
    t2 = w.upsert(pa.table({"id": [1], "city": ["sf"], "ts": [2], "fare": [9.5]}, schema=schema))
    t3 = w.delete(pa.table({"id": [2], "city": ["sf"]}))
    pm = storage.read_bytes("city=sf/.hoodie_partition_metadata").decode()
    assert pm.startswith("#partition metadata\n") and f"commitTime={t1}" in pm and "partitionDepth=1" in pm
    folder = cfg.timeline_dir
    names = sorted(i.path.rsplit("/", 1)[-1] for i in storage.list_dir(folder))
    for t in (t1, t2, t3):
        assert f"{t}.deltacommit.requested" in names and f"{t}.deltacommit.inflight" in names
        done = [n for n in names if n.startswith(t) and n.endswith(".deltacommit")
                and not n.endswith((".requested", ".inflight"))]
        assert len(done) == 1
        assert storage.read_bytes(f"{folder}/{t}.deltacommit.requested") == b""
        raw_md = storage.read_bytes(f"{folder}/{done[0]}")
        if version == 9:
            assert done[0].startswith(f"{t}_") and done[0].split("_")[1].split(".")[0] > t
            reader = fastavro.reader(io.BytesIO(raw_md))
            assert reader.writer_schema["name"] == "org.apache.hudi.avro.model.HoodieCommitMetadata"
            assert reader.metadata["avro.schema"] == avro_meta.schema_json(avro_meta.COMMIT_METADATA)
            md = next(iter(reader))
        else:
            assert done[0] == f"{t}.deltacommit"
            md = json.loads(raw_md)
        assert json.loads(md["extraMetadata"]["schema"])["fields"][0]["name"] == "id"
    md2 = hoodie.HudiTable(path).timeline.commit_metadata(t2)
    assert md2.operation_type == "UPSERT"
    (stat,) = md2.write_stats()
    log_name = stat.path.rsplit("/", 1)[-1]
    base = [f for f in list_data_files(storage) if f.path.endswith(f"_{t1}.parquet") and f.path.startswith("city=sf/")]
    (base_file,) = base
    fid = base_file.path.rsplit("/", 1)[-1].split("_")[0]
    # v9: the log is named after its delta commit; v6: after the base instant of its slice, version rolled over
    assert log_name.startswith(f".{fid}_{t2 if version == 9 else t1}.log.1_")
    assert stat.log_files == [log_name] and stat.prev_commit == (t2 if version == 9 else t1)
    blocks = read_log_file(storage, stat.path)
    assert [b.type for b in blocks] == [BlockType.AVRO_DATA]
    assert blocks[0].header[HeaderKey.INSTANT_TIME] == t2
    assert [f["name"] for f in json.loads(blocks[0].header[HeaderKey.SCHEMA])["fields"][:5]] == \
        ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
         "_hoodie_file_name"]
    (del_stat,) = hoodie.HudiTable(path).timeline.commit_metadata(t3).write_stats()
    assert [b.type for b in read_log_file(storage, del_stat.path)] == [BlockType.DELETE]
    base_rows = pq.read_table(storage.full(base_file.path))
    assert base_rows.column_names[:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
                                          "_hoodie_partition_path", "_hoodie_file_name"]
    r = base_rows.to_pylist()[0]
    assert r["_hoodie_commit_time"] == t1 and r["_hoodie_commit_seqno"].startswith(f"{t1}_")
    assert r["_hoodie_file_name"] == base_file.path.rsplit("/", 1)[-1] and r["_hoodie_partition_path"] == "city=sf"
    footer = pq.ParquetFile(storage.full(base_file.path)).metadata.metadata
    assert footer[b"hoodie_min_record_key"] == b"1" and footer[b"hoodie_max_record_key"] == b"2"
    model = Model(True, "city", "id")
    model.upsert([{"id": 1, "city": "sf", "ts": 1, "fare": 1.0}, {"id": 2, "city": "sf", "ts": 1, "fare": 2.0},
                  {"id": 3, "city": "nyc", "ts": 1, "fare": 3.0}], t1)
    model.upsert([{"id": 1, "city": "sf", "ts": 2, "fare": 9.5}], t2)
    model.delete([{"id": 2, "city": "sf"}])
    model.rows = {(p, str(k)): v for (p, k), v in model.rows.items()}
    assert_state(path, model.rows, "layout table")


def test_log_appends_cut_into_blocks_of_max_log_block_records(tmp_path):
    path = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("v", pa.string())])
    w = create_table(path, "blocks", schema, record_key="id", ordering_field="ts", merge_mode="COMMIT_TIME_ORDERING",
                     max_log_block_records=3)
    t1 = w.insert(pa.table({"id": list(range(10)), "ts": [1] * 10, "v": ["a"] * 10}, schema=schema))
    t2 = w.upsert(pa.table({"id": [9, 2, 5, 0, 7, 3, 8], "ts": [2] * 7, "v": ["b"] * 7}, schema=schema))
    (stat,) = hoodie.HudiTable(path).timeline.commit_metadata(t2).write_stats()
    blocks = read_log_file(Storage(path), stat.path)
    assert [b.type for b in blocks] == [BlockType.AVRO_DATA] * 3
    assert [b.header[HeaderKey.INSTANT_TIME] for b in blocks] == [t2] * 3
    assert [len(decode_data_block(b)) for b in blocks] == [3, 3, 1]
    model = Model(False, None, "id")
    model.upsert([{"id": i, "ts": 1, "v": "a"} for i in range(10)], t1)
    model.upsert([{"id": i, "ts": 2, "v": "b"} for i in (9, 2, 5, 0, 7, 3, 8)], t2)
    assert_state(path, model.rows, "blocks of 3 records")
    with pytest.raises(hudi_streaming.OptionError, match="max_log_block_records"):
        HudiWriter.open(path, max_log_block_records=0)


def test_bad_arguments_raise_option_error(tmp_path):
    """The writer's API edge: options are keyword-only, and a bad argument raises :class:`OptionError` (a
    ``HudiStreamingError``), never a bare ``ValueError``; nothing is written before the arguments are checked."""
    path = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64())])
    with pytest.raises(TypeError):
        create_table(path, "t", schema, "id")  # options are keyword-only
    for options in ({"record_key": "nope"}, {"record_key": "id", "table_type": "MERGE"},
                    {"record_key": "id", "version": 8}, {"record_key": "id", "merge_mode": "LATEST"},
                    {"record_key": "id", "merge_mode": "EVENT_TIME_ORDERING"}):
        with pytest.raises(hudi_streaming.OptionError):
            create_table(path, "t", schema, **options)
    with pytest.raises(hudi_streaming.OptionError, match="no Avro equivalent"):
        create_table(path, "t", schema.append(pa.field("d", pa.duration("s"))), record_key="id")
    w = create_table(path, "t", schema, record_key="id", ordering_field="ts")
    with pytest.raises(hudi_streaming.OptionError, match="already exists"):
        create_table(path, "t", schema, record_key="id")
    for bad_call in (lambda: w.upsert(pa.table({"id": [1], "other": [2]})),
                     lambda: w.upsert(pa.table({"id": ["x"], "ts": [1]})),
                     lambda: w.upsert(pa.table({"id": [None], "ts": [1]}, schema=schema)),
                     lambda: w.upsert([]),
                     lambda: w.insert(pa.table({"id": [1]}), on_existing="replace"),
                     lambda: w.delete(pa.table({"ts": [1]})),
                     lambda: w.clean(retain_commits=0),
                     lambda: w.archive(keep_active=0)):
        with pytest.raises(hudi_streaming.OptionError):
            bad_call()
    assert read_table(path).num_rows == 0


def test_java_properties_escaping_round_trips():
    from hudi_streaming.hoodie.config import parse_java_properties
    props = {"a key": " lead =:#!\\ é 漢 \t\n end", "hoodie.table.create.schema": '{"type":"record"}', "empty": ""}
    text = render_properties(props, "Updated at x").decode("latin-1")
    assert parse_java_properties(text) == props
    assert escape_java_property("a:b=c") == "a\\:b\\=c"
    assert escape_java_property("x y", is_key=True) == "x\\ y"


# -- merge rules at write time -----------------------------------------------------------------------------------

@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
@pytest.mark.parametrize("version", [9, 6])
def test_duplicates_in_a_batch_are_precombined(tmp_path, table_type, version):
    path = str(tmp_path / "t")
    schema = pa.schema([("k", pa.string()), ("ts", pa.int64()), ("v", pa.string())])
    w = create_table(path, "dups", schema, record_key="k", ordering_field="ts", table_type=table_type, version=version)
    rows = [{"k": "a", "ts": 5, "v": "a5"}, {"k": "a", "ts": 7, "v": "a7"}, {"k": "a", "ts": 6, "v": "a6"},
            {"k": "b", "ts": 1, "v": "b1-first"}, {"k": "b", "ts": 1, "v": "b1-second"}]
    t1 = w.upsert(pa.Table.from_pylist(rows, schema=schema))
    more = [{"k": "a", "ts": 8, "v": "a8"}, {"k": "b", "ts": 0, "v": "b0"}, {"k": "b", "ts": 3, "v": "b3"},
            {"k": "c", "ts": 2, "v": "c2"}, {"k": "c", "ts": 2, "v": "c2-later"}]
    t2 = w.upsert(pa.Table.from_pylist(more, schema=schema).to_batches(max_chunksize=2))
    model = Model(True, None, "k")
    model.upsert(rows, t1)
    model.upsert(more, t2)
    assert {k: v["v"] for (_, k), v in model.rows.items()} == {"a": "a8", "b": "b3", "c": "c2-later"}
    assert_state(path, model.rows, "precombined")


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_event_time_deletes_carry_their_ordering_value(tmp_path, table_type):
    """v9 event time: a delete with an ordering value loses to a stored record with a greater one."""
    path = str(tmp_path / "t")
    schema = pa.schema([("k", pa.string()), ("ts", pa.int64()), ("v", pa.string())])
    w = create_table(path, "odel", schema, record_key="k", ordering_field="ts", table_type=table_type)
    rows = [{"k": k, "ts": 10, "v": k} for k in "abcd"]
    t1 = w.upsert(pa.Table.from_pylist(rows, schema=schema))
    dels = pa.table({"k": ["a", "b", "c"], "ts": [5, 10, 11]})  # a: older (loses); b: tie (wins); c: newer
    w.delete(dels)
    w.delete(pa.table({"k": ["d"]}))  # no ordering value: wins by commit time
    model = Model(True, None, "k")
    model.upsert(rows, t1)
    model.delete(dels.to_pylist())
    model.delete([{"k": "d"}])
    assert sorted(k for _, k in model.rows) == ["a"]
    assert_state(path, model.rows, "ordered deletes")
    if table_type == "MERGE_ON_READ":
        w.compact()
        assert_state(path, model.rows, "ordered deletes, compacted")


def test_insert_drops_or_refuses_existing_keys(tmp_path):
    path = str(tmp_path / "t")
    schema = pa.schema([("k", pa.string()), ("ts", pa.int64())])
    w = create_table(path, "ins", schema, record_key="k", ordering_field="ts")
    t1 = w.insert(pa.table({"k": ["a", "b"], "ts": [1, 1]}, schema=schema))
    t2 = w.insert(pa.table({"k": ["b", "c"], "ts": [5, 5]}, schema=schema))
    model = Model(True, None, "k")
    model.insert([{"k": "a", "ts": 1}, {"k": "b", "ts": 1}], t1)
    model.insert([{"k": "b", "ts": 5}, {"k": "c", "ts": 5}], t2)
    assert_state(path, model.rows, "insert with existing keys dropped")
    with pytest.raises(hudi_streaming.OptionError, match="insert of keys already in the table, e.g. 'a'"):
        w.insert(pa.table({"k": ["a"], "ts": [9]}, schema=schema), on_existing="fail")
    assert not hoodie.HudiTable(path).timeline.active.pending()  # refused before its instant started
    assert_state(path, model.rows, "refused insert")
    t3 = w.insert(pa.table({"k": ["a"], "ts": [9]}, schema=schema), on_existing="upsert")
    model.upsert([{"k": "a", "ts": 9}], t3)
    assert_state(path, model.rows, "insert as upsert")
    assert not hoodie.HudiTable(path).timeline.active.pending()


def test_all_types_round_trip_through_base_files_and_logs(tmp_path):
    path = str(tmp_path / "t")
    schema = pa.schema([
        ("id", pa.int32()), ("s", pa.string()), ("i8", pa.int8()), ("f", pa.float32()), ("d", pa.float64()),
        ("b", pa.bool_()), ("bin", pa.binary()), ("dec", pa.decimal128(12, 3)), ("day", pa.date32()),
        ("at", pa.timestamp("us", tz="UTC")), ("st", pa.struct([("x", pa.int64()), ("y", pa.string())])),
        ("lst", pa.list_(pa.int64())), ("mp", pa.map_(pa.string(), pa.float64())),
    ])

    def row(i: int, tag: str) -> dict:
        return {"id": i, "s": f"{tag}{i}é", "i8": i % 100, "f": i / 4, "d": i * 1.5, "b": i % 2 == 0,
                "bin": bytes([i % 256, 0, 255]), "dec": decimal.Decimal(f"{i}.125"),
                "day": dt.date(2024, 1, 1 + i % 28),
                "at": dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=i),
                "st": {"x": i, "y": None if i % 3 else tag}, "lst": [i, None, 3], "mp": {"a": float(i), "n": None}}

    w = create_table(path, "types", schema, record_key="id", version=9, table_type="MERGE_ON_READ")
    first = [row(i, "v") for i in range(6)]
    t1 = w.upsert(pa.Table.from_pylist(first, schema=schema))
    second = [row(i, "u") for i in (1, 4, 9)]
    t2 = w.upsert(pa.Table.from_pylist(second, schema=schema))
    ours = read_table(path)
    expected = {**{r["id"]: r for r in first}, **{r["id"]: r for r in second}}
    got = {r["id"]: {c: r[c] for c in schema.names} for r in ours.to_pylist()}
    for r in expected.values():  # Arrow hands maps back as key/value lists
        r["mp"] = list(r["mp"].items())
        r["i8"] = int(r["i8"])
    assert got == expected
    assert {r["id"]: r["_hoodie_commit_time"] for r in ours.to_pylist()} == \
        {i: (t2 if i in (1, 4, 9) else t1) for i in expected}
    rs = to_schema(read_rs(path), ours.schema)
    assert sorted(map(repr, rs.to_pylist())) == sorted(map(repr, ours.to_pylist()))


def test_complex_keys_and_non_hive_partitions(tmp_path):
    path = str(tmp_path / "t")
    schema = pa.schema([("a", pa.string()), ("b", pa.int64()), ("y", pa.int32()), ("m", pa.string()),
                        ("v", pa.float64())])
    w = create_table(path, "cx", schema, record_key=["a", "b"], partition_fields=["y", "m"], hive_style=False,
                     version=9, table_type="COPY_ON_WRITE")
    cfg = load_table_config(Storage(path))
    assert cfg.raw["hoodie.table.keygenerator.type"] == "COMPLEX"
    assert cfg.merge_mode is MergeMode.COMMIT_TIME_ORDERING
    t1 = w.upsert(pa.table({"a": ["x", "", None], "b": [1, 2, 3], "y": [2024, 2024, 2025], "m": ["01", "02", None],
                            "v": [1.0, 2.0, 3.0]}, schema=schema))
    t = read_table(path)
    assert sorted(zip(t.column("_hoodie_record_key").to_pylist(), t.column("_hoodie_partition_path").to_pylist())) \
        == [("a:__empty__,b:2", "2024/02"), ("a:__null__,b:3", "2025/__HIVE_DEFAULT_PARTITION__"),
            ("a:x,b:1", "2024/01")]
    w.upsert(pa.table({"a": ["x"], "b": [1], "y": [2024], "m": ["01"], "v": [7.0]}, schema=schema))
    w.delete(pa.table({"a": ["a"], "b": [9], "y": [1], "m": ["1"]}))  # unknown key: nothing to delete
    t = read_table(path)
    assert sorted(t.column("v").to_pylist()) == [2.0, 3.0, 7.0]
    rs = to_schema(read_rs(path), t.schema)
    assert sorted(rs.column("v").to_pylist()) == [2.0, 3.0, 7.0]
    assert set(t.column("_hoodie_commit_time").to_pylist()) > {t1}


# -- index, recovery, services --------------------------------------------------------------------------------------

def test_index_survives_restarts_and_is_rebuilt_when_missing_or_stale(tmp_path):
    path = str(tmp_path / "t")
    gen_table = LoadGenerator(path, keys=50, partitions=2, seed=3, batch=20, max_file_records=10)
    gen_table.run(3)
    storage = Storage(path)
    names = sorted(i.path.rsplit("/", 1)[-1] for i in storage.list_dir(INDEX_DIR))
    assert names[0].startswith("base_") and len(names) == 3 and names[1].startswith("delta_")
    steps = gen_table.run(1)
    # a restart: a new writer uses the persisted index
    w = HudiWriter.open(path, max_file_records=10)
    idx = w.index(hoodie.HudiTable(path))
    assert idx.instant == steps[-1].instant and len(idx) >= len(gen_table.present)
    # missing: rebuilt from the snapshot
    storage.fs.rm(storage.full(INDEX_DIR), recursive=True)
    gen2 = LoadGenerator(path, keys=50, partitions=2, seed=3, batch=20, max_file_records=10)
    assert gen2.steps_done == 4
    gen2.run(2)
    # stale (stamped with an older instant, as after a crash between commit and index update): rebuilt
    w2 = HudiWriter.open(path, max_file_records=10)
    w2.index(hoodie.HudiTable(path)).save(storage, "00000000000000000")
    gen3 = LoadGenerator(path, keys=50, partitions=2, seed=3, batch=20, max_file_records=10)
    gen3.run(2)
    dry = LoadGenerator(None, keys=50, partitions=2, seed=3, batch=20)
    model = Model(True)
    t = hoodie.HudiTable(path)
    instants = [e.requested_time for e in t.timeline.completed_writes()]
    assert len(instants) == 8
    for instant in instants:
        model.apply(dry.plan(), instant)
    assert_state(path, model.rows, "after index rebuilds")


@pytest.mark.parametrize("version", [9, 6])
def test_rollback_of_a_failed_write(tmp_path, monkeypatch, version):
    path = str(tmp_path / "t")
    schema = pa.schema([("k", pa.string()), ("ts", pa.int64())])
    w = create_table(path, "rb", schema, record_key="k", ordering_field="ts", version=version, max_file_records=2)
    t1 = w.upsert(pa.table({"k": ["a", "b", "c"], "ts": [1, 1, 1]}, schema=schema))
    kill_before_completion(monkeypatch, "deltacommit")
    with pytest.raises(Killed):  # updates a's group (log append) and creates a new group (base file)
        w.upsert(pa.table({"k": ["a", "x", "y", "z"], "ts": [2, 2, 2, 2]}, schema=schema))
    model = Model(True, None, "k")
    model.upsert([{"k": k, "ts": 1} for k in "abc"], t1)
    assert_state(path, model.rows, "failed write pending")
    storage = Storage(path)
    before = {f.path for f in list_data_files(storage)}
    (rb,) = w.rollback_failed()
    after = {f.path for f in list_data_files(storage)}
    t = hoodie.HudiTable(path)
    md = t.timeline.active.get(rb)
    assert md is not None and md.is_completed
    (rec,) = list(fastavro.reader(io.BytesIO(storage.read_bytes(f"{t.config.timeline_dir}/{md.files[-1]}"))))
    failed = rec["commitsRollback"][0]
    assert t.timeline.active.get(failed) is None, "the failed instant's files are gone"
    removed = before - after
    assert any(p.endswith(".parquet") for p in removed)
    if version == 9:  # files deleted, no command block
        assert any(".log." in p for p in removed)
        assert not any(".log." in p for p in after - before)
    else:  # the log stays; a rollback command block in a new log version neutralises it
        assert not any(".log." in p for p in removed)
        assert len(after - before) == 2  # both file groups the failed write appended to (update, small-file insert)
        for cmd in after - before:
            blocks = read_log_file(storage, cmd)
            assert [b.type for b in blocks] == [BlockType.COMMAND] and blocks[0].is_rollback
            assert blocks[0].target_instant_time == failed and blocks[0].instant_time == rb
            assert ".log.2_1-0-1" in cmd
        assert any(rec["partitionMetadata"][""]["rollbackLogFiles"])
    assert_state(path, model.rows, "rolled back")
    t3 = w.upsert(pa.table({"k": ["a", "z"], "ts": [3, 3]}, schema=schema))
    model.upsert([{"k": "a", "ts": 3}, {"k": "z", "ts": 3}], t3)
    assert_state(path, model.rows, "after the rollback")
    w.compact()
    assert_state(path, model.rows, "compacted after the rollback")


def test_killed_clean_and_rollback_are_finished_by_the_next_writer(tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    gen = LoadGenerator(path, keys=30, partitions=1, seed=5, batch=10, table_type="COPY_ON_WRITE",
                        max_file_records=100)
    gen.run(6)
    w = gen.writer
    kill_before_completion(monkeypatch, "clean")
    with pytest.raises(Killed):
        w.clean(retain_commits=2)
    assert "clean:INFLIGHT" in actions(path)
    # a failed write, then a rollback killed before completing
    kill_before_completion(monkeypatch, "commit")
    with pytest.raises(Killed):
        gen.step()
    kill_before_completion(monkeypatch, "rollback")
    with pytest.raises(Killed):
        w.rollback_failed()
    pending = [s for s in actions(path) if not s.endswith("COMPLETED")]
    assert "rollback:INFLIGHT" in pending and "commit:INFLIGHT" in pending, pending
    gen.run(1)
    assert all(s.endswith("COMPLETED") for s in actions(path)), actions(path)
    dry = LoadGenerator(None, keys=30, partitions=1, seed=5, batch=10)
    model = Model(True)
    for e in hoodie.HudiTable(path).timeline.completed_writes():
        model.apply(dry.plan(), e.requested_time)
    assert_state(path, model.rows, "after finishing the killed services")


@pytest.mark.parametrize("version", [9, 6])
def test_archived_timeline_is_read_by_our_reader(tmp_path, version):
    """Archived without compaction: the live file slices still hold logs of archived delta commits."""
    path = str(tmp_path / "t")
    gen = LoadGenerator(path, keys=40, partitions=2, seed=1, batch=10, version=version)
    steps = gen.run(8)
    archived = gen.writer.archive(keep_active=3)
    assert archived == [s.instant for s in steps[:5]]
    t = hoodie.HudiTable(path)
    arch = {a.requested_time: a for a in t.timeline.archived.instants}
    assert set(archived) == set(arch)
    assert [int(t.timeline.archived.commit_metadata(arch[a]).extra_metadata["hoodie.loadgen.step"])
            for a in archived] == [1, 2, 3, 4, 5]
    assert completed_steps(path) == 8
    if version == 9:
        storage = Storage(path)
        assert storage.read_bytes(".hoodie/timeline/history/_version_") == b"1"
        manifest = json.loads(storage.read_bytes(".hoodie/timeline/history/manifest_1"))
        (f,) = manifest["files"]
        assert f["fileName"] == f"{archived[0]}_{archived[-1]}_0.parquet"
        assert f["fileLen"] == storage.size(f".hoodie/timeline/history/{f['fileName']}")
        assert all(arch[a].completion_time > a for a in archived)
    else:
        names = [i.path.rsplit("/", 1)[-1] for i in Storage(path).list_dir(".hoodie/archived")]
        assert names == [".commits_.archive.1_1-0-1"]
    dry = LoadGenerator(None, keys=40, partitions=2, seed=1, batch=10)
    model = Model(True)
    for s in steps:
        model.apply(dry.plan(), s.instant)
        assert_state(path, model.rows, f"as of {s.instant}", as_of=s.instant, archived=True)
    assert_state(path, model.rows, "latest", archived=True)


def test_loadgen_resumes_and_replays(tmp_path):
    path = str(tmp_path / "t")
    gen = LoadGenerator(path, keys=100, partitions=3, seed=11, batch=25, table_type="COPY_ON_WRITE", version=6)
    first = gen.run(4)
    again = LoadGenerator(path, keys=100, partitions=3, seed=11, batch=25)
    assert again.steps_done == 4 and again.present == gen.present
    second = again.run(2, compact_every=1, clean_every=2, archive_every=2, retain_commits=2, keep_active=2)
    dry = LoadGenerator(None, keys=100, partitions=3, seed=11, batch=25, merge_mode="EVENT_TIME_ORDERING")
    model = Model(True)
    for s in first + second:
        p = dry.plan()
        assert p.kind == s.kind and p.data.equals(s.data)
        model.apply(p, s.instant)
    assert_state(path, model.rows, "loadgen", archived=True)
    assert [s.kind for s in first + second].count("delete") == 1


def test_loadgen_command_line(tmp_path, capsys):
    from hudi_streaming.writer.loadgen import main
    path = str(tmp_path / "t")
    assert main([path, "--keys", "50", "--batch", "10", "--commits", "4", "--compact-every", "2",
                 "--clean-every", "3", "--archive-every", "4", "--retain-commits", "2", "--keep-active", "2"]) == 0
    assert completed_steps(path) == 4
    assert len(read_table(path)) > 0


def test_index_deltas_fold_into_a_new_base(tmp_path, monkeypatch):
    import hudi_streaming.writer.index as index_module
    monkeypatch.setattr(index_module, "MAX_DELTAS", 2)
    path = str(tmp_path / "t")
    gen = LoadGenerator(path, keys=40, partitions=0, seed=2, batch=8, table_type="COPY_ON_WRITE")
    storage = Storage(path)
    kinds = []
    steps = gen.run(5, on_step=lambda s: kinds.append(
        sorted(i.path.rsplit("/", 1)[-1].split("_")[0] for i in storage.list_dir(INDEX_DIR))))
    assert kinds == [["base"], ["base", "delta"], ["base", "delta", "delta"], ["base"], ["base", "delta"]]
    assert MAX_DELTAS > 2
    restarted = HudiWriter.open(path)
    idx = restarted.index(hoodie.HudiTable(path))
    assert idx.instant == steps[-1].instant and idx.deltas == 1
    assert set(read_table(path).column("key").to_pylist()) == {gen.key_name(i) for i in gen.present}
    assert set(idx.table.column("key").to_pylist()) >= {gen.key_name(i) for i in gen.present}
    assert all(p == "" for p in idx.table.column("partition").to_pylist())


def test_vectorised_avro_encoding_equals_fastavro():
    import random

    from hudi_streaming.writer import schema as sch
    from hudi_streaming.writer.avro_encode import _encode_fastavro, encode_records
    rng = random.Random(4)
    schema = pa.schema([("s", pa.string()), ("l", pa.int64()), ("i", pa.int32()), ("f", pa.float32()),
                        ("d", pa.float64()), ("b", pa.bool_()), ("bin", pa.binary()), ("day", pa.date32()),
                        ("at", pa.timestamp("us", tz="UTC"))])
    avro = sch.with_meta_fields(sch.avro_schema_from_arrow(schema, "t"))
    n = 500

    def maybe(v):
        return None if rng.random() < 0.2 else v
    cols = {name: [maybe(f"{name}{i}") for i in range(n)] for name in
            ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
             "_hoodie_file_name")}
    cols.update(
        s=[maybe("".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(0, 150)))) for _ in range(n)],
        l=[maybe(rng.choice([0, -1, 1, 63, 64, -64, -65, 2**63 - 1, -2**63, rng.randrange(-2**63, 2**63)]))
           for _ in range(n)],
        i=[maybe(rng.randrange(-2**31, 2**31)) for _ in range(n)],
        f=[maybe(rng.uniform(-1e30, 1e30)) for _ in range(n)], d=[maybe(rng.uniform(-1e300, 1e300)) for _ in range(n)],
        b=[maybe(rng.random() < .5) for _ in range(n)],
        bin=[maybe(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))) for _ in range(n)],
        day=[maybe(dt.date(1900, 1, 1) + dt.timedelta(days=rng.randrange(0, 80000))) for _ in range(n)],
        at=[maybe(dt.datetime(1960, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=rng.randrange(10**17)))
            for _ in range(n)])
    t = pa.table(cols, schema=sch.arrow_schema(avro))
    text = sch.schema_text(avro)
    assert encode_records(t, text) == _encode_fastavro(t, text)
    assert encode_records(t.slice(13, 77), text) == _encode_fastavro(t.slice(13, 77), text)
    # nested types take the fastavro path, with the same framing
    nested = pa.schema([("id", pa.int64()), ("st", pa.struct([("x", pa.int64())]))])
    avro2 = sch.with_meta_fields(sch.avro_schema_from_arrow(nested, "n"))
    t2 = pa.table({**{m: ["m"] * 2 for m in cols if m.startswith("_hoodie")}, "id": [1, None],
                   "st": [{"x": 5}, None]}, schema=sch.arrow_schema(avro2))
    body = encode_records(t2, sch.schema_text(avro2))
    first = int.from_bytes(body[:4], "big")
    second = int.from_bytes(body[4 + first:8 + first], "big")
    assert len(body) == 8 + first + second
    assert body == _encode_fastavro(t2, sch.schema_text(avro2))
