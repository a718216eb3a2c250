"""Checkpoint files of a stream (issued cursor, pending split queue, sequence numbers)."""
from .store import PlannedSplit, StateError, StateStore, StreamState

__all__ = ["PlannedSplit", "StateError", "StateStore", "StreamState"]
