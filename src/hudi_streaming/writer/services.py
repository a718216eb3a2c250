"""Table services: compaction, clean, archive, rollback, and the recovery that runs before every write.

Each service is an instant of its own with Hudi's state files and Avro plans / metadata (spec §2.2, §2.6,
§3.4–3.6, §6), and each is safe to kill at any point:

* **rollback** of a failed write: plan (``rollback.requested``) → ``rollback.inflight`` → delete the failed
  instant's base files (and, table v8/v9, its log files; v6 instead appends a rollback command block to each
  file group it appended to) → completed ``rollback`` → the failed instant's timeline files go. The failed
  write's files are found from its markers (``.hoodie/.temp/<instant>/``) and from the instant in file names.
* **compaction** (MOR): ``compaction.requested`` (the plan) → ``compaction.inflight`` → a new base file per
  planned file group, holding the merged rows of its slice (the reader's ``read_slice``, meta columns
  preserved) → completed ``commit``. A killed compaction is re-run from its plan.
* **clean** (KEEP_LATEST_COMMITS): file slices no query at or after the earliest retained commit needs are
  deleted; ``clean.requested`` / ``.inflight`` hold the cleaner plan, the completed ``clean`` its metadata.
* **archive**: completed instants older than the last ``keep_active`` writes (never past a pending instant
  or the last clean's earliest retained commit) move to the archived timeline — v6: an archive log file of
  ``HoodieArchivedMetaEntry`` records in ``.hoodie/archived/``; v8/v9: a parquet file of the LSM history
  plus a new manifest — and only then leave the active timeline (requested and inflight files first).
"""
from __future__ import annotations

import io
import json
import logging
import posixpath
import re
import struct
import time
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import OptionError
from ..hoodie.config import TableConfig, TableType
from ..hoodie.fs_view import list_data_files, parse_base_file, parse_log_file
from ..hoodie.logfile.format import CONTENT_VERSION, BlockType, HeaderKey, make_log_file_name
from ..hoodie.logfile.writer import encode_block, encode_rollback_block
from ..hoodie.slice_reader import SliceRead, align, read_slice
from ..hoodie.storage import FileInfo, Storage
from ..hoodie.table import HudiTable
from ..hoodie.timeline.active import ActiveTimeline, TimelineEntry
from ..hoodie.timeline.instant import Action, State, parse_instant_file
from ..hoodie.timeline.metadata import decode_metadata_bytes
from . import avro_meta
from .files import TableFiles, rel_path
from .index import INDEX_DIR, RecordIndex
from .timeline_io import TimelineFiles, commit_metadata, encode_commit_metadata, v6_commit_metadata_to_avro, write_stat

log = logging.getLogger(__name__)
_I32 = struct.Struct(">i")


class Writer(Protocol):
    """What the services need of the table's writer (``core.HudiWriter`` is one): its table, where its files and
    instants go, and how it writes a base file. The services depend on this and nothing else of the writer, so
    the writer can call them without the two modules depending on each other."""

    url: str
    storage_options: dict | None
    storage: Storage
    config: TableConfig
    timeline: TimelineFiles
    files: TableFiles
    auto_recover: bool
    arrow_schema: pa.Schema
    schema_json: str

    def index(self, table: HudiTable) -> RecordIndex:
        """The record index, current as of the table's latest write."""

    def restamp_index(self, current_as_of: str | None, instant: str) -> None:
        """Compaction ``instant`` kept the records and file groups of the table as of ``current_as_of``."""

    def base_file_name(self, file_id: str, task: int, instant: str) -> str:
        """The name of file group ``file_id``'s base file written by ``instant`` as write task ``task``."""

    def parquet_bytes(self, t: pa.Table) -> bytes:
        """``t`` (meta and data columns) as a base file, with the footer metadata Hudi writes."""


def _ms_since(t0: float) -> int:
    return int((time.monotonic() - t0) * 1000)


def _full(w: Writer, rel: str) -> str:
    return w.storage.full(rel)


def _rel(w: Writer, path: str) -> str:
    """A path from a plan (absolute, as Hudi writes them) back to table-relative."""
    root = w.storage.root.rstrip("/") + "/"
    for prefix in ("file:", ""):
        if path.startswith(prefix + root):
            return path[len(prefix + root):]
    return path


def _size(w: Writer, rel: str) -> int | None:
    try:
        return w.storage.size(rel)
    except FileNotFoundError:
        return None


