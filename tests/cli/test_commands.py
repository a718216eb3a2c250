"""The ``hudi-streaming`` command line, run in-process on the real fixture tables and log files.

Expectations come from the fixtures themselves (timeline file names, data file names, the generating SQL,
Spark's gold output), not from the format layer the tool prints, so a wrong listing fails here.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import LOG_FILES
from support.s3_server import S3Server

from hudi_streaming.cli.commands import format_table, main
from hudi_streaming.hoodie.table import HudiTable

V6, V9 = "mor_avro__v6_trips_8i3d", "mor_avro__v9_txns_simple_meta"
_TIMELINE_FILE = re.compile(r"^(\d{17})(?:_(\d{17}))?\.([a-z]+)(\.requested|\.inflight)?$")
_BASE_FILE = re.compile(r"^(.+?)_\d+-\d+-\d+_\d{17}\.parquet$")
_LOG_FILE = re.compile(r"^\.(.+)_\d{17}\.log\.\d+_")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def timeline_files(table) -> dict[str, dict]:
    """requested time -> {completion, completed file} read straight from the timeline folder's file names."""
    folder = table / ".hoodie" / "timeline"
    if not folder.is_dir():
        folder = table / ".hoodie"
    out: dict[str, dict] = {}
    for p in folder.iterdir():
        m = _TIMELINE_FILE.match(p.name)
        if m:
            entry = out.setdefault(m.group(1), {"completion": None, "completed_file": None})
            if m.group(4) is None:  # no state suffix: the completed file
                entry["completion"], entry["completed_file"] = m.group(2), p
    return out


def file_group_ids(table) -> set[str]:
    ids = set()
    for p in table.rglob("*"):
        if ".hoodie" in p.relative_to(table).parts or not p.is_file():
            continue
        m = _BASE_FILE.match(p.name) or _LOG_FILE.match(p.name)
        if m:
            ids.add(m.group(1))
    return ids


def line_starting(out: str, prefix: str) -> str:
    lines = [ln for ln in out.splitlines() if ln.startswith(prefix)]
    assert len(lines) == 1, f"expected one line starting with {prefix!r}, got {lines}\n{out}"
    return lines[0]


def cells(line: str) -> list[str]:
    """The cells of an aligned table row (cells are separated by at least two spaces)."""
    return re.split(r"\s{2,}", line.strip())


def assert_one_line_error(code: int, out: str, err: str, expected: str) -> None:
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert expected in err
    assert "Traceback" not in err


# --- inspect TABLE_URL ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [V6, V9])
def test_inspect_lists_every_instant_with_its_times(name, unzip_fixture, capsys):
    table = unzip_fixture(name).table
    code, out, err = run(capsys, "inspect", str(table))
    assert code == 0 and err == ""
    instants = timeline_files(table)
    assert len(instants) >= 2
    for requested, info in instants.items():
        row = cells(line_starting(out, requested))
        if info["completion"]:  # layout 2: the completion time is in the file name
            assert row[1] == info["completion"]
        elif info["completed_file"]:  # layout 1: the file's modification time stands in, starred
            mtime = os.stat(info["completed_file"]).st_mtime
            expected = time.strftime("%Y%m%d%H%M%S", time.gmtime(mtime)) + f"{int((mtime % 1) * 1000):03d}"
            assert row[1] == expected + "*"
        else:
            assert row[1] == "-"
        assert row[3] in ({"COMPLETED"} if info["completed_file"] else {"REQUESTED", "INFLIGHT"})


def test_inspect_header_names_the_table_layout_and_fields(unzip_fixture, capsys):
    code, out, _ = run(capsys, "inspect", str(unzip_fixture(V9).table))
    assert code == 0
    assert cells(line_starting(out, "table "))[1].startswith("v9_txns_mor_simple_meta")
    assert cells(line_starting(out, "type "))[1] == "MERGE_ON_READ"
    assert cells(line_starting(out, "version "))[1] == "9"
    assert cells(line_starting(out, "timeline layout "))[1].startswith("2")
    assert cells(line_starting(out, "record key "))[1] == "txn_id"
    assert cells(line_starting(out, "partition fields "))[1] == "region"
    assert cells(line_starting(out, "ordering fields "))[1] == "txn_ts"
    assert cells(line_starting(out, "merge mode "))[1] == "EVENT_TIME_ORDERING"


