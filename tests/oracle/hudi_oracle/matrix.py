"""The configurations Apache Hudi itself writes for the oracle tests: one table each, several commits each.

Plain data, standard library only: this module is imported both by the tests (the project's Python) and by the
writer job that runs in the oracle's own PySpark 3.5 environment (``writer_job.py``).

A configuration is the baseline below with a few fields changed. The baseline is what a user of Hudi 1.2 gets by
default on a MERGE_ON_READ table (table version 9, metadata table on, event-time merging on a ``long`` ordering
field, one partition level); each variant moves one or two dimensions, so a failing table points at the
dimension that broke. ``scenario`` names the list of write steps (:data:`SCENARIOS`).
"""
from __future__ import annotations

BASELINE: dict = {
    "writer": "1.2",          # which Hudi bundle writes (and reads back as the oracle): "1.2" or "0.15"
    "version": 9,             # hoodie.write.table.version (0.15 writes 6 only)
    "type": "mor",            # mor | cow
    "key": "simple",          # simple (id) | complex (id,name)
    # none | one | multi | hive | timestamp | slash_date, slash_day (a date, or a yyyy-MM-dd string, as yyyy/MM/dd)
    "partition": "one",
    "ordering": "long",       # the ordering field's type, or None for none
    "merge": "event",         # event | commit | a payload class name (a custom merge)
    "metadata": True,
    "rli": False,             # record-level index (needs the metadata table)
    "base": "parquet",        # parquet | orc | lance
    "log": "avro",            # avro | parquet data blocks
    "services": [],           # compact | pending_compaction | cluster | clean_archive | log_compact
    "cdc": False,
    # flat | nested | ntz (a TIMESTAMP_NTZ column) | debezium (Postgres Debezium's columns and its marker of
    # unavailable values) | vector | variant | blob (Hudi 1.2's logical types, marked by Spark field metadata)
    "schema": "flat",
    "meta_fields": True,      # hoodie.populate.meta.fields (False: virtual keys)
    "drop_partition_columns": False,  # hoodie.datasource.write.drop.partition.columns
    "delete_marker": False,   # a custom delete field and marker (column op, value D) in the merge properties
    "scenario": "basic",
}

