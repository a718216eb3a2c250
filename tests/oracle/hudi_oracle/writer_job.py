"""Apache Hudi writes the matrix's tables and answers its queries: the gold the oracle tests compare against.

Runs in the oracle's own environment (PySpark 3.5 with a Hudi Spark bundle on its class path; see ``env.py``),
never in the project's: ``python writer_job.py --jar BUNDLE --writer 1.2 --out DIR [--only a,b]``.

For each configuration it writes the scenario's steps one at a time. After each step it records:
- every file of the table (content-addressed in ``blobs/``, listed per step), so a test can rebuild the table
  exactly as it was after that step, files later cleaned or rewritten included;
- Hudi's snapshot query, as parquet;
- Hudi's incremental query between each pair of adjacent completed writes the step added, over the whole step
  when it added several (a write and its table service), and at the end two wider ranges;
- on CDC tables, Hudi's CDC query over the step.
``manifest.json`` says what each step did and where its answers are. A configuration Hudi refuses to write
records Hudi's error instead, so the tests can tell "Hudi cannot" from "we did not try".
"""
from __future__ import annotations

import argparse
import datetime as dt
import decimal
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matrix import DROPPED, POSTGRES_DEBEZIUM, RENAMED, SCENARIOS, configurations  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

#: completed actions that carry data (a compaction completes as a commit on every table version)
DATA_ACTIONS = ("commit", "deltacommit", "replacecommit", "clustering")
EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
DAY_MS = 86_400_000
#: the value Debezium writes for a Postgres column it did not capture (TOAST), which Hudi 1.2 stores as the table's
#: merge property hoodie.write.partial.update.unavailable.value for PostgresDebeziumAvroPayload
UNAVAILABLE = "__debezium_unavailable_value"


def session(jar: str) -> SparkSession:
    # HUDI_ORACLE_EXTRA_JARS: more jars for the class path, comma-separated (e.g. the Lance Java library that a
    # base=lance configuration needs and the Hudi bundle does not hold)
    extra = [j for j in os.environ.get("HUDI_ORACLE_EXTRA_JARS", "").split(",") if j]
    return (SparkSession.builder.master("local[2]").appName("hudi-oracle-writer")
            .config("spark.jars", ",".join([jar, *extra]))
            .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
            .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
            .config("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.hudi.catalog.HoodieCatalog")
            .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
            .config("spark.ui.enabled", "false").config("spark.driver.memory", "3g")
            .getOrCreate())


# ---- the data: deterministic values of key i at generation g -------------------------------------------------

ORDERING_TYPES = {"int": T.IntegerType(), "long": T.LongType(), "double": T.DoubleType(), "string": T.StringType(),
                  "decimal": T.DecimalType(12, 2), "date": T.DateType(), "timestamp": T.TimestampType()}


def ordering_value(kind: str, raw: int):
    return {"int": lambda: raw, "long": lambda: raw * 1_000_003, "double": lambda: raw / 4,
            "string": lambda: f"{raw + 100_000:08d}", "decimal": lambda: decimal.Decimal(raw) / 4,
            "date": lambda: dt.date(2024, 1, 1) + dt.timedelta(days=raw),
            "timestamp": lambda: EPOCH + dt.timedelta(seconds=raw * 7)}[kind]()


