"""Damaged timeline input is never silent: every case below is one error naming the file, or (for a file name
that is not an instant) one warning per file and a count on the timeline.

Which names are instants is Hudi's rule: the layout's pattern (``InstantGeneratorV1/V2``) and one of the
timeline's valid extensions (``ActiveTimelineV1/V2.VALID_EXTENSIONS_IN_ACTIVE_TIMELINE``). Empty commit metadata
is Hudi's rule too: ``CommitMetadataSerDeV1/V2.deserialize`` read empty content as empty metadata, and the
file-system view still counts the instant as committed, so its files are in snapshots.
"""
from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fixture_names
from test_timeline_archived import delete_active_files, lsm_row, oldest_instants, write_lsm_file, write_manifest

from hudi_streaming import read_table
from hudi_streaming.cli.commands import main
from hudi_streaming.errors import CorruptFileError, DataLossError, InvalidTableContentError
from hudi_streaming.hoodie.config import load_table_config
from hudi_streaming.hoodie.storage import Storage
from hudi_streaming.hoodie.table import HudiTable
from hudi_streaming.hoodie.timeline import Timeline
from hudi_streaming.monitor.monitor import Cursor, MonitorOptions, StreamMonitor

V6, V9 = "mor_avro__v6_trips_8i3d", "mor_avro__v9_txns_simple_meta"
#: a completed delta commit of V9 that wrote one log file, its predecessor (completion times), and the log file
V9_INSTANT, V9_COMPLETED, V9_BEFORE = "20260307162609526", "20260307162610303", "20260307162608609"
V9_LOG = "region=eu/.c923cb31-a2d3-49c6-8f47-4be96502c239-0_20260307162609526.log.1_0-130-290"
#: V6's first delta commit, which wrote the base files of every file group
V6_FIRST = "20250618054711154"


def _timeline_only(unzip_fixture, name: str, dest: Path) -> tuple[Path, Path]:
    """A table folder with the fixture's hoodie.properties and active timeline files only (no data, no
    archive): all a timeline load reads. Returns (table root, timeline folder)."""
    src = unzip_fixture(name).table
    layout2 = (src / ".hoodie" / "timeline").is_dir()
    src_tl = src / ".hoodie" / ("timeline" if layout2 else "")
    tl = dest / ".hoodie" / ("timeline" if layout2 else "")
    tl.mkdir(parents=True)
    shutil.copy(src / ".hoodie" / "hoodie.properties", dest / ".hoodie" / "hoodie.properties")
    for f in src_tl.iterdir():
        if f.is_file() and f.name != "hoodie.properties":
            shutil.copy(f, tl / f.name)
    return dest, tl


def _load(table: Path) -> Timeline:
    storage = Storage(str(table))
    return Timeline.load(storage, load_table_config(storage))


def _copy(unzip_fixture, name: str, dest: Path) -> Path:
    shutil.copytree(unzip_fixture(name).table, dest)
    return dest


# --- file names in the timeline folder -----------------------------------------------------------------------

