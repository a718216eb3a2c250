"""The archived timeline (spec §6): a table whose oldest instants were archived reads like the table before.

No fixture has an archived timeline, so these tests copy real fixture tables and archive their oldest completed
instants the way Hudi does, then delete the archived instants' active timeline files as the archiver does:

- table v8/v9: one LSM parquet file at level 0 in ``.hoodie/timeline/history/`` plus ``manifest_1`` and
  ``_version_`` (``LSMTimelineWriter.write``); a row per instant as ``MetadataConversionUtils.createLSMTimelineInstant``
  makes it: the completed file's bytes as ``metadata``, the plan file's bytes as ``plan`` for the actions that
  have a plan (``ActiveAction``).
- table v6: ``.hoodie/archived/.commits_.archive.1_1-0-1``, a log file with one Avro data block of
  ``HoodieArchivedMetaEntry`` records, one per state file of each instant with its ``actionState``
  (``MetadataConversionUtils.createMetaWrapper`` of Hudi 0.14/0.15).

Every read of the archived copy must equal the same read of the untouched copy: snapshot, the completed writes
with their completion times, their commit metadata, and incremental windows that start inside the archive (what
a streaming source needs when it resumes from an instant that has been archived since). hudi-rs must read the
archived copies as ours reads the originals where it can. Further tests cover how the LSM history is found
(manifests, ``_version_``, levels, unsafe names), v6 archive files, and that the archive is read only when an
answer needs it.
"""
from __future__ import annotations

import json
import re
import shutil
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder
from support.hudi_rs import assert_same_as_hudi_rs, rs_table

from hudi_streaming import hoodie, read_table
from hudi_streaming.errors import CorruptFileError
from hudi_streaming.hoodie.logfile.format import BlockType, HeaderKey
from hudi_streaming.hoodie.logfile.reader import iter_blocks
from hudi_streaming.hoodie.logfile.writer import encode_avro_data_block, encode_block
from hudi_streaming.hoodie.timeline.instant import mtime_to_instant

V9 = "mor_avro__v9_txns_simple_meta"
V8 = "mor_avro__v8_mor_boundary_windows"
V9_COMPACTED = "mor_avro__v9_mor_compacted_incremental"
V6 = "mor_avro__v6_trips_8i3d"
V6_ROLLBACK = "mor_parquet__v6_nonpartitioned_rollback"
#: Avro timeline files of this table supply the real Hudi schemas of the v6 archive's nested records.
SCHEMA_SOURCE = V9
NAMESPACE = "org.apache.hudi.avro.model"

# (fixture, how many of its oldest instants to archive). The archived instants stop before the first replace
# commit: Hudi archives one only once the cleaner has deleted the file groups it replaced, which no fixture did.
# V9_COMPACTED archives its compaction (a row with a plan) and the delta commits whose log files it compacted.
LSM_CASES = [(V9, 1), (V9, 4), (V9, 7), (V8, 1), (V8, 3), (V9_COMPACTED, 4), (V9_COMPACTED, 5)]
V6_CASES = [(V6, 1), (V6_ROLLBACK, 1), (V6_ROLLBACK, 2)]


# -- the active timeline as files --------------------------------------------------------------------------------

_STATE_FILE = re.compile(r"^(\d+)(?:_(\d+))?\.([a-z]+)(?:\.(requested|inflight))?$")


@dataclass(frozen=True)
class StateFile:
    """One active timeline file: one state of one instant."""

    path: Path
    requested_time: str
    completion_time: str | None  # in the name of a completed instant's file on layout 2
    action: str  # as named in the file: the pending action (compaction, clustering) until completed
    state: str  # REQUESTED, INFLIGHT or COMPLETED

    @property
    def content(self) -> bytes | None:
        """The file's bytes, None when empty (Hudi archives no metadata for an empty file)."""
        return self.path.read_bytes() or None


def _state_file(path: Path) -> StateFile | None:
    m = _STATE_FILE.match(path.name)
    if not m or not path.is_file():
        return None
    ts, completion, action, state = m.groups()
    if action == "inflight" and state is None:  # `<ts>.inflight` is the inflight state of a commit
        return StateFile(path, ts, None, "commit", "INFLIGHT")
    return StateFile(path, ts, completion, action, (state or "completed").upper())


