"""Checkpoint files of a stream (issued cursor, pending split queue, sequence numbers)."""
from .store import PlannedSplit, StateStore, StreamState

__all__ = ["PlannedSplit", "StateStore", "StreamState"]