#: Not instant file names, and not files Hudi keeps in the timeline folder: warned about and counted.
UNRECOGNIZED = {
    V9: [
        f"{V9_INSTANT}_{V9_COMPLETED}.deltacommit.bak",   # a state Hudi does not have
        f"{V9_INSTANT}_{V9_COMPLETED}.deltacommit~",      # an editor's backup
        f"{V9_INSTANT}_{V9_COMPLETED}.DELTACOMMIT",       # extensions are case-sensitive in Hudi
        f"{V9_INSTANT}.deltacommit.REQUESTED",
        f"{V9_INSTANT}_{V9_COMPLETED}.deltacommits",      # no such action
        f"{V9_INSTANT}_{V9_COMPLETED}.compaction",        # a compaction completes as a commit: never written
        f"{V9_INSTANT}.savepoint.requested",              # a savepoint has no requested file
        f"x{V9_INSTANT}_{V9_COMPLETED}.deltacommit",
        f"{V9_INSTANT}-{V9_COMPLETED}.deltacommit",
        "hoodie.properties",                              # belongs in .hoodie/, not in layout 2's timeline folder
    ],
    V6: [
        f"{V6_FIRST}_20250618054712000.deltacommit",      # layout 2's name in a layout 1 folder
        f"{V6_FIRST}.clustering.requested",               # clustering files exist in layout 2 only
        f"{V6_FIRST}.deltacommit.inflight.1",
        "notes.txt",
    ],
}
#: Files Hudi (or the file system under it) writes into the timeline folder: never warned about.
AUXILIARY = {
    V9: [f".{V9_INSTANT}_{V9_COMPLETED}.deltacommit.crc",   # Hadoop ChecksumFileSystem
         f"{V9_INSTANT}.deltacommit.inflight.tmp",          # HoodieStorage.TMP_PATH_POSTFIX, never renamed
         "history_$folder$",                                # Hadoop/EMR folder marker
         ".hoodie-streaming-tmp-" + "0f" * 16,              # this package's writer, mid-write
         "history"],                                        # the LSM archive folder, stored as an object
    V6: ["hoodie.properties.backup", "lock", ".hoodie.properties.crc", "archived", ".aux", "metadata",
         f"{V6_FIRST}.deltacommit.tmp"],
}


@pytest.mark.parametrize("name,bad", [(n, b) for n, names in UNRECOGNIZED.items() for b in names])
def test_unrecognized_timeline_file_is_warned_once_and_counted(name, bad, unzip_fixture, tmp_path, caplog):
    table, tl = _timeline_only(unzip_fixture, name, tmp_path / "t")
    before = [e.requested_time for e in _load(table).entries]
    (tl / bad).write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="hudi_streaming.hoodie.timeline.active"):
        first, again = _load(table), _load(table)  # a stream reloads every poll
    assert first.unrecognized_files == again.unrecognized_files == (bad,)
    assert [e.requested_time for e in first.entries] == before  # Hudi ignores it: it is no instant
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and f"{tl.as_posix()}/{bad}: not an instant file name" in warnings[0]


@pytest.mark.parametrize("name,aux", [(n, a) for n, names in AUXILIARY.items() for a in names])
def test_files_hudi_keeps_in_the_timeline_folder_are_not_reported(name, aux, unzip_fixture, tmp_path, caplog):
    table, tl = _timeline_only(unzip_fixture, name, tmp_path / "t")
    (tl / aux).write_bytes(b"x")
    with caplog.at_level(logging.WARNING):
        assert _load(table).unrecognized_files == ()
    assert caplog.records == []


def test_a_renamed_completed_file_is_reported_with_the_instant_it_hides(unzip_fixture, tmp_path, caplog):
    """The audit's case: a completed file renamed out of the pattern makes its instant look pending. Hudi does
    the same (the instant is not completed), but here the name is in the log and on the timeline."""
    table, tl = _timeline_only(unzip_fixture, V9, tmp_path / "t")
    done = f"{V9_INSTANT}_{V9_COMPLETED}.deltacommit"
    (tl / done).rename(tl / f"{done}.orig")
    with caplog.at_level(logging.WARNING):
        timeline = _load(table)
    assert V9_INSTANT not in {e.requested_time for e in timeline.completed_writes()}
    assert timeline.unrecognized_files == (f"{done}.orig",)
    assert f"{done}.orig" in caplog.text


