"""The files a write or a table service puts into the table, and the markers that record them (spec §6).

Both the writes (``core``) and the table services (``services``) create data files under markers, and the
services read the markers back to find what a failed write left. Keeping the marker layout here, in one
place below both, lets the services use it without depending on the writer.
"""
from __future__ import annotations

import posixpath
import re

from ..hoodie.storage import Storage

#: Hudi's direct markers: ``<MARKER_DIR>/<instant>/<data file path>.marker.<IO type>``.
MARKER_DIR = ".hoodie/.temp"
_MARKER = re.compile(r"^(.*)\.marker\.(CREATE|MERGE|APPEND)$")


def rel_path(partition: str, name: str) -> str:
    """Table-relative path of file ``name`` in ``partition`` (the non-partitioned table's is the root)."""
    return f"{partition}/{name}" if partition else name


class TableFiles:
    """Puts and deletes table-relative files, and keeps each instant's markers, so that a crash can always be
    undone: a data file is only written after its marker."""

    def __init__(self, storage: Storage):
        self.storage = storage

    def put(self, rel: str, data: bytes) -> None:
        full = self.storage.full(rel)
        self.storage.fs.makedirs(posixpath.dirname(full), exist_ok=True)
        with self.storage.fs.open(full, "wb") as f:
            f.write(data)

    def delete(self, rel: str) -> bool:
        """Remove ``rel``; False when it was already gone (a re-run after a crash deletes what is left)."""
        try:
            self.storage.fs.rm(self.storage.full(rel))
            return True
        except FileNotFoundError:
            return False

    def mark(self, instant: str, partition: str, name: str, io_type: str) -> None:
        """Record that ``instant`` is about to write ``name`` (``io_type`` CREATE, MERGE or APPEND)."""
        full = self.storage.full(f"{MARKER_DIR}/{instant}/{rel_path(partition, name)}.marker.{io_type}")
        self.storage.fs.makedirs(posixpath.dirname(full), exist_ok=True)
        with self.storage.fs.open(full, "wb"):
            pass

    def markers(self, instant: str) -> list[tuple[str, str]]:
        """(data file path, IO type) of the markers ``instant`` left."""
        root = self.storage.full(f"{MARKER_DIR}/{instant}")
        try:
            found = self.storage.fs.find(root)
        except FileNotFoundError:
            return []
        out = []
        for path in found:
            m = _MARKER.match(path[len(root):].lstrip("/"))
            if m:
                out.append((m.group(1), m.group(2)))
        return out

    def marked_instants(self) -> list[str]:
        """Instants that still have a marker folder."""
        return self.storage.list_subdirs(MARKER_DIR)

    def remove_markers(self, instant: str) -> None:
        full = self.storage.full(f"{MARKER_DIR}/{instant}")
        try:
            if self.storage.fs.exists(full):
                self.storage.fs.rm(full, recursive=True)
        except FileNotFoundError:
            pass
