"""Avro encodings of the timeline's metadata files, as Hudi's Java classes write them.

Every non-JSON timeline file (plans, clean / rollback metadata, and on timeline layout 2 also commit
metadata) is an Avro object container file holding one record, codec ``null``, with the writer schema
embedded (spec §2.6). Java readers resolve by full record name, so the schemas below carry Hudi's exact
names (``org.apache.hudi.avro.model.*``); the commit, rollback and compaction schemas are the ones embedded
in the files of real Hudi 1.1 tables (the fixtures), reproduced character for character, the cleaner and
archive schemas follow ``hudi-common/src/main/avro/*.avsc``.
"""
from __future__ import annotations

import io
import json
import os
from functools import lru_cache
from typing import Any

import fastavro

from ..hoodie.logfile.avro_arrow import avro_bytes, avro_long

_STR = {"type": "string", "avro.java.string": "String"}
_OPT_STR = ["null", _STR]


def _opt(t: Any) -> list:
    return ["null", t]


def _field(name: str, type_: Any, **extra: Any) -> dict:
    return {"name": name, "type": type_, **extra}


_WRITE_STAT_FIELDS = [
    ("fileId", _OPT_STR), ("path", _OPT_STR), ("prevCommit", _OPT_STR), ("numWrites", _opt("long")),
    ("numDeletes", _opt("long")), ("numUpdateWrites", _opt("long")), ("totalWriteBytes", _opt("long")),
    ("totalWriteErrors", _opt("long")), ("partitionPath", _OPT_STR), ("totalLogRecords", _opt("long")),
    ("totalLogFiles", _opt("long")), ("totalUpdatedRecordsCompacted", _opt("long")), ("numInserts", _opt("long")),
    ("totalLogBlocks", _opt("long")), ("totalCorruptLogBlock", _opt("long")), ("totalRollbackBlocks", _opt("long")),
    ("fileSizeInBytes", _opt("long")), ("logVersion", _opt("int")), ("logOffset", _opt("long")),
    ("baseFile", _OPT_STR), ("logFiles", _opt({"type": "array", "items": _STR, "default": None})),
    ("cdcStats", _opt({"type": "map", "values": "long", "avro.java.string": "String", "default": None})),
    ("prevBaseFile", _OPT_STR), ("minEventTime", _opt("long")), ("maxEventTime", _opt("long")),
    ("runtimeStats", _opt({"type": "record", "name": "HoodieRuntimeStats", "fields": [
        _field(n, _opt("long"), default=None) for n in ("totalScanTime", "totalCreateTime", "totalUpsertTime")]})),
    ("totalLogFilesCompacted", _opt("long")), ("totalLogReadTimeMs", _opt("long")),
    ("totalLogSizeCompacted", _opt("long")), ("tempPath", _OPT_STR), ("numUpdates", _opt("long")),
]
#: Field names of ``HoodieWriteStat``, in schema order (also the key order of v6 JSON write stats).
WRITE_STAT_FIELDS = [n for n, _ in _WRITE_STAT_FIELDS]

#: ``org.apache.hudi.avro.model.HoodieCommitMetadata`` as embedded in a Hudi 1.1 deltacommit file.
COMMIT_METADATA = {
    "type": "record", "name": "HoodieCommitMetadata", "namespace": "org.apache.hudi.avro.model", "fields": [
        _field("partitionToWriteStats", _opt({"type": "map", "values": {"type": "array", "items": {
            "type": "record", "name": "HoodieWriteStat",
            "fields": [_field(n, t, default=None) for n, t in _WRITE_STAT_FIELDS]}}, "avro.java.string": "String"}),
            default=None),
        _field("compacted", _opt("boolean"), default=None),
        _field("extraMetadata", _opt({"type": "map", "values": _STR, "avro.java.string": "String", "default": None}),
               default=None),
        _field("version", ["int", "null"], default=1),
        _field("operationType", _OPT_STR, default=None),
    ]}