@pytest.mark.parametrize("name,bad,what", [
    (V9, f"{V9_INSTANT}_2025.deltacommit", "completion time '2025'"),
    (V9, f"{V9_INSTANT}_202603071626103030.deltacommit", "completion time '202603071626103030'"),
    (V9, f"{V9_INSTANT}_20260307162610.deltacommit", "completion time '20260307162610'"),  # 1.x: always millis
    (V9, f"2025_{V9_COMPLETED}.deltacommit", "requested time '2025'"),
    (V9, "202603071626095.deltacommit.requested", "requested time '202603071626095'"),
    (V6, "2025.deltacommit", "requested time '2025'"),
    (V6, "2025061805471115400.inflight", "requested time '2025061805471115400'"),
])
def test_an_instant_time_that_is_not_one_is_a_corrupt_file(name, bad, what, unzip_fixture, tmp_path):
    """``2025`` sorts before every real instant: taken as an instant it would reorder the timeline."""
    table, tl = _timeline_only(unzip_fixture, name, tmp_path / "t")
    (tl / bad).write_bytes(b"")
    with pytest.raises(CorruptFileError) as e:
        _load(table)
    assert str(e.value).startswith(f"{table}/{tl.relative_to(table).as_posix()}/{bad}: {what} is not an instant")


def test_seconds_granularity_requested_times_of_old_tables_are_instants(unzip_fixture, tmp_path):
    """Tables from before Hudi 0.9 have 14-digit instants (HoodieInstantTimeGenerator.SECS_INSTANT_ID_LENGTH)."""
    table, tl = _timeline_only(unzip_fixture, V6, tmp_path / "t")
    (tl / "20180101000000.deltacommit.requested").write_bytes(b"")
    assert _load(table).entries[0].requested_time == "20180101000000"


@pytest.mark.parametrize("column,value,says", [
    ("completionTime", "2025", "completion time '2025' of archived instant"),
    ("instantTime", "2025", "archived instant time '2025' is not an instant time"),
])
def test_an_archived_instant_time_that_is_not_one_is_a_corrupt_file(column, value, says, unzip_fixture, tmp_path):
    table = _copy(unzip_fixture, V9, tmp_path / "t")
    instants = oldest_instants(table / ".hoodie" / "timeline", 2)
    rows = [lsm_row(i) for i in instants]
    rows[1][column] = value
    history = table / ".hoodie" / "timeline" / "history"
    name = write_lsm_file(history, rows, 0)
    write_manifest(history, 1, [name])
    delete_active_files(instants)
    with pytest.raises(CorruptFileError) as e:
        _ = HudiTable(str(table)).timeline.archived.instants
    assert str(e.value).startswith(f"{table}/.hoodie/timeline/history/{name}: ") and says in str(e.value)


@pytest.mark.parametrize("files,read,says", [
    ({"20260307162630000.compaction.requested": {"operations": [5]}},
     lambda t: t.pending_compaction_operations(),
     "compaction operation 0 is not a record with string fileId and partitionPath"),
    ({"20260307162630000.compaction.requested": {"operations": {"fileId": "f"}}},
     lambda t: t.pending_compaction_operations(), "compaction plan has no operation list"),
    ({"20260307162630000.clean.requested": {"earliestInstantToRetain": {"timestamp": "2025"}},
      "20260307162630000_20260307162631000.clean": {}},
     lambda t: t.clean_retention(), "earliestInstantToRetain is not an instant: \"{'timestamp': '2025'}\""),
])
def test_damaged_plans_are_one_error_naming_the_plan_file(files, read, says, unzip_fixture, tmp_path):
    table, tl = _timeline_only(unzip_fixture, V9, tmp_path / "t")
    for name, content in files.items():
        (tl / name).write_text(json.dumps(content))
    with pytest.raises(CorruptFileError) as e:
        read(_load(table))
    assert str(e.value) == f"{tl}/{next(iter(files))}: {says}"


# --- commit metadata ----------------------------------------------------------------------------------------

def _stats(**stat) -> bytes:
    return json.dumps({"partitionToWriteStats": {"city=chennai": [{"fileId": "f1", **stat}]}}).encode()


