"""The writer's record index: (partition path, record key) → file group, persisted across restarts.

Hudi's default indexes are non-global: a record is identified by its partition path and its key. The
writer keeps that mapping as three Arrow columns and looks batches up with one vectorised ``index_in``.

Persistence, in ``.hoodie/.aux/hoodie_py_writer_index/``: a full snapshot ``base_<instant>.parquet`` plus one
``delta_<instant>.parquet`` per later write holding only the entries it added (so a write costs what it adds,
not the size of the table); after a number of deltas they are folded into a new base. Every file is written
atomically after its instant completed, and is named after it, so the index reflects the last file's
instant. When that is not the table's latest completed write (a crash between a commit and the index
update), or the files are missing or unreadable, the index is rebuilt from the table's latest snapshot (the
``_hoodie_record_key`` / ``_hoodie_partition_path`` / ``_hoodie_file_name`` meta columns): it is a cache,
never the source of truth.

Keys are added when written and kept when deleted: a re-inserted key goes back to its file group (which
is always correct), and a delete that loses to a newer record (event-time ordering) leaves a valid entry.
"""
from __future__ import annotations

import io
import logging
import posixpath
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..hoodie.storage import Storage

log = logging.getLogger(__name__)

INDEX_DIR = ".hoodie/.aux/hoodie_py_writer_index"
#: deltas after which the next save writes a new base instead
MAX_DELTAS = 16
_SEP = pa.scalar("\x00", pa.string())
_SCHEMA = pa.schema([("partition", pa.string()), ("key", pa.string()), ("file_id", pa.string())])
_FILE = re.compile(r"^(base|delta)_(\d+)\.parquet$")


def composite(partitions: pa.Array, keys: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(partitions, keys, _SEP)


class RecordIndex:
    def __init__(self, table: pa.Table | None = None, instant: str | None = None, deltas: int = 0):
        self.table = (table if table is not None else _SCHEMA.empty_table()).combine_chunks()
        self.instant = instant
        self.deltas = deltas  # delta files on storage after the base
        self._composite: pa.Array | None = None
        self._unsaved: list[pa.Table] = []

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def composite(self) -> pa.Array:
        if self._composite is None:
            t = self.table
            self._composite = composite(t.column("partition").combine_chunks(), t.column("key").combine_chunks()) \
                if t.num_rows else pa.array([], pa.string())
        return self._composite

    def lookup(self, partitions: pa.Array, keys: pa.Array) -> pa.Array:
        """File id of each (partition, key), null where the record is unknown."""
        if not len(self):
            return pa.nulls(len(keys), pa.string())
        pos = pc.index_in(composite(partitions, keys), value_set=self.composite)
        return self.table.column("file_id").combine_chunks().take(pos)

    def add(self, partitions: pa.Array, keys: pa.Array, file_ids: pa.Array) -> None:
        """Add new (partition, key) → file id entries (the caller guarantees they are not present yet)."""
        new = pa.table({"partition": partitions, "key": keys, "file_id": file_ids}, schema=_SCHEMA)
        if not new.num_rows:
            return
        new_comp = composite(new.column("partition").combine_chunks(), new.column("key").combine_chunks())
        self.table = pa.concat_tables([self.table, new]).combine_chunks()
        self._composite = pa.concat_arrays([self._composite, new_comp]) if self._composite is not None else None
        self._unsaved.append(new)

    def counts(self) -> dict[tuple[str, str], int]:
        """Records per (partition, file id), deleted ones included (a size estimate for small-file routing)."""
        if not len(self):
            return {}
        g = self.table.group_by(["partition", "file_id"]).aggregate([("key", "count")])
        return {(p, f): n for p, f, n in zip(g.column("partition").to_pylist(), g.column("file_id").to_pylist(),
                                             g.column("key_count").to_pylist())}

    # -- persistence ---------------------------------------------------------------------------------------------
    def save(self, storage: Storage, instant: str | None, *, full: bool = False) -> None:
        """Persist what was added since the last save as of ``instant`` (a new base when ``full`` or due)."""
        existing = _list(storage)
        if full or self.deltas >= MAX_DELTAS or not any(kind == "base" for kind, _, _ in existing):
            storage.write_bytes_atomic(f"{INDEX_DIR}/base_{instant}.parquet", _parquet(self.table))
            for _kind, ts, rel in existing:  # older files, now folded into the new base
                if ts != instant:
                    _delete(storage, rel)
            self.deltas = 0
        else:
            new = pa.concat_tables(self._unsaved) if self._unsaved else _SCHEMA.empty_table()
            storage.write_bytes_atomic(f"{INDEX_DIR}/delta_{instant}.parquet", _parquet(new))
            self.deltas += 1
        self._unsaved = []
        self.instant = instant

    @classmethod
    def load(cls, storage: Storage) -> "RecordIndex | None":
        files = _list(storage)
        bases = [(ts, rel) for kind, ts, rel in files if kind == "base"]
        if not bases:
            return None
        base_ts, base_rel = max(bases)
        deltas = sorted((ts, rel) for kind, ts, rel in files if kind == "delta" and ts > base_ts)
        try:
            parts = [_read(storage, base_rel)] + [_read(storage, rel) for _, rel in deltas]
        except Exception as e:  # a missing or torn file: rebuild
            log.warning("%s: record index unreadable (%s); rebuilding it", storage.url, e)
            return None
        if any(p.schema != _SCHEMA for p in parts):
            return None
        instant = deltas[-1][0] if deltas else base_ts
        return cls(pa.concat_tables(parts), instant, len(deltas))

    @classmethod
    def rebuild(cls, url: str, storage_options: dict | None, instant: str | None) -> "RecordIndex":
        """From the latest snapshot's meta columns (base rows name their file, log rows their file id)."""
        if instant is None:
            return cls(None, None)
        from ..hoodie.read import plan_slices, read_schema  # late: they import the whole reader
        from ..hoodie.slice_reader import SliceRead, read_slice
        from ..hoodie.table import HudiTable

        snapshot = HudiTable(url, storage_options)
        slices, latest, _ = plan_slices(snapshot)
        columns = ["_hoodie_record_key", "_hoodie_partition_path", "_hoodie_file_name"]
        req = SliceRead(snapshot, read_schema(snapshot, snapshot.arrow_schema(), columns, False), latest)
        t = pa.concat_tables([read_slice(req, s) for s in slices]) if slices else req.schema.empty_table()
        names = t.column("_hoodie_file_name").combine_chunks()
        file_ids = pc.list_element(pc.split_pattern(names, "_", max_splits=1), 0)
        table = pa.table({"partition": pc.cast(t.column("_hoodie_partition_path"), pa.string()),
                          "key": pc.cast(t.column("_hoodie_record_key"), pa.string()),
                          "file_id": file_ids}, schema=_SCHEMA)
        return cls(table, instant)


def _list(storage: Storage) -> list[tuple[str, str, str]]:
    out = []
    for info in storage.list_dir(INDEX_DIR):
        m = _FILE.match(posixpath.basename(info.path))
        if m:
            out.append((m.group(1), m.group(2), info.path))
    return out


def _parquet(t: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(t, sink, compression="lz4")
    return sink.getvalue()


def _read(storage: Storage, rel: str) -> pa.Table:
    return pq.read_table(io.BytesIO(storage.read_bytes(rel))).replace_schema_metadata(None)


def _delete(storage: Storage, rel: str) -> None:
    try:
        storage.fs.rm(storage.full(rel))
    except FileNotFoundError:
        pass