def test_inspect_labels_compaction_and_clustering(unzip_fixture, capsys):
    table = unzip_fixture(V9).table
    code, out, _ = run(capsys, "inspect", str(table))
    assert code == 0
    # the plans in the timeline folder say which instants were planned as what
    timeline = table / ".hoodie" / "timeline"
    compaction = [p.name[:17] for p in timeline.glob("*.compaction.requested")]
    clustering = [p.name[:17] for p in timeline.glob("*.clustering.requested")]
    assert compaction and clustering
    for t in compaction:
        assert cells(line_starting(out, t))[2] == "compaction"
    for t in clustering:
        assert cells(line_starting(out, t))[2] == "clustering"
    # the insert overwrite is a replacecommit without a clustering plan: not labelled clustering
    overwrite = [p.name[:17] for p in timeline.glob("*.replacecommit.requested")]
    assert overwrite
    for t in overwrite:
        assert cells(line_starting(out, t))[2] == "replacecommit"


@pytest.mark.parametrize("name", [V6, V9])
def test_inspect_lists_every_file_group(name, unzip_fixture, capsys):
    table = unzip_fixture(name).table
    code, out, _ = run(capsys, "inspect", str(table))
    assert code == 0
    ids = file_group_ids(table)
    assert ids
    listed = {cells(ln)[1] for ln in out.split("\nFile groups:", 1)[1].splitlines()[3:]}
    assert listed == ids
    assert f"{len(ids)} group" in out


def test_inspect_slices_count_log_files(unzip_fixture, capsys):
    table = unzip_fixture(V6).table
    code, out, _ = run(capsys, "inspect", str(table))
    assert code == 0
    for log in table.rglob(".*.log.*"):
        file_id = _LOG_FILE.match(log.name).group(1)
        row = cells(next(ln for ln in out.splitlines() if f"  {file_id}  " in ln))
        assert row[3].startswith(file_id) and row[4] == "1"  # base file, one log file


def test_inspect_instants_only_and_limit(unzip_fixture, capsys):
    table = unzip_fixture(V9).table
    instants = sorted(timeline_files(table))
    code, out, _ = run(capsys, "inspect", str(table), "--instants-only", "--limit", "3")
    assert code == 0
    assert "File groups" not in out
    assert all(i not in out for i in file_group_ids(table))
    assert f"({len(instants) - 3} earlier instants not shown" in out
    assert all(cells(line_starting(out, t))[0] == t for t in instants[-3:])
    assert not any(ln.startswith(instants[0]) for ln in out.splitlines())


# --- inspect log FILE -------------------------------------------------------------------------------------

def _log_fixture(kind: str):
    return next(p for p in LOG_FILES if p.parent.name == kind)


def block_rows(out: str) -> list[list[str]]:
    """The rows of the block table: #, offset, size, type, instant, target instant, records, schema."""
    section = out.split("\n#  ", 1)[1].splitlines()[2:]
    return [cells(ln) for ln in section if re.match(r"^\d+\s", ln)]


@pytest.mark.parametrize("kind,block_type,instant,target,records", [
    ("valid_log_avro_data", "AVRO_DATA", "20250316025828811", "-", "1"),
    ("valid_log_parquet_data", "PARQUET_DATA", "20250113230424191", "-", "1"),
    # datagen.sql: the delete of rider-A, rider-C and rider-D at 20250618054714114
    ("valid_log_delete", "DELETE", "20250618054714114", "-", "3"),
    # datagen.sql: one rollback block at 20250126040936578 rolling back 20250126040826878
    ("valid_log_rollback", "COMMAND (rollback)", "20250126040936578", "20250126040826878", "-"),
])
def test_inspect_log_shows_blocks(kind, block_type, instant, target, records, capsys):
    path = _log_fixture(kind)
    code, out, err = run(capsys, "inspect", "log", str(path))
    assert code == 0 and err == ""
    rows = block_rows(out)
    assert len(rows) == 1
    index, offset, size, btype, binstant, btarget, brecords = rows[0][:7]
    assert (index, offset, int(size)) == ("0", "0", path.stat().st_size)
    assert (btype, binstant, btarget, brecords) == (block_type, instant, target, records)
    assert "CORRUPT" not in out


