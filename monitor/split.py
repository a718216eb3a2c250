"""A split: one file slice to read for one planned range of instants — everything a Spark task needs.

Splits cross process boundaries (the driver plans them, the state file stores them, executors read them), so
they are plain pydantic models with the exact files and sizes the planner saw: the reader builds its file
slice from the split alone, so replaying a split after a crash reads the same bytes and yields the same rows.
"""
from __future__ import annotations

import posixpath

from pydantic import BaseModel, ConfigDict

from ..hoodie.changes import SliceRange
from ..hoodie.fs_view import BaseFile, FileSlice, LogFile
from ..hoodie.logfile.format import parse_log_file_name


class LogRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    size: int


class PriorSlice(BaseModel):
    """A file group as it was just before a range that rewrote its base file (copy-on-write updates, small-file
    inserts): where that range's pre-images and its insert/update distinction come from."""

    model_config = ConfigDict(frozen=True)

    base_path: str | None = None
    base_size: int = 0
    base_instant: str = ""
    logs: list[LogRef] = []
    max_instant: str

    def file_slice(self, partition: str, file_id: str) -> FileSlice:
        """The prior slice's files as planned (its partition and file id are its split's)."""
        return _file_slice(self, partition, file_id)


class Split(BaseModel):
    """One file slice, the instants whose changes it delivers, and the instant it merges up to."""

    model_config = ConfigDict(frozen=True)

    partition: str
    file_id: str
    base_instant: str
    base_path: str | None = None
    base_size: int = 0
    logs: list[LogRef] = []
    #: requested times whose rows this split delivers; None = every row of the slice (a snapshot split)
    instants: list[str] | None = None
    max_instant: str
    #: the insert-overwrite instant that replaced this file group: every row of the slice is delivered as deleted
    replaced_by: str | None = None
    #: the slice before the range, when the range wrote a new base file for a group that existed before it
    prior: PriorSlice | None = None
    est_rows: int = 0
    est_bytes: int = 0

    @property
    def group(self) -> tuple[str, str]:
        return (self.partition, self.file_id)

    @property
    def files(self) -> list[str]:
        return ([self.base_path] if self.base_path else []) + [lf.path for lf in self.logs]

    def slice_range(self) -> SliceRange:
        """The split as the format layer reads its changes: the file slice exactly as planned (paths and sizes
        from the split, not from a new listing) and its instants."""
        prior = self.prior
        return SliceRange(_file_slice(self, self.partition, self.file_id), self.max_instant,
                          tuple(self.instants) if self.instants is not None else None, self.replaced_by,
                          prior.file_slice(self.partition, self.file_id) if prior else None,
                          prior.max_instant if prior else "")


def _file_slice(planned: Split | PriorSlice, partition: str, file_id: str) -> FileSlice:
    base = None
    if planned.base_path:
        parts = posixpath.basename(planned.base_path).split("_")
        base = BaseFile(planned.base_path, file_id, parts[1] if len(parts) > 2 else "", planned.base_instant,
                        planned.base_size)
    logs = []
    for ref in planned.logs:
        parsed = parse_log_file_name(posixpath.basename(ref.path))
        logs.append(LogFile(ref.path, file_id, parsed.instant if parsed else "", parsed.version if parsed else 0,
                            parsed.write_token if parsed else None, ref.size))
    return FileSlice(partition, file_id, planned.base_instant, base, logs)
