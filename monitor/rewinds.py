"""Timeline rewinds: a restore (to a savepoint) or a rollback of a completed write undoes instants a stream may
already have delivered.

Hudi removes the undone instants' files and their timeline entries, so a stream that only looks forward sees
nothing happen: its sink keeps the undone changes and never learns what the restore brought back. No peer source
notices. Each completed rollback and restore on the active timeline says which instants it undid; one that undid
an instant this stream delivered is a :class:`Rewind`, which stops the stream in one line naming the restore, its
savepoint and the instants — unless the query asked to continue from a snapshot of the restored table
(``failOnDataLoss=false``, as for any lost range) or to reconcile its sink (``onRewind=reconcile``,
``streaming.reconcile``).

Which undone instants were delivered:

* table v8/v9: those the stream has accounted for (its state's ``known`` instants, kept until they leave the
  active timeline; the check runs before each poll's planning, while the undone ones are still there);
* table v6, which keeps no such list: those at or before the stream's cursor (requested-time order), when the
  rollback or restore began after the cursor's instant. A rewind that began earlier ran before the stream got
  there: the instants it undid were gone before the stream could read them (a failed write's rollback is one).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import DataLossError
from ..hoodie.table import HudiTable
from ..hoodie.timeline import Action, TimelineEntry
from .monitor import Cursor


@dataclass(frozen=True)
class Rewind:
    """A completed rollback or restore that undid instants this stream delivered."""

    table_url: str
    entry: TimelineEntry
    #: the savepoint a restore went back to, when its plan says
    savepoint: str | None
    #: the undone instants this stream delivered (requested times, sorted)
    delivered: tuple[str, ...]

    @property
    def what(self) -> str:
        return "restore" if self.entry.action is Action.RESTORE else "rollback"

    @property
    def cursor(self) -> Cursor:
        """Where a stream that has dealt with the rewind stands: at the rollback or restore itself."""
        return Cursor(requested=self.entry.requested_time, completion=self.entry.completion_time)

    def describe(self) -> str:
        to = f" to savepoint {self.savepoint}" if self.savepoint else ""
        return (f"{self.table_url}: {self.what} {self.entry.requested_time}{to} undid instant(s) "
                f"{', '.join(self.delivered)} that this stream already delivered")

    def error(self) -> DataLossError:
        return DataLossError(
            f"{self.describe()}; the sink holds changes the table no longer has, and lacks what the {self.what} "
            "brought back. Start a new stream (a new stateLocation) from the table as it is now, set "
            "onRewind=reconcile (with emitDeletes=true) to deliver what the rewind changed, or set "
            "failOnDataLoss=false to continue from a snapshot of the restored table")


class RewindCheck:
    """Checks each completed rollback and restore once per process (their metadata is decoded once)."""

    def __init__(self, table: HudiTable):
        self.table = table
        self._clean: set[str] = set()

    def find(self, cursor: Cursor | None, known: Mapping[str, str] | None) -> Rewind | None:
        """The first completed rollback or restore that undid an instant this stream delivered, if any."""
        if cursor is None:
            return None
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
            savepoint = active.restored_savepoint(e) if e.action is Action.RESTORE else None
            return Rewind(self.table.url, e, savepoint, tuple(delivered))
        return None