def oldest_instants(timeline_dir: Path, k: int) -> list[dict[str, StateFile]]:
    """The ``k`` oldest instants (state -> file), which must be completed: archiving stops at a pending one."""
    by_time: dict[str, dict[str, StateFile]] = {}
    for p in timeline_dir.iterdir():
        f = _state_file(p)
        if f is not None:
            by_time.setdefault(f.requested_time, {})[f.state] = f
    oldest = [by_time[t] for t in sorted(by_time)[:k]]
    assert len(oldest) == k and all("COMPLETED" in i for i in oldest), f"{timeline_dir}: cannot archive {k}"
    return oldest


def delete_active_files(instants: list[dict[str, StateFile]]) -> list[str]:
    """Remove the archived instants from the active timeline; their requested times."""
    for states in instants:
        for f in states.values():
            f.path.unlink()
    return [i["COMPLETED"].requested_time for i in instants]


# -- LSM timeline (v8/v9) ----------------------------------------------------------------------------------------

#: ``HoodieLSMTimelineInstant.avsc`` as parquet-avro writes it.
LSM_SCHEMA = pa.schema([("instantTime", pa.string()), ("completionTime", pa.string()), ("action", pa.string()),
                        ("metadata", pa.binary()), ("plan", pa.binary()),
                        pa.field("version", pa.int32(), nullable=False)])


def lsm_row(states: dict[str, StateFile]) -> dict:
    """``MetadataConversionUtils.createLSMTimelineInstant``: the plan is kept only for actions that have one."""
    done = states["COMPLETED"]
    pending = states.get("REQUESTED") or states.get("INFLIGHT")
    requested, inflight = (states[s].content if s in states else None for s in ("REQUESTED", "INFLIGHT"))
    plan = {"clean": requested, "compaction": requested, "logcompaction": requested,
            "replacecommit": inflight or requested, "clustering": inflight or requested}.get(
        pending.action if pending else "")
    return {"instantTime": done.requested_time, "completionTime": done.completion_time, "action": done.action,
            "metadata": done.content, "plan": plan, "version": 1}


def write_lsm_file(history: Path, rows: list[dict], level: int) -> str:
    """A parquet file named ``<min>_<max>_<level>.parquet`` after its instants; its name."""
    history.mkdir(parents=True, exist_ok=True)
    times = [r["instantTime"] for r in rows]
    name = f"{min(times)}_{max(times)}_{level}.parquet"
    pq.write_table(pa.Table.from_pylist(rows, LSM_SCHEMA), history / name)
    return name


def write_manifest(history: Path, version: int, names: list[str], *, file_len: dict[str, int] | None = None) -> None:
    """``manifest_<version>`` listing ``names`` and ``_version_`` pointing at it (``LSMTimelineWriter``)."""
    files = [{"fileName": n, "fileLen": (file_len or {}).get(n) or (history / n).stat().st_size} for n in names]
    (history / f"manifest_{version}").write_text(json.dumps({"files": files}, indent=2))
    (history / "_version_").write_text(str(version))


def archive_lsm(table: Path, k: int) -> list[str]:
    """Archive the ``k`` oldest instants into one level-0 file; their requested times."""
    instants = oldest_instants(table / ".hoodie/timeline", k)
    history = table / ".hoodie/timeline/history"
    write_manifest(history, 1, [write_lsm_file(history, [lsm_row(i) for i in instants], 0)])
    return delete_active_files(instants)


# -- archive log file (v6) ---------------------------------------------------------------------------------------