def _requested_bytes(w: Writer, ts: str, action: str) -> bytes:
    return w.storage.read_bytes(w.timeline.path(w.timeline.requested_name(ts, action)))


# ---------------------------------------------------------------------------------------------------------------
# recovery

def recover(w: Writer) -> list[str]:
    """Finish pending rollbacks, compactions and cleans; roll back pending writes. Returns rollback instants."""
    _remove_temp_files(w)
    made = []
    # killed rollbacks first: they finish undoing writes that would otherwise look pending
    for e in ActiveTimeline.load(w.storage, w.config).pending():
        if e.instant.action is Action.ROLLBACK:
            plan = _plan_or_none(w, e.requested_time, "rollback")
            if plan is None:
                w.timeline.delete_instant(e.requested_time)  # never got its plan: nothing was done
            else:
                _execute_rollback(w, e.requested_time, plan)
    for e in ActiveTimeline.load(w.storage, w.config).pending():
        action = e.instant.action
        ts = e.requested_time
        if e.planned_as is Action.COMPACTION:
            plan = _plan_or_none(w, ts, "compaction")
            if plan is None:
                w.timeline.delete_instant(ts)
            else:
                run_compaction(w, ts, plan)
        elif action is Action.CLEAN:
            plan = _plan_or_none(w, ts, "clean")
            if plan is None:
                w.timeline.delete_instant(ts)
            else:
                _execute_clean(w, ts, plan)
        elif e.is_write:
            made.append(rollback(w, ts, e.instant.comparable_action.value))
        else:
            log.warning("%s: leaving pending %s alone (not written by this writer)", w.url, e)
    _remove_stale_markers(w)
    return made


def _remove_stale_markers(w: Writer) -> None:
    """Marker folders of instants no longer pending (a crash right after completing left them)."""
    tl = ActiveTimeline.load(w.storage, w.config)
    pending = {e.requested_time for e in tl.pending()}
    for name in w.files.marked_instants():
        if name not in pending:
            w.files.remove_markers(name)


def _plan_or_none(w: Writer, ts: str, action: str) -> dict | None:
    try:
        data = _requested_bytes(w, ts, action)
    except FileNotFoundError:
        return None
    return decode_metadata_bytes(data, f"{w.url} {ts}.{action}.requested") if data else None


def _remove_temp_files(w: Writer) -> None:
    """Temporary files of atomic writes that a crash left behind (``.<name>.tmp``)."""
    for folder in {w.config.timeline_dir, ".hoodie", ".hoodie/.aux", INDEX_DIR, w.config.archive_dir}:
        for info in w.storage.list_dir(folder):
            name = posixpath.basename(info.path)
            if name.startswith(".") and name.endswith(".tmp"):
                w.files.delete(info.path)


# ---------------------------------------------------------------------------------------------------------------
# rollback

def rollback(w: Writer, target: str, action: str) -> str:
    """Roll back the failed write ``target`` (a pending ``commit`` / ``deltacommit``); returns the rollback instant."""
    cfg = w.config
    files = list_data_files(w.storage)
    markers = w.files.markers(target)
    requests: list[dict] = []
    by_partition: dict[str, list[str]] = {}
    for info in files:
        name = posixpath.basename(info.path)
        part = posixpath.dirname(info.path)
        bf = parse_base_file(info) if not name.startswith(".") else None
        lf = parse_log_file(info) if name.startswith(".") else None
        if bf is not None and bf.instant == target:
            by_partition.setdefault(part, []).append(info.path)
        elif lf is not None and lf.instant == target:  # v8/v9: the log's own delta commit (v6: a group born then)
            by_partition.setdefault(part, []).append(info.path)
    for part, paths in sorted(by_partition.items()):
        requests.append({"partitionPath": part, "fileId": "", "latestBaseInstant": "",
                         "filesToBeDeleted": [_full(w, p) for p in sorted(paths)], "logBlocksToBeDeleted": {}})
    if cfg.version < 8:
        # v6: every log file the failed write appended to gets a rollback command block in its file group
        appended: dict[tuple[str, str, str], dict[str, int]] = {}
        deleted = {p for ps in by_partition.values() for p in ps}
        for rel, io_type in markers:
            if io_type != "APPEND" or rel in deleted:
                continue
            lf = parse_log_file(_info(rel))
            size = _size(w, rel)
            if lf is None or size is None:
                continue  # never written: nothing to neutralise
            appended.setdefault((posixpath.dirname(rel), lf.file_id, lf.instant), {})[_full(w, rel)] = size
        for (part, fid, base), logs in sorted(appended.items()):
            requests.append({"partitionPath": part, "fileId": fid, "latestBaseInstant": base,
                             "filesToBeDeleted": [], "logBlocksToBeDeleted": logs})
    plan = {"instantToRollback": {"commitTime": target, "action": action}, "RollbackRequests": requests,
            "version": 1}
    ts = w.timeline.new_time()
    w.timeline.write_requested(ts, "rollback", avro_meta.encode_avro(avro_meta.ROLLBACK_PLAN, plan))
    return _execute_rollback(w, ts, plan)


