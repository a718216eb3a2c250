"""File skipping and key lookups from Hudi's metadata table: ``column_stats``, ``partition_stats`` and
``record_index`` (issue 25.4), the way Hudi's own readers use them (``HoodieFileIndex`` with data skipping and
the record-level index).

What the partitions hold, read from Hudi-written tables (0.15 and 1.2) and Hudi's ``HashID``,
``ColumnStatsIndexPrefixRawKey`` and ``HoodieMetadataPayload``:

- ``column_stats``: one record per (column, data file), keyed ``id(column) + id(partition) + md5(file name)``
  with ``id`` = Base64 of the big-endian XXHash64 of the UTF-8 text, seed ``0xdabadaba`` (an int widened to a
  long: :data:`_HASH_SEED`) and ``md5`` = Base64 of the MD5 digest. The value (``HoodieMetadataColumnStats``)
  has the file name, the column name, ``minValue``/``maxValue`` in typed wrappers (``IntWrapper``,
  ``StringWrapper``, ...), ``valueCount`` (nulls included) and ``nullCount``. Records of one key merge as
  ``HoodieMetadataPayload.mergeColumnStatsRecords`` does: a tombstone (``isDeleted``) on either side leaves the
  newer record, otherwise the smaller minimum, the larger maximum and the sums of the counts.
- ``partition_stats``: the same records for a whole data partition, keyed ``id(column) + id(partition)``, the
  partition path in ``fileName``.
- ``record_index``: record key -> its partition and file group (``HoodieRecordIndexInfo``: the file id as the
  two halves of a UUID plus a file index, or as text), a global index (one location per key); a newer record
  replaces an older one and a DELETE block removes the key.

Whether a predicate may hold on a slice is decided by :func:`hoodie.filters.stats_may_match` on the statistics
of all its files together (per column: the smallest minimum, the largest maximum, the summed counts): a merged
row takes each column's value from one of the slice's files, but a partial update takes different columns
from different files, so files are not judged one by one. A file without statistics for a column, and any
value whose order this module does not trust (timestamps, whose unit some writers mislabel; floats, where NaN
orders differently in Spark and in the statistics; strings outside the Basic Multilingual Plane's first
55,296 code points, which Java orders by UTF-16 units), leaves the column unbounded: the slice is kept.

The metadata partitions are used only where the ``files`` listing is (:meth:`HudiTable.files_index`: the
metadata table is on, present and caught up), the partition is completed (``hoodie.table.metadata.partitions``
and not inflight) and holds a file slice; otherwise nothing is skipped and the reason is logged once.
"""
from __future__ import annotations

import base64
import datetime
import decimal
import hashlib
import json
import struct
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from ..errors import CorruptFileError
from .filters import And, ColumnStats, Compare, Filter, Or, columns_of, stats_may_match
from .fs_view import FileSlice
from .metadata_table import MetadataPartition, log_fallback, metadata_partitions
from .table import RECORD_KEY, HudiTable

