"""Writing the active timeline: instant times, state files, and the metadata they carry (spec §2, §3).

An action goes requested → inflight → completed, each state a new file in the timeline folder. The
completed file is always written last and atomically (temporary name, then rename), so a reader either sees
the instant completed with all its metadata or not at all. Layout 1 (table v6) names it ``<ts>.<action>``
and holds pretty-printed JSON commit metadata; layout 2 (v8/v9) names it ``<ts>_<completion>.<action>``
and holds an Avro object container; plans and clean / rollback metadata are Avro in both.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from ..hoodie.config import TableConfig
from ..hoodie.storage import Storage
from ..hoodie.timeline.instant import parse_instant_file
from . import avro_meta

#: Keys of a v6 (JSON) write stat, in the order Hudi 0.15 writes them (``FX:v6_trips_8i3d``).
_V6_STAT_KEYS = ["fileId", "path", "cdcStats", "prevCommit", "numWrites", "numDeletes", "numUpdateWrites",
                 "numInserts", "totalWriteBytes", "totalWriteErrors", "tempPath", "partitionPath", "totalLogRecords",
                 "totalLogFilesCompacted", "totalLogSizeCompacted", "totalUpdatedRecordsCompacted", "totalLogBlocks",
                 "totalCorruptLogBlock", "totalRollbackBlocks", "fileSizeInBytes", "minEventTime", "maxEventTime",
                 "runtimeStats"]
_V6_DELTA_KEYS = ["logVersion", "logOffset", "baseFile", "logFiles"]
_COUNTERS = {"numWrites", "numDeletes", "numUpdateWrites", "numInserts", "totalWriteBytes", "totalWriteErrors",
             "totalLogRecords", "totalLogFilesCompacted", "totalLogSizeCompacted", "totalUpdatedRecordsCompacted",
             "totalLogBlocks", "totalCorruptLogBlock", "totalRollbackBlocks", "fileSizeInBytes",
             "totalLogReadTimeMs", "numUpdates"}


# -- instant times -----------------------------------------------------------------------------------------------

def format_instant(t: dt.datetime) -> str:
    """``yyyyMMddHHmmssSSS`` of a UTC datetime."""
    return t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond // 1000:03d}"


def parse_instant(ts: str) -> dt.datetime:
    base = dt.datetime.strptime(ts[:14], "%Y%m%d%H%M%S").replace(tzinfo=dt.timezone.utc)
    ms = int(ts[14:17]) if len(ts) >= 17 else 999
    return base + dt.timedelta(milliseconds=ms)


def next_instant_time(after: str | None) -> str:
    """Now in UTC, or 1 ms after ``after`` when the clock has not passed it (instants strictly increase)."""
    now = format_instant(dt.datetime.now(dt.timezone.utc))
    if after is not None and now <= after:
        now = format_instant(parse_instant(after) + dt.timedelta(milliseconds=1))
    return now


# -- write stats and commit metadata -----------------------------------------------------------------------------

def write_stat(**values: Any) -> dict:
    """A ``HoodieWriteStat`` with every field (counters 0, the rest null) and ``values`` set."""
    stat: dict[str, Any] = {k: (0 if k in _COUNTERS else None) for k in avro_meta.WRITE_STAT_FIELDS}
    stat["prevCommit"] = "null"
    unknown = set(values) - set(stat)
    if unknown:
        raise KeyError(f"unknown write stat fields {sorted(unknown)}")
    stat.update(values)
    return stat


def commit_metadata(stats: dict[str, list[dict]], *, operation: str, schema: str | None, compacted: bool = False,
                    extra: dict[str, str] | None = None) -> dict:
    """A ``HoodieCommitMetadata`` as a plain dict (field names as both encodings spell them)."""
    extra_md = dict(extra or {})
    if schema is not None:
        extra_md = {"schema": schema, **extra_md}
    return {"partitionToWriteStats": stats, "compacted": compacted, "extraMetadata": extra_md,
            "version": None, "operationType": operation}


def encode_commit_metadata(md: dict, layout: int) -> bytes:
    """Layout 1: pretty JSON as Jackson prints it; layout 2: Avro ``HoodieCommitMetadata``."""
    if layout >= 2:
        return avro_meta.encode_avro(avro_meta.COMMIT_METADATA, md)
    out = {"partitionToWriteStats": {p: [_v6_stat(s) for s in stats]
                                     for p, stats in md["partitionToWriteStats"].items()},
           "compacted": bool(md.get("compacted")), "extraMetadata": md.get("extraMetadata") or {},
           "operationType": md.get("operationType")}
    return json.dumps(out, indent=2, separators=(",", " : ")).encode()


def _v6_stat(stat: dict) -> dict:
    keys = list(_V6_STAT_KEYS)
    if stat.get("logFiles") is not None or stat.get("logVersion") is not None:
        keys += _V6_DELTA_KEYS
    if stat.get("prevBaseFile") is not None:
        keys.append("prevBaseFile")
    return {k: stat.get(k) for k in keys}


def v6_commit_metadata_to_avro(md: dict) -> dict:
    """JSON commit metadata (layout 1) as the Avro ``HoodieCommitMetadata`` record the v6 archiver stores."""
    stats = {p: [write_stat(**{k: v for k, v in s.items() if k in avro_meta.WRITE_STAT_FIELDS}) for s in ss]
             for p, ss in (md.get("partitionToWriteStats") or {}).items()}
    return {"partitionToWriteStats": stats, "compacted": md.get("compacted"),
            "extraMetadata": {k: v for k, v in (md.get("extraMetadata") or {}).items() if v is not None},
            "version": 1, "operationType": md.get("operationType")}


# -- state files -------------------------------------------------------------------------------------------------

COMPLETES_AS = {"compaction": "commit", "logcompaction": "deltacommit", "clustering": "replacecommit"}


class TimelineFiles:
    """Creates the state files of instants in the timeline folder of one table."""

    def __init__(self, storage: Storage, config: TableConfig):
        self.storage = storage
        self.config = config
        self.folder = config.timeline_dir
        self.layout = config.timeline_layout
        self._last: str | None = None  # the newest time this object handed out

    # names
    def requested_name(self, ts: str, action: str) -> str:
        return f"{ts}.{action}.requested"

    def inflight_name(self, ts: str, action: str) -> str:
        return f"{ts}.inflight" if action == "commit" else f"{ts}.{action}.inflight"

    def completed_name(self, ts: str, action: str, completion: str | None) -> str:
        done = COMPLETES_AS.get(action, action)
        return f"{ts}_{completion}.{done}" if self.layout >= 2 else f"{ts}.{done}"

    def path(self, name: str) -> str:
        return f"{self.folder}/{name}"

    # times
    def newest_time(self) -> str | None:
        """The greatest requested or completion time in the timeline folder (and handed out so far)."""
        best = self._last
        for info in self.storage.list_dir(self.folder):
            inst = parse_instant_file(info.path.rsplit("/", 1)[-1], self.layout)
            if inst is None:
                continue
            for t in (inst.requested_time, inst.completion_time if not inst.legacy else None):
                if t and (best is None or t > best):
                    best = t
        return best

    def new_time(self) -> str:
        t = next_instant_time(self.newest_time())
        self._last = t
        return t

    def new_time_after(self, after: str) -> str:
        """A time after ``after`` and after everything handed out (completion times, mid-action)."""
        ref = max(x for x in (after, self._last) if x is not None)
        t = next_instant_time(ref)
        self._last = t
        return t

    # transitions
    def write_requested(self, ts: str, action: str, content: bytes = b"") -> None:
        self.storage.write_bytes_atomic(self.path(self.requested_name(ts, action)), content)

    def write_inflight(self, ts: str, action: str, content: bytes = b"") -> None:
        self.storage.write_bytes_atomic(self.path(self.inflight_name(ts, action)), content)

    def write_completed(self, ts: str, action: str, content: bytes) -> str:
        """Write the completed file (atomically, last); returns the completion time (layout 1: now)."""
        completion = self.new_time_after(ts)
        self.storage.write_bytes_atomic(self.path(self.completed_name(ts, action, completion)), content)
        return completion

    def instant_files(self, ts: str) -> list[str]:
        """Every timeline file of requested time ``ts`` (relative paths), requested first, completed last."""
        found = []
        for info in self.storage.list_dir(self.folder):
            name = info.path.rsplit("/", 1)[-1]
            inst = parse_instant_file(name, self.layout)
            if inst is not None and inst.requested_time == ts:
                found.append((int(inst.state), info.path))
        return [p for _, p in sorted(found)]

    def delete_instant(self, ts: str) -> None:
        """Remove an instant from the active timeline: requested and inflight files first, the completed last, so
        that a crash in between never leaves a completed instant looking pending."""
        for rel in self.instant_files(ts):
            try:
                self.storage.fs.rm(self.storage.full(rel))
            except FileNotFoundError:
                pass