#: (content of the completed instant file, error class, what the message says after the file name)
METADATA_DAMAGE = [
    (b"\x00\x01binary\xff" * 20, CorruptFileError, "neither JSON nor Avro"),
    (b'{"partitionToWriteStats": {"p": [', CorruptFileError, "neither JSON nor Avro"),           # truncated
    (b'{"extraMetadata": {"schema": "caf\xe9"}}', CorruptFileError, "neither JSON nor Avro"),    # not UTF-8
    (b"[" * 100_000 + b"]" * 100_000, CorruptFileError, "neither JSON nor Avro"),                # nested deep
    (b'{"a": ' + b"9" * 5000 + b"}", CorruptFileError, "neither JSON nor Avro"),                 # huge number
    (b"Obj\x01\x02\x16avro.schema", CorruptFileError, "not a readable Avro container"),          # truncated Avro
    (b"[]", CorruptFileError, "not a JSON object"),
    (b'{"partitionToWriteStats": []}', CorruptFileError, "at partitionToWriteStats"),
    (_stats(numWrites="many"), CorruptFileError, "numWrites: expected a count, got 'many'"),
    (_stats(numWrites=1e400), CorruptFileError, "numWrites: expected a count, got inf"),
    (_stats(totalWriteBytes=2**64), CorruptFileError, "totalWriteBytes: expected a count"),
    (_stats(numInserts=[3]), CorruptFileError, "numInserts: expected a count, got [3]"),
    (_stats(numDeletes=True), CorruptFileError, "numDeletes: expected a count, got True"),
    (json.dumps({"partitionToWriteStats": {"p": [{"fileId": 7}]}}).encode(), CorruptFileError, "fileId"),
    (_stats(fileSizeInBytes=-5), InvalidTableContentError, "fileSizeInBytes: negative count -5"),
    (_stats(logOffset=-1), InvalidTableContentError, "logOffset: negative count -1"),
    (_stats(path="/etc/passwd"), InvalidTableContentError, "path '/etc/passwd' is absolute or leaves the table"),
    (_stats(path="../other/f1_1-0-1_20250618054711154.parquet"), InvalidTableContentError, "leaves the table"),
    (_stats(partitionPath="city=chennai/../../x"), InvalidTableContentError, "partitionPath: path"),
    (json.dumps({"partitionToWriteStats": {"../x": []}}).encode(), InvalidTableContentError, "path '../x'"),
    (json.dumps({"partitionToReplaceFileIds": {"/x": ["f"]}}).encode(), InvalidTableContentError, "path '/x'"),
    (json.dumps({"extraMetadata": {"schema": "{not json"}}).encode(), CorruptFileError,
     "at extraMetadata: the writer schema is not an Avro record schema (not JSON: Expecting property name "
     "enclosed in double quotes: line 1 column 2 (char 1))"),
    (json.dumps({"extraMetadata": {"schema": "[1, 2]"}}).encode(), CorruptFileError,
     "the writer schema is not an Avro record schema (the top-level type is not a record)"),
    (json.dumps({"extraMetadata": {"schema": '{"type": "record", "name": "r", "fields": 5}'}}).encode(),
     CorruptFileError, "the writer schema is not an Avro record schema (TypeError: 'int' object is not iterable)"),
]


@pytest.mark.parametrize("content,error,says", METADATA_DAMAGE,
                         ids=[f"{i}-{c[:12]!r}" for i, (c, _, _) in enumerate(METADATA_DAMAGE)])
def test_damaged_commit_metadata_is_one_error_naming_the_file(content, error, says, unzip_fixture, tmp_path):
    table, tl = _timeline_only(unzip_fixture, V6, tmp_path / "t")
    (tl / f"{V6_FIRST}.deltacommit").write_bytes(content)
    with pytest.raises(error) as e:
        _load(table).commit_metadata(V6_FIRST)
    message = str(e.value)
    assert message.startswith(f"{table}/.hoodie/{V6_FIRST}.deltacommit: "), message
    assert says in message and "\n" not in message


@pytest.mark.parametrize("content,error,says", METADATA_DAMAGE,
                         ids=[f"{i}-{c[:12]!r}" for i, (c, _, _) in enumerate(METADATA_DAMAGE)])
