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


_TIMESTAMP_PARTITION = ColumnDifference(
    "Hudi's Spark read types the field of a timestamp key generator as a string (the type of a partition column "
    "whose value cannot be rebuilt from the path, apache/hudi#11615, HUDI-7709), holding the stored number's "
    "digits; we return it as the int64 the files store, the type of the table's schema",
    value_as_text)

#: configuration → column → the difference
COLUMNS: dict[str, dict[str, ColumnDifference]] = {
    "mor_v9_part_timestamp": {"event_ms": _TIMESTAMP_PARTITION},
}

#: (configuration, check) → the difference; checks are "read" (snapshot and incremental), "stream", "cdc"
_STALE_PARTIAL_UPDATE = (
    "Hudi 0.15's PartialUpdateAvroPayload keeps the older values when an update's ordering value is smaller, "
    "but stamps the row with the stale update's _hoodie_commit_time (its snapshot after step 3); compaction then "
    "writes that commit time into the base file. We keep the commit time of the version whose values won, and "
    "the stream delivers no change for an update that changed nothing; every value is equal")
KNOWN: dict[tuple[str, str], Difference] = {
    ("mor_v6_015_partial_update", "read"): Difference(r"^step 3 snapshot snapshot: AssertionError",
                                                      _STALE_PARTIAL_UPDATE),
    ("mor_v6_015_partial_update", "stream"): Difference(r"^step [345] stream replay: \d+ keys differ",
                                                        _STALE_PARTIAL_UPDATE),
}

#: configuration → the error Hudi raised while writing it, and why; the steps before the error are still compared
HUDI_REFUSES: dict[str, Difference] = {
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
