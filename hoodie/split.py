"""A split: one file slice, exactly as planned, and the instants whose changes reading it delivers.

The one shape a planned unit of work has from the planner to the reader (as hudi-rs hands one ``FileSlice``
from planning to reading): the monitor plans it from the file system view's slices, the stream's state stores it
(``state.records`` is its serialisation), Spark's tasks carry it pickled, and :func:`.changes.change_pieces`
reads it. It names its files with the sizes the planner saw, so replaying a split after a crash reads the same
bytes and yields the same rows; a cleaner that removed or truncated one is found before reading
(``planned_files.verify_files``).
"""
from __future__ import annotations

from dataclasses import dataclass

from .fs_view import FileSlice


@dataclass(frozen=True)
class Split:
    """One file slice and the instants whose changes it gives, up to ``max_instant`` (a requested time).

    ``instants`` None means every row of the slice (a snapshot); ``replaced_by`` names the insert overwrite that
    replaced the file group (every row of the slice is then deleted); ``prior`` is the file group as it was just
    before a range that rewrote its base file (copy-on-write updates, small-file inserts), merged up to
    ``prior_max_instant``: where that range's pre-images and its insert/update distinction come from.
    ``rows`` names rows given with the split, delivered as deletes at its instant instead of reading its (empty)
    slice: what a stream reconciling a restore emits for keys the restore took away (``streaming.reconcile``).
    ``est_rows`` bounds the rows reading it yields (the row limits rely on it) and ``est_bytes`` is the size of
    the files reading it opens (the byte limits and task packing), both as the planner worked them out.
    ``est_rows`` None: the planner could not bound the rows from write stats (a whole slice with files of archived
    commits) and opened no file to find out; the stream's driver reads the bound from the files only when a row
    limit needs it (``streaming.admission.unbounded_ahead``). Reading a split never needs its bound.
    """

    slice: FileSlice
    max_instant: str
    instants: tuple[str, ...] | None = None
    replaced_by: str | None = None
    prior: FileSlice | None = None
    prior_max_instant: str = ""
    est_rows: int | None = 0
    est_bytes: int = 0
    rows: str | None = None

    @property
    def partition(self) -> str:
        return self.slice.partition

    @property
    def file_id(self) -> str:
        return self.slice.file_id

    @property
    def group(self) -> tuple[str, str]:
        """The file group: a task reads all of a group's splits, in order (per-key order)."""
        return (self.slice.partition, self.slice.file_id)

    @property
    def files(self) -> list[str]:
        """The slice's files (not the prior slice's)."""
        return self.slice.files

    @property
    def where(self) -> str:
        """The file group and instants, for error messages."""
        return (f"file group {self.slice.partition}/{self.slice.file_id} (instants "
                f"{list(self.instants or ['snapshot'])[:3]})")

    @property
    def delivered_instants(self) -> tuple[str, ...]:
        """The instants whose changes the split delivers: a snapshot is delivered as of its last instant."""
        return (self.replaced_by,) if self.replaced_by else self.instants or (self.max_instant,)

    @property
    def rewrote_base(self) -> bool:
        """Whether the range wrote the slice's base file (copy-on-write updates, compaction, clustering)."""
        return (self.slice.base_file is not None and self.instants is not None
                and self.slice.base_instant in self.instants)