@pytest.mark.parametrize("name", ["mor_avro__table_log_only", "mor_avro__v9_mor_nonpart_3commits"])
def test_inspect_log_record_counts_match_the_commit_metadata(name, unzip_fixture, capsys):
    """Hudi's write stats count what each log file received: numWrites data records, numDeletes keys."""
    from hudi_streaming.hoodie.table import HudiTable

    table = unzip_fixture(name).table
    timeline = HudiTable(str(table)).timeline
    stats = [s for e in timeline.completed_writes() for s in timeline.commit_metadata(e.requested_time).write_stats()
             if s.path and ".log." in s.path]
    assert any(s.num_writes > 1 for s in stats) and any(s.num_deletes for s in stats)
    for s in stats:
        code, out, _ = run(capsys, "inspect", "log", str(table / s.path))
        assert code == 0
        got = [(r[3], int(r[6])) for r in block_rows(out)]
        assert got == ([("DELETE", s.num_deletes)] if s.num_deletes else [("AVRO_DATA", s.num_writes)]), s.path


def test_inspect_log_schema_names_the_data_fields(capsys):
    code, out, _ = run(capsys, "inspect", "log", str(_log_fixture("valid_log_avro_data")))
    assert code == 0
    assert block_rows(out)[0][7].startswith("11 fields: ts, uuid, rider, driver")


def test_inspect_log_records_of_a_delete_block(capsys):
    code, out, _ = run(capsys, "inspect", "log", str(_log_fixture("valid_log_delete")), "--records", "3")
    assert code == 0
    assert "first 3 of 3 records" in out
    # the uuids of rider-A, rider-C and rider-D in datagen.sql
    for key in ("334e26e9-8355-45cc-97c6-c31daf0df330", "e96c4396-3fad-413a-a942-4cb36106d721",
                "9909a8b1-2d15-4d3d-8ec9-efc48c536a00"):
        assert cells(line_starting(out, key))[1] == "city=san_francisco"


def test_inspect_log_records_of_a_data_block(capsys):
    code, out, _ = run(capsys, "inspect", "log", str(_log_fixture("valid_log_avro_data")), "--records", "5")
    assert code == 0
    assert "first 1 of 1 record" in out
    header = cells(line_starting(out, "_hoodie_commit_time"))
    row = cells(line_starting(out, "20250316025828811  "))
    assert dict(zip(header, row))["rider"] == "rider-A"


def test_inspect_log_marks_the_corrupt_tail_block(unzip_fixture, capsys):
    table = unzip_fixture("mor_avro__table_corrupt_tail_block").table
    logs = sorted(table.rglob(".*.log.*"), key=lambda p: p.name.split("_")[1])
    assert len(logs) >= 2
    code, out, _ = run(capsys, "inspect", "log", str(logs[-1]))  # the last write left the torn tail
    assert code == 0
    rows = block_rows(out)
    assert [r[3] for r in rows] == ["AVRO_DATA", "CORRUPT !!"]
    assert int(rows[1][1]) + int(rows[1][2]) == logs[-1].stat().st_size  # the tail, up to the end of file
    assert re.search(r"^block 1: CORRUPT", out, re.M)
    code, out, _ = run(capsys, "inspect", "log", str(logs[0]))
    assert code == 0 and "CORRUPT" not in out


# --- read -------------------------------------------------------------------------------------------------

def test_read_prints_count_and_first_rows(unzip_fixture, capsys):
    fx = unzip_fixture(V9)
    gold = pq.read_table(sorted((fx.root / "gold_data").glob("*.parquet"))).num_rows
    code, out, _ = run(capsys, "read", str(fx.table), "--columns", "txn_id,region", "--limit", "2")
    assert code == 0
    assert out.splitlines()[0] == f"{gold} rows (snapshot)"
    assert cells(out.splitlines()[1]) == ["txn_id", "region"]
    assert len([ln for ln in out.splitlines() if ln.startswith("TXN-")]) == 2
    assert f"({gold - 2} more rows not shown" in out