COLUMN_STATS, PARTITION_STATS, RECORD_INDEX = "column_stats", "partition_stats", "record_index"
#: ``HoodieTableMetadataUtil``'s partition identifier of a non-partitioned table's files
NON_PARTITIONED_ID = "."
#: ``HashID.HASH_SEED`` (``0xdabadaba``, a Java int) as the long XXHash64 takes
_HASH_SEED = 0xFFFFFFFFDABADABA
_M64 = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                           0x27D4EB2F165667C5)
#: ``MetadataPartitionType`` record types
_COLUMN_STATS_TYPE, _RECORD_INDEX_TYPE, _PARTITION_STATS_TYPE = 3, 5, 6
#: key generators whose record key is the one key field's value as written
_SIMPLE_KEY_GENERATORS = frozenset({"SIMPLE", "SimpleKeyGenerator", "SimpleAvroKeyGenerator"})


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def xxhash64(data: bytes, seed: int) -> int:
    """XXH64 (Yann Collet's reference algorithm; the keys are short, so plain Python is fast enough)."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed & _M64, (seed - _P1) & _M64]
        while i + 32 <= n:
            v = [_round(acc, lane) for acc, lane in zip(v, struct.unpack_from("<4Q", data, i))]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for acc in v:
            h = ((h ^ _round(0, acc)) * _P1 + _P4) & _M64
    else:
        h = (seed + _P5) & _M64
    h = (h + n) & _M64
    while i + 8 <= n:
        h = (_rotl(h ^ _round(0, struct.unpack_from("<Q", data, i)[0]), 27) * _P1 + _P4) & _M64
        i += 8
    if i + 4 <= n:
        h = (_rotl(h ^ ((struct.unpack_from("<I", data, i)[0] * _P1) & _M64), 23) * _P2 + _P3) & _M64
        i += 4
    for b in data[i:]:
        h = (_rotl(h ^ ((b * _P5) & _M64), 11) * _P1) & _M64
    h = ((h ^ (h >> 33)) * _P2) & _M64
    h = ((h ^ (h >> 29)) * _P3) & _M64
    return h ^ (h >> 32)


def index_id(text: str) -> str:
    """``ColumnIndexID``/``PartitionIndexID`` of a column name or partition path, as keys spell it."""
    return base64.b64encode(struct.pack(">Q", xxhash64(text.encode("utf-8"), _HASH_SEED))).decode("ascii")


def file_id_key(name: str) -> str:
    """``FileIndexID`` of a file name."""
    return base64.b64encode(hashlib.md5(name.encode("utf-8")).digest()).decode("ascii")


def _partition_id(partition: str) -> str:
    return index_id(partition or NON_PARTITIONED_ID)


def open_metadata_partition(table: HudiTable, name: str, *, record_names: bool = False) -> MetadataPartition | None:
    """Metadata partition ``name`` of ``table``, or None (the reason logged once) when it cannot be used."""
    files = table.files_index()  # None: turned off, missing or behind, already logged
    if files is None:
        return None
    done, inflight = metadata_partitions(table.config)
    if name not in done or name in inflight:
        log_fallback(table.url, f"'{name}' is not a completed metadata partition (hoodie.table.metadata."
                     f"partitions={','.join(sorted(done)) or 'empty'})", doing=f"not using its {name}")
        return None
    part = files.sibling(name, record_names=record_names)
    if not part.slices:
        log_fallback(table.url, f"{name} holds no completed file slice", doing=f"not using its {name}")
        return None
    return part


# -- statistics --------------------------------------------------------------------------------------------------
def _bound(wrapped: Any, ftype: pa.DataType) -> Any:
    """A ``minValue``/``maxValue`` (``(wrapper record name, {"value": v})``) as a value of a column of
    ``ftype`` that orders as Spark orders the column, or None when it cannot be trusted to."""
    if not (isinstance(wrapped, tuple) and len(wrapped) == 2 and isinstance(wrapped[1], dict)):
        return None
    kind, value = str(wrapped[0]).rsplit(".", 1)[-1], wrapped[1].get("value")
    if kind == "StringWrapper" and isinstance(value, str) and (pa.types.is_string(ftype)
                                                               or pa.types.is_large_string(ftype)):
        return value if all(ord(c) < 0xD800 for c in value) else None
    if kind in ("IntWrapper", "LongWrapper") and type(value) is int and pa.types.is_integer(ftype):
        return value
    if kind == "BooleanWrapper" and isinstance(value, bool) and pa.types.is_boolean(ftype):
        return value
    if kind in ("DateWrapper", "LocalDateWrapper") and pa.types.is_date(ftype):
        if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            return value
        if type(value) is int and -700000 < value < 2900000:
            return datetime.date(1970, 1, 1) + datetime.timedelta(days=value)
        return None
    if kind == "DecimalWrapper" and isinstance(value, decimal.Decimal) and value.is_finite() \
            and pa.types.is_decimal(ftype):
        return value
    return None


def _bounded(s: ColumnStats) -> bool:
    """Whether every non-null value of the file lies in [min, max] (or it has none)."""
    all_null = s.value_count is not None and s.null_count is not None and s.null_count >= s.value_count
    return all_null or (s.min is not None and s.max is not None)


def _count(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def union(stats: Iterable[ColumnStats]) -> ColumnStats:
    """One column's statistics over several files: bounded only where each file is."""
    out: ColumnStats | None = None
    for s in stats:
        if out is None:
            out = s
            continue
        if not (_bounded(out) and _bounded(s)):
            lo = hi = None
        else:
            los = [x.min for x in (out, s) if x.min is not None]
            his = [x.max for x in (out, s) if x.max is not None]
            lo, hi = (min(los), max(his)) if los else (None, None)
        out = ColumnStats(lo, hi, _count(out.null_count, s.null_count), _count(out.value_count, s.value_count))
    return out if out is not None else ColumnStats()