def _info(rel: str) -> FileInfo:
    return FileInfo(rel, 0, None)


def _execute_rollback(w: Writer, ts: str, plan: dict) -> str:
    t0 = time.monotonic()
    cfg = w.config
    target = plan["instantToRollback"]["commitTime"]
    action = plan["instantToRollback"]["action"]
    w.timeline.write_inflight(ts, "rollback")
    partitions: dict[str, dict] = {}
    total = 0
    listing = None
    for req in plan.get("RollbackRequests") or []:
        part = req["partitionPath"]
        pm = partitions.setdefault(part, {"partitionPath": part, "successDeleteFiles": [], "failedDeleteFiles": [],
                                          "rollbackLogFiles": {}, "logFilesFromFailedCommit": {}})
        for path in req.get("filesToBeDeleted") or []:
            w.files.delete(_rel(w, path))
            pm["successDeleteFiles"].append(path)
            total += 1
        logs = req.get("logBlocksToBeDeleted") or {}
        if logs and cfg.version < 8:
            if listing is None:
                listing = list_data_files(w.storage)
            fid, base = req["fileId"], req["latestBaseInstant"]
            version = 1 + max((lf.version for lf in map(parse_log_file, listing) if lf is not None
                               and lf.file_id == fid and lf.instant == base and posixpath.dirname(lf.path) == part),
                              default=0)
            name = make_log_file_name(fid, base, version, "1-0-1")
            rel = rel_path(part, name)
            block = encode_rollback_block(ts, target)
            w.files.put(rel, block)
            pm["rollbackLogFiles"][_full(w, rel)] = len(block)
            pm["logFilesFromFailedCommit"].update(logs)
    md = {"startRollbackTime": ts, "timeTakenInMillis": _ms_since(t0), "totalFilesDeleted": total,
          "commitsRollback": [target], "partitionMetadata": partitions, "version": 1,
          "instantsRollback": [{"commitTime": target, "action": action}]}
    w.timeline.write_completed(ts, "rollback", avro_meta.encode_avro(avro_meta.ROLLBACK_METADATA, md))
    w.timeline.delete_instant(target)
    w.files.remove_markers(target)
    return ts


# ---------------------------------------------------------------------------------------------------------------
# compaction

def compact(w: Writer) -> str | None:
    """Schedule and run a compaction of every file group whose latest slice has log files (MOR only)."""
    if w.config.table_type is not TableType.MERGE_ON_READ:
        return None
    if w.auto_recover:
        recover(w)
    table = HudiTable(w.url, w.storage_options)
    w.index(table)  # current before the compaction, so that it can be restamped after it
    slices = [s for s in table.file_system_view().latest_merged_slices() if s.log_files]
    if not slices:
        return None
    ops = []
    for s in slices:
        log_size = float(sum(lf.size for lf in s.log_files))
        ops.append({"baseInstantTime": s.base_instant, "deltaFilePaths": [lf.name for lf in s.log_files],
                    "dataFilePath": s.base_file.name if s.base_file else None, "fileId": s.file_id,
                    "partitionPath": s.partition,
                    "metrics": {"TOTAL_LOG_FILES": float(len(s.log_files)), "TOTAL_IO_MB": 0.0,
                                "TOTAL_IO_READ_MB": 0.0, "TOTAL_LOG_FILES_SIZE": log_size, "TOTAL_IO_WRITE_MB": 0.0},
                    "bootstrapFilePath": None})
    plan = {"operations": ops, "extraMetadata": {}, "version": 2, "strategy": None, "preserveHoodieMetadata": True,
            "missingSchedulePartitions": []}
    ts = w.timeline.new_time()
    w.timeline.write_requested(ts, "compaction", avro_meta.encode_avro(avro_meta.COMPACTION_PLAN, plan))
    return run_compaction(w, ts, plan)


