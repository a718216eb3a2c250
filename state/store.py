"""Checkpoint files of a stream: the issued cursor, the planned splits not yet committed, the next sequence.

Spark stores only a compact offset per micro-batch; everything ``partitions(start, end)`` needs to rebuild a
batch after a crash lives here, written *before* ``latestOffset`` returns the offset that refers to it.
Every save writes a new immutable file ``state-<version>.json``, created exclusively (``Storage.create``: a
hard link of a complete temporary file on local disks, a conditional PUT on S3), so a crash mid-write never damages the
previous state and two queries sharing a folder cannot both write version N: the second is refused instead
of one silently overwriting the other. Each file carries a SHA-256 of its body and the identity of the table
and stream it belongs to: a torn or foreign file is detected and never trusted.

The planned splits live in immutable *segment* files ``splits-<first seq>-<last seq>-<writer>.json``, one or more
per save that planned new splits (at most ``SEGMENT_SPLITS`` each), named with their SHA-256 in the state file
(the writer token keeps a second query's segment from replacing one that the first one's state names). A state
file stays small however many splits are pending (a first snapshot of a large table plans one per file group), so
committing a batch rewrites kilobytes, not the whole queue; a segment leaves when every split in it is committed.

What the files hold is the checkpoint's own schema (``records``: the state file's records, the splits'
serialisation), converted to and from the planner's objects here, at the boundary: the planner's classes can
change without changing what users' checkpoints mean.

A store that fails is retried by ``Storage`` (bounded by ``retry_deadline_seconds``). A state write the store
applied but answered with an error is found on its retry holding exactly the bytes written and taken as done
(``Storage.create``); only other bytes mean a second writer. A write that fails for good — a store that stays
down, a full or read-only disk, a state folder removed while the query runs — stops the query with one
:class:`StoreError` line and leaves the previous state as it was, so a restart once the fault is gone resumes
from it.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from .._faults import fault_point
from ..errors import StateError, StoreError
from ..hoodie.storage import Storage
from ..monitor import Cursor
from .records import (
    Format1StateRecord,
    Format2StateRecord,
    Format3StateRecord,
    PlannedSplit,
    SegmentRecord,
    StateRecord,
    cursor_of,
    cursor_record,
    planned_from_json,
    planned_json,
)
from .row_rules import RowRules, check_rules

log = logging.getLogger(__name__)

FORMAT = "hudi-streaming-state"
#: 1: splits inline in the state file; 2: no stream identity nor known instants; 3: no row rules (all read)
FORMAT_VERSION = 4
KEEP_VERSIONS = 10
#: the most planned splits one segment file holds (~0.5 KiB of JSON each)
SEGMENT_SPLITS = 2000
_FILE = re.compile(r"^state-(\d{12})\.json$")
_SEGMENT = re.compile(r"^splits-\d{12}-\d{12}(-[0-9a-f]{12})?\.json$")
_R = TypeVar("_R", bound=BaseModel)


@dataclass
class StreamState:
    """The stream's checkpoint in memory (its files' records: ``records``)."""

    table_url: str
    table_name: str
    #: who this state belongs to: every offset the source returns carries it (``sid``)
    stream_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    cursor: Cursor | None = None  # last instant planned
    started: bool = False  # the start position (snapshot / latest / instant) has been planned
    next_seq: int = 0
    next_round: int = 0
    splits: list[PlannedSplit] = field(default_factory=list)
    committed_seq: int = 0  # splits below this are delivered and pruned
    #: v8/v9: requested → completion time of the completed writes still in the active timeline that the stream
    #: has accounted for (planned, or covered by its start); None: not tracked yet (v6, or a format-1/2 state)
    known: dict[str, str] | None = None
    #: instants planned after a later one (completed at or before the cursor, visible only afterwards)
    late_instants: int = 0
    #: the options its record offsets are counted under (``row_rules``); None: not recorded yet (formats 1–3)
    rules: RowRules | None = None

    def pending_from(self, seq: int) -> list[PlannedSplit]:
        return [p for p in self.splits if p.seq >= seq]


class StateStore:
    """Versioned, checksummed state files in one folder (any fsspec URL)."""

    def __init__(self, location: str, storage_options: dict | None = None):
        self.storage = Storage(location, storage_options)
        self.location = location
        self.version = -1
        #: names this store's segment files, so that another writer's cannot replace them
        self._token = uuid.uuid4().hex[:12]
        #: the segments the newest state file names
        self._segments: list[SegmentRecord] = []

    def _versions(self) -> list[int]:
        out = []
        for info in self.storage.list_dir(""):
            m = _FILE.match(info.path.rsplit("/", 1)[-1])
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def load(self, table_url: str, table_name: str, rules: RowRules | None = None) -> StreamState | None:
        """The newest valid state of this table, or None when the location holds none yet. With ``rules`` (the
        query's), a state counted under rules that count records differently is refused (``row_rules``); the
        state takes the query's rules, saved with it from its next save."""
        state = self.newest()
        if state is None:
            return None
        where = f"{self.location}/state-{self.version:012d}.json"
        if state.table_name != table_name or state.table_url.rstrip("/") != table_url.rstrip("/"):
            raise StateError(f"{where}: belongs to table {state.table_name} at {state.table_url}, not {table_name} "
                             f"at {table_url}; use a separate stateLocation per stream")
        if rules is not None:
            check_rules(state.rules, rules, where)
            state.rules = rules
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
        """The state of one file, converted from the checkpoint's records at this boundary (``records``)."""
        where = f"{self.location}/state-{version:012d}.json"
        format_version, body = _open_envelope(self.storage.read_bytes(f"state-{version:012d}.json"), where)
        record: Format1StateRecord | Format2StateRecord
        if format_version == 1:
            record = _validated(Format1StateRecord, body, where)
            try:
                planned = [planned_from_json(p, f"splits.{i}", format1=True) for i, p in enumerate(record.splits)]
            except StateError as e:
                raise StateError(f"{where}: invalid state ({e})") from None
            segments: list[SegmentRecord] = []
        else:
            schema = (Format2StateRecord if format_version == 2 else Format3StateRecord if format_version == 3
                      else StateRecord)
            record = _validated(schema, body, where)
            segments = record.segments
            planned = self._read_segments(record, where)
        state = StreamState(table_url=record.table_url, table_name=record.table_name,
                            cursor=cursor_of(record.cursor) if record.cursor is not None else None,
                            started=record.started, next_seq=record.next_seq, next_round=record.next_round,
                            splits=planned,
                            committed_seq=record.committed_seq)
        # formats 1 and 2 name no stream (a new one from here on) and know no instants; 1 to 3 record no row rules
        if isinstance(record, Format3StateRecord):
            state.stream_id, state.known, state.late_instants = (record.stream_id, record.known_instants,
                                                                 record.late_instants)
        if isinstance(record, StateRecord):
            state.rules = record.row_rules
        self._segments = segments
        return state

    def _read_segments(self, record: Format2StateRecord, where: str) -> list[PlannedSplit]:
        """The pending splits of the named segments, checked against their digests and for gaps."""
        splits = []
        for seg in record.segments:
            try:
                raw = self.storage.read_bytes(seg.name)
            except FileNotFoundError:
                raise StateError(f"{where}: its split segment {seg.name} is missing") from None
            if hashlib.sha256(raw).hexdigest() != seg.sha256:
                raise StateError(f"{self.location}/{seg.name}: checksum mismatch, the segment is torn or was edited")
            try:
                splits += [p for p in (planned_from_json(e, str(i)) for i, e in enumerate(_segment_entries(raw)))
                           if p.seq >= record.committed_seq]
            except json.JSONDecodeError as e:
                raise StateError(f"{self.location}/{seg.name}: invalid split segment (Invalid JSON: {e})") from None
            except StateError as e:
                raise StateError(f"{self.location}/{seg.name}: invalid split segment ({e})") from None
        seqs = [p.seq for p in splits]
        if seqs != list(range(record.committed_seq, record.next_seq)):
            raise StateError(f"{where}: its split segments hold sequences {seqs[:3]}..., "
                             f"not {record.committed_seq}..{record.next_seq - 1}")
        return splits

    def save(self, state: StreamState) -> None:
        """A new state version; splits planned since the last save go into new segments first, at most
        :data:`SEGMENT_SPLITS` each (a snapshot of a wide table plans a split per file group: its JSON, written
        whole, was the source runner's memory peak at 10,000 file groups, and a smaller segment leaves sooner)."""
        keep = [g for g in self._segments if g.last >= state.committed_seq]
        covered = keep[-1].last + 1 if keep else state.committed_seq
        new = [p for p in state.splits if p.seq >= covered]
        for i in range(0, len(new), SEGMENT_SPLITS):
            part = new[i:i + SEGMENT_SPLITS]
            data = _segment_bytes(part)
            name = f"splits-{part[0].seq:012d}-{part[-1].seq:012d}-{self._token}.json"
            self._create(name, data)
            keep.append(SegmentRecord(name=name, first=part[0].seq, last=part[-1].seq,
                                      sha256=hashlib.sha256(data).hexdigest()))
            del data
        body = StateRecord(table_url=state.table_url, table_name=state.table_name,
                           cursor=cursor_record(state.cursor) if state.cursor is not None else None,
                           started=state.started, next_seq=state.next_seq, next_round=state.next_round,
                           committed_seq=state.committed_seq, segments=keep, stream_id=state.stream_id,
                           known_instants=state.known, late_instants=state.late_instants,
                           row_rules=state.rules).model_dump(mode="json")
        doc = {"format": FORMAT, "format_version": FORMAT_VERSION,
               "sha256": hashlib.sha256(_canonical(body)).hexdigest(), "state": body}
        name = f"state-{self.version + 1:012d}.json"
        fault_point("state.before_write")
        try:
            self._create(name, json.dumps(doc).encode())
        except FileExistsError:
            raise StateError(f"{self.location}/{name}: written by another query while this one holds the state; "
                             "two live queries share this stateLocation — give each query its own (the state "
                             "files are the same as before this write)") from None
        fault_point("state.after_write")
        self.version += 1
        self._segments = keep
        named = {g.name for g in keep}
        try:  # the new state is written: old files the store fails to list or remove now go at a later save
            for info in self.storage.list_dir(""):
                name = info.path.rsplit("/", 1)[-1]
                m = _FILE.match(name)
                if (m and int(m.group(1)) <= self.version - KEEP_VERSIONS) or \
                        (_SEGMENT.match(name) and name not in named):
                    self.storage.remove(name)
        except StoreError as e:
            log.warning("hudi_streaming: %s; old state files are removed at a later save", e)

    def _create(self, name: str, data: bytes) -> None:
        """Create one file of the state folder. Once the stream has a state, the folder must still be there: it
        is not made again (a state naming segments that went with the folder would be torn), and a folder that is
        gone is a :class:`StoreError`."""
        try:
            self.storage.create(name, data, make_parents=self.version < 0)
        except FileNotFoundError:
            raise StoreError(f"{self.location}: the state folder is gone (removed, moved or unmounted while the "
                             f"query ran); {name} is not written. Put the folder back and restart the query, or "
                             "start a new stream: a new checkpointLocation and a new stateLocation") from None


def _segment_bytes(planned: list[PlannedSplit]) -> bytes:
    """A split segment: a JSON array, one split per line, encoded split by split.

    A stream from ``earliest`` plans a split per file group in one save; ``json.dumps`` of the whole list held
    every split's dict, the encoder's chunks, the string and its bytes at once (at 10,000 file groups the
    source runner's peak). Here one split's dict lives at a time, and a reader can decode line by line
    (:func:`_segment_entries`)."""
    out = bytearray(b"[")
    for i, p in enumerate(planned):
        out += b"\n" if not i else b",\n"
        out += json.dumps(planned_json(p), separators=(",", ":")).encode()
    out += b"\n]"
    return bytes(out)


def _segment_entries(raw: bytes) -> Iterator[object]:
    """The entries of a split segment, decoded one line at a time when :func:`_segment_bytes` laid it out (one
    entry's dict alive at a time), else as one JSON document (segments written before it).
    ``json.JSONDecodeError``: not JSON; :class:`StateError`: not an array."""
    lines = raw.split(b"\n")
    if len(lines) > 2 and lines[0] == b"[" and lines[-1] == b"]":
        for i, line in enumerate(lines[1:-1]):
            yield json.loads(line[:-1] if i < len(lines) - 3 else line)
        return
    entries = json.loads(raw)
    if not isinstance(entries, list):
        raise StateError("Input should be a valid list")
    yield from entries


def _open_envelope(raw: bytes, where: str) -> tuple[int, dict]:
    """The format version and body of a state file, after checking its format and checksum."""
    try:
        doc = json.loads(raw)
        body = doc["state"]
        digest = doc["sha256"]
        if doc.get("format") != FORMAT or doc.get("format_version") not in (1, 2, 3, FORMAT_VERSION):
            raise StateError(f"{where}: not a hudi-streaming state file (format {doc.get('format')!r} "
                             f"version {doc.get('format_version')!r})")
    except (ValueError, KeyError, TypeError):
        raise StateError(f"{where}: torn or not a state file (unparseable JSON envelope)") from None
    if hashlib.sha256(_canonical(body)).hexdigest() != digest:
        raise StateError(f"{where}: checksum mismatch, the file is torn or was edited")
    return doc["format_version"], body


def _validated(record: type[_R], body: dict, where: str) -> _R:
    """``body`` as ``record``; its first problem (an unknown or missing field, a wrong type) named in one line."""
    try:
        return record.model_validate(body)
    except ValidationError as e:
        raise StateError(f"{where}: invalid state ({_first_error(e)})") from None


def _first_error(e: ValidationError) -> str:
    """Where in the document the first problem is and what it is, e.g. ``cursor.extra: Extra inputs are ...``."""
    err = e.errors()[0]
    return f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}" if err["loc"] else err["msg"]


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