def _all_null(raw: dict) -> bool:
    nulls, values = raw.get("nullCount"), raw.get("valueCount")
    return isinstance(nulls, int) and isinstance(values, int) and nulls >= values


def _merge(older: dict | None, newer: dict) -> dict:
    """``HoodieMetadataPayload.mergeColumnStatsRecords`` on raw ``HoodieMetadataColumnStats`` records, where a
    bound that cannot be merged (a side with values but no bound, wrappers of two types) is dropped and the
    result marked ``_unbounded``."""
    if older is None or newer.get("isDeleted") or older.get("isDeleted"):
        return newer
    out = dict(newer)
    for field in ("valueCount", "nullCount"):
        a, b = older.get(field), newer.get(field)
        out[field] = a + b if isinstance(a, int) and isinstance(b, int) else None
    sides = [r for r in (older, newer) if not _all_null(r)]
    out["minValue"] = out["maxValue"] = None
    out["_unbounded"] = False
    if not sides:
        return out
    lows: list[Any] = [r.get("minValue") for r in sides]
    highs: list[Any] = [r.get("maxValue") for r in sides]
    wrappers = lows + highs
    if any(r.get("_unbounded") for r in sides) or not all(isinstance(w, tuple) and len(w) == 2
                                                         and isinstance(w[1], dict) for w in wrappers) \
            or len({w[0] for w in wrappers}) != 1:
        out["_unbounded"] = True
        return out
    try:
        out["minValue"] = (lows[0][0], {"value": min(w[1].get("value") for w in lows)})
        out["maxValue"] = (highs[0][0], {"value": max(w[1].get("value") for w in highs)})
    except TypeError:
        out["minValue"] = out["maxValue"] = None
        out["_unbounded"] = True
    return out


def _stats_record(record: Any, key: str, where: str, kind: int) -> dict | None:
    """The ``ColumnStatsMetadata`` of a record of ``kind``, None for a key a DELETE block removed."""
    if record is None:
        return None
    stats = record.get("ColumnStatsMetadata") if isinstance(record, dict) else None
    if not isinstance(record, dict) or record.get("type") != kind or not isinstance(stats, dict) \
            or not isinstance(stats.get("fileName"), str) or not isinstance(stats.get("columnName"), str):
        raise CorruptFileError(f"{where}: metadata record {key!r} is not a statistics record of type {kind}")
    return stats


def _column_stats(raw: dict, ftype: pa.DataType) -> ColumnStats:
    counts: list[int | None] = []
    for f in ("nullCount", "valueCount"):
        n = raw.get(f)
        counts.append(n if isinstance(n, int) and n >= 0 else None)
    if raw.get("_unbounded"):
        return ColumnStats(None, None, counts[0], counts[1])
    lo, hi = _bound(raw.get("minValue"), ftype), _bound(raw.get("maxValue"), ftype)
    return ColumnStats(lo, hi, counts[0], counts[1]) if lo is not None and hi is not None else \
        ColumnStats(None, None, counts[0], counts[1])


def _read_stats(part: MetadataPartition, columns: Iterable[str], partitions: Iterable[str], kind: int,
                schema: pa.Schema) -> dict[tuple[str, str], dict[str, ColumnStats]]:
    """``(partition, file name or partition path) -> column -> statistics`` of ``columns`` in ``partitions``,
    read by the key prefix of each column, merged in Hudi's order."""
    by_id = {_partition_id(p): p for p in partitions}
    out: dict[tuple[str, str], dict[str, ColumnStats]] = {}
    for column in columns:
        prefix = index_id(column)
        merged: dict[str, dict | None] = {}
        for key, record, where in part.records(prefix=prefix):
            if key[len(prefix):len(prefix) + 12] not in by_id:
                continue
            stats = _stats_record(record, key, where, kind)
            if stats is not None:
                name = stats["fileName"]
                expect = prefix + key[len(prefix):len(prefix) + 12] + (
                    file_id_key(name) if kind == _COLUMN_STATS_TYPE else "")
                if stats["columnName"] != column or key != expect:
                    raise CorruptFileError(f"{where}: metadata record {key!r} holds the statistics of "
                                           f"{stats['columnName']!r} in {name!r}, which another key spells")
            merged[key] = None if stats is None else _merge(merged.get(key), stats)
        ftype = schema.field(column).type
        for key, raw in merged.items():
            if raw is None or raw.get("isDeleted"):
                continue
            where_key = (by_id[key[len(prefix):len(prefix) + 12]], raw["fileName"])
            bounds = _column_stats(raw, ftype)
            if kind == _PARTITION_STATS_TYPE:  # counts over the files that had the column (see SlicePruner)
                bounds = ColumnStats(bounds.min, bounds.max)
            out.setdefault(where_key, {})[column] = bounds
    return out