def run_compaction(w: Writer, ts: str, plan: dict) -> str:
    """Execute (or re-execute, after a crash) the compaction planned at ``ts``."""
    w.timeline.write_inflight(ts, "compaction")
    # files a killed run of this compaction left behind are not committed; start over
    for info in list_data_files(w.storage):
        bf = parse_base_file(info) if not posixpath.basename(info.path).startswith(".") else None
        if bf is not None and bf.instant == ts:
            w.files.delete(info.path)
    table = HudiTable(w.url, w.storage_options)
    latest = {(s.partition, s.file_id): s for s in table.file_system_view().latest_merged_slices()}
    max_instant = table.timeline.latest_write_time()
    req = SliceRead(table, table.arrow_schema(), max_instant)
    stats: dict[str, list[dict]] = {}
    for task, op in enumerate(plan.get("operations") or []):
        part, fid = op.get("partitionPath") or "", op["fileId"]
        s = latest.get((part, fid))
        if s is None:
            continue
        t0 = time.monotonic()
        rows = align(read_slice(req, s), w.arrow_schema)
        name = w.base_file_name(fid, task, ts)
        rows = rows.set_column(rows.schema.get_field_index("_hoodie_file_name"), "_hoodie_file_name",
                               pa.repeat(pa.scalar(name, pa.string()), rows.num_rows))
        data = w.parquet_bytes(rows)
        rel = rel_path(part, name)
        w.files.mark(ts, part, name, "CREATE")
        w.files.put(rel, data)
        log_size = sum(lf.size for lf in s.log_files)
        stats.setdefault(part, []).append(write_stat(
            fileId=fid, path=rel, prevCommit=s.base_instant, numWrites=rows.num_rows, totalWriteBytes=len(data),
            partitionPath=part, totalLogRecords=0, totalUpdatedRecordsCompacted=0, totalLogBlocks=0,
            fileSizeInBytes=len(data), prevBaseFile=s.base_file.name if s.base_file else None,
            runtimeStats={"totalScanTime": _ms_since(t0), "totalCreateTime": 0, "totalUpsertTime": 0},
            totalLogFilesCompacted=len(s.log_files), totalLogSizeCompacted=log_size))
    md = commit_metadata(stats, operation="COMPACT", schema=w.schema_json, compacted=True)
    w.timeline.write_completed(ts, "compaction", encode_commit_metadata(md, w.config.timeline_layout))
    w.files.remove_markers(ts)
    w.restamp_index(max_instant, ts)
    return ts


# ---------------------------------------------------------------------------------------------------------------
# clean

def clean(w: Writer, retain_commits: int = 10) -> str | None:
    """KEEP_LATEST_COMMITS: delete the file slices that no query as of the last ``retain_commits`` completed
    writes needs. Returns the clean instant, or None when there is nothing to delete."""
    if retain_commits < 1:
        raise OptionError("retain_commits must be at least 1")
    if w.auto_recover:
        recover(w)
    table = HudiTable(w.url, w.storage_options)
    writes = table.timeline.completed_writes()
    if len(writes) <= retain_commits:
        return None
    earliest = writes[-retain_commits]
    view = table.file_system_view()
    to_delete: dict[str, list[str]] = {}
    for (part, _fid), slices in sorted(view.groups.items()):
        slices = sorted(slices, key=lambda s: s.base_instant)
        keep_from = None
        for i, s in enumerate(slices):
            if s.base_instant <= earliest.requested_time:
                keep_from = i
        if not keep_from:
            continue
        for s in slices[:keep_from]:
            to_delete.setdefault(part, []).extend(s.files)
    if not to_delete:
        return None
    plan = {"earliestInstantToRetain": {"timestamp": earliest.requested_time, "action": earliest.action.value,
                                        "state": "COMPLETED"},
            "policy": "KEEP_LATEST_COMMITS", "filesToBeDeletedPerPartition": {}, "version": 2,
            "filePathsToBeDeletedPerPartition": {
                part: [{"filePath": _full(w, p), "isBootstrapBaseFile": False} for p in paths]
                for part, paths in to_delete.items()},
            "partitionsToBeDeleted": []}
    ts = w.timeline.new_time()
    data = avro_meta.encode_avro(avro_meta.CLEANER_PLAN, plan)
    w.timeline.write_requested(ts, "clean", data)
    return _execute_clean(w, ts, plan, last_completed=writes[-1].requested_time)


