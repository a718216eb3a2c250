"""Where our answers knowingly differ from Hudi's, and the configurations Hudi itself refuses to write, each
with its reason. The README's section "Checked against Apache Hudi itself" lists the same entries (a test checks
it names each).

A listed difference is asserted, not skipped. A whole-check difference (:data:`KNOWN`) must still be found, and
every difference line must match its pattern, so a fix fails the test until the entry goes. A column difference
(:data:`COLUMNS`) leaves that one column out of the comparisons, and its own check proves the column differs
exactly as described, so the rest of the table is still compared.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import NamedTuple

import pyarrow as pa


class Difference(NamedTuple):
    pattern: str   # every difference line of the check (or Hudi's error) matches this regular expression
    reason: str    # why: a Hudi bug (with its issue) or a semantic choice of ours


class ColumnDifference(NamedTuple):
    reason: str
    #: (our snapshot, Hudi's snapshot, column) -> problems; empty when the column differs exactly as described
    check: Callable[[pa.Table, pa.Table, str], list[str]]


def value_as_text(ours: pa.Table, hudi: pa.Table, column: str) -> list[str]:
    """Hudi returns the column as a string holding the stored number's digits; we return the stored int64. The
    rows are matched by record key."""
    problems = []
    if hudi.schema.field(column).type != pa.string():
        problems.append(f"Hudi's {column} is {hudi.schema.field(column).type}, no longer string")
    if ours.schema.field(column).type != pa.int64():
        problems.append(f"our {column} is {ours.schema.field(column).type}, not the stored int64")
    theirs = {r["_hoodie_record_key"]: r[column] for r in hudi.select(["_hoodie_record_key", column]).to_pylist()}
    for r in ours.select(["_hoodie_record_key", column, "_hoodie_partition_path"]).to_pylist():
        if theirs.get(r["_hoodie_record_key"]) != str(r[column]):
            problems.append(f"key {r['_hoodie_record_key']}: Hudi {theirs.get(r['_hoodie_record_key'])!r}, "
                            f"ours {r[column]!r}")
        day = dt.datetime.fromtimestamp(r[column] / 1000, dt.timezone.utc).strftime("%Y/%m/%d")
        if day != r["_hoodie_partition_path"]:
            problems.append(f"our {column}={r[column]} is not in partition {r['_hoodie_partition_path']}")
    return problems[:5]


def equal_to_hudi_snapshot(ours: pa.Table, hudi: pa.Table, column: str) -> list[str]:
    """The column equals Hudi's snapshot, key by key (it differs in other answers of Hudi's only)."""
    theirs = {r["_hoodie_record_key"]: r[column] for r in hudi.select(["_hoodie_record_key", column]).to_pylist()}
    return [f"key {r['_hoodie_record_key']}: Hudi {theirs.get(r['_hoodie_record_key'])!r}, ours {r[column]!r}"
            for r in ours.select(["_hoodie_record_key", column]).to_pylist()
            if theirs.get(r["_hoodie_record_key"]) != r[column]][:5]


def path_text(ours: pa.Table, hudi: pa.Table, column: str) -> list[str]:
    """Hudi returns the value as its partition path spells it (``2024/01/01``), we the stored ``2024-01-01``."""
    theirs = {r["_hoodie_record_key"]: r[column] for r in hudi.select(["_hoodie_record_key", column]).to_pylist()}
    return [f"key {r['_hoodie_record_key']}: Hudi {theirs.get(r['_hoodie_record_key'])!r}, ours {r[column]!r}"
            for r in ours.select(["_hoodie_record_key", column]).to_pylist()
            if theirs.get(r["_hoodie_record_key"]) != r[column].replace("-", "/")][:5]


_TIMESTAMP_PARTITION = ColumnDifference(
    "Hudi's Spark read types the field of a timestamp key generator as a string (the type of a partition column "
    "whose value cannot be rebuilt from the path, apache/hudi#11615, HUDI-7709), holding the stored number's "
    "digits; we return it as the int64 the files store, the type of the table's schema",
    value_as_text)
_DROPPED_PARTITION_COLUMN = ColumnDifference(
    "Hudi 0.15's incremental query on a COPY_ON_WRITE table that drops its partition columns returns them as null, "
    "while its snapshot fills them from the partition path; we fill them in every read (the snapshot's values: "
    "this check), so incremental rows and the stream carry them",
    equal_to_hudi_snapshot)
_SLASH_DATE = ColumnDifference(
    "Hudi 1.2 returns the field of slash-separated date partitioning (hoodie.datasource.write.slash.separated."
    "date.partitioning) as its partition path spells it, 2024/01/01, not the 2024-01-01 it was given and stores; "
    "we return the stored value, as for the timestamp key generator's field",
    path_text)

#: configuration → column → the difference
COLUMNS: dict[str, dict[str, ColumnDifference]] = {
    "mor_v9_part_timestamp": {"event_ms": _TIMESTAMP_PARTITION},
    "cow_v6_015_drop_partition_columns": {"region": _DROPPED_PARTITION_COLUMN},
    "cow_v6_015_drop_partition_columns_multi": {"region": _DROPPED_PARTITION_COLUMN,
                                                "bucket": _DROPPED_PARTITION_COLUMN},
    "mor_v9_part_slash_day": {"event_date": _SLASH_DATE},
}

#: (configuration, check) → the difference; checks are "read" (snapshot and incremental), "stream", "cdc"
_STALE_PARTIAL_UPDATE = (
    "Hudi 0.15's PartialUpdateAvroPayload keeps the older values when an update's ordering value is smaller, "
    "but stamps the row with the stale update's _hoodie_commit_time (its snapshot after step 3); compaction then "
    "writes that commit time into the base file. We keep the commit time of the version whose values won, and "
    "the stream delivers no change for an update that changed nothing; every value is equal")
_REWOUND = (
    "the stream stops at a restore (or a rollback of a completed write) that undid instants it had delivered, in "
    "one line naming it, its savepoint and the undone instants; Hudi's incremental query and streaming source carry "
    "on, leaving a sink with the undone changes. The reads (snapshot, incremental) equal Hudi's at every step, and "
    "the stream with onRewind=reconcile rebuilds Hudi's snapshot at every step, the restore's included")
_LOG_COMPACTION_REPEATS = (
    "Hudi 1.x's log compaction stamps the records it repeats with its own instant, so Hudi's incremental query over "
    "a write and the log compaction after it returns, besides the write's 8 rows, 6 rows of earlier writes the log "
    "compaction repeated: changes returned again. We return each change once, under the write that made it (the "
    "range where issue 26 lost the write)")
_REWIND_LINE = (r"^step \d+ stream: DataLossError: .*: (restore \d+ to savepoint \d+|rollback \d+) undid "
                r"instant\(s\) ")
#: configurations whose timeline rewinds under the stream (their stream with onRewind=reconcile has no difference)
REWOUND = ("mor_v9_restore", "cow_v9_restore", "mor_v6_015_restore", "cow_v6_015_restore",
           "mor_v9_rollback_completed")
KNOWN: dict[tuple[str, str], Difference] = {
    **{(name, "stream"): Difference(_REWIND_LINE, _REWOUND) for name in REWOUND},
    **{(name, "read"): Difference(r"^step [37] incremental incr_step: AssertionError: step [37] incremental "
                                  r"incr_step: 8 rows, Spark returned 14$", _LOG_COMPACTION_REPEATS)
       for name in ("mor_v9_log_compaction", "mor_v8_log_compaction")},
    ("mor_v6_015_partial_update", "read"): Difference(r"^step 3 snapshot snapshot: AssertionError",
                                                      _STALE_PARTIAL_UPDATE),
    ("mor_v6_015_partial_update", "stream"): Difference(r"^step [345] stream replay: \d+ keys differ",
                                                        _STALE_PARTIAL_UPDATE),
}

#: configuration → the error Hudi raised while writing it, and why; the steps before the error are still compared
HUDI_REFUSES: dict[str, Difference] = {
    "mor_v6_015_timestamp_ntz": Difference(
        r"IncompatibleSchemaException: Unexpected type TimestampNTZType",
        "Hudi 0.15 writes no TIMESTAMP_NTZ column (1.2 does: mor_v9_timestamp_ntz, cow_v9_timestamp_ntz)"),
    "mor_v9_variant": Difference(
        r"VARIANT type is only supported in Spark 4\.0\+",
        "Hudi 1.2 writes VARIANT only from Spark 4, and Maven Central has no Hudi bundle for Spark 4"),
    "mor_v9_part_slash_date": Difference(
        r"UTF8String cannot be cast to class java\.lang\.Integer",
        "Hudi 1.2 writes slash-separated date partitioning on a DATE field but cannot read the table back (it puts "
        "the path text into the date column); the same on a yyyy-MM-dd string field: mor_v9_part_slash_day"),
    "mor_v6_015_virtual_keys": Difference(
        r"NullPointerException",
        "Hudi 0.15's own snapshot query of a MERGE_ON_READ table without meta fields fails once it has log files "
        "(step 0 is compared; COPY_ON_WRITE: cow_v6_015_virtual_keys)"),
    "mor_v9_orc": Difference(
        r"Not support write to Orc file",
        "Hudi 1.2 writes ORC base files but cannot merge into them: the first compaction of a MERGE_ON_READ table "
        "fails (HoodieIOException from the merge handle); the four steps before it are compared"),
    "mor_v6_015_orc": Difference(
        r"Base file format is not currently supported \(ORC\)",
        "Hudi 0.15 does not write ORC base files on MERGE_ON_READ tables at all"),
    "mor_v9_evolve": Difference(
        r"MutableLong cannot be cast to class org\.apache\.spark\.sql\.catalyst\.expressions\.MutableInt",
        "Hudi 1.2 cannot read its own MERGE_ON_READ table back after a RENAME COLUMN that follows an int->long "
        "promotion (its snapshot query fails; the five steps before are compared, and rename and drop alone are "
        "covered by *_rename_drop)"),
    "mor_v6_015_evolve": Difference(
        r"SchemaColumnConvertNotSupportedException: column: \[qty\], physicalType: INT32",
        "Hudi 0.15, likewise: its snapshot query fails on the promoted column once a rename follows"),
    "cow_v6_015_deletes": Difference(
        r"COLUMN_ALREADY_EXISTS\] The column `_hoodie_commit_seqno` already exists",
        "Hudi 0.15's delete_partition on a COPY_ON_WRITE table whose rows carry _hoodie_is_deleted fails in "
        "Spark's analysis; the four steps before are compared"),
}
