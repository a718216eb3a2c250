"""The keys a stream delivered, for as long as a rewind could undo them (``onRewind=reconcile``).

A restore or a rollback of a completed write deletes the undone instants' files: after it, nothing in the table
says which keys those instants wrote, so nothing can tell an upsert sink which of the keys it holds the table no
longer has. Only the stream saw them. With ``onRewind=reconcile`` each task records the identity of the rows it
delivers — commit time, partition path, record key, the table's key and partition fields, and the file group —
in a parquet file of the stream's state folder, and the driver reads back those of the undone instants when a
rewind comes (``streaming.reconcile``).

What is recorded: the rows of each instant's changes (not a snapshot's rows: a stream started at ``earliest``
records from the instants after its first snapshot). What is kept, and for how long: files holding rows of
instants still on the active timeline (Hudi archives no instant after its oldest savepoint, and only instants
there can be undone); files whose newest row is older are removed. A task's file is named for its ranges'
content, so a task run again (a retry, a batch replayed after a crash) writes the same file, not a second one.
``since`` records the cursor when recording began: an undone instant at or before it was delivered without
recording, and a reconcile says so instead of guessing.
"""
from __future__ import annotations

import hashlib
import io
import posixpath
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CorruptFileError
from ..hoodie.storage import Storage
from ..hoodie.table import COMMIT_TIME, PARTITION_PATH, RECORD_KEY
from ..hoodie.timeline.instant import is_instant_time

FOLDER = "rewind-keys"
#: the stream's cursor (a requested time) when recording began: the instants after it are recorded ("": all)
SINCE = f"{FOLDER}/since"
#: the file group a recorded row was delivered from (a column of the key files only)
FILE_ID = "_file_id"


def identity_columns(schema: pa.Schema, key_fields: Iterable[str], partition_fields: Iterable[str]) -> list[str]:
    """The columns of the stream's rows that a key file keeps: Hudi's commit time, partition path and record key,
    and the table's record key and partition fields the rows carry (what a sink keys its upserts on)."""
    wanted = [COMMIT_TIME, PARTITION_PATH, RECORD_KEY, *key_fields, *partition_fields]
    names = set(schema.names)
    return [c for i, c in enumerate(wanted) if c in names and c not in wanted[:i]]


class KeyLedger:
    """The key files of one stream's state folder (any fsspec URL, as the state's)."""

    def __init__(self, location: str, storage_options: dict | None = None):
        self.storage = Storage(location, storage_options)
        self.location = location

    def begin(self, since: str) -> str:
        """Record keys from ``since`` on, unless this stream already records them from an earlier point."""
        try:
            self.storage.create(SINCE, since.encode())
        except FileExistsError:
            pass
        found = self.storage.read_bytes(SINCE).decode()
        if found and not is_instant_time(found):
            raise CorruptFileError(f"{self.location}/{SINCE}: not an instant time: {found[:40]!r}")
        return found

    def since(self) -> str | None:
        """When recording began; None when it never did."""
        return self.storage.read_bytes(SINCE).decode() if self.storage.exists(SINCE) else None

    def write(self, name: str, rows: pa.Table) -> None:
        """A key file (or a reconcile's rows) as one whole parquet file."""
        import pyarrow.parquet as pq  # the tasks' and a reconcile's: the planner's workers never load it

        buf = io.BytesIO()
        pq.write_table(rows, buf)
        self.storage.write_bytes_atomic(f"{FOLDER}/{name}", buf.getvalue())

    def read(self, name: str) -> pa.Table:
        import pyarrow.parquet as pq

        rel = f"{FOLDER}/{name}"
        try:
            return pq.read_table(io.BytesIO(self.storage.read_bytes(rel)))
        except (pa.ArrowInvalid, OSError) as e:
            if isinstance(e, FileNotFoundError):
                raise
            raise CorruptFileError(f"{self.location}/{rel}: not a readable key file ({e})") from e

    def _files(self) -> list[tuple[str, str, str]]:
        """(newest, oldest commit time, name) of each key file."""
        out = []
        for info in self.storage.list_dir(FOLDER):
            name = posixpath.basename(info.path)
            parts = name.removesuffix(".parquet").split("-")
            if name.endswith(".parquet") and len(parts) == 3 and all(map(is_instant_time, parts[:2])):
                out.append((parts[0], parts[1], name))
        return out

    def undone(self, instants: Sequence[str]) -> pa.Table | None:
        """The recorded rows of ``instants`` (None when no key file holds any), from the files whose commit
        times span them."""
        wanted = pa.array(sorted(set(instants)), pa.string())
        lo, hi = min(instants), max(instants)
        found = []
        for newest, oldest, name in self._files():
            if newest >= lo and oldest <= hi:
                rows = self.read(name)
                found.append(rows.filter(pc.is_in(rows.column(COMMIT_TIME).cast(pa.string()), value_set=wanted)))
        found = [t for t in found if t.num_rows]
        return pa.concat_tables(found, promote_options="permissive") if found else None

    def prune(self, oldest: str) -> int:
        """Remove the key files whose rows are all older than ``oldest`` (the oldest instant a rewind can still
        undo); the number removed."""
        gone = [name for newest, _, name in self._files() if newest < oldest]
        for name in gone:
            self.storage.remove(f"{FOLDER}/{name}")
        return len(gone)


class KeyRecorder:
    """A task's recording: the identity of each row of the changes it delivers."""

    def __init__(self, ledger: KeyLedger, columns: Sequence[str], ranges_repr: str):
        self.ledger, self.columns = ledger, list(columns)
        self.digest = hashlib.sha256(ranges_repr.encode()).hexdigest()[:24]
        self._parts: list[pa.Table] = []

    def add(self, batch: pa.RecordBatch, file_id: str) -> None:
        rows = pa.Table.from_batches([batch]).select(self.columns)
        if rows.num_rows:
            self._parts.append(rows.append_column(FILE_ID, pa.repeat(pa.scalar(file_id, pa.string()),
                                                                     rows.num_rows)))

    def close(self) -> None:
        """Write the task's key file (none when it delivered no row to record); before the task ends, so a batch
        Spark commits has every task's keys."""
        if not self._parts:
            return
        rows = pa.concat_tables(self._parts, promote_options="permissive")
        times = pc.drop_null(rows.column(COMMIT_TIME).cast(pa.string()))
        newest, oldest = pc.max(times).as_py(), pc.min(times).as_py()
        self.ledger.write(f"{newest}-{oldest}-{self.digest}.parquet", rows)
        self._parts = []