def _execute_clean(w: Writer, ts: str, plan: dict, last_completed: str | None = None) -> str:
    t0 = time.monotonic()
    w.timeline.write_inflight(ts, "clean", avro_meta.encode_avro(avro_meta.CLEANER_PLAN, plan))
    partitions = {}
    total = 0
    for part, infos in (plan.get("filePathsToBeDeletedPerPartition") or {}).items():
        names, ok = [], []
        for info in infos:
            rel = _rel(w, info["filePath"])
            names.append(posixpath.basename(rel))
            w.files.delete(rel)  # already gone after a crash and re-run: still cleaned
            ok.append(posixpath.basename(rel))
            total += 1
        partitions[part] = {"partitionPath": part, "policy": plan.get("policy") or "KEEP_LATEST_COMMITS",
                            "deletePathPatterns": names, "successDeleteFiles": ok, "failedDeleteFiles": [],
                            "isPartitionDeleted": False}
    if last_completed is None:
        writes = ActiveTimeline.load(w.storage, w.config).completed_writes()
        last_completed = writes[-1].requested_time if writes else ""
    earliest = (plan.get("earliestInstantToRetain") or {}).get("timestamp") or ""
    md = {"startCleanTime": ts, "timeTakenInMillis": _ms_since(t0), "totalFilesDeleted": total,
          "earliestCommitToRetain": earliest, "lastCompletedCommitTimestamp": last_completed,
          "partitionMetadata": partitions, "version": 2, "bootstrapPartitionMetadata": {}}
    w.timeline.write_completed(ts, "clean", avro_meta.encode_avro(avro_meta.CLEAN_METADATA, md))
    return ts


# ---------------------------------------------------------------------------------------------------------------
# archive

def archive(w: Writer, keep_active: int = 20) -> list[str]:
    """Move completed instants older than the last ``keep_active`` completed writes to the archived timeline.

    Never archives past the earliest pending instant, nor past the earliest commit the last clean retained.
    Returns the requested times archived.
    """
    if keep_active < 1:
        raise OptionError("keep_active must be at least 1")
    if w.auto_recover:
        recover(w)
    cfg = w.config
    tl = ActiveTimeline.load(w.storage, cfg)
    writes = tl.completed_writes()
    if len(writes) <= keep_active:
        return []
    cutoff = writes[-keep_active].requested_time
    pending = tl.pending()
    if pending:
        cutoff = min(cutoff, pending[0].requested_time)
    cleans = [e for e in tl.completed() if e.instant.action is Action.CLEAN]
    if cleans:
        md = _completed_content(w, tl, cleans[-1])
        retained = decode_metadata_bytes(md, "clean").get("earliestCommitToRetain") if md else None
        if retained:
            cutoff = min(cutoff, retained)
    victims = [e for e in tl.completed() if e.requested_time < cutoff]
    if not victims:
        return []
    if cfg.timeline_layout >= 2:
        _archive_lsm(w, tl, victims)
    else:
        _archive_v6(w, tl, victims)
    for e in victims:  # oldest first: the active timeline stays a suffix of the history
        w.timeline.delete_instant(e.requested_time)
    return [e.requested_time for e in victims]


def _file_of(w: Writer, tl: ActiveTimeline, entry: TimelineEntry, state: State) -> str | None:
    for name in entry.files:
        inst = parse_instant_file(name, w.config.timeline_layout)
        if inst is not None and inst.state is state:
            return f"{w.config.timeline_dir}/{name}"
    return None


def _completed_content(w: Writer, tl: ActiveTimeline, entry: TimelineEntry) -> bytes:
    rel = _file_of(w, tl, entry, State.COMPLETED)
    return w.storage.read_bytes(rel) if rel else b""


def _requested_content(w: Writer, tl: ActiveTimeline, entry: TimelineEntry) -> bytes | None:
    rel = _file_of(w, tl, entry, State.REQUESTED)
    if rel is None:
        return None
    data = w.storage.read_bytes(rel)
    return data or None