#: ``HoodieArchivedMetaEntry.avsc`` (apache/hudi @94e4c2e): (field, record type) for the nullable record fields,
#: (field, "string") for the nullable strings, ``version`` being ``["int", "null"]`` with default 1.
ARCHIVED_META_ENTRY_FIELDS = [
    ("hoodieCommitMetadata", "HoodieCommitMetadata"), ("hoodieCleanMetadata", "HoodieCleanMetadata"),
    ("hoodieCompactionMetadata", "HoodieCompactionMetadata"), ("hoodieRollbackMetadata", "HoodieRollbackMetadata"),
    ("hoodieSavePointMetadata", "HoodieSavepointMetadata"), ("commitTime", "string"), ("actionType", "string"),
    ("version", "int"), ("hoodieCompactionPlan", "HoodieCompactionPlan"), ("hoodieCleanerPlan", "HoodieCleanerPlan"),
    ("actionState", "string"), ("hoodieReplaceCommitMetadata", "HoodieReplaceCommitMetadata"),
    ("hoodieRequestedReplaceMetadata", "HoodieRequestedReplaceMetadata"),
    ("HoodieInflightReplaceMetadata", "HoodieCommitMetadata"),
    ("hoodieIndexCommitMetadata", "HoodieIndexCommitMetadata"), ("stateTransitionTime", "string"),
]
#: ``createMetaWrapper`` (0.14/0.15): the entry field holding a state file's content, and whether that content is
#: the v6 JSON commit metadata (converted to its Avro record) rather than an Avro file.
V6_ENTRY_FIELD = {
    ("commit", "INFLIGHT"): ("hoodieCommitMetadata", True), ("commit", "COMPLETED"): ("hoodieCommitMetadata", True),
    ("deltacommit", "INFLIGHT"): ("hoodieCommitMetadata", True),
    ("deltacommit", "COMPLETED"): ("hoodieCommitMetadata", True),
    ("replacecommit", "REQUESTED"): ("hoodieRequestedReplaceMetadata", False),
    ("replacecommit", "INFLIGHT"): ("HoodieInflightReplaceMetadata", True),
    ("replacecommit", "COMPLETED"): ("hoodieReplaceCommitMetadata", True),
    ("clean", "REQUESTED"): ("hoodieCleanerPlan", False), ("clean", "INFLIGHT"): ("hoodieCleanerPlan", False),
    ("clean", "COMPLETED"): ("hoodieCleanMetadata", False),
    ("rollback", "COMPLETED"): ("hoodieRollbackMetadata", False),
    ("savepoint", "COMPLETED"): ("hoodieSavePointMetadata", False),
    ("compaction", "REQUESTED"): ("hoodieCompactionPlan", False),
    ("logcompaction", "REQUESTED"): ("hoodieCompactionPlan", False),
}
_STATE_ORDER = ("REQUESTED", "INFLIGHT", "COMPLETED")


def _full_name(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _named_types(schema, namespace: str | None, out: dict[str, dict]) -> dict[str, dict]:
    """Every named type defined in ``schema``, by short and full name."""
    if isinstance(schema, list):
        for s in schema:
            _named_types(s, namespace, out)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "enum", "fixed"):
            full = _full_name(schema["name"], schema.get("namespace", namespace))
            out[full] = out[full.rsplit(".", 1)[-1]] = schema
            for f in schema.get("fields", []):
                _named_types(f["type"], full.rpartition(".")[0], out)
        elif kind in ("array", "map"):
            _named_types(schema.get("items", schema.get("values")), namespace, out)
    return out


def _without_redefinitions(schema, namespace: str | None, seen: set[str]):
    """``schema`` with every named type already defined (in ``seen``) replaced by a reference to it."""
    if isinstance(schema, list):
        return [_without_redefinitions(s, namespace, seen) for s in schema]
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind in ("record", "enum", "fixed"):
        full = _full_name(schema["name"], schema.get("namespace", namespace))
        if full in seen:
            return full
        seen.add(full)
        ns = full.rpartition(".")[0]
        if kind != "record":
            return schema
        return {**schema, "name": full, "fields": [{**f, "type": _without_redefinitions(f["type"], ns, seen)}
                                                   for f in schema["fields"]]}
    if kind == "array":
        return {**schema, "items": _without_redefinitions(schema["items"], namespace, seen)}
    if kind == "map":
        return {**schema, "values": _without_redefinitions(schema["values"], namespace, seen)}
    return schema


def avro_file_schemas(*folders: Path) -> dict[str, dict]:
    """Record schemas embedded in the Avro timeline files of ``folders``, by full name: Hudi's own schemas."""
    out: dict[str, dict] = {}
    for folder in folders:
        for p in sorted(folder.iterdir()):
            if p.is_file() and p.read_bytes()[:4] == b"Obj\x01":
                with p.open("rb") as f:
                    schema = json.loads(fastavro.reader(f).metadata["avro.schema"])
                out.setdefault(_full_name(schema["name"], schema.get("namespace")), schema)
    return out


def archived_meta_entry_schema(known: dict[str, dict]) -> dict:
    """``HoodieArchivedMetaEntry`` with the nested records taken from ``known``.

    A record type without a known schema is an empty placeholder of the same name: no entry written here uses
    one, and a null union branch encodes to the same bytes whatever the record's fields.
    """
    seen: set[str] = set()
    fields = []
    for name, kind in ARCHIVED_META_ENTRY_FIELDS:
        if kind == "int":
            fields.append({"name": name, "type": ["int", "null"], "default": 1})
            continue
        if kind != "string":
            full = f"{NAMESPACE}.{kind}"
            kind = _without_redefinitions(known.get(full, {"type": "record", "name": full, "fields": []}),
                                          NAMESPACE, seen)
        fields.append({"name": name, "type": ["null", kind], "default": None})
    return {"type": "record", "name": "HoodieArchivedMetaEntry", "namespace": NAMESPACE, "fields": fields}