def test_read_incremental_window(unzip_fixture, capsys):
    table = unzip_fixture(V9).table
    first = min(timeline_files(table).items())[1]["completion"]
    code, out, _ = run(capsys, "read", str(table), "--end", first, "--columns", "txn_id")
    assert code == 0
    assert out.splitlines()[0] == f"8 rows (incremental (beginning, {first}])"  # the SQL's initial 8 inserts


# --- errors -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["inspect"], ["inspect", "log"], ["read"]])
def test_nonexistent_path_is_one_line_error(argv, tmp_path, capsys):
    missing = str(tmp_path / "no-such-table")
    code, out, err = run(capsys, *argv, missing)
    assert_one_line_error(code, out, err, f"{missing}: no such file or directory")


@pytest.mark.parametrize("argv", [["inspect"], ["read"]])
def test_directory_that_is_not_a_table_is_one_line_error(argv, tmp_path, capsys):
    (tmp_path / "data.csv").write_text("a,b\n")
    code, out, err = run(capsys, *argv, str(tmp_path))
    assert_one_line_error(code, out, err, "not a Hudi table")


def test_usage_mistakes_are_one_line_errors(capsys):
    assert_one_line_error(*run(capsys, "inspect", "a", "b", "c"), "inspect takes TABLE_URL")
    assert_one_line_error(*run(capsys, "frobnicate"), "invalid choice")
    assert_one_line_error(*run(capsys, "read", "x", "--limit", "many"), "non-negative integer")


def test_verbose_adds_the_traceback(tmp_path, capsys):
    code, _, err = run(capsys, "--verbose", "inspect", str(tmp_path))
    assert code == 2
    assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith("error: ")


# --- demo -------------------------------------------------------------------------------------------------

def test_demo_streams_a_live_table_and_checks_it(spark, capsys):
    code, out, err = run(capsys, "demo", "--commits", "4", "--keys", "80")
    assert code == 0, err
    assert "batch   0:" in out and "OK: the streamed state equals the table" in out


# --- formatting -------------------------------------------------------------------------------------------

def test_format_table_aligns_numbers_right_and_cuts_long_cells():
    text = format_table([("a", 5, None), ("bbbb", 100, "x" * 20)], ["name", "n", "note"], max_width=8)
    assert text.splitlines() == [
        "name    n  note",
        "----  ---  --------",
        "a       5  -",
        "bbbb  100  xxxxxxx…",
    ]


def test_state_shows_cursor_lag_and_uncommitted_splits(unzip_fixture, tmp_path, capsys):
    """A batch planned but not committed (the query died): the state names its splits and the table's lag."""
    import shutil

    from support.stream_sim import make_reader
    table = tmp_path / "table"
    shutil.copytree(unzip_fixture("mor_avro__v9_txns_simple_meta").table, table)
    reader = make_reader(str(table), str(tmp_path / "state"), maxSplitsPerTrigger="2")
    end = reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
    pending = reader.driver.state.pending_from(0)
    code, out, err = run(capsys, "state", str(tmp_path / "state"))
    assert code == 0 and err == ""
    assert cells(line_starting(out, "committed by the source "))[1].startswith("splits below 0 ")
    assert cells(line_starting(out, "planned, not committed by the source "))[1] == \
        f"{len(pending)} splits (next sequence {len(pending)})"
    assert "none: caught up" in out  # the snapshot planned everything up to the newest instant
    # the options its offsets are counted under (the defaults: upsert, stop on deletes)
    assert cells(line_starting(out, "row rules "))[1] == ("readMode=upsert, neither emitDeletes nor ignoreDeletes, "
                                                          "mergeType=payload_combine, deduplicationMode=none")
    rows = [ln for ln in out.splitlines() if re.match(r"\s*\d+\s+\d+\s", ln)]
    assert [int(r.split()[0]) for r in rows] == [p.seq for p in pending]
    assert end["seq"] == 2  # the batch Spark would replay first holds the first two of them