#: Write steps: (operation, keys, generation). Keys are ranges of record ids; the generation decides the values
#: (and, with ``stale``, an ordering value below the row it updates, so event-time and commit-time merges
#: differ). Operations beyond writes: ``evolve:<kind>`` changes the schema, ``concurrent`` runs two upserts from
#: two writers at once.
SCENARIOS: dict[str, list[dict]] = {
    "basic": [
        {"op": "insert", "keys": [0, 40], "gen": 1},
        {"op": "upsert", "keys": [0, 15], "gen": 2},
        {"op": "upsert", "keys": [10, 50], "gen": 3},
        {"op": "upsert", "keys": [5, 25], "gen": 4, "stale": True},
        {"op": "delete", "keys": [30, 35]},
        {"op": "upsert", "keys": [0, 8], "gen": 5},
    ],
    "deletes": [
        {"op": "insert", "keys": [0, 40], "gen": 1},
        {"op": "soft_delete", "keys": [0, 6], "gen": 2},
        {"op": "delete", "keys": [10, 16]},
        {"op": "upsert", "keys": [0, 3], "gen": 3},
        {"op": "delete_partition", "partitions": ["b"]},
        {"op": "upsert", "keys": [20, 45], "gen": 4},
    ],
    "overwrite": [
        {"op": "insert", "keys": [0, 40], "gen": 1},
        {"op": "upsert", "keys": [0, 10], "gen": 2},
        {"op": "insert_overwrite", "keys": [0, 12], "gen": 3},
        {"op": "upsert", "keys": [30, 45], "gen": 4},
        {"op": "insert_overwrite_table", "keys": [5, 25], "gen": 5},
        {"op": "upsert", "keys": [5, 10], "gen": 6},
    ],
    "bulk": [
        {"op": "bulk_insert", "keys": [0, 40], "gen": 1},
        {"op": "upsert", "keys": [0, 20], "gen": 2},
        {"op": "bulk_insert", "keys": [40, 60], "gen": 3},
        {"op": "upsert", "keys": [35, 55], "gen": 4},
    ],
    "evolve": [
        {"op": "insert", "keys": [0, 30], "gen": 1},
        {"op": "evolve:add_column"},
        {"op": "upsert", "keys": [0, 10], "gen": 2},
        {"op": "evolve:int_to_long"},
        {"op": "upsert", "keys": [5, 35], "gen": 3},
        {"op": "evolve:rename_column"},
        {"op": "upsert", "keys": [0, 5], "gen": 4},
        {"op": "evolve:drop_column"},
        {"op": "upsert", "keys": [20, 30], "gen": 5},
    ],
    # schema on read alone: Hudi 1.2 cannot read its own table when a rename follows an int->long promotion
    "rename_drop": [
        {"op": "insert", "keys": [0, 30], "gen": 1},
        {"op": "evolve:rename_column"},
        {"op": "upsert", "keys": [0, 10], "gen": 2},
        {"op": "evolve:drop_column"},
        {"op": "upsert", "keys": [5, 35], "gen": 3},
    ],
    # enough writes for inline compaction, clustering, clean and archive to run several times
    "long": [{"op": "insert", "keys": [0, 40], "gen": 1}]
    + [{"op": "upsert", "keys": [(3 * g) % 40, (3 * g) % 40 + 8], "gen": g} for g in range(2, 12)],
    # a savepoint, writes after it (updates, new keys, deletes), a restore to the savepoint, writes after that
    "restore": [
        {"op": "insert", "keys": [0, 40], "gen": 1},
        {"op": "upsert", "keys": [0, 15], "gen": 2},
        {"op": "savepoint"},
        {"op": "upsert", "keys": [10, 50], "gen": 3},
        {"op": "delete", "keys": [30, 35]},
        {"op": "upsert", "keys": [0, 8], "gen": 4},
        {"op": "restore"},
        {"op": "upsert", "keys": [5, 20], "gen": 5},
        {"op": "insert", "keys": [50, 55], "gen": 6},
    ],
    # the last completed write rolled back (CALL rollback_to_instant), then another write
    "rollback": [
        {"op": "insert", "keys": [0, 40], "gen": 1},
        {"op": "upsert", "keys": [0, 15], "gen": 2},
        {"op": "upsert", "keys": [10, 50], "gen": 3},
        {"op": "rollback_last"},
        {"op": "upsert", "keys": [20, 30], "gen": 4},
    ],
    "concurrent": [
        {"op": "insert", "keys": [0, 40], "gen": 1},
        {"op": "concurrent", "keys": [[0, 10], [20, 30]], "gen": 2},
        {"op": "concurrent", "keys": [[5, 15], [25, 35]], "gen": 3},
        {"op": "upsert", "keys": [0, 40], "gen": 4},
    ],
}

#: the schema-on-read steps: the column ``evolve:rename_column`` renames, and the one ``evolve:drop_column`` drops
RENAMED = ("amount", "total")
DROPPED = "name"

PARTIAL_UPDATE = "org.apache.hudi.common.model.PartialUpdateAvroPayload"
OVERWRITE_NON_DEFAULTS = "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload"
#: on a version-9 table Hudi 1.2 turns this payload into merge properties: partial update mode FILL_UNAVAILABLE,
#: the unavailable-value marker, a delete field and marker, and ordering by _event_lsn
POSTGRES_DEBEZIUM = "org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload"