def json_to_avro(value, schema, named: dict[str, dict]):
    """A v6 JSON commit metadata value as the Avro datum of ``schema`` (Jackson's ``convertValue`` to the Avro
    class: fields missing from the JSON are null, JSON fields missing from the schema are dropped)."""
    if isinstance(schema, list):  # Hudi's unions are [null, T] or [T, null]
        return None if value is None else json_to_avro(value, next(s for s in schema if s != "null"), named)
    if isinstance(schema, str):  # a primitive or a reference to a named type
        schema = named.get(schema, {"type": schema})
    kind = schema["type"]
    if not isinstance(kind, str) or kind in named:  # {"type": <schema>}
        return json_to_avro(value, kind, named)
    if value is None:
        return None
    if kind == "record":
        return {f["name"]: json_to_avro(value.get(f["name"]), f["type"], named) for f in schema["fields"]}
    if kind == "map":
        return {k: json_to_avro(v, schema["values"], named) for k, v in value.items()}
    if kind == "array":
        return [json_to_avro(v, schema["items"], named) for v in value]
    return {"int": int, "long": int, "float": float, "double": float, "boolean": bool, "string": str}.get(
        kind, lambda v: v)(value)


def archived_meta_entries(states: dict[str, StateFile], schema: dict, named: dict[str, dict]) -> list[dict]:
    """``createMetaWrapper`` for every state file of one instant."""
    by_field = {f["name"]: f["type"] for f in schema["fields"]}
    out = []
    for state in _STATE_ORDER:
        if state not in states:
            continue
        f = states[state]
        entry = {"commitTime": f.requested_time, "actionType": f.action, "actionState": state, "version": None,
                 "stateTransitionTime": mtime_to_instant(f.path.stat().st_mtime)}
        target = V6_ENTRY_FIELD.get((f.action, state))
        if target is not None and f.content is not None:
            field, is_json = target
            if is_json:
                entry[field] = json_to_avro(json.loads(f.content), by_field[field], named)
            else:
                with f.path.open("rb") as fh:
                    (entry[field],) = list(fastavro.reader(fh))
        out.append(entry)
    return out


def archive_v6(table: Path, k: int, schema_source: Path) -> list[str]:
    """Archive the ``k`` oldest instants into ``.commits_.archive.1_1-0-1``; their requested times.

    Hudi's archive blocks carry only the SCHEMA header; ``encode_avro_data_block`` adds an INSTANT_TIME, which
    readers of the archive ignore.
    """
    timeline = table / ".hoodie"
    instants = oldest_instants(timeline, k)
    schema = archived_meta_entry_schema(avro_file_schemas(schema_source, timeline))
    named = _named_types(schema, None, {})
    records = [e for states in instants for e in archived_meta_entries(states, schema, named)]
    block = encode_avro_data_block(records, json.dumps(schema), instants[-1]["COMPLETED"].requested_time)
    (timeline / "archived").mkdir(exist_ok=True)
    (timeline / "archived" / ".commits_.archive.1_1-0-1").write_bytes(block)
    return delete_active_files(instants)


# -- comparing two reads -----------------------------------------------------------------------------------------

def _rows(t: pa.Table) -> Counter:
    return Counter(json.dumps(r, sort_keys=True, default=repr) for r in t.to_pylist())


def assert_same_table(got: pa.Table, want: pa.Table, what: str) -> None:
    assert got.schema == want.schema, f"{what}: schemas differ\n  got:  {got.schema}\n  want: {want.schema}"
    missing, extra = _rows(want) - _rows(got), _rows(got) - _rows(want)
    assert not missing and not extra, \
        f"{what}: rows differ\n  missing: {list(missing)[:3]}\n  unexpected: {list(extra)[:3]}"


def writes(table: hoodie.HudiTable) -> list[tuple[str, str | None, str]]:
    return [(e.requested_time, e.completion_time, e.action.value)
            for e in table.timeline.completed_writes(include_archived=True)]


def incremental_windows(original: hoodie.HudiTable, k_writes: int) -> list[tuple[str | None, str | None]]:
    """Windows over the original's completed writes (completion times on v8/v9, requested times on v6) that start
    before or inside the archived ones (``k_writes`` of them): ending in the archive, spanning archive and active
    timeline, and starting at the last archived write (a stream resuming there)."""
    v8 = original.config.version >= 8
    times = [e.completion_time if v8 else e.requested_time for e in original.timeline.completed_writes()]
    last = k_writes - 1
    return [(None, times[last]), (None, times[-1]), (times[0], times[min(k_writes, len(times) - 1)]),
            (times[last], None)]