# The next three are the writer schemas embedded in real Hudi 1.1 timeline files, verbatim.
_ROLLBACK_PLAN = r"""
{"type":"record","name":"HoodieRollbackPlan","namespace":"org.apache.hudi.avro.model","fields":[
 {"name":"instantToRollback","type":["null",{"type":"record","name":"HoodieInstantInfo","fields":[{"name":"commitTime","type":{"type":"string","avro.java.string":"String"}},{"name":"action","type":{"type":"string","avro.java.string":"String"}}]}],"doc":"Hoodie instant that needs to be rolled back","default":null},
 {"name":"RollbackRequests","type":["null",{"type":"array","items":{"type":"record","name":"HoodieRollbackRequest","fields":[{"name":"partitionPath","type":{"type":"string","avro.java.string":"String"}},{"name":"fileId","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},{"name":"latestBaseInstant","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},{"name":"filesToBeDeleted","type":{"type":"array","items":{"type":"string","avro.java.string":"String"},"default":[]},"default":[]},{"name":"logBlocksToBeDeleted","type":["null",{"type":"map","values":"long","avro.java.string":"String"}],"default":null}]}}],"default":null},
 {"name":"version","type":["int","null"],"default":1}
]}
"""
_ROLLBACK_METADATA = r"""
{"type":"record","name":"HoodieRollbackMetadata","namespace":"org.apache.hudi.avro.model","fields":[
 {"name":"startRollbackTime","type":{"type":"string","avro.java.string":"String"}},
 {"name":"timeTakenInMillis","type":"long"},
 {"name":"totalFilesDeleted","type":"int"},
 {"name":"commitsRollback","type":{"type":"array","items":{"type":"string","avro.java.string":"String"}}},
 {"name":"partitionMetadata","type":{"type":"map","values":{"type":"record","name":"HoodieRollbackPartitionMetadata","fields":[{"name":"partitionPath","type":{"type":"string","avro.java.string":"String"}},{"name":"successDeleteFiles","type":{"type":"array","items":{"type":"string","avro.java.string":"String"}}},{"name":"failedDeleteFiles","type":{"type":"array","items":{"type":"string","avro.java.string":"String"}}},{"name":"rollbackLogFiles","type":["null",{"type":"map","values":"long","avro.java.string":"String"}],"default":null},{"name":"logFilesFromFailedCommit","type":["null",{"type":"map","values":"long","avro.java.string":"String"}],"default":null}]},"avro.java.string":"String"}},
 {"name":"version","type":["int","null"],"default":1},
 {"name":"instantsRollback","type":{"type":"array","items":{"type":"record","name":"HoodieInstantInfo","fields":[{"name":"commitTime","type":{"type":"string","avro.java.string":"String"}},{"name":"action","type":{"type":"string","avro.java.string":"String"}}]},"default":[]},"default":[]}
]}
"""
_COMPACTION_PLAN = r"""
{"type":"record","name":"HoodieCompactionPlan","namespace":"org.apache.hudi.avro.model","fields":[
 {"name":"operations","type":["null",{"type":"array","items":{"type":"record","name":"HoodieCompactionOperation","fields":[{"name":"baseInstantTime","type":["null",{"type":"string","avro.java.string":"String"}]},{"name":"deltaFilePaths","type":["null",{"type":"array","items":{"type":"string","avro.java.string":"String"}}],"default":null},{"name":"dataFilePath","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},{"name":"fileId","type":["null",{"type":"string","avro.java.string":"String"}]},{"name":"partitionPath","type":["null",{"type":"string","avro.java.string":"String"}],"default":null},{"name":"metrics","type":["null",{"type":"map","values":"double","avro.java.string":"String"}],"default":null},{"name":"bootstrapFilePath","type":["null",{"type":"string","avro.java.string":"String"}],"default":null}]}}],"default":null},
 {"name":"extraMetadata","type":["null",{"type":"map","values":{"type":"string","avro.java.string":"String"},"avro.java.string":"String"}],"default":null},
 {"name":"version","type":["int","null"],"default":1},
 {"name":"strategy","type":["null",{"type":"record","name":"HoodieCompactionStrategy","fields":[{"name":"compactorClassName","type":["null",{"type":"string","avro.java.string":"String"}],"doc":"The class name that is provided here should extend CompactionExecutionStrategy abstract class, idea is that the plan generator will also provide the execution strategy to use.","default":null},{"name":"strategyParams","type":["null",{"type":"map","values":{"type":"string","avro.java.string":"String"},"avro.java.string":"String"}],"doc":"These parameters play a key role in determining which action type it is i.e. compaction or logcompaction and it will also include configs that determine how compaction needs to be executed.","default":null},{"name":"version","type":["int","null"],"default":1}]}],"default":null},
 {"name":"preserveHoodieMetadata","type":["boolean","null"],"default":false},
 {"name":"missingSchedulePartitions","type":["null",{"type":"array","items":{"type":"string","avro.java.string":"String"}}],"default":null}
]}
"""
ROLLBACK_PLAN = json.loads(_ROLLBACK_PLAN)
ROLLBACK_METADATA = json.loads(_ROLLBACK_METADATA)
COMPACTION_PLAN = json.loads(_COMPACTION_PLAN)

_NS = "org.apache.hudi.avro.model"
#: ``HoodieCleanerPlan.avsc``.
CLEANER_PLAN = {
    "type": "record", "name": "HoodieCleanerPlan", "namespace": _NS, "fields": [
        _field("earliestInstantToRetain", _opt({"type": "record", "name": "HoodieActionInstant", "fields": [
            _field("timestamp", _STR), _field("action", _STR), _field("state", _STR)]}), default=None),
        _field("policy", _STR),
        _field("filesToBeDeletedPerPartition",
               _opt({"type": "map", "values": {"type": "array", "items": _STR}, "avro.java.string": "String"}),
               default=None),
        _field("version", ["int", "null"], default=1),
        _field("filePathsToBeDeletedPerPartition", _opt({"type": "map", "values": {"type": "array", "items": {
            "type": "record", "name": "HoodieCleanFileInfo", "fields": [
                _field("filePath", _OPT_STR, default=None),
                _field("isBootstrapBaseFile", _opt("boolean"), default=None)]}}, "avro.java.string": "String"}),
               doc="This field replaces the field filesToBeDeletedPerPartition", default=None),
        _field("partitionsToBeDeleted", _opt({"type": "array", "items": _STR}), doc="partitions to be deleted",
               default=None),
    ]}