def test_the_writer_schema_alone_fails_as_the_whole_metadata_does_where_it_is_damaged(content, error, says,
                                                                                       unzip_fixture, tmp_path):
    """The schema call decodes a commit's writer schema alone (Spark's schema step on a wide table): a file that
    is not metadata, or whose extra metadata is damaged, is the same one error there; damage in a write stat is
    not read by it, and the stream's planning, which decodes the whole file, still names it."""
    table, tl = _timeline_only(unzip_fixture, V6, tmp_path / "t")
    (tl / f"{V6_FIRST}.deltacommit").write_bytes(content)
    whole_file = any(w in says for w in ("neither JSON nor Avro", "not a readable Avro", "not a JSON object"))
    timeline = _load(table)
    if whole_file or "extraMetadata" in says or "writer schema" in says:
        with pytest.raises(error) as e:
            timeline.writer_schema(V6_FIRST)
        assert str(e.value).startswith(f"{table}/.hoodie/{V6_FIRST}.deltacommit: ") and says in str(e.value)
    else:
        assert timeline.writer_schema(V6_FIRST) is None
    with pytest.raises(error, match=re.escape(says)):
        timeline.commit_metadata(V6_FIRST)


@pytest.mark.parametrize("name", fixture_names())
def test_the_writer_schema_alone_equals_the_whole_metadatas_on_every_fixture_commit(name, unzip_fixture):
    """JSON (v6) and Avro (v8/v9) commit metadata: the schema-only decode gives what the whole decode gives,
    and asking for the whole metadata afterwards decodes all of it (not the schema-only value kept meanwhile)."""
    table = unzip_fixture(name).table
    alone, whole = _load(table), _load(table)
    writes = [e.requested_time for e in alone.active.completed() if e.is_write]
    for t in writes:
        assert alone.writer_schema(t) == whole.commit_metadata(t).writer_schema, t
        assert alone.commit_metadata(t) == whole.commit_metadata(t), t


def test_counts_are_read_as_jackson_reads_them(unzip_fixture, tmp_path):
    """Jackson (Hudi's JSON reader) coerces a string of digits to a long; so does this reader."""
    table, tl = _timeline_only(unzip_fixture, V6, tmp_path / "t")
    (tl / f"{V6_FIRST}.deltacommit").write_bytes(_stats(numWrites="12", fileSizeInBytes=7.0))
    (stat,) = _load(table).commit_metadata(V6_FIRST).write_stats()
    assert (stat.num_writes, stat.file_size_in_bytes) == (12, 7)


def test_an_instant_older_than_the_active_timeline_but_not_archived_is_data_loss(unzip_fixture, tmp_path):
    table, _ = _timeline_only(unzip_fixture, V6, tmp_path / "t")
    with pytest.raises(DataLossError, match=r"instant 20180101000000000 is older than the active timeline but "
                                            r"not in the archive \(\.hoodie/archived\)"):
        _load(table).commit_metadata("20180101000000000")


# --- empty commit metadata ----------------------------------------------------------------------------------

@pytest.mark.parametrize("content", [b"", b" \n\t\n"])
def test_empty_metadata_of_an_instant_whose_files_exist_is_data_loss(content, unzip_fixture, tmp_path):
    table = _copy(unzip_fixture, V9, tmp_path / "t")
    snapshot = read_table(str(table))
    (table / ".hoodie" / "timeline" / f"{V9_INSTANT}_{V9_COMPLETED}.deltacommit").write_bytes(content)
    # the instant still counts as committed, so snapshots keep its rows (Hudi's file-system view does the same)
    assert read_table(str(table)).sort_by("_hoodie_record_key").equals(
        snapshot.sort_by("_hoodie_record_key"))
    expected = (f"{table}: instant {V9_INSTANT}'s commit metadata is empty but files {V9_LOG} carry its data")
    with pytest.raises(DataLossError) as e:
        read_table(str(table), start=V9_BEFORE, end=V9_COMPLETED)
    assert str(e.value).startswith(expected)
    with pytest.raises(DataLossError) as e:  # the stream, at the instant before it
        StreamMonitor(HudiTable(str(table)), MonitorOptions()).plan_next(
            Cursor(requested="20260307162607806", completion=V9_BEFORE))
    assert str(e.value).startswith(expected)