def test_state_of_a_folder_without_state_or_with_a_torn_file_is_one_line_error(tmp_path, capsys):
    assert_one_line_error(*run(capsys, "state", str(tmp_path)), "no hudi-streaming state files")
    (tmp_path / "state-000000000000.json").write_text('{"format": "hudi-streaming-state"')
    assert_one_line_error(*run(capsys, "state", str(tmp_path)), "torn or not a state file")


def _spark_checkpoint(folder, batches: list[dict], committed: int) -> None:
    """A Spark checkpoint folder as Spark's OffsetSeqLog and CommitLog write it: offsets/<batch> is "v1", the
    batch metadata, then one offset per source ("-" for a source without one); commits/<batch> marks a batch
    whose output is done."""
    (folder / "offsets").mkdir(parents=True)
    (folder / "commits").mkdir()
    metadata = {"batchWatermarkMs": 0, "batchTimestampMs": 1760000000000, "conf": {}}
    for batch, offset in enumerate(batches):
        (folder / "offsets" / str(batch)).write_text("\n".join(["v1", json.dumps(metadata), "-",
                                                                 json.dumps(offset)]))
        (folder / "offsets" / f".{batch}.crc").write_bytes(b"crc")
        if batch <= committed:
            (folder / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_state_with_the_spark_checkpoint_tells_committed_from_planned(unzip_fixture, tmp_path, capsys):
    """Spark has committed batch 0 but the source hears of it only at the next batch: without the checkpoint
    the state cannot know, with it the committed splits are not listed as pending."""
    from support.stream_sim import make_reader
    table = tmp_path / "table"
    shutil.copytree(unzip_fixture(V9).table, table)
    reader = make_reader(str(table), str(tmp_path / "state"), maxSplitsPerTrigger="2")
    first = reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
    second = reader.latestOffset(first, reader.getDefaultReadLimit())
    planned = reader.driver.state.next_seq
    assert (first["seq"], second["seq"]) == (2, 4) and planned == 5
    _spark_checkpoint(tmp_path / "spark", [first, second], committed=0)  # batch 1 planned, not committed

    code, out, err = run(capsys, "state", str(tmp_path / "state"), "--checkpoint", str(tmp_path / "spark"))
    assert code == 0 and err == ""
    assert cells(line_starting(out, "committed by Spark "))[1] == "batch 0: splits below 2"
    assert cells(line_starting(out, "planned and not committed "))[1] == "3 splits (next sequence 5)"
    assert [int(ln.split()[0]) for ln in out.splitlines() if re.match(r"\s*\d+\s+\d+\s", ln)] == [2, 3, 4]

    code, out, _ = run(capsys, "state", str(tmp_path / "state"))  # the source has committed nothing yet
    assert code == 0
    assert cells(line_starting(out, "planned, not committed by the source "))[1] == "5 splits (next sequence 5)"


def test_state_with_another_streams_checkpoint_is_one_line_error(unzip_fixture, tmp_path, capsys):
    from support.stream_sim import make_reader
    reader = make_reader(str(unzip_fixture(V9).table), str(tmp_path / "state"))
    reader.latestOffset(reader.initialOffset(), reader.getDefaultReadLimit())
    _spark_checkpoint(tmp_path / "spark", [{"rec": 0, "seq": 1, "sid": "f" * 32, "v": 2}], committed=0)
    assert_one_line_error(*run(capsys, "state", str(tmp_path / "state"), "--checkpoint", str(tmp_path / "spark")),
                          f"no offset of stream {reader.driver.state.stream_id}")
    assert_one_line_error(*run(capsys, "state", str(tmp_path / "state"), "--checkpoint", str(tmp_path / "state")),
                          "not a Spark checkpoint (no offsets/ folder)")


# --- --version, storage options ---------------------------------------------------------------------------

def test_version(capsys):
    code, out, err = run(capsys, "--version")
    assert (code, out, err) == (0, f"hudi-streaming {importlib.metadata.version('hudi-streaming')}\n", "")


def test_storage_options_reach_a_table_on_s3(unzip_fixture, capsys):
    """Hadoop's S3A names, typed and mapped as the source's fs.* options (path.style.access -> addressing_style)."""
    local = unzip_fixture(V9).table
    server = S3Server()
    try:
        url = server.upload(local, "cli/v9")
        opts = [a for k, v in server.spark_options.items() for a in ("--storage-option", f"{k}={v}")]
        code, out, err = run(capsys, "inspect", url, "--instants-only", *opts)
        assert code == 0, err
        for requested in timeline_files(local):
            line_starting(out, requested)
    finally:
        server.stop()


def test_a_storage_option_s3fs_does_not_know_is_one_line_error(tmp_path, capsys):
    assert_one_line_error(*run(capsys, "inspect", str(tmp_path), "-s", "fs.s3a.impl=x"),
                          "option fs.s3a.impl is Hadoop's S3A connector's")
    assert_one_line_error(*run(capsys, "inspect", str(tmp_path), "-s", "novalue"), "expected NAME=VALUE")


# --- inspect log on files that are not log files ----------------------------------------------------------

def test_inspect_log_of_a_file_that_is_not_a_log_file_is_one_line_error(unzip_fixture, tmp_path, capsys):
    table = unzip_fixture(V9).table
    props = table / ".hoodie" / "hoodie.properties"
    assert_one_line_error(*run(capsys, "inspect", "log", str(props)), f"{props}: not a Hudi log file (the name")
    parquet = next(table.rglob("*.parquet"))
    assert_one_line_error(*run(capsys, "inspect", "log", str(parquet)), f"{parquet}: not a Hudi log file")
    # a log file's name on other content (here a parquet file's bytes): the magic is missing
    fake = tmp_path / _log_fixture("valid_log_avro_data").name
    fake.write_bytes(parquet.read_bytes())
    assert_one_line_error(*run(capsys, "inspect", "log", str(fake)), "does not start with the log magic #HUDI#")


# --- read positions ---------------------------------------------------------------------------------------

def test_read_positions_take_timestamps_and_refuse_nonsense(unzip_fixture, capsys):
    table = unzip_fixture(V9).table
    completions = sorted(i["completion"] for i in timeline_files(table).values() if i["completion"])
    # the day after the newest completion: nothing completed after it (compared as strings it was every row)
    newest = completions[-1]
    day_after = f"{newest[:4]}-{newest[4:6]}-{int(newest[6:8]) + 1:02d}"
    code, out, _ = run(capsys, "read", str(table), "--start", day_after, "--columns", "txn_id")
    assert code == 0
    assert out.splitlines()[0] == f"0 rows (incremental ({newest[:8]}000000000, latest])".replace(
        newest[:8], newest[:6] + f"{int(newest[6:8]) + 1:02d}")
    # the first completion as a timestamp reads the same window as the instant itself (the SQL's 8 inserts)
    first = completions[0]
    stamp = f"{first[:4]}-{first[4:6]}-{first[6:8]} {first[8:10]}:{first[10:12]}:{first[12:14]}.{first[14:17]}"
    code, out, _ = run(capsys, "read", str(table), "--end", stamp, "--columns", "txn_id")
    assert code == 0 and out.splitlines()[0] == f"8 rows (incremental (beginning, {first}])"
    for flag in ("--as-of", "--start", "--end"):
        assert_one_line_error(*run(capsys, "read", str(table), flag, "bogus"), f"option {flag}='bogus': expected")


# --- tail -------------------------------------------------------------------------------------------------

def test_tail_prints_each_new_instant_as_the_writer_commits_it(tmp_path, capsys, monkeypatch):
    """The project's writer commits while tail runs (from 'latest': the table's first commit is not shown);
    each instant's listing holds exactly the keys and change types that write made."""
    from hudi_streaming.monitor.feed import ChangeFeed
    from hudi_streaming.writer import create_table

    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("amount", pa.int64())])
    writer = create_table(str(tmp_path / "t"), "tailed", schema, record_key="id", ordering_field="ts", version=9)
    writer.upsert(pa.table({"id": ["a", "b"], "ts": [1, 1], "amount": [10, 20]}, schema=schema))

    started, written, failed = threading.Event(), [], []
    real_start = ChangeFeed.start_latest

    def start_then_signal(self):  # the writer waits until tail has fixed its position at 'latest'
        real_start(self)
        started.set()

    def write():
        try:
            started.wait()
            written.append((writer.upsert(pa.table({"id": ["c"], "ts": [2], "amount": [30]}, schema=schema)),
                            [("c", "insert", "30")]))
            written.append((writer.upsert(pa.table({"id": ["a", "d"], "ts": [3, 3], "amount": [11, 40]},
                                                   schema=schema)),
                            [("a", "update_postimage", "11"), ("d", "insert", "40")]))
            written.append((writer.delete(pa.table({"id": ["b"]})), [("b", "delete", "20")]))
        except Exception as e:  # reported by the test thread
            failed.append(e)
            raise

    monkeypatch.setattr(ChangeFeed, "start_latest", start_then_signal)
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    code, out, err = run(capsys, "tail", str(tmp_path / "t"), "--columns", "amount", "--interval", "0.05",
                         "--limit-batches", "3")
    thread.join()
    assert not failed and code == 0, err
    sections = out.split("\ninstant ")[1:]
    assert len(sections) == 3
    for section, (instant, expected) in zip(sections, written):
        head, header, _, *rows = section.splitlines()
        assert head.startswith(f"{instant} (completed ") and f": {len(expected)} change" in head
        assert cells(header) == ["key", "change", "amount"]
        assert sorted(tuple(cells(r)) for r in rows) == sorted(expected)


