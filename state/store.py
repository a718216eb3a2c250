"""Checkpoint files of a stream: the issued cursor, the planned splits not yet committed, the next sequence.

Spark stores only a compact offset per micro-batch; everything ``partitions(start, end)`` needs to rebuild a
batch after a crash lives here, written *before* ``latestOffset`` returns the offset that refers to it.
Every save writes a new immutable file ``state-<version>.json`` (temp + rename on local disks; object
stores have atomic puts), so a crash mid-write never damages the previous state. Each file carries a
SHA-256 of its body and the identity of the table and stream it belongs to: a torn or foreign file is
detected and never trusted.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re

from pydantic import BaseModel, ConfigDict, ValidationError

from hoodie.errors import HoodieError
from hoodie.storage import Storage
from monitor import Cursor, Split

log = logging.getLogger("hudi_streaming.state")

FORMAT = "hudi-streaming-state"
FORMAT_VERSION = 1
KEEP_VERSIONS = 10
_FILE = re.compile(r"^state-(\d{12})\.json$")


class StateError(HoodieError):
    """The state location holds something that cannot be trusted (torn, foreign, or inconsistent)."""


class PlannedSplit(BaseModel):
    """A split with its place in the stream: offsets count splits by ``seq``."""

    model_config = ConfigDict(frozen=True)

    seq: int
    round: int  # the planning round (one poll of the monitor); rounds count instants for the limits
    instants_in_round: int
    split: Split


class StreamState(BaseModel):
    table_url: str
    table_name: str
    cursor: Cursor | None = None  # last instant planned
    started: bool = False  # the start position (snapshot / latest / instant) has been planned
    next_seq: int = 0
    next_round: int = 0
    splits: list[PlannedSplit] = []
    committed_seq: int = 0  # splits below this are delivered and pruned

    def pending_from(self, seq: int) -> list[PlannedSplit]:
        return [p for p in self.splits if p.seq >= seq]


class StateStore:
    """Versioned, checksummed state files in one folder (any fsspec URL)."""

    def __init__(self, location: str, storage_options: dict | None = None):
        self.storage = Storage(location, storage_options)
        self.location = location
        self.version = -1

    def _versions(self) -> list[int]:
        out = []
        for info in self.storage.list_dir(""):
            m = _FILE.match(info.path.rsplit("/", 1)[-1])
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def load(self, table_url: str, table_name: str) -> StreamState | None:
        """The newest valid state of this table, or None when the location holds none yet."""
        state = self.newest()
        if state is not None and (state.table_name != table_name
                                  or state.table_url.rstrip("/") != table_url.rstrip("/")):
            raise StateError(f"{self.location}/state-{self.version:012d}.json: belongs to table {state.table_name} "
                             f"at {state.table_url}, not {table_name} at {table_url}; use a separate stateLocation "
                             "per stream")
        return state

    def newest(self) -> StreamState | None:
        """The newest state, whatever its table (inspection), or None when the location holds none yet."""
        versions = self._versions()
        if not versions:
            return None
        state = self._read(versions[-1])
        self.version = versions[-1]
        return state

    def _read(self, version: int) -> StreamState:
        name = f"state-{version:012d}.json"
        where = f"{self.location}/{name}"
        raw = self.storage.read_bytes(name)
        try:
            doc = json.loads(raw)
            body = doc["state"]
            digest = doc["sha256"]
            if doc.get("format") != FORMAT or doc.get("format_version") != FORMAT_VERSION:
                raise StateError(f"{where}: not a hudi-streaming state file (format {doc.get('format')!r})")
        except (ValueError, KeyError, TypeError):
            raise StateError(f"{where}: torn or not a state file (unparseable JSON envelope)") from None
        if hashlib.sha256(_canonical(body)).hexdigest() != digest:
            raise StateError(f"{where}: checksum mismatch, the file is torn or was edited")
        try:
            state = StreamState.model_validate(body)
        except ValidationError as e:
            raise StateError(f"{where}: invalid state ({e.errors()[0]['msg']})") from None
        return state

    def save(self, state: StreamState) -> None:
        body = state.model_dump(mode="json")
        doc = {"format": FORMAT, "format_version": FORMAT_VERSION,
               "sha256": hashlib.sha256(_canonical(body)).hexdigest(), "state": body}
        self.version += 1
        self.storage.write_bytes_atomic(f"state-{self.version:012d}.json", json.dumps(doc).encode())
        for old in self._versions()[:-KEEP_VERSIONS]:
            try:
                self.storage.fs.rm(self.storage.full(f"state-{old:012d}.json"))
            except FileNotFoundError:
                pass


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