_CLEAN_PARTITION_METADATA = {
    "type": "record", "name": "HoodieCleanPartitionMetadata", "namespace": _NS, "fields": [
        _field("partitionPath", _STR), _field("policy", _STR),
        _field("deletePathPatterns", {"type": "array", "items": _STR}),
        _field("successDeleteFiles", {"type": "array", "items": _STR}),
        _field("failedDeleteFiles", {"type": "array", "items": _STR}),
        _field("isPartitionDeleted", _opt("boolean"), default=None),
    ]}
#: ``HoodieCleanMetadata.avsc`` (with ``HoodieCleanPartitionMetadata`` inlined).
CLEAN_METADATA = {
    "type": "record", "name": "HoodieCleanMetadata", "namespace": _NS, "fields": [
        _field("startCleanTime", _STR), _field("timeTakenInMillis", "long"), _field("totalFilesDeleted", "int"),
        _field("earliestCommitToRetain", _STR),
        _field("lastCompletedCommitTimestamp", _STR, default=""),
        _field("partitionMetadata", {"type": "map", "values": _CLEAN_PARTITION_METADATA,
                                     "avro.java.string": "String"}),
        _field("version", ["int", "null"], default=1),
        _field("bootstrapPartitionMetadata", _opt({"type": "map", "values": "HoodieCleanPartitionMetadata",
                                                   "avro.java.string": "String"}), default=None),
    ]}


def _archived_meta_entry() -> dict:
    """``HoodieArchivedMetaEntry.avsc`` with the member types this writer archives (commit, clean, rollback
    metadata and compaction / cleaner plans). Readers resolve against their own schema, in which every
    member is an optional field with a null default, so leaving out the members never written is safe."""
    def member(name: str, schema: dict) -> dict:
        return _field(name, ["null", schema], default=None)
    return {
        "type": "record", "name": "HoodieArchivedMetaEntry", "namespace": _NS, "fields": [
            member("hoodieCommitMetadata", COMMIT_METADATA),
            member("hoodieCleanMetadata", CLEAN_METADATA),
            member("hoodieRollbackMetadata", ROLLBACK_METADATA),
            _field("commitTime", _OPT_STR, default=None),
            _field("actionType", _OPT_STR, default=None),
            _field("version", ["int", "null"], default=1),
            member("hoodieCompactionPlan", COMPACTION_PLAN),
            member("hoodieCleanerPlan", CLEANER_PLAN),
            _field("actionState", _OPT_STR, default=None),
            _field("stateTransitionTime", _OPT_STR, default=None),
        ]}


ARCHIVED_META_ENTRY = _archived_meta_entry()

#: ``HoodieLSMTimelineInstant.avsc``: the rows of the layout-2 archived (LSM) timeline's parquet files.
LSM_TIMELINE_INSTANT = {
    "type": "record", "name": "HoodieLSMTimelineInstant", "namespace": _NS, "fields": [
        _field("instantTime", _opt("string"), default=None),
        _field("completionTime", _opt("string"), default=None),
        _field("action", _opt("string"), default=None),
        _field("metadata", _opt("bytes"), default=None),
        _field("plan", _opt("bytes"), default=None),
        _field("version", "int", default=1),
    ]}


def schema_json(schema: dict) -> str:
    """The schema as Java's ``Schema.toString()`` prints it: compact JSON, keys in definition order."""
    return json.dumps(schema, separators=(",", ":"))


@lru_cache(maxsize=None)
def _parsed(schema_text: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_text))


def encode_avro(schema: dict, record: dict) -> bytes:
    """``record`` as an Avro object container file with one block, codec ``null``, ``schema`` embedded."""
    text = schema_json(schema)
    body = io.BytesIO()
    fastavro.schemaless_writer(body, _parsed(text), record)
    payload = body.getvalue()
    sync = os.urandom(16)
    meta = {"avro.schema": text.encode(), "avro.codec": b"null"}
    out = io.BytesIO()
    out.write(b"Obj\x01")
    out.write(avro_long(len(meta)))
    for k, v in meta.items():
        out.write(avro_bytes(k.encode()) + avro_bytes(v))
    out.write(avro_long(0))
    out.write(sync)
    out.write(avro_long(1) + avro_long(len(payload)) + payload + sync)
    return out.getvalue()


def encode_record(schema: dict, record: dict) -> bytes:
    """Avro binary of one record (no container): the payload of log-block records."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, _parsed(schema_json(schema)), record)
    return body.getvalue()
