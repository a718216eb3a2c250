"""The source's offsets: what Spark checkpoints for this stream, and the check that the state served it.

Offsets are ``{"rec": r, "seq": s, "sid": id, "v": 3}``: every split with a lower sequence number is
delivered, and split ``s`` up to record ``r``. ``v`` names the order of a split's rows that ``r`` counts in (3:
per piece of ``hoodie.slice_reader.PIECE_ROWS`` base rows, the untouched rows, then the updated ones; then
log-only inserts. 2 was the same with the whole base file as one piece); an offset inside a split in another
order is refused, never misread. ``sid`` names the stream whose state planned the splits. The split queue
itself lives in the state files (``state/``), written before ``latest_offset`` returns an offset that refers to
it, because after a crash Spark calls ``partitions(start, end)`` for the uncommitted batch in a new process
before anything else.

Every offset Spark hands back is checked against the state before it is used (:func:`served`): a state folder
that is empty, another stream's, or older or newer than Spark's checkpoint is refused with what to do, never
silently re-planned (which would apply Spark's old offset to new splits: changes lost and doubled).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TypedDict, TypeVar, cast

from ..errors import StateError
from ..state import StreamState

#: the row order within a split that record offsets count in (see the module docstring)
OFFSET_VERSION = 3


class Offset(TypedDict, total=False):
    """Spark's offset of this source (see the module docstring); ``sid`` is absent only from the initial one."""

    v: int
    seq: int
    rec: int
    sid: str


_Json = TypeVar("_Json", bound=Mapping[str, object])


def canonical(value: _Json) -> _Json:
    """Spark compares offsets as JSON strings: equal offsets must serialise identically (and a report reads the
    same every time)."""
    return cast(_Json, json.loads(json.dumps(value, sort_keys=True)))


def make_offset(seq: int, rec: int, sid: str | None = None) -> Offset:
    """An offset; ``sid`` (the stream's identity) is left out only of the initial offset, which no state owns."""
    offset = Offset(v=OFFSET_VERSION, seq=seq, rec=rec)
    if sid:
        offset["sid"] = sid
    return canonical(offset)


def position(offset: Offset, location: str) -> tuple[int, int]:
    """(split sequence, record) of an offset; one that points inside a split in another row order is refused."""
    seq, rec = int(offset["seq"]), int(offset["rec"])
    if rec and int(offset.get("v", 1)) != OFFSET_VERSION:
        raise StateError(f"{location}: the checkpoint's offset {offset} points inside a split whose rows an "
                         f"earlier version of hudi_streaming ordered differently (offset version "
                         f"{offset.get('v', 1)}, now {OFFSET_VERSION}); finish the batch with that version first")
    return seq, rec


def served(offset: Offset, state: StreamState, state_version: int, location: str) -> tuple[int, int]:
    """The position of an offset Spark hands back, once the state (at ``state_version`` of the state folder
    ``location``) is shown to have served it.

    Refused (one line naming the state folder, the offset and what to do): an empty state folder with a
    checkpoint past its start (deleted, moved, mistyped), another stream's state, or a state older or newer
    than Spark's checkpoint (another query's, or a checkpoint restored from an older copy). Never a silent
    restart.
    """
    seq, rec = position(offset, location)
    sid = offset.get("sid")
    problem = None
    if state_version < 0 and ((seq, rec) != (0, 0) or sid is not None):
        problem = "holds no state, but Spark's checkpoint is past the start of a stream"
    elif sid is not None and sid != state.stream_id:
        problem = f"holds stream {state.stream_id}, but Spark's checkpoint is a position in stream {sid}"
    elif seq < state.committed_seq:
        problem = (f"has delivered every split below {state.committed_seq}, but Spark's checkpoint is at split "
                   f"{seq} (the state is newer than the checkpoint)")
    elif seq > state.next_seq or (seq == state.next_seq and rec > 0):
        problem = (f"has planned splits below {state.next_seq} only, but Spark's checkpoint is at split {seq} "
                   "(the state is older than the checkpoint)")
    if problem:
        raise StateError(f"stateLocation {location} {problem} (offset {json.dumps(offset, sort_keys=True)}): "
                         "the state folder does not belong to this checkpoint. Restore the stream's own state "
                         "folder, or start a new stream: a new checkpointLocation and a new stateLocation")
    return seq, rec