@dataclass
class Archived:
    """A fixture table and its copy with the oldest instants archived."""

    original: Path
    copy: Path
    archived: list[str]  # requested times of every archived instant, writes or not

    @property
    def what(self) -> str:
        return f"{self.copy.name} with {len(self.archived)} instants archived"

    def tables(self) -> tuple[hoodie.HudiTable, hoodie.HudiTable]:
        return hoodie.HudiTable(str(self.original)), hoodie.HudiTable(str(self.copy))

    def archived_writes(self) -> list[str]:
        active = hoodie.HudiTable(str(self.original)).timeline.active
        return [t for t in self.archived if active.get(t).is_write]


def copy_table(unzip_fixture, name: str, dest: Path) -> tuple[Path, Path]:
    """The session's unzipped table and a copy of it (modification times kept: v6 completion times are mtimes)."""
    src = unzip_fixture(name).table
    return src, Path(shutil.copytree(src, dest / src.name))


ARCHIVE_CASES = [("lsm", name, k) for name, k in LSM_CASES] + [("v6", name, k) for name, k in V6_CASES]


@pytest.fixture(params=ARCHIVE_CASES, ids=[f"{layout}-{name}-archive{k}" for layout, name, k in ARCHIVE_CASES])
def archived(request, unzip_fixture, tmp_path) -> Archived:
    """A fixture table copy whose oldest ``k`` instants were archived the way its Hudi version archives."""
    layout, name, k = request.param
    src, copy = copy_table(unzip_fixture, name, tmp_path)
    if layout == "lsm":
        return Archived(src, copy, archive_lsm(copy, k))
    return Archived(src, copy, archive_v6(copy, k, unzip_fixture(SCHEMA_SOURCE).table / ".hoodie/timeline"))


# -- archived tables read like the originals ---------------------------------------------------------------------

def test_archived_table_reads_like_original(archived: Archived) -> None:
    check_archived_table(archived)


def check_archived_table(a: Archived) -> None:
    """Timeline answers and snapshots of the archived copy equal the original's. The commit metadata of every
    write, in the order of ``completed_writes(include_archived=True)``, is what a streaming source reads."""
    original, archived = a.tables()
    what, archived_writes = a.what, a.archived_writes()
    assert archived_writes, f"{what}: the case archives no write"
    assert not any(archived.timeline.active.get(t) for t in a.archived), f"{what}: archived instants still active"

    assert writes(archived) == writes(original), f"{what}: completed writes (archive included)"
    times = [t for t, _, _ in writes(archived)]
    assert times == sorted(times), f"{what}: completed writes out of order"
    for t in times:
        assert archived.timeline.commit_metadata(t) == original.timeline.commit_metadata(t), f"{what}: metadata {t}"
    for t in archived_writes:
        assert archived.timeline.is_archived(t) and archived.timeline.is_committed(t), f"{what}: {t} not committed"

    assert_same_table(read_table(str(a.copy)), read_table(str(a.original)), f"{what}: snapshot")
    for t in archived_writes:
        assert_same_table(read_table(str(a.copy), as_of=t), read_table(str(a.original), as_of=t),
                          f"{what}: snapshot as of archived {t}")


def test_incremental_from_archive(archived: Archived) -> None:
    original, _ = archived.tables()
    for start, end in incremental_windows(original, len(archived.archived_writes())):
        assert_same_table(read_table(str(archived.copy), start=start, end=end),
                          read_table(str(archived.original), start=start, end=end),
                          f"{archived.what}: incremental ({start}, {end}]")


# -- hudi-rs on the archived copies ------------------------------------------------------------------------------

def rs_read(path: Path, options: HudiReadOptions) -> pa.Table:
    table = HudiTableBuilder.from_base_uri(str(path)).build()
    return rs_table(table.read(options), table)


def rs_incremental(path: Path, start: str | None, end: str | None) -> pa.Table:
    options = HudiReadOptions().with_query_type(HudiQueryType.Incremental)
    if start is not None:
        options = options.with_start_timestamp(start)
    if end is not None:
        options = options.with_end_timestamp(end)
    return rs_read(path, options)