def _variants() -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []

    def add(name: str, **changes) -> None:
        out.append((name, changes))

    writers = [("v9", {}), ("v8", {"version": 8}), ("v6", {"version": 6}), ("v6_015", {"writer": "0.15", "version": 6})]
    for wname, w in writers:
        for t in ("mor", "cow"):
            add(f"{t}_{wname}_basic", type=t, **w)
    for o in ("int", "double", "string", "decimal", "date", "timestamp"):
        add(f"mor_v9_order_{o}", ordering=o)
    for o in ("int", "string", "timestamp"):
        add(f"mor_v6_015_order_{o}", writer="0.15", version=6, ordering=o)
    add("mor_v9_commit_time", merge="commit")
    add("mor_v6_commit_time", version=6, merge="commit")
    # the 0.x writer's default payload, OverwriteWithLatestAvroPayload: what most 0.x tables have
    add("mor_v6_015_default_payload", writer="0.15", version=6, merge="commit")
    add("cow_v6_015_default_payload", type="cow", writer="0.15", version=6, merge="commit")
    add("mor_v8_commit_time", version=8, merge="commit")
    add("mor_v9_no_ordering", ordering=None, merge="commit")
    add("mor_v6_015_partial_update", writer="0.15", version=6, merge=PARTIAL_UPDATE)
    add("mor_v9_custom_payload", merge=OVERWRITE_NON_DEFAULTS)
    add("mor_v6_custom_payload", version=6, merge=OVERWRITE_NON_DEFAULTS)
    add("mor_v9_complex_key", key="complex")
    add("cow_v6_015_complex_key", type="cow", writer="0.15", version=6, key="complex")
    add("mor_v6_015_complex_key", writer="0.15", version=6, key="complex")
    for p in ("none", "multi", "hive", "timestamp"):
        add(f"mor_v9_part_{p}", partition=p)
    add("cow_v6_015_part_hive", type="cow", writer="0.15", version=6, partition="hive")
    add("mor_v6_015_part_timestamp", writer="0.15", version=6, partition="timestamp")
    add("mor_v9_no_metadata", metadata=False)
    add("mor_v6_015_no_metadata", writer="0.15", version=6, metadata=False)
    add("mor_v9_rli", rli=True)
    add("mor_v6_015_rli", writer="0.15", version=6, rli=True)
    add("cow_v9_orc", type="cow", base="orc")
    add("mor_v9_orc", base="orc")
    add("mor_v6_015_orc", writer="0.15", version=6, base="orc")
    add("mor_v9_lance", base="lance")
    add("cow_v9_lance", type="cow", base="lance")
    add("mor_v9_parquet_log", log="parquet")
    add("mor_v8_parquet_log", version=8, log="parquet")
    add("mor_v6_parquet_log", version=6, log="parquet")
    for wname, w in (("v9", {}), ("v8", {"version": 8}), ("v6_015", {"writer": "0.15", "version": 6})):
        add(f"mor_{wname}_compaction", services=["compact"], scenario="long", **w)
    add("mor_v9_pending_compaction", services=["pending_compaction"])
    add("mor_v6_015_pending_compaction", writer="0.15", version=6, services=["pending_compaction"])
    add("cow_v9_clustering", type="cow", services=["cluster"], scenario="long")
    add("mor_v9_clustering", services=["cluster"], scenario="long")
    add("mor_v6_015_clustering", writer="0.15", version=6, services=["cluster"], scenario="long")
    add("mor_v9_archive", services=["compact", "clean_archive"], scenario="long")
    add("cow_v9_archive", type="cow", services=["clean_archive"], scenario="long")
    add("mor_v8_archive", version=8, services=["compact", "clean_archive"], scenario="long")
    add("mor_v6_015_archive", writer="0.15", version=6, services=["compact", "clean_archive"], scenario="long")
    add("cow_v6_015_archive", type="cow", writer="0.15", version=6, services=["clean_archive"], scenario="long")
    for t, w in (("mor", {}), ("cow", {}), ("mor", {"version": 8}), ("mor", {"writer": "0.15", "version": 6}),
                 ("cow", {"writer": "0.15", "version": 6})):
        tag = "v8" if w.get("version") == 8 else ("v6_015" if w else "v9")
        add(f"{t}_{tag}_deletes", type=t, scenario="deletes", **w)
    add("mor_v9_overwrite", scenario="overwrite")
    add("cow_v9_overwrite", type="cow", scenario="overwrite")
    add("mor_v6_015_overwrite", writer="0.15", version=6, scenario="overwrite")
    add("mor_v9_bulk_insert", scenario="bulk")
    add("cow_v6_015_bulk_insert", type="cow", writer="0.15", version=6, scenario="bulk")
    add("mor_v9_evolve", scenario="evolve")
    add("cow_v9_evolve", type="cow", scenario="evolve")
    add("mor_v6_015_evolve", writer="0.15", version=6, scenario="evolve")
    add("mor_v9_rename_drop", scenario="rename_drop")
    add("cow_v9_rename_drop", type="cow", scenario="rename_drop")
    add("mor_v6_015_rename_drop", writer="0.15", version=6, scenario="rename_drop")
    add("cow_v9_cdc", type="cow", cdc=True)
    add("mor_v9_cdc", cdc=True)
    add("cow_v6_015_cdc", type="cow", writer="0.15", version=6, cdc=True)
    add("mor_v9_nested", schema="nested")
    add("cow_v9_nested", type="cow", schema="nested")
    add("mor_v6_015_nested", writer="0.15", version=6, schema="nested")
    add("mor_v9_nested_parquet_log", schema="nested", log="parquet")
    add("mor_v9_occ", scenario="concurrent")
    add("cow_v9_occ", type="cow", scenario="concurrent")
    # issue 26: what Hudi's writers and table services do that a reader must follow
    v6 = {"writer": "0.15", "version": 6}
    for wname, w in (("v9", {}), ("v8", {"version": 8}), ("v6_015", v6)):
        add(f"mor_{wname}_log_compaction", services=["log_compact"], scenario="long", **w)
    for t in ("mor", "cow"):
        add(f"{t}_v9_restore", type=t, scenario="restore")
        add(f"{t}_v6_015_restore", type=t, scenario="restore", **v6)
    add("mor_v9_rollback_completed", scenario="rollback")
    add("mor_v9_drop_partition_columns", drop_partition_columns=True)
    add("mor_v9_drop_partition_columns_multi", drop_partition_columns=True, partition="multi")
    add("cow_v6_015_drop_partition_columns", type="cow", drop_partition_columns=True, **v6)
    add("cow_v6_015_drop_partition_columns_multi", type="cow", drop_partition_columns=True, partition="multi", **v6)
    add("mor_v9_timestamp_ntz", schema="ntz")
    add("cow_v9_timestamp_ntz", type="cow", schema="ntz")
    add("mor_v6_015_timestamp_ntz", schema="ntz", **v6)
    add("mor_v9_part_slash_date", partition="slash_date")
    add("mor_v9_part_slash_day", partition="slash_day")
    for t in ("mor", "cow"):
        add(f"{t}_v9_virtual_keys", type=t, meta_fields=False)
        add(f"{t}_v6_015_virtual_keys", type=t, meta_fields=False, **v6)
    add("mor_v9_partial_update", merge=PARTIAL_UPDATE)
    add("mor_v9_debezium_fill_unavailable", merge=POSTGRES_DEBEZIUM, schema="debezium")
    add("mor_v9_delete_marker", delete_marker=True)
    for kind in ("vector", "variant", "blob"):
        add(f"mor_v9_{kind}", schema=kind)
    return out


def configurations() -> dict[str, dict]:
    """Every configuration by name, each complete (the baseline with its changes applied)."""
    out = {}
    for name, changes in _variants():
        assert name not in out, f"configuration {name} defined twice"
        unknown = set(changes) - set(BASELINE)
        assert not unknown, f"{name}: unknown dimensions {unknown}"
        out[name] = {**BASELINE, **changes, "name": name}
    return out