def test_tail_from_earliest_prints_the_snapshot_as_one_block_then_writes_in_visible_order(tmp_path, capsys):
    """The table as of its latest write comes first, as one block named by that write; then each write as it
    completes, in the order writes became visible (not grouped by the rows' commit times)."""
    from hudi_streaming.writer import create_table

    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("amount", pa.int64())])
    writer = create_table(str(tmp_path / "t"), "tailed", schema, record_key="id", ordering_field="ts", version=9)
    for i in range(3):  # three writes, each touching other keys: the snapshot holds rows of three commit times
        writer.upsert(pa.table({"id": [f"k{i}"], "ts": [i], "amount": [i]}, schema=schema))
    last = HudiTable(str(tmp_path / "t")).timeline.completed_writes()[-1]
    done = threading.Timer(0.5, lambda: writer.delete(pa.table({"id": ["k0"]})))
    done.start()
    code, out, err = run(capsys, "tail", str(tmp_path / "t"), "--from", "earliest", "--interval", "0.05",
                         "--limit-batches", "1")
    done.join()
    assert code == 0, err
    blocks = out.split("\n\n")[1:]
    assert blocks[0].splitlines()[0] == f"snapshot as of instant {last.completion_time}: 3 rows"
    assert sorted(cells(r)[0] for r in blocks[0].splitlines()[3:]) == ["k0", "k1", "k2"]
    head, _, _, row = blocks[1].splitlines()
    assert head.startswith("instant ") and head.endswith(": 1 change (1 delete)")
    assert cells(row)[:2] == ["k0", "delete"]