def hudi_rs_windows(a: Archived) -> tuple[list, list]:
    """The incremental windows of :func:`incremental_windows`, split into those over active instants only and
    those reaching into the archive."""
    original = hoodie.HudiTable(str(a.original))
    archived_writes = a.archived_writes()
    last = original.timeline.active.get(archived_writes[-1])
    archived_until = last.completion_time if original.config.version >= 8 else last.requested_time
    windows = incremental_windows(original, len(archived_writes))
    active = [(s, e) for s, e in windows if s is not None and s >= archived_until]  # the start is exclusive
    return active, [w for w in windows if w not in active]


def test_archived_table_matches_hudi_rs(archived: Archived) -> None:
    """hudi-rs reads the archived copy like ours reads the original where it needs no archived instant."""
    what = f"{archived.what}, hudi-rs"
    latest = read_table(str(archived.original))
    assert_same_as_hudi_rs(latest, rs_read(archived.copy, HudiReadOptions()), f"{what}: snapshot")
    for t in archived.archived_writes():
        assert_same_as_hudi_rs(read_table(str(archived.original), as_of=t),
                               rs_read(archived.copy, HudiReadOptions().with_as_of_timestamp(t)),
                               f"{what}: as of archived {t}", latest=latest.schema)
    active, _ = hudi_rs_windows(archived)
    assert active, f"{what}: no window over active instants only"
    for start, end in active:
        assert_same_as_hudi_rs(read_table(str(archived.original), start=start, end=end),
                               rs_incremental(archived.copy, start, end), f"{what}: incremental ({start}, {end}]")


def test_incremental_from_archive_matches_hudi_rs(archived: Archived) -> None:
    """hudi-rs's incremental windows reaching into the archive, where it cannot see the archived instants.

    hudi-rs 0.5.0 has an opt-in ``hoodie.internal.timeline.archived.enabled``, but its loader returns no instant
    for the LSM history (a TODO in ``timeline/loader.rs``) and only parses the v6 archive's file names as instant
    file names, so it misses the archived instants' rows (it agrees with ours on the untouched original). Where
    it returns fewer rows, they must be a subset of the original's; where it returns as many, exactly them.
    """
    _, reaching = hudi_rs_windows(archived)
    for start, end in reaching:
        want = read_table(str(archived.original), start=start, end=end)
        got = rs_incremental(archived.copy, start, end)
        what = f"{archived.what}, hudi-rs: incremental ({start}, {end}]"
        if want.num_rows == got.num_rows:
            assert_same_as_hudi_rs(want, got, what)
        else:
            assert got.num_rows < want.num_rows, f"{what}: hudi-rs returns more rows than the original has"
            keys = set(want.column("_hoodie_record_key").to_pylist())
            assert set(got.column("_hoodie_record_key").to_pylist()) <= keys, what


def test_archive_beyond_savepoint(unzip_fixture, tmp_path):
    """``hoodie.archive.beyond.savepoint=true``: a savepointed write stays active while later ones are archived.

    A savepoint has the instant time of the write it pins, and Hudi starts the active timeline at the first write
    that is not savepointed (``HoodieDefaultTimeline.getFirstNonSavepointCommit``), so the archived writes after
    the savepointed one still count as completed. The savepoint files are empty here: no reader looks inside.
    """
    src, copy = copy_table(unzip_fixture, V8, tmp_path)
    timeline = copy / ".hoodie/timeline"
    savepointed, *later = oldest_instants(timeline, 3)
    history = timeline / "history"
    write_manifest(history, 1, [write_lsm_file(history, [lsm_row(i) for i in later], 0)])
    archived = delete_active_files(later)
    pinned = savepointed["COMPLETED"].requested_time
    (timeline / f"{pinned}.savepoint.inflight").write_bytes(b"")
    (timeline / f"{pinned}_29990101000000000.savepoint").write_bytes(b"")
    check_archived_table(Archived(src, copy, archived))


# -- LSM history: manifests, versions, levels --------------------------------------------------------------------

@pytest.fixture
def lsm_levels(unzip_fixture, tmp_path) -> Archived:
    """The v9 table with its 6 oldest instants archived in three level-0 files of two, the first two of which
    ``compactAndClean`` then merged into one level-1 file: manifests 1 to 4, the newest listing the level-1 file
    and the third level-0 file. The merged level-0 files stay on disk, unlisted, as does a torn file of a crashed
    archiving (unreadable): a reader listing the folder would read instants twice or fail."""
    src, copy = copy_table(unzip_fixture, V9, tmp_path)
    instants = oldest_instants(copy / ".hoodie/timeline", 8)
    rows = [lsm_row(i) for i in instants[:6]]
    history = copy / ".hoodie/timeline/history"
    level0 = [write_lsm_file(history, rows[i:i + 2], 0) for i in (0, 2, 4)]
    for version in (1, 2, 3):
        write_manifest(history, version, level0[:version])
    write_manifest(history, 4, [write_lsm_file(history, rows[:4], 1), level0[2]])
    torn = [i["COMPLETED"].requested_time for i in instants[6:]]
    (history / f"{torn[0]}_{torn[1]}_0.parquet").write_bytes(b"PAR1\x00torn")
    return Archived(src, copy, delete_active_files(instants[:6]))


