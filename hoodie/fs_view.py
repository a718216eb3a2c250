"""File groups and file slices: which base and log files make up the table as of an instant.

A file group is every file with one (partition, fileId); a file slice is one base file (optional) plus the
log files applied on top of it. The rules differ by table version (spec §8.4): v6 log files name their
slice's base instant, v8/v9 log files name their own delta commit and join the slice by completion time.
A pending compaction opens a new, empty slice whose reads must merge with the previous one; file groups
replaced by clustering or insert-overwrite disappear at the replacing instant.
"""
from __future__ import annotations

import bisect
import posixpath
import re
from dataclasses import dataclass, field

from .config import TableConfig
from .logfile.format import log_sort_key, parse_log_file_name
from .storage import FileInfo, Storage
from .timeline import Timeline

_BASE_FILE = re.compile(r"^([^_]+)_([^_]+)_(\d+)\.(parquet|orc|hfile|lance)$")
PARTITION_METAFILE_PREFIX = ".hoodie_partition_metadata"


def is_checksum_file(name: str) -> bool:
    """Whether ``name`` is a Hadoop checksum file (``.<file>.crc``), which Hudi never sees.

    Hadoop's local file system writes one beside every file (``ChecksumFileSystem.getChecksumFile``), so tables
    written or copied on a laptop have them, and its listings hide them (``ChecksumFileSystem.isChecksumFile``:
    a name starting with ``.`` and ending in ``.crc``). Hudi relies on that: ``..<log file>.crc`` matches its
    unanchored log-file pattern, and would otherwise become a log file of a file group ``.<fileId>`` whose
    bytes are all one corrupt block. Only the name counts, as in Hadoop.
    """
    return name.startswith(".") and name.endswith(".crc")


@dataclass(frozen=True)
class BaseFile:
    path: str
    file_id: str
    write_token: str
    instant: str
    size: int = 0

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


@dataclass(frozen=True)
class LogFile:
    path: str
    file_id: str
    instant: str  # v6: the slice's base instant; v8/v9: the delta commit that wrote it
    version: int
    write_token: str | None
    size: int = 0

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)

    def sort_key(self) -> tuple:
        """Hudi's log file order, from the fields parsed out of its name (a view sorts every log file a few
        times; parsing the name again each time was a tenth of a wide table's planning). Never a CDC file:
        :func:`parse_log_file` leaves them out."""
        return log_sort_key(self.instant, self.version, self.write_token)


@dataclass
class FileSlice:
    partition: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None = None
    log_files: list[LogFile] = field(default_factory=list)

    @property
    def files(self) -> list[str]:
        return ([self.base_file.path] if self.base_file else []) + [lf.path for lf in self.log_files]

    @property
    def size(self) -> int:
        return (self.base_file.size if self.base_file else 0) + sum(lf.size for lf in self.log_files)


def parse_base_file(info: FileInfo) -> BaseFile | None:
    name = posixpath.basename(info.path)
    m = _BASE_FILE.match(name)
    if not m:
        return None
    return BaseFile(info.path, m.group(1), m.group(2), m.group(3), info.size)


def parse_log_file(info: FileInfo) -> LogFile | None:
    name = posixpath.basename(info.path)
    parsed = parse_log_file_name(name)
    if parsed is None or parsed.extension != "log" or parsed.cdc:
        return None
    return LogFile(info.path, parsed.file_id, parsed.instant, parsed.version, parsed.write_token, info.size)


def list_data_files(storage: Storage) -> list[FileInfo]:
    """Every file below the table root outside ``.hoodie`` (one recursive listing, cheap on object stores),
    without the Hadoop checksum files Hudi's own listings never show (:func:`is_checksum_file`)."""
    out = []
    for path, detail in storage.find().items():
        rel = path[len(storage.root):].lstrip("/") if path.startswith(storage.root) else path
        if rel.startswith(".hoodie/") or "/.hoodie/" in rel or is_checksum_file(posixpath.basename(rel)):
            continue
        mtime = detail.get("mtime")
        out.append(FileInfo(rel, int(detail.get("size") or 0), mtime))
    return out