def test_read_changes_prints_the_change_feed_of_a_range(tmp_path, capsys):
    from hudi_streaming.writer import create_table

    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("amount", pa.int64())])
    writer = create_table(str(tmp_path / "t"), "changed", schema, record_key="id", ordering_field="ts", version=9)
    writer.upsert(pa.table({"id": ["a", "b"], "ts": [1, 1], "amount": [1, 2]}, schema=schema))
    writer.upsert(pa.table({"id": ["a"], "ts": [2], "amount": [10]}, schema=schema))
    first, second = (e.completion_time for e in HudiTable(str(tmp_path / "t")).timeline.completed_writes())
    code, out, err = run(capsys, "read", str(tmp_path / "t"), "--changes", "--start", first, "--columns", "amount")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"2 rows (changes ({first}, latest])"
    assert cells(lines[1])[-4:-2] == ["amount", "_change_type"]
    changes = sorted(tuple(reversed(cells(line)[-4:-2])) for line in lines[3:])
    assert changes == [("update_postimage", "10"), ("update_preimage", "1")]


def test_tail_refuses_a_bad_position(unzip_fixture, capsys):
    assert_one_line_error(*run(capsys, "tail", str(unzip_fixture(V9).table), "--from", "bogus"),
                          "option --from='bogus': expected")