def archived_times(path: Path) -> list[str]:
    return [i.requested_time for i in hoodie.HudiTable(str(path)).timeline.archived.instants]


def test_lsm_reads_the_files_of_the_current_manifest_only(lsm_levels):
    assert archived_times(lsm_levels.copy) == lsm_levels.archived
    check_archived_table(lsm_levels)


@pytest.mark.parametrize("version_file", [None, b"", b"\x00\x00", b"4\x00", b"\xff\xfe4"],
                         ids=["missing", "empty", "zeros", "torn-tail", "not-utf8"])
def test_lsm_unreadable_version_file_falls_back_to_newest_manifest(lsm_levels, version_file):
    """``LSMTimeline.latestSnapshotVersion``: a missing or unparsable ``_version_`` means the highest manifest."""
    path = lsm_levels.copy / ".hoodie/timeline/history/_version_"
    if version_file is None:
        path.unlink()
    else:
        path.write_bytes(version_file)
    assert archived_times(lsm_levels.copy) == lsm_levels.archived


def test_lsm_manifest_listing_a_missing_file_is_corrupt(lsm_levels):
    history = lsm_levels.copy / ".hoodie/timeline/history"
    listed = json.loads((history / "manifest_4").read_text())["files"]
    missing = "20990101000000000_20990101000000001_0.parquet"
    write_manifest(history, 5, [f["fileName"] for f in listed] + [missing], file_len={missing: 1234})
    with pytest.raises(CorruptFileError, match=f"{missing}: listed in the LSM manifest but missing"):
        hoodie.HudiTable(str(lsm_levels.copy)).timeline.completed_writes(include_archived=True)


@pytest.mark.parametrize("name", ["../../20260307162557587_20260307162606034_0.parquet",
                                  "/tmp/20260307162557587_20260307162606034_0.parquet",
                                  "sub/20260307162557587_20260307162606034_0.parquet",
                                  "20260307162557587_20260307162606034_0.parquet/../../../hoodie.properties",
                                  "..\\20260307162557587_20260307162606034_0.parquet", 42])
def test_lsm_manifest_file_names_must_be_lsm_file_names(lsm_levels, name):
    """A manifest names files of the history folder only; anything else (a path leaving it) is rejected."""
    history = lsm_levels.copy / ".hoodie/timeline/history"
    (history / "manifest_5").write_text(json.dumps({"files": [{"fileName": name, "fileLen": 1}]}))
    (history / "_version_").write_text("5")
    with pytest.raises(CorruptFileError, match="manifest_5: manifest lists invalid file names"):
        hoodie.HudiTable(str(lsm_levels.copy)).timeline.completed_writes(include_archived=True)


@pytest.mark.parametrize("manifest", [b"{", b"[]", b'{"files": [{"name": "x"}]}', b'{"files": 3}', b"\xff"])
def test_lsm_unreadable_manifest_is_corrupt(lsm_levels, manifest):
    (lsm_levels.copy / ".hoodie/timeline/history/manifest_4").write_bytes(manifest)
    with pytest.raises(CorruptFileError, match="manifest_4: unreadable LSM manifest"):
        hoodie.HudiTable(str(lsm_levels.copy)).timeline.completed_writes(include_archived=True)


# -- v6 archive files --------------------------------------------------------------------------------------------

def _records(content: bytes) -> list[bytes]:
    """The length-prefixed records (prefix included) of a version-3 Avro data block's content."""
    pos, out = 8, []
    while pos < len(content):
        (length,) = struct.unpack_from(">i", content, pos)
        out.append(content[pos:pos + 4 + length])
        pos += 4 + length
    return out


