"""``onRewind=reconcile``: after a restore or a rollback of delivered writes, deliver what the rewind changed.

An upsert sink that took the undone instants' changes holds keys and values the table no longer has. For the file
groups those instants wrote (known from the keys the stream recorded, ``state.rewind_keys``), the reconcile
delivers, in one round:

* every row those file groups hold after the rewind (a snapshot of them): the values the rewind brought back,
  and the rows it left alone, delivered again;
* a delete, stamped with the rewind's instant, for each key the undone instants delivered that those file
  groups no longer hold (keys the undone writes inserted).

The two touch disjoint keys, so their order within the batch does not matter, and an upsert sink that applies
them ends equal to the table. The deletes are computed here, on the driver, and written to a file of the state
folder before the round is planned; the round's task reads that file (a split whose ``rows`` name it), so a
replayed batch delivers the same deletes. The driver reads the keys of the touched file groups only: work that
follows what the rewind undid, not the table.
"""
from __future__ import annotations

import pyarrow as pa

from ..errors import DataLossError
from ..hoodie.fs_view import FileSlice
from ..hoodie.read import read_schema
from ..hoodie.slice_reader import SliceRead, read_slice
from ..hoodie.split import Split
from ..hoodie.table import COMMIT_TIME, PARTITION_PATH, RECORD_KEY, HudiTable
from ..monitor.monitor import Plan, StreamMonitor
from ..monitor.rewinds import Rewind
from ..state.rewind_keys import FILE_ID, KeyLedger


def reconcile_plan(table: HudiTable, monitor: StreamMonitor, ledger: KeyLedger, rewind: Rewind) -> Plan:
    """The round that reconciles a sink with ``rewind``; the stream's cursor moves to the rewind itself."""
    since = ledger.since()
    unrecorded = [i for i in rewind.delivered if since is None or i <= since]
    if unrecorded:
        raise DataLossError(
            f"{rewind.describe()}; onRewind=reconcile cannot say what instant(s) {', '.join(unrecorded)} delivered: "
            f"this stream records the keys it delivers only from {since or 'never'} on. Start a new stream (a new "
            "stateLocation) from the table as it is now, or set failOnDataLoss=false to continue from a snapshot "
            "of the restored table")
    recorded = ledger.undone(rewind.delivered)
    splits: list[Split] = []
    if recorded is not None:
        groups = set(zip(recorded.column(PARTITION_PATH).to_pylist(), recorded.column(FILE_ID).to_pylist()))
        splits = monitor.restored_splits(groups)
        gone = _absent(recorded, _keys_of(table, [s.slice for s in splits], splits[0].max_instant if splits else ""))
        if gone.num_rows:
            instant = rewind.entry.requested_time
            name = f"reconcile-{instant}.parquet"
            stamped = gone.set_column(gone.schema.get_field_index(COMMIT_TIME), pa.field(COMMIT_TIME, pa.string()),
                                      pa.repeat(pa.scalar(instant, pa.string()), gone.num_rows))
            ledger.write(name, stamped.drop_columns([FILE_ID]))
            splits.append(Split(FileSlice("", "", "", None, []), instant, (instant,), rows=name,
                                est_rows=gone.num_rows))
    return Plan(cursor=rewind.cursor, splits=splits, instants=[rewind.entry], snapshot=True)


def _keys_of(table: HudiTable, slices: list[FileSlice], max_instant: str) -> set[tuple[str, str]]:
    """(partition path, record key) of every row these file slices hold as of ``max_instant``."""
    schema = read_schema(table, table.arrow_schema(), [RECORD_KEY, PARTITION_PATH], incremental=False)
    req = SliceRead(table, schema, max_instant)
    found: set[tuple[str, str]] = set()
    for s in slices:
        rows = read_slice(req, s)
        found.update((s.partition, k) for k in req.key_array(rows).to_pylist())
    return found


def _absent(recorded: pa.Table, present: set[tuple[str, str]]) -> pa.Table:
    """The recorded rows whose key the file groups no longer hold, one per key (its last recorded row)."""
    parts = recorded.column(PARTITION_PATH).cast(pa.string()).to_pylist()
    keys = recorded.column(RECORD_KEY).cast(pa.string()).to_pylist()
    last: dict[tuple[str, str], int] = {}
    for i, pk in enumerate(zip(parts, keys)):
        if pk not in present:
            last[pk] = i
    return recorded.take(pa.array(sorted(last.values()), pa.int64())) if last else recorded.slice(0, 0)