# -- record index ------------------------------------------------------------------------------------------------
def record_keys(f: Filter, columns: frozenset[str]) -> frozenset[str] | None:
    """The record keys a row matching ``f`` must have (``=``/``IN`` on a key column, through AND and OR), or
    None when ``f`` does not bound them."""
    if isinstance(f, Compare):
        if f.column not in columns:
            return None
        if f.op in ("=", "<=>") and isinstance(f.value, str):
            return frozenset({f.value})
        if f.op == "in" and all(isinstance(v, str) or v is None for v in f.value):
            return frozenset(v for v in f.value if v is not None)
        return None
    if isinstance(f, And):
        found = [k for k in (record_keys(p, columns) for p in f.parts) if k is not None]
        return frozenset.intersection(*found) if found else None
    if isinstance(f, Or):
        parts = [record_keys(p, columns) for p in f.parts]
        return None if any(k is None for k in parts) else frozenset().union(*parts)  # type: ignore[arg-type]
    return None


def key_columns(table: HudiTable, schema: pa.Schema) -> frozenset[str]:
    """The columns whose value is the record key: ``_hoodie_record_key``, and the one key field of a simple key
    generator when it is a string (other key generators format the key from the fields)."""
    out = {RECORD_KEY} if table.config.populate_meta_fields and RECORD_KEY in schema.names else set()
    cfg = table.config
    kind = (cfg.key_generator or "").rsplit(".", 1)[-1]
    if len(cfg.record_key_fields) == 1 and kind in _SIMPLE_KEY_GENERATORS:
        name = cfg.record_key_fields[0]
        if name in schema.names and pa.types.is_string(schema.field(name).type):
            out.add(name)
    return frozenset(out)


def _file_id(info: Any, key: str, where: str) -> tuple[str, str]:
    """``HoodieRecordIndexInfo`` -> (partition, file id), as ``HoodieTableMetadataUtil`` spells the file id."""
    if not isinstance(info, dict) or not isinstance(info.get("partitionName"), str):
        raise CorruptFileError(f"{where}: record index entry {key!r} has no partition")
    encoding = info.get("fileIdEncoding", 0)
    if encoding == 1 and isinstance(info.get("fileId"), str) and info["fileId"]:
        return info["partitionName"], info["fileId"]
    high, low, index = info.get("fileIdHighBits"), info.get("fileIdLowBits"), info.get("fileIndex")
    if encoding not in (0, None) or not (isinstance(high, int) and isinstance(low, int)
                                         and isinstance(index, int) and index >= 0):
        raise CorruptFileError(f"{where}: record index entry {key!r} has no file id (encoding {encoding!r})")
    return info["partitionName"], f"{uuid.UUID(int=((high & _M64) << 64) | (low & _M64))}-{index}"


def lookup_keys(part: MetadataPartition, keys: Iterable[str]) -> dict[str, tuple[str, str]]:
    """Record key -> (partition, file id) of the keys the record index holds."""
    found: dict[str, tuple[str, str] | None] = {}
    for key, record, where in part.records(keys=keys):
        if record is None:
            found[key] = None
            continue
        if not isinstance(record, dict) or record.get("type") != _RECORD_INDEX_TYPE:
            raise CorruptFileError(f"{where}: metadata record {key!r} is not a record index entry")
        found[key] = _file_id(record.get("recordIndexMetadata"), key, where)
    return {k: v for k, v in found.items() if v is not None}