def test_v6_archive_files_in_order_with_every_block_content_version(unzip_fixture, tmp_path):
    """The archive in two files (the archiver rolls over), the first in the oldest block content version (1: no
    record count), the second in version 3 and ending in the torn block of a crashed write, beside a file that
    is no archive file: every archived instant is found once."""
    src, copy = copy_table(unzip_fixture, V6_ROLLBACK, tmp_path)
    archived = archive_v6(copy, 2, unzip_fixture(SCHEMA_SOURCE).table / ".hoodie/timeline")
    folder = copy / ".hoodie/archived"
    (block,) = iter_blocks((folder / ".commits_.archive.1_1-0-1").read_bytes(), "archive")
    records = _records(bytes(block.content))
    first, second = records[:len(records) // 2], records[len(records) // 2:]
    (folder / ".commits_.archive.1_1-0-1").write_bytes(
        encode_block(BlockType.AVRO_DATA, block.header, struct.pack(">i", 1) + b"".join(first)))
    newer = encode_block(BlockType.AVRO_DATA, block.header, struct.pack(">ii", 3, len(second)) + b"".join(second))
    (folder / ".commits_.archive.2_1-0-1").write_bytes(newer + newer[:len(newer) // 2])
    (folder / "mergeArchivePlan").write_bytes(b"not an archive file")
    assert archived_times(copy) == archived
    check_archived_table(Archived(src, copy, archived))


def corrupt_v6_archive(table: Path) -> Path:
    """Replace the archive by a block whose SCHEMA header is no schema: its records cannot be decoded."""
    path = table / ".hoodie/archived/.commits_.archive.1_1-0-1"
    (block,) = iter_blocks(path.read_bytes(), "archive")
    path.write_bytes(encode_block(BlockType.AVRO_DATA, {**block.header, HeaderKey.SCHEMA: "{not json"},
                                  bytes(block.content)))
    return path


# -- the archive is read only when asked for ---------------------------------------------------------------------

def test_corrupt_lsm_history_is_not_read_for_active_instants(unzip_fixture, tmp_path):
    """Nothing is archived but the history is corrupt: reads within the active timeline never touch it."""
    src, copy = copy_table(unzip_fixture, V9, tmp_path)
    missing = "20260307162557587_20260307162606034_0.parquet"
    write_manifest(copy / ".hoodie/timeline/history", 1, [missing], file_len={missing: 1})
    first, *_, last = hoodie.HudiTable(str(src)).timeline.completed_writes()
    assert_same_table(read_table(str(copy)), read_table(str(src)), "snapshot")
    as_of = first.requested_time
    assert_same_table(read_table(str(copy), as_of=as_of), read_table(str(src), as_of=as_of),
                      "as of the first instant")
    window = {"start": first.completion_time, "end": last.completion_time}
    assert_same_table(read_table(str(copy), **window), read_table(str(src), **window),
                      "incremental over active instants")
    with pytest.raises(CorruptFileError, match="listed in the LSM manifest but missing"):
        hoodie.HudiTable(str(copy)).timeline.completed_writes(include_archived=True)


def test_corrupt_v6_archive_is_not_read_by_snapshots(unzip_fixture, tmp_path):
    """On v6, an instant before the active timeline is committed by its time alone (``is_archived``), so snapshot
    reads and the log-block filter never need the archive, even when instants were archived."""
    src, copy = copy_table(unzip_fixture, V6_ROLLBACK, tmp_path)
    archived = Archived(src, copy, archive_v6(copy, 2, unzip_fixture(SCHEMA_SOURCE).table / ".hoodie/timeline"))
    path = corrupt_v6_archive(copy)
    table = hoodie.HudiTable(str(copy))
    assert all(table.timeline.is_committed(t) for t in archived.archived_writes())
    assert_same_table(read_table(str(copy)), read_table(str(src)), "snapshot")
    with pytest.raises(CorruptFileError, match=f"{path.name}@0: SCHEMA header is not an Avro schema"):
        table.timeline.completed_writes(include_archived=True)


def test_v8_snapshot_needs_the_archive_for_archived_log_files(unzip_fixture, tmp_path):
    """On v8/v9 a log file joins the file slice its delta commit's completion time falls in, so a snapshot with
    log files of archived delta commits must read the archive (as Hudi's ``CompletionTimeQueryView`` does): a
    corrupt archive is then an error naming the file, never a silently different answer."""
    _, copy = copy_table(unzip_fixture, V9, tmp_path)
    archive_lsm(copy, 4)
    history = copy / ".hoodie/timeline/history"
    (name,) = json.loads((history / "manifest_1").read_text())["files"]
    (history / name["fileName"]).write_bytes(b"PAR1 not parquet PAR1")
    with pytest.raises(CorruptFileError, match=f"{name['fileName']}: unreadable LSM timeline file"):
        read_table(str(copy))
