"""A split: one file slice to read for one planned range of instants — everything a Spark task needs.

Splits cross process boundaries (the driver plans them, the state file stores them, executors read them), so
they are plain pydantic models with the exact files and sizes the planner saw: the reader builds its file
slice from the split alone, so replaying a split after a crash reads the same bytes and yields the same rows.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


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