def _global_record_index(table: HudiTable) -> bool:
    """Whether the record index maps each key to one location (Hudi 1.1+ may keep a partitioned one, keys unique
    only within a partition, which says so in the table's index definitions)."""
    path = table.config.raw.get("hoodie.table.index.defs.path")
    if not path:
        return True
    try:
        defs = json.loads(table.storage.read_bytes(path))
    except FileNotFoundError:
        return True
    except ValueError as e:
        raise CorruptFileError(f"{table.url}/{path}: not JSON: {e}") from e
    spec = (defs.get("indexDefinitions") or {}).get(RECORD_INDEX) if isinstance(defs, dict) else None
    options = spec.get("indexOptions") if isinstance(spec, dict) else None
    return not (isinstance(options, dict) and str(options.get("isPartitioned", "false")).lower() != "false")


# -- planning ----------------------------------------------------------------------------------------------------
class SlicePruner:
    """Which file slices of ``table`` may hold a row matching ``filter``, from its metadata table.

    ``latest``: the slices are the latest snapshot's (only then does the record index, which knows where each
    key is now, say where a key was).

    Null counts cover only the rows written with the column: a file written before a column was added has no
    statistics for it (its slice is kept), but a partition's statistics are summed over the files that had the
    column, and a table version 6 log file holds the blocks of several writes, some maybe without the column,
    whose statistics Hudi merges with the others'. Their rows read as null, so there only the bounds of the
    non-null values are used, never the null counts (found on ``mor_v9_evolve``: ``extra IS NULL`` would have
    skipped a partition whose older files lack ``extra``)."""

    def __init__(self, table: HudiTable, filter: Filter, schema: pa.Schema, *, latest: bool):
        self.table, self.filter, self.schema, self.latest = table, filter, schema, latest
        self.columns = sorted(c for c in columns_of(filter) if c in schema.names)
        #: what the last :meth:`prune` kept at each step: total, after the record index, partition stats, column stats
        self.counts: dict[str, int] = {}

    def _stats(self, name: str, kind: int, partitions: Iterable[str]) -> dict[tuple[str, str], dict[str, ColumnStats]]:
        part = open_metadata_partition(self.table, name, record_names=True) if self.columns else None
        return {} if part is None else _read_stats(part, self.columns, partitions, kind, self.schema)

    def prune(self, slices: list[FileSlice]) -> list[FileSlice]:
        self.counts = {"total": len(slices)}
        keys = record_keys(self.filter, key_columns(self.table, self.schema)) if self.latest else None
        if keys is not None and slices:
            if not _global_record_index(self.table):
                log_fallback(self.table.url, "its record index is partitioned (keys unique per partition)",
                             doing=f"not using its {RECORD_INDEX}")
            else:
                part = open_metadata_partition(self.table, RECORD_INDEX)
                if part is not None:
                    groups = set(lookup_keys(part, keys).values())
                    slices = [s for s in slices if (s.partition, s.file_id) in groups]
        self.counts["record_index"] = len(slices)
        partitions = sorted({s.partition for s in slices})
        pstats = self._stats(PARTITION_STATS, _PARTITION_STATS_TYPE, partitions)
        if pstats:
            slices = [s for s in slices if stats_may_match(self.filter, pstats.get((s.partition, s.partition), {}))]
        self.counts["partition_stats"] = len(slices)
        fstats = self._stats(COLUMN_STATS, _COLUMN_STATS_TYPE, sorted({s.partition for s in slices}))
        if fstats:
            slices = [s for s in slices if self._may_match(s, fstats)]
        self.counts["column_stats"] = len(slices)
        return slices

    def _may_match(self, s: FileSlice, fstats: Mapping[tuple[str, str], dict[str, ColumnStats]]) -> bool:
        """Whether a matching row may come out of slice ``s``: True unless each of its files has statistics and
        their union rules a match out."""
        names = [f.rsplit("/", 1)[-1] for f in s.files]
        per_file = [fstats.get((s.partition, n)) for n in names]
        if not names or any(p is None for p in per_file):
            return True
        if self.table.config.version < 8 and s.log_files:  # see the class docstring
            per_file = [p if p is None or i == 0 and s.base_file is not None
                        else {c: ColumnStats(v.min, v.max) for c, v in p.items()} for i, p in enumerate(per_file)]
        merged = {c: union(p[c] for p in per_file if p is not None) if all(p is not None and c in p for p in per_file)
                  else ColumnStats() for c in self.columns}
        return stats_may_match(self.filter, merged)