class Shape:
    """The table's schema as it evolves, and the rows of a step in it."""

    def __init__(self, cfg: dict):
        self.cfg = cfg
        self.extra = False          # evolve:add_column
        self.qty_long = False       # evolve:int_to_long
        self.amount_name = "amount"  # evolve:rename_column
        self.has_name = True         # evolve:drop_column
        self.soft_deletes = cfg["scenario"] == "deletes"

    def schema(self) -> T.StructType:
        c = self.cfg
        f = [T.StructField("id", T.IntegerType(), False)]
        if c["ordering"]:
            f.append(T.StructField("ts", ORDERING_TYPES[c["ordering"]], True))
        f += [T.StructField("region", T.StringType(), True), T.StructField("bucket", T.IntegerType(), True),
              T.StructField("event_ms", T.LongType(), True)]
        if c["partition"] in ("slash_date", "slash_day"):
            f.append(T.StructField("event_date", T.DateType() if c["partition"] == "slash_date" else T.StringType()))
        if self.has_name:
            f.append(T.StructField("name", T.StringType(), c["key"] != "complex"))
        f += [T.StructField(self.amount_name, T.DoubleType(), True),
              T.StructField("qty", T.LongType() if self.qty_long else T.IntegerType(), True)]
        if self.extra:
            f.append(T.StructField("extra", T.StringType(), True))
        if c["schema"] == "nested":
            f += [T.StructField("addr", T.StructType([T.StructField("city", T.StringType()),
                                                      T.StructField("zip", T.IntegerType())])),
                  T.StructField("tags", T.ArrayType(T.StringType())),
                  T.StructField("attrs", T.MapType(T.StringType(), T.IntegerType())),
                  T.StructField("price", T.DecimalType(10, 2)),
                  T.StructField("day", T.DateType()),
                  T.StructField("at", T.TimestampType()),
                  T.StructField("items", T.ArrayType(T.StructType([T.StructField("sku", T.StringType()),
                                                                   T.StructField("n", T.IntegerType())])))]
        f += self.issue26_fields()
        if self.soft_deletes:
            f.append(T.StructField("_hoodie_is_deleted", T.BooleanType(), True))
        return T.StructType(f)

    def issue26_fields(self) -> list[T.StructField]:
        """The columns of the schemas that carry a type or a merge property of issue 26. Hudi 1.2's VECTOR,
        VARIANT and BLOB are Spark types marked by the field metadata ``hudi_type`` (Spark 3.5 has no variant)."""
        kind = self.cfg["schema"]
        f = []
        if kind == "ntz":
            f.append(T.StructField("local_at", T.TimestampNTZType(), True))
        if kind == "debezium":
            f += [T.StructField("_change_operation_type", T.StringType(), True),
                  T.StructField("_event_lsn", T.LongType(), True)]
        if self.cfg["delete_marker"]:
            f.append(T.StructField("op", T.StringType(), True))
        if kind == "vector":
            f.append(T.StructField("emb", T.ArrayType(T.FloatType(), False), True, {"hudi_type": "VECTOR(4)"}))
        if kind == "variant":
            f.append(T.StructField("v", T.StructType([T.StructField("value", T.BinaryType(), False),
                                                      T.StructField("metadata", T.BinaryType(), False)]),
                                   True, {"hudi_type": "VARIANT"}))
        if kind == "blob":
            ref = T.StructType([T.StructField("external_path", T.StringType()), T.StructField("offset", T.LongType()),
                                T.StructField("length", T.LongType()), T.StructField("managed", T.BooleanType())])
            f.append(T.StructField("b", T.StructType([T.StructField("type", T.StringType()),
                                                      T.StructField("data", T.BinaryType()),
                                                      T.StructField("reference", ref)]), True, {"hudi_type": "BLOB"}))
        return f

    def issue26_values(self, i: int, g: int, raw: int) -> list:
        """Key ``i``'s values of :meth:`issue26_fields` at generation ``g``: generation 3 marks every sixth key
        deleted by the delete field (new keys among them), so the merge's delete handling matters."""
        kind = self.cfg["schema"]
        marked = g == 3 and i % 6 == 0
        out: list = []
        if kind == "ntz":
            out.append(dt.datetime(2024, 1, 1) + dt.timedelta(hours=i, minutes=g))
        if kind == "debezium":
            out += ["d" if marked else ("c" if g == 1 else "u"), raw]
        if self.cfg["delete_marker"]:
            out.append("D" if marked else "U")
        if kind == "vector":
            out.append([float(i), float(g), i / 4, -1.0])
        if kind == "variant":
            # the variant binary encoding of the short string "<i>-<g>" (header 0x01 | size << 2), empty metadata
            text = f"{i}-{g}".encode()
            out.append((bytes([1 | len(text) << 2]) + text, bytes([1, 0, 0])))
        if kind == "blob":
            out.append(("INLINE", f"blob {i} {g}".encode(), None))
        return out

    def row(self, i: int, g: int, stale: bool = False, deleted: bool = False) -> tuple:
        c = self.cfg
        raw = (g * 100 - 500 if stale else g * 100) + i % 7
        out: list = [i]
        if c["ordering"]:
            out.append(ordering_value(c["ordering"], raw))
        out += ["abc"[i % 3], i % 2, int((EPOCH + dt.timedelta(days=i % 3)).timestamp() * 1000)]
        if c["partition"] in ("slash_date", "slash_day"):
            day = dt.date(2024, 1, 1) + dt.timedelta(days=i % 3)
            out.append(day if c["partition"] == "slash_date" else day.isoformat())
        if self.has_name:
            # nulls that come and go between versions: a merge that keeps non-null values (partial updates,
            # OverwriteNonDefaultsWithLatestAvroPayload) differs from one that takes the whole new row; with
            # Debezium's columns, later generations mark some names unavailable instead (the merge keeps the old)
            null = i % 11 == 0 or (g % 2 == 0 and i % 5 == 0)
            name = None if null else f"n{i}-g{g}"
            if c["schema"] == "debezium" and g >= 2 and i % 4 == 1:
                name = UNAVAILABLE
            out.append(f"n{i}" if c["key"] == "complex" else name)
        out += [i * 1.5 + g, i * 10 + g + (2**33 if self.qty_long and i % 2 else 0)]
        if self.extra:
            out.append(f"x{i}-{g}")
        if c["schema"] == "nested":
            out += [(f"city{i % 5}", 10_000 + i * g), [f"t{g}", f"k{i}"][: i % 3],
                    None if (i + g) % 4 == 0 else {"g": g, "i": i}, decimal.Decimal(f"{i}.{g:02d}"),
                    dt.date(2024, 1, 1) + dt.timedelta(days=i + g),
                    EPOCH + dt.timedelta(hours=i, minutes=g), [(f"s{i}", g)] * (i % 2 + 1)]
        out += self.issue26_values(i, g, raw)
        if self.soft_deletes:
            out.append(deleted)
        return tuple(out)


