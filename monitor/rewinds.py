"""Timeline rewinds: a restore (to a savepoint) or a rollback of a completed write undoes instants a stream may
already have delivered.

Hudi removes the undone instants' files and their timeline entries, so a stream that only looks forward sees
nothing happen: its sink keeps the undone changes and never learns what the restore brought back. No peer source
notices. Each completed rollback and restore on the active timeline says which instants it undid; one that undid
an instant this stream delivered stops the stream with a :class:`DataLossError` naming the restore, its savepoint
and the instants (``failOnDataLoss=false`` continues from a snapshot of the restored table instead, as for any
lost range).

Which undone instants were delivered:

* table v8/v9: those the stream has accounted for (its state's ``known`` instants, kept until they leave the
  active timeline; the check runs before each poll's planning, while the undone ones are still there);
* table v6, which keeps no such list: those at or before the stream's cursor (requested-time order), when the
  rollback or restore began after the cursor's instant. A rewind that began earlier ran before the stream got
  there: the instants it undid were gone before the stream could read them (a failed write's rollback is one).
"""
from __future__ import annotations

from collections.abc import Mapping

from ..errors import DataLossError
from ..hoodie.table import HudiTable
from ..hoodie.timeline import Action
from .monitor import Cursor


class RewindCheck:
    """Checks each completed rollback and restore once per process (their metadata is decoded once)."""

    def __init__(self, table: HudiTable):
        self.table = table
        self._clean: set[str] = set()

    def check(self, cursor: Cursor | None, known: Mapping[str, str] | None) -> None:
        """Raise :class:`DataLossError` when a rollback or restore undid an instant this stream delivered."""
        if cursor is None:
            return
        active = self.table.timeline.active
        for e in active.completed():
            if e.action not in (Action.ROLLBACK, Action.RESTORE) or e.requested_time in self._clean:
                continue
            undone = active.undone_instants(e)
            if known is not None:
                delivered = [u for u in undone if u in known]
            elif e.requested_time > cursor.requested:
                delivered = [u for u in undone if u <= cursor.requested]
            else:
                delivered = []
            if not delivered:
                self._clean.add(e.requested_time)
                continue
            what = "restore" if e.action is Action.RESTORE else "rollback"
            savepoint = active.restored_savepoint(e) if e.action is Action.RESTORE else None
            to = f" to savepoint {savepoint}" if savepoint else ""
            raise DataLossError(
                f"{self.table.url}: {what} {e.requested_time}{to} undid instant(s) {', '.join(delivered)} that this "
                "stream already delivered; the sink holds changes the table no longer has, and lacks what the "
                f"{what} brought back. Start a new stream (a new stateLocation) from the table as it is now, or set "
                "failOnDataLoss=false to continue from a snapshot of the restored table")