def test_empty_metadata_of_a_v6_instant_that_wrote_base_files_is_data_loss(unzip_fixture, tmp_path):
    table = _copy(unzip_fixture, V6, tmp_path / "t")
    (table / ".hoodie" / f"{V6_FIRST}.deltacommit").write_bytes(b"")
    with pytest.raises(DataLossError, match=rf"instant {V6_FIRST}'s commit metadata is empty but files "
                                            rf"city=chennai/be2ddd3b-449a-4eda-b31d-7801310fc9d2-0_2-13-62_"
                                            rf"{V6_FIRST}\.parquet, .* carry its data"):
        read_table(str(table), start="20250618054700000", end=V6_FIRST)


def test_empty_metadata_of_an_instant_without_files_is_an_empty_commit(unzip_fixture, tmp_path, caplog):
    """Nothing carries the instant's time: Hudi's empty commit, delivered as nothing, and logged once."""
    table = _copy(unzip_fixture, V9, tmp_path / "t")
    done = "20260307162630000"
    (table / ".hoodie" / "timeline" / f"20260307162629000_{done}.deltacommit").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="hudi_streaming.hoodie.read"):
        for _ in range(2):
            assert read_table(str(table), start="20260307162623353", end=done).num_rows == 0
    assert [r.getMessage() for r in caplog.records] == [
        f"{table}: instant 20260307162629000's commit metadata is empty and no data file carries its time; read "
        "as an empty commit, as Hudi reads it"]


# --- the command line ---------------------------------------------------------------------------------------

def test_cli_reports_damaged_metadata_as_one_error_line(unzip_fixture, tmp_path, capsys):
    """Before: ``error: internal error: JSONDecodeError`` (exit 1). Bad table content is the user's to fix."""
    table = _copy(unzip_fixture, V6, tmp_path / "t")
    latest = table / ".hoodie" / "20250618054714114.deltacommit"
    md = json.loads(latest.read_bytes())
    md["extraMetadata"]["schema"] = '{"type": "record", "fields": ['
    latest.write_text(json.dumps(md))
    code = main(["read", str(table)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"error: {latest}: invalid commit metadata at extraMetadata"), err


def test_cli_reports_damaged_properties_as_one_error_line(unzip_fixture, tmp_path, capsys):
    table = _copy(unzip_fixture, V6, tmp_path / "t")
    props = table / ".hoodie" / "hoodie.properties"
    props.write_bytes(props.read_bytes() + b"hoodie.table.comment=caf\\uZZZZ\n")
    code = main(["inspect", str(table)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == (f"error: {table}/.hoodie/hoodie.properties: line 'hoodie.table.comment=caf\\\\uZZZZ': "
                   "malformed \\uxxxx escape '\\\\uZZZZ'\n")


def test_cli_shows_an_unrecognized_timeline_file_as_a_warning_line(unzip_fixture, tmp_path):
    """Run as users run it (its own process, so its logging set-up is the real one): the command succeeds and
    stderr names the file."""
    table, tl = _timeline_only(unzip_fixture, V9, tmp_path / "t")
    (tl / f"{V9_INSTANT}_{V9_COMPLETED}.deltacommit.bak").write_bytes(b"")
    done = subprocess.run([sys.executable, "-m", "hudi_streaming", "inspect", "--instants-only", str(table)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"WARNING hudi_streaming.hoodie.timeline.active: {tl}/{V9_INSTANT}_{V9_COMPLETED}.deltacommit.bak: not an "
        "instant file name, and not a file Hudi keeps in the timeline folder; ignored as Hudi ignores it, but if it "
        "is a damaged or renamed instant file, that instant is missing from the timeline"]