class FileSystemView:
    """File groups of a table (or of the files some instants wrote), sliced by the timeline."""

    def __init__(self, config: TableConfig, timeline: Timeline, files: list[FileInfo]):
        """``files`` may come from any listing (the monitor lists partitions itself): checksum files and
        partition metafiles in it are skipped here, as Hudi's view never sees them."""
        self.config = config
        self.timeline = timeline
        self.groups: dict[tuple[str, str], list[FileSlice]] = {}
        base_files, log_files = [], []
        for info in files:
            name = posixpath.basename(info.path)
            if name.startswith(PARTITION_METAFILE_PREFIX) or is_checksum_file(name):
                continue
            if name.startswith("."):
                lf = parse_log_file(info)
                if lf is not None:
                    log_files.append(lf)
            else:
                bf = parse_base_file(info)
                if bf is not None:
                    base_files.append(bf)
        self._build(base_files, log_files)

    # -- construction ----------------------------------------------------------------------------------------
    def _slices(self, partition: str, file_id: str) -> list[FileSlice]:
        return self.groups.setdefault((partition, file_id), [])

    @staticmethod
    def _slice_at(slices: list[FileSlice], partition: str, file_id: str, instant: str) -> FileSlice:
        for s in slices:
            if s.base_instant == instant:
                return s
        s = FileSlice(partition, file_id, instant)
        slices.append(s)
        slices.sort(key=lambda x: x.base_instant)
        return s

    def _build(self, base_files: list[BaseFile], log_files: list[LogFile]) -> None:
        tl = self.timeline
        for bf in sorted(base_files, key=lambda b: (b.path, b.instant)):
            if not tl.is_committed(bf.instant):
                continue  # written by a pending or failed write
            part = posixpath.dirname(bf.path)
            s = self._slice_at(self._slices(part, bf.file_id), part, bf.file_id, bf.instant)
            if s.base_file is None or bf.write_token > s.base_file.write_token:
                s.base_file = bf
        for op_instant, part, file_id in tl.pending_compaction_operations():
            if (part, file_id) in self.groups:
                self._slice_at(self.groups[(part, file_id)], part, file_id, op_instant)
        for lf in sorted(log_files, key=lambda x: x.sort_key()):
            part = posixpath.dirname(lf.path)
            slices = self._slices(part, lf.file_id)
            if self.config.version < 8:
                self._slice_at(slices, part, lf.file_id, lf.instant).log_files.append(lf)
                continue
            completion = tl.completion_time(lf.instant)
            if not slices:
                target = self._slice_at(slices, part, lf.file_id, lf.instant)
            elif completion is None:
                target = slices[-1]  # pending delta commit: the latest slice (dropped later as uncommitted)
            else:
                keys = [s.base_instant for s in slices]
                i = bisect.bisect_right(keys, completion)
                target = slices[i - 1] if i else self._slice_at(slices, part, lf.file_id, lf.instant)
            target.log_files.append(lf)
        for slices in self.groups.values():
            for s in slices:
                s.log_files.sort(key=lambda x: x.sort_key())

    # -- queries ---------------------------------------------------------------------------------------------
    def partitions(self) -> list[str]:
        return sorted({p for p, _ in self.groups})

    def latest_merged_slices(self, max_instant: str | None = None,
                             partitions: set[str] | None = None) -> list[FileSlice]:
        """``getLatestMergedFileSlicesBeforeOrOn`` for every (selected) partition, in (partition, fileId) order.

        ``max_instant`` is a requested time; None means the latest completed write.
        """
        tl = self.timeline
        if max_instant is None:
            max_instant = tl.latest_write_time()
            if max_instant is None:
                return []
        replaced = tl.replaced_file_groups(max_instant)
        pending = tl.pending_compaction_times()
        out = []
        for (part, file_id), slices in sorted(self.groups.items()):
            if partitions is not None and part not in partitions:
                continue
            if (part, file_id) in replaced:
                continue
            merged = self._merged_slice(slices, max_instant, pending)
            if merged is not None:
                out.append(merged)
        return out

    def merged_slice_of(self, partition: str, file_id: str, max_instant: str) -> FileSlice | None:
        """The latest merged slice of one file group at ``max_instant``, even if a later instant replaced it."""
        slices = self.groups.get((partition, file_id))
        return self._merged_slice(slices, max_instant, self.timeline.pending_compaction_times()) if slices else None

    def _merged_slice(self, slices: list[FileSlice], max_instant: str, pending: set[str]) -> FileSlice | None:
        committed = [s for s in slices if s.base_instant <= max_instant and self._slice_committed(s, pending)]
        if not committed:
            return None
        latest = committed[-1]
        part, file_id = latest.partition, latest.file_id
        merged = FileSlice(part, file_id, latest.base_instant, latest.base_file, list(latest.log_files))
        if latest.base_instant in pending and len(committed) > 1:
            prev = committed[-2]
            merged = FileSlice(part, file_id, prev.base_instant, prev.base_file,
                               sorted(prev.log_files + latest.log_files, key=lambda x: x.sort_key()))
        if self.config.version >= 8:
            merged.log_files = [lf for lf in merged.log_files if self.timeline.is_committed(lf.instant)]
        if merged.base_file is None and not merged.log_files:
            return None
        return merged

    def _slice_committed(self, s: FileSlice, pending_compactions: set[str]) -> bool:
        if s.base_instant in pending_compactions:
            return True
        if s.base_file is not None:
            return True  # base files were filtered by commit state while building
        return self.timeline.is_committed(s.base_instant)