def _archive_lsm(w: Writer, tl: ActiveTimeline, victims: list[TimelineEntry]) -> None:
    folder = w.config.archive_dir
    rows: dict[str, list[Any]] = {"instantTime": [], "completionTime": [], "action": [], "metadata": [], "plan": [],
                                  "version": []}
    for e in victims:
        rows["instantTime"].append(e.requested_time)
        rows["completionTime"].append(e.completion_time)
        rows["action"].append(e.instant.action.value)
        rows["metadata"].append(_completed_content(w, tl, e))
        rows["plan"].append(_requested_content(w, tl, e))
        rows["version"].append(1)
    schema = pa.schema([("instantTime", pa.string()), ("completionTime", pa.string()), ("action", pa.string()),
                        ("metadata", pa.binary()), ("plan", pa.binary()),
                        pa.field("version", pa.int32(), nullable=False)],
                       metadata={b"parquet.avro.schema": avro_meta.schema_json(avro_meta.LSM_TIMELINE_INSTANT).encode(),
                                 b"writer.model.name": b"avro"})
    t = pa.table(rows, schema=schema)
    sink = io.BytesIO()
    pq.write_table(t, sink, compression="snappy")
    name = f"{victims[0].requested_time}_{victims[-1].requested_time}_0.parquet"
    data = sink.getvalue()
    w.storage.write_bytes_atomic(f"{folder}/{name}", data)
    version, files = _lsm_manifest(w, folder)
    files = [f for f in files if f["fileName"] != name] + [{"fileName": name, "fileLen": len(data)}]
    manifest = json.dumps({"files": files}, indent=2, separators=(",", " : "))
    w.storage.write_bytes_atomic(f"{folder}/manifest_{version + 1}", manifest.encode())
    w.storage.write_bytes_atomic(f"{folder}/_version_", str(version + 1).encode())


def _lsm_manifest(w: Writer, folder: str) -> tuple[int, list[dict]]:
    try:
        version = int(w.storage.read_bytes(f"{folder}/_version_").decode().strip())
    except (FileNotFoundError, ValueError):
        nums = [int(m.group(1)) for i in w.storage.list_dir(folder)
                if (m := re.search(r"/manifest_(\d+)$", i.path))]
        version = max(nums, default=0)
    if version == 0:
        return 0, []
    try:
        return version, list(json.loads(w.storage.read_bytes(f"{folder}/manifest_{version}"))["files"])
    except FileNotFoundError:
        return version, []


def _archive_v6(w: Writer, tl: ActiveTimeline, victims: list[TimelineEntry]) -> None:
    folder = w.config.archive_dir
    records = []
    for e in victims:
        action = e.instant.action.value
        rec = {"commitTime": e.requested_time, "actionType": action, "version": 1, "actionState": "COMPLETED",
               "stateTransitionTime": e.completion_time}
        content = _completed_content(w, tl, e)
        md = decode_metadata_bytes(content, f"{w.url} {e}") if content else {}
        if action in ("commit", "deltacommit"):
            rec["hoodieCommitMetadata"] = v6_commit_metadata_to_avro(md)
        elif action == "clean":
            rec["hoodieCleanMetadata"] = md
        elif action == "rollback":
            rec["hoodieRollbackMetadata"] = md
        else:
            continue
        records.append(rec)
        if e.is_compaction:  # the plan too, as the 0.x archiver keeps it (a REQUESTED compaction entry)
            plan = _requested_content(w, tl, e)
            if plan:
                records.append({"commitTime": e.requested_time, "actionType": "compaction", "version": 1,
                                "actionState": "REQUESTED",
                                "hoodieCompactionPlan": decode_metadata_bytes(plan, f"{w.url} {e} plan")})
    schema = avro_meta.ARCHIVED_META_ENTRY
    parts = [_I32.pack(CONTENT_VERSION), _I32.pack(len(records))]
    for r in records:
        body = avro_meta.encode_record(schema, r)
        parts += [_I32.pack(len(body)), body]
    block = encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: avro_meta.schema_json(schema)}, b"".join(parts))
    existing = [int(m.group(1)) for i in w.storage.list_dir(folder)
                if (m := re.match(r"^\.commits_\.archive\.(\d+)", posixpath.basename(i.path)))]
    n = max(existing, default=0) + 1
    w.storage.write_bytes_atomic(f"{folder}/.commits_.archive.{n}_1-0-1", block)
