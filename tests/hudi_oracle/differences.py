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


def partition_path_for_value(ours: pa.Table, hudi: pa.Table, column: str) -> list[str]:
    """Hudi returns the partition path (``yyyy/MM/dd``) as the column's value; we return the epoch milliseconds
    stored in the file, whose UTC day is that path."""
    problems = []
    hudi_rows = hudi.select([column, "_hoodie_partition_path"]).to_pylist()
    if any(r[column] != r["_hoodie_partition_path"] for r in hudi_rows):
        problems.append(f"Hudi's {column} is no longer the partition path")
    if ours.schema.field(column).type != pa.int64():
        problems.append(f"our {column} is {ours.schema.field(column).type}, not the stored int64")
    for r in ours.select([column, "_hoodie_partition_path"]).to_pylist():
        day = dt.datetime.fromtimestamp(r[column] / 1000, dt.timezone.utc).strftime("%Y/%m/%d")
        if day != r["_hoodie_partition_path"]:
            problems.append(f"our {column}={r[column]} is not in partition {r['_hoodie_partition_path']}")
            break
    return problems


_TIMESTAMP_PARTITION = ColumnDifference(
    "semantic choice: Hudi's Spark read puts the partition path string (2024/01/01) in place of the value of a "
    "timestamp key generator's field, because the epoch value cannot be rebuilt from the path "
    "(apache/hudi#11615, HUDI-7709; users asking for the stored value: apache/hudi#11002). We return the value "
    "the file stores (the epoch milliseconds); `_hoodie_partition_path` has the path",
    partition_path_for_value)

#: configuration → column → the difference
COLUMNS: dict[str, dict[str, ColumnDifference]] = {
    "mor_v9_part_timestamp": {"event_ms": _TIMESTAMP_PARTITION},
}

#: (configuration, check) → the difference; checks are "read" (snapshot and incremental), "stream", "cdc"
KNOWN: dict[tuple[str, str], Difference] = {}

#: configuration → the error Hudi raised while writing it, and why; the steps before the error are still compared
HUDI_REFUSES: dict[str, Difference] = {
    "mor_v9_orc": Difference(
        r"Not support write to Orc file",
        "Hudi 1.2 writes ORC base files but cannot merge into them: the first compaction of a MERGE_ON_READ table "
        "fails (HoodieIOException from the merge handle); the four steps before it are compared"),
}