# ---- Hudi's write options for a configuration -----------------------------------------------------------------

def write_options(cfg: dict) -> dict[str, str]:
    o = {"hoodie.table.name": cfg["name"],
         "hoodie.datasource.write.table.type": "MERGE_ON_READ" if cfg["type"] == "mor" else "COPY_ON_WRITE",
         "hoodie.upsert.shuffle.parallelism": "2", "hoodie.insert.shuffle.parallelism": "2",
         "hoodie.bulkinsert.shuffle.parallelism": "2", "hoodie.delete.shuffle.parallelism": "2",
         "hoodie.embed.timeline.server": "false",
         # a small bloom filter: Hudi's default (60,000 entries) makes every base file 430 KB
         "hoodie.index.bloom.num_entries": "200"}
    if cfg["writer"] != "0.15":
        o.update({"hoodie.write.table.version": str(cfg["version"]), "hoodie.write.auto.upgrade": "false"})
    o["hoodie.datasource.write.recordkey.field"] = "id,name" if cfg["key"] == "complex" else "id"
    part = cfg["partition"]
    fields = {"none": "", "one": "region", "multi": "region,bucket", "hive": "region", "timestamp": "event_ms",
              "slash_date": "event_date", "slash_day": "event_date"}[part]
    o["hoodie.datasource.write.partitionpath.field"] = fields
    keygen = ("NonpartitionedKeyGenerator" if part == "none" else
              "TimestampBasedKeyGenerator" if part == "timestamp" else
              "ComplexKeyGenerator" if cfg["key"] == "complex" or part == "multi" else "SimpleKeyGenerator")
    o["hoodie.datasource.write.keygenerator.class"] = f"org.apache.hudi.keygen.{keygen}"
    if part == "timestamp":
        o.update({"hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
                  "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
                  "hoodie.keygen.timebased.timezone": "UTC"})
    o["hoodie.datasource.write.hive_style_partitioning"] = str(part == "hive").lower()
    if part in ("slash_date", "slash_day"):
        o["hoodie.datasource.write.slash.separated.date.partitioning"] = "true"
    if cfg["ordering"]:
        o["hoodie.datasource.write.precombine.field"] = "_event_lsn" if cfg["merge"] == POSTGRES_DEBEZIUM else "ts"
    merge = cfg["merge"]
    if merge in ("event", "commit"):
        if cfg["writer"] == "0.15":
            o["hoodie.datasource.write.payload.class"] = (
                "org.apache.hudi.common.model.DefaultHoodieRecordPayload" if merge == "event"
                else "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload")
        else:
            o["hoodie.write.record.merge.mode"] = "EVENT_TIME_ORDERING" if merge == "event" else "COMMIT_TIME_ORDERING"
    else:
        o["hoodie.datasource.write.payload.class"] = merge
    o["hoodie.metadata.enable"] = str(cfg["metadata"]).lower()
    if cfg["rli"]:
        o.update({"hoodie.metadata.record.index.enable": "true", "hoodie.index.type": "RECORD_INDEX",
                  "hoodie.metadata.global.record.level.index.enable": "true"})
    if cfg["base"] != "parquet":
        o["hoodie.table.base.file.format"] = cfg["base"].upper()
        o["hoodie.datasource.write.base.file.format"] = cfg["base"].upper()
    if cfg["base"] == "lance":
        # Hudi's Avro record path has no Lance writer: Lance base files are written from Spark's own rows
        o["hoodie.write.record.merge.custom.implementation.classes"] = "org.apache.hudi.DefaultSparkRecordMerger"
    if cfg["log"] != "avro":
        o["hoodie.logfile.data.block.format"] = cfg["log"]
    if not cfg["meta_fields"]:
        o["hoodie.populate.meta.fields"] = "false"
    if cfg["drop_partition_columns"]:
        o["hoodie.datasource.write.drop.partition.columns"] = "true"
    if cfg["delete_marker"]:
        # the table's merge properties (what TableBuilder.fromProperties keeps in hoodie.properties) and the
        # writer's own payload properties
        for prefix in ("hoodie.record.merge.property.", ""):
            o.update({f"{prefix}hoodie.payload.delete.field": "op", f"{prefix}hoodie.payload.delete.marker": "D"})
    services = cfg["services"]
    if "compact" in services:
        o.update({"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "3"})
    if "cluster" in services:
        o.update({"hoodie.clustering.inline": "true", "hoodie.clustering.inline.max.commits": "3",
                  "hoodie.clustering.plan.strategy.sort.columns": "id"})
    if "log_compact" in services:
        # a log compaction once a file slice holds this many log blocks, run inline after the write
        o.update({"hoodie.log.compaction.inline": "true", "hoodie.log.compaction.blocks.threshold": "3"})
    if "clean_archive" in services:
        o.update({"hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "2",
                  "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4",
                  "hoodie.metadata.compact.max.delta.commits": "2", "hoodie.archive.automatic": "true"})
    if cfg["cdc"]:
        o.update({"hoodie.table.cdc.enabled": "true",
                  "hoodie.table.cdc.supplemental.logging.mode": "DATA_BEFORE_AFTER"})
    if cfg["scenario"] in ("evolve", "rename_drop"):
        o.update({"hoodie.schema.on.read.enable": "true",
                  "hoodie.datasource.write.schema.allow.auto.evolution.column.drop": "true"})
    if cfg["scenario"] == "concurrent":
        o.update({"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
                  "hoodie.write.lock.provider":
                      "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
                  "hoodie.clean.failed.writes.policy": "LAZY"})
    return o


# ---- the table's files and timeline ---------------------------------------------------------------------------

def capture_files(table: Path, blobs: Path) -> dict[str, str]:
    """Every file of the table by relative path → content hash; new contents are copied into ``blobs``."""
    out = {}
    for root, _dirs, files in os.walk(table):
        for f in files:
            p = Path(root) / f
            digest = hashlib.sha1(p.read_bytes()).hexdigest()
            out[str(p.relative_to(table))] = digest
            if not (blobs / digest).exists():
                shutil.copyfile(p, blobs / digest)
    return dict(sorted(out.items()))


def completed_instants(table: Path, version: int) -> list[dict]:
    """The completed instants of the active timeline: requested and completion time (v8/v9), action."""
    tdir = table / ".hoodie" / ("timeline" if version >= 8 else "")
    out = []
    for f in tdir.iterdir() if tdir.is_dir() else []:
        name = f.name
        if name.startswith(".") or not f.is_file() or name.count(".") != 1:
            continue
        stem, action = name.split(".")
        if action in ("requested", "inflight", "properties"):
            continue
        req, _, done = stem.partition("_")
        if req.isdigit():
            out.append({"requested": req, "completed": done or None, "action": action})
    return sorted(out, key=lambda e: (e["completed"] or e["requested"]) if version >= 8 else e["requested"])


def position(e: dict, version: int) -> str:
    """Where an instant sits for incremental queries: completion time on v8/v9, requested time on v6."""
    return e["completed"] if version >= 8 else e["requested"]


def hudi_write(df, table: Path, options: dict[str, str], operation: str) -> None:
    """One Hudi write operation of ``df`` into ``table``."""
    (df.write.format("hudi").options(**options).option("hoodie.datasource.write.operation", operation)
     .mode("append").save(str(table)))


def write_retrying(write) -> list[str]:
    """``write()`` until it succeeds, three tries at most (a writer that lost an optimistic-concurrency conflict
    writes again); returns the errors of the failed tries."""
    errors: list[str] = []
    for _ in range(3):
        try:
            write()
            return errors
        except Exception as exc:  # noqa: BLE001 - a conflict is retried, anything else reported
            errors.append(describe(exc))
    raise RuntimeError(f"writer gave up after conflicts: {errors}")


def second_writer(spark: SparkSession, name: str, table: Path, keys: range, g: int, ready: Path) -> None:
    """The other writer of a ``concurrent`` step, in a JVM of its own: ready once its session is up, then
    upserts its keys at once."""
    cfg = configurations()[name]
    shape, opts = Shape(cfg), write_options(cfg)
    df = spark.createDataFrame([shape.row(i, g) for i in keys], shape.schema())
    # a JVM's first Hudi job spends seconds loading classes: warmed up first, so the two writes overlap
    spark.read.format("hudi").load(str(table)).count()
    ready.touch()
    for error in write_retrying(lambda: hudi_write(df, table, opts, "upsert")):
        print(f"conflict: {error}", flush=True)


def describe(exc: BaseException) -> str:
    """One line for an error: for a JVM error, the chain of its causes' messages (the root cause says why)."""
    java = getattr(exc, "java_exception", None)
    if java is None:
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
        return f"{type(exc).__name__}: {first[:500]}"
    chain = []
    while java is not None and len(chain) < 8:
        chain.append(str(java.toString()).splitlines()[0][:300])
        java = java.getCause()
    return " <- ".join(chain[:1] + chain[-2:] if len(chain) > 3 else chain)


def scrubbed(text: str, places: dict[Path, str]) -> str:
    """``text`` with the folders of the machine that wrote it named by role (``places``: folder → ``<out>`` …):
    a manifest is committed with its zip, and Hudi's error texts and tracebacks name the files it wrote there."""
    for folder, name in sorted(places.items(), key=lambda p: -len(str(p[0]))):  # the deepest folder first
        text = text.replace(str(folder), name)
    return text


# ---- one configuration ----------------------------------------------------------------------------------------

class Writer:
    def __init__(self, spark: SparkSession, cfg: dict, work: Path, spark_version: str, hudi_version: str,
                 jar: str):
        self.spark, self.cfg, self.work, self.jar = spark, cfg, work, jar
        self.table = work / "table"
        self.blobs = work / "blobs"
        self.shape = Shape(cfg)
        self.opts = write_options(cfg)
        self.seen: set[str] = set()
        self.last_pos = "000"
        self.savepoint = ""
        self.manifest = {"config": cfg, "spark": spark_version, "hudi": hudi_version, "steps": [], "error": None}

    def frame(self, keys: range, g: int, stale: bool = False, deleted: bool = False):
        rows = [self.shape.row(i, g, stale, deleted) for i in keys]
        return self.spark.createDataFrame(rows, self.shape.schema())

    def write(self, df, operation: str, extra: dict | None = None) -> None:
        hudi_write(df, self.table, {**self.opts, **(extra or {})}, operation)

    def step_options(self, index: int) -> dict:
        if "pending_compaction" in self.cfg["services"] and index == 3:
            # this write schedules a compaction that nobody runs: the later steps are read with it pending
            return {"hoodie.compact.schedule.inline": "true", "hoodie.compact.inline": "false",
                    "hoodie.compact.inline.max.delta.commits": "1"}
        return {}

    def registered(self) -> str:
        """The table's name in Spark's catalog (registered at its location), for Hudi's SQL commands."""
        name = self.cfg["name"]
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING hudi LOCATION '{self.table}'")
        return name

    def sql_table(self) -> str:
        name = self.registered()
        self.spark.sql("SET hoodie.schema.on.read.enable=true")
        # a rename or drop leaves the old name out of the new schema, which Hudi's schema check refuses unless
        # column drops are allowed
        self.spark.sql("SET hoodie.datasource.write.schema.allow.auto.evolution.column.drop=true")
        return name

    def run_step(self, index: int, step: dict) -> None:
        op, extra = step["op"], self.step_options(index)
        keys = range(*step["keys"]) if "keys" in step and op != "concurrent" else range(0)
        g = step.get("gen", 0)
        if op in ("insert", "upsert", "bulk_insert", "insert_overwrite", "insert_overwrite_table"):
            self.write(self.frame(keys, g, step.get("stale", False)), op, extra)
        elif op == "soft_delete":
            self.write(self.frame(keys, g, deleted=True), "upsert", extra)
        elif op == "delete":
            self.write(self.frame(keys, 1), "delete", extra)
        elif op == "delete_partition":
            self.write(self.frame(range(0), 1), "delete_partition",
                       {"hoodie.datasource.write.partitions.to.delete": ",".join(step["partitions"]), **extra})
        elif op == "concurrent":
            self.concurrent([range(*k) for k in step["keys"]], g)
        elif op == "evolve:add_column":
            self.shape.extra = True
        elif op == "evolve:int_to_long":
            self.shape.qty_long = True
        elif op == "evolve:rename_column":
            self.spark.sql(f"ALTER TABLE {self.sql_table()} RENAME COLUMN {RENAMED[0]} TO {RENAMED[1]}")
            self.shape.amount_name = RENAMED[1]
        elif op == "evolve:drop_column":
            self.spark.sql(f"ALTER TABLE {self.sql_table()} DROP COLUMN {DROPPED}")
            self.shape.has_name = False
        elif op == "savepoint":
            self.savepoint = self.last_write()
            self.spark.sql(f"CALL create_savepoint(path => '{self.table}', commit_time => '{self.savepoint}')")
        elif op == "restore":
            self.spark.sql(f"CALL rollback_to_savepoint(path => '{self.table}', instant_time => '{self.savepoint}')")
        elif op == "rollback_last":
            self.spark.sql(f"CALL rollback_to_instant(table => '{self.registered()}', "
                           f"instant_time => '{self.last_write()}')")
        else:
            raise ValueError(f"unknown step {op}")

    def last_write(self) -> str:
        """The requested time of the latest completed write (what savepoints and rollbacks name)."""
        return [e for e in completed_instants(self.table, self.cfg["version"])
                if e["action"] in DATA_ACTIONS][-1]["requested"]

    def concurrent(self, key_sets: list[range], g: int) -> None:
        """Two writers at once, in two JVMs (this one and a second process), each its own write client, under
        optimistic concurrency with a file-system lock: the second process says when its session is up, and both
        write from then on. A writer that loses a conflict writes again, as a user's retry would."""
        ready = self.work / "second_writer.ready"
        ready.unlink(missing_ok=True)
        second = subprocess.Popen(
            [sys.executable, __file__, "--jar", self.jar, "--writer", self.cfg["writer"], "--hudi-version",
             self.manifest["hudi"], "--out", str(self.work), "--second-writer", self.cfg["name"],
             "--keys", f"{key_sets[1].start},{key_sets[1].stop}", "--gen", str(g), "--ready", str(ready)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 300
        while not ready.exists() and second.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        conflicts = write_retrying(lambda: self.write(self.frame(key_sets[0], g), "upsert"))
        output, _ = second.communicate(timeout=900)
        if second.returncode != 0:
            raise RuntimeError(f"the second writer failed: {output.strip().splitlines()[-1:]}")
        conflicts += [ln[len("conflict: "):] for ln in output.splitlines() if ln.startswith("conflict: ")]
        self.manifest.setdefault("conflicts", []).extend(conflicts)

    def reader(self):
        # Hudi 1.2 on Spark 3.5 cannot read its ORC base files with Spark's vectorized ORC reader
        # (ClassCastException: OrcAtomicColumnVector cannot be cast to OnHeapColumnVector)
        self.spark.conf.set("spark.sql.orc.enableVectorizedReader", str(self.cfg["base"] != "orc").lower())
        r = self.spark.read.format("hudi")
        if self.cfg["scenario"] in ("evolve", "rename_drop"):
            r = r.option("hoodie.schema.on.read.enable", "true")
        return r

    def save(self, df, rel: str) -> str:
        df.coalesce(1).write.mode("overwrite").parquet(str(self.work / rel))
        return rel

    def incremental(self, start: str, end: str, rel: str, cdc: bool = False) -> dict:
        r = (self.reader().option("hoodie.datasource.query.type", "incremental")
             .option("hoodie.datasource.read.begin.instanttime", start)
             .option("hoodie.datasource.read.end.instanttime", end))
        if cdc:
            r = r.option("hoodie.datasource.query.incremental.format", "cdc")
        return {"kind": "cdc" if cdc else "incremental", "start": start, "end": end,
                "dir": self.save(r.load(str(self.table)), rel)}

    def record(self, index: int, step: dict, seconds: float) -> None:
        v = self.cfg["version"]
        instants = completed_instants(self.table, v)
        gold = [{"kind": "snapshot", "dir": self.save(self.reader().load(str(self.table)), f"gold/{index}/snapshot")}]
        new = [e for e in instants if e["requested"] not in self.seen]
        step_start = self.last_pos
        for e in new:
            self.seen.add(e["requested"])
            if e["action"] not in DATA_ACTIONS:
                continue
            pos = position(e, v)
            self.add_incremental(gold, self.last_pos, pos, f"gold/{index}/incr_{e['requested']}")
            self.last_pos = pos
        if sum(e["action"] in DATA_ACTIONS for e in new) > 1:
            # the step's write and the table service after it at once (a range that ends at a log compaction)
            self.add_incremental(gold, step_start, self.last_pos, f"gold/{index}/incr_step")
        if self.cfg["cdc"] and self.last_pos != step_start:
            gold.append(self.incremental(step_start, self.last_pos, f"gold/{index}/cdc", cdc=True))
        self.manifest["steps"].append({"step": step, "seconds": round(seconds, 2), "instants": instants,
                                       "files": capture_files(self.table, self.blobs), "gold": gold})

    def wide_ranges(self) -> None:
        """Incremental queries over several steps at once, on the final table."""
        v = self.cfg["version"]
        writes = [position(e, v) for e in completed_instants(self.table, v) if e["action"] in DATA_ACTIONS]
        if len(writes) < 3:
            return
        last = len(self.manifest["steps"]) - 1
        gold = self.manifest["steps"][-1]["gold"]
        self.add_incremental(gold, writes[0], writes[-1], f"gold/{last}/wide_active")
        self.add_incremental(gold, writes[len(writes) // 3], writes[-2], f"gold/{last}/wide_middle")

    def add_incremental(self, gold: list[dict], start: str, end: str, rel: str) -> None:
        """Hudi's incremental answer for the range into ``gold``. On a table without meta fields Hudi's
        incremental query may refuse: its error is kept in the manifest (``refused_queries``) and the snapshots
        are still recorded; anywhere else an error fails the configuration as before."""
        try:
            gold.append(self.incremental(start, end, rel))
        except Exception as exc:  # noqa: BLE001 - only a virtual-key table's refusal is kept
            if self.cfg["meta_fields"]:
                raise
            self.manifest.setdefault("refused_queries", []).append({"start": start, "end": end,
                                                                    "error": describe(exc)})

    def run(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)
        self.blobs.mkdir(parents=True)
        try:
            for index, step in enumerate(SCENARIOS[self.cfg["scenario"]]):
                t0 = time.monotonic()
                self.run_step(index, step)
                self.record(index, step, time.monotonic() - t0)
            self.wide_ranges()
        except Exception as exc:  # noqa: BLE001 - Hudi's refusal is the result for this configuration
            self.manifest["error"] = describe(exc)
            self.manifest["traceback"] = traceback.format_exc()[-4000:]
        finally:
            try:  # the catalog entry of ALTER TABLE; Hudi may fail to drop a table it cannot read
                self.spark.sql(f"DROP TABLE IF EXISTS {self.cfg['name']}")
            except Exception as exc:  # noqa: BLE001
                self.manifest["drop_table"] = describe(exc)
        places = {self.work.parent: "<out>", self.work.parent.resolve(): "<out>",
                  Path(__file__).resolve().parents[3]: "<repo>", Path(sys.prefix): "<oracle-venv>"}
        (self.work / "manifest.json").write_text(scrubbed(json.dumps(self.manifest, indent=1, default=str), places))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jar", required=True)
    ap.add_argument("--writer", required=True, choices=["1.2", "0.15"])
    ap.add_argument("--hudi-version", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated configuration names")
    ap.add_argument("--second-writer", help="the other writer of a concurrent step: its configuration")
    ap.add_argument("--keys", help="--second-writer: first,end of its keys")
    ap.add_argument("--gen", type=int, help="--second-writer: the generation of its values")
    ap.add_argument("--ready", help="--second-writer: a file to create once its session is up")
    args = ap.parse_args()
    if args.second_writer:
        spark = session(args.jar)
        spark.sparkContext.setLogLevel("ERROR")
        first, end = map(int, args.keys.split(","))
        second_writer(spark, args.second_writer, Path(args.out) / "table", range(first, end), args.gen,
                      Path(args.ready))
        spark.stop()
        return
    wanted = set(filter(None, args.only.split(",")))
    todo = [c for c in configurations().values()
            if c["writer"] == args.writer and (not wanted or c["name"] in wanted)]
    spark = session(args.jar)
    spark.sparkContext.setLogLevel("ERROR")
    for n, cfg in enumerate(todo, 1):
        t0 = time.monotonic()
        w = Writer(spark, cfg, Path(args.out) / cfg["name"], spark.version, args.hudi_version, args.jar)
        w.run()
        status = w.manifest["error"] or "ok"
        print(f"[{n}/{len(todo)}] {cfg['name']}: {len(w.manifest['steps'])} steps, "
              f"{time.monotonic() - t0:.0f} s, {status[:200]}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
