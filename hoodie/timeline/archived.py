"""The archived timeline: completed instants moved out of the active timeline by the archiver.

Table v6 keeps them in ``.hoodie/archived/.commits_.archive.N_<token>``, Hudi log files whose Avro data blocks
hold ``HoodieArchivedMetaEntry`` records (spec §6.1). Table v8/v9 keeps an LSM tree in
``.hoodie/timeline/history/``: ``_version_`` names the current ``manifest_<N>``, which lists parquet files of
``HoodieLSMTimelineInstant`` rows whose ``metadata`` column holds the original instant file bytes (§6.2).
Both are read lazily, only when a reader asks for instants older than the active timeline.
"""
from __future__ import annotations

import io
import json
import logging
import re
import struct
from dataclasses import dataclass

import fastavro

from ...errors import CorruptFileError
from ..config import TableConfig
from ..logfile.format import CONTENT_VERSION, BlockType, LogBlock
from ..logfile.reader import iter_blocks
from ..storage import Storage
from .instant import WRITE_ACTIONS, Action, is_completion_time, is_instant_time
from .metadata import CommitMetadata, parse_commit_metadata

log = logging.getLogger(__name__)

_LSM_FILE = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet$")
_V6_ARCHIVE = re.compile(r"^\.commits_\.archive\.(\d+)(_.*)?$")
_ACTIONS = {a.value: a for a in Action}
#: HoodieArchivedMetaEntry field holding the completed metadata of each action (ArchivedTimelineV1.getMetadataKey)
_V6_METADATA_FIELD = {"commit": "hoodieCommitMetadata", "deltacommit": "hoodieCommitMetadata",
                      "replacecommit": "hoodieReplaceCommitMetadata", "clean": "hoodieCleanMetadata",
                      "rollback": "hoodieRollbackMetadata", "savepoint": "hoodieSavePointMetadata"}


@dataclass(frozen=True)
class ArchivedInstant:
    requested_time: str
    completion_time: str | None
    action: Action
    metadata: bytes | dict | None  # raw instant-file bytes (LSM) or the decoded Avro record (v6)

    @property
    def is_write(self) -> bool:
        return self.action in WRITE_ACTIONS


class ArchivedTimeline:
    """Completed instants of the archive, in requested-time order."""

    def __init__(self, storage: Storage, config: TableConfig):
        self.storage = storage
        self.config = config
        self._instants: list[ArchivedInstant] | None = None
        self._writes: dict[str, ArchivedInstant] | None = None

    @property
    def instants(self) -> list[ArchivedInstant]:
        """Loaded on first use, so that a read needing nothing older than the active timeline never opens the
        archive (which may be large, or damaged)."""
        if self._instants is None:
            loaded = self._load_lsm() if self.config.timeline_layout >= 2 else self._load_v6()
            self._instants = sorted(loaded, key=lambda i: (i.requested_time, i.action.value))
        return self._instants

    def write(self, requested_time: str) -> ArchivedInstant | None:
        """The archived write instant of that requested time (indexed once: readers ask for many)."""
        if self._writes is None:
            self._writes = {i.requested_time: i for i in self.instants if i.is_write}
        return self._writes.get(requested_time)

    def commit_metadata(self, instant: ArchivedInstant) -> CommitMetadata:
        where = f"{self.storage.url}/{self.config.archive_dir} instant {instant.requested_time}"
        return parse_commit_metadata(instant.metadata or {}, where)

    # -- LSM (v8/v9) -----------------------------------------------------------------------------------------
    def _load_lsm(self) -> list[ArchivedInstant]:
        folder = self.config.archive_dir
        files = self._lsm_manifest_files(folder)
        out = []
        for name in files:
            rel = f"{folder}/{name}"
            try:
                t = self.storage.parquet_file(rel).read(
                    columns=["instantTime", "completionTime", "action", "metadata"],
                    use_threads=self.storage.arrow_threads)
            except FileNotFoundError:
                raise CorruptFileError(f"{self.storage.url}/{rel}: listed in the LSM manifest but missing") from None
            except Exception as e:
                raise CorruptFileError(f"{self.storage.url}/{rel}: unreadable LSM timeline file ({e})") from None
            for row in t.to_pylist():
                action = _archived_action(row["action"], row["instantTime"], f"{self.storage.url}/{rel}")
                if action is None:
                    continue
                if not (row["metadata"] is None or isinstance(row["metadata"], bytes)):
                    raise CorruptFileError(f"{self.storage.url}/{rel}: instant {row['instantTime']}: the metadata "
                                           "column is not binary")
                out.append(ArchivedInstant(row["instantTime"], _completion(row["completionTime"], row["instantTime"],
                                                                           f"{self.storage.url}/{rel}"),
                                           action, row["metadata"]))
        return out

    def _lsm_manifest_files(self, folder: str) -> list[str]:
        version = None
        try:
            version = int(self.storage.read_bytes(f"{folder}/_version_").decode().strip())
        except FileNotFoundError:
            pass
        except ValueError:
            log.warning("%s/%s/_version_ is unreadable; using the newest manifest", self.storage.url, folder)
        if version is None:
            manifests = [int(i.path.rsplit("_", 1)[-1]) for i in self.storage.list_dir(folder)
                         if re.search(r"/manifest_\d+$", i.path)]
            if not manifests:
                return []
            version = max(manifests)
        rel = f"{folder}/manifest_{version}"
        try:
            manifest = json.loads(self.storage.read_bytes(rel))
            names = [f["fileName"] for f in manifest.get("files", [])]
        except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise CorruptFileError(f"{self.storage.url}/{rel}: unreadable LSM manifest ({e})") from None
        bad = [n for n in names if not isinstance(n, str) or not _LSM_FILE.match(n)]
        if bad:
            raise CorruptFileError(f"{self.storage.url}/{rel}: manifest lists invalid file names {bad[:3]}")
        return names

    # -- archive log files (v6) ------------------------------------------------------------------------------
    def _load_v6(self) -> list[ArchivedInstant]:
        folder = self.config.archive_dir
        files = []
        for info in self.storage.list_dir(folder):
            m = _V6_ARCHIVE.match(info.path.rsplit("/", 1)[-1])
            if m:
                files.append((int(m.group(1)), info.path))
        out: dict[tuple[str, str], ArchivedInstant] = {}
        for _, rel in sorted(files):
            for block in iter_blocks(self.storage.read_bytes(rel), f"{self.storage.url}/{rel}", strict=True):
                if block.type is not BlockType.AVRO_DATA:
                    continue
                for rec in _avro_block_records(block):
                    where = f"{block.where()}: archived instant {_short(rec.get('commitTime'))}"
                    state = rec.get("actionState") or "COMPLETED"
                    if not isinstance(state, str):
                        raise CorruptFileError(f"{where}: actionState is not a string")
                    action = _archived_action(rec.get("actionType"), rec.get("commitTime"), block.where())
                    if state.upper() != "COMPLETED" or action is None:
                        continue
                    md = rec.get(_V6_METADATA_FIELD.get(action.value, ""))
                    if not (md is None or isinstance(md, dict)):
                        raise CorruptFileError(f"{where}: its {action.value} metadata is not a record")
                    out[(rec["commitTime"], action.value)] = ArchivedInstant(
                        rec["commitTime"], _completion(rec.get("stateTransitionTime"), rec["commitTime"], where),
                        action, md)
        return list(out.values())


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _archived_action(action: object, instant_time: object, where: str) -> Action | None:
    """The action of one archived instant; None (with a warning) for an action this reader does not know.

    An instant time that is not one (``HoodieInstantTimeGenerator``'s 17 digits, or 14 on old tables) would
    sort anywhere among the instants, so it is a :class:`CorruptFileError` naming the archive file.
    """
    if not is_instant_time(instant_time):
        raise CorruptFileError(f"{where}: archived instant time {_short(instant_time)} is not an instant time")
    known = _ACTIONS.get(action) if isinstance(action, str) else None
    if known is None:
        log.warning("%s: archived instant %s has unknown action %s; skipped", where, instant_time, _short(action))
    return known


def _completion(value: object, instant_time: str, where: str) -> str | None:
    """An archived completion time (LSM ``completionTime``, v6 ``stateTransitionTime``): absent, or an instant."""
    if value is None or is_completion_time(value):
        return value
    raise CorruptFileError(f"{where}: completion time {_short(value)} of archived instant {instant_time} is not an "
                           "instant time")


def _avro_block_records(block: LogBlock) -> list[dict]:
    """Decode an Avro data block's records as dicts (archive entries are nested; Arrow is not needed here).

    Content versions as in spec §5.5: version 1 (the oldest archives) has no record count, so its
    length-prefixed records run to the end of the content. Anything undecodable raises
    :class:`CorruptFileError` naming the block, like every other error about table content.
    """
    content = memoryview(block.content)
    where = block.where()
    if len(content) < 4:
        raise CorruptFileError(f"{where}: Avro data block too short")
    (version,) = struct.unpack_from(">i", content, 0)
    if version == 1:
        pos, count = 4, None
    elif version in (2, CONTENT_VERSION) and len(content) >= 8:
        pos, (count,) = 8, struct.unpack_from(">i", content, 4)
    else:
        raise CorruptFileError(f"{where}: unknown Avro data block content version {version} or no record count")
    schema_json = block.schema_json
    if schema_json is None:
        raise CorruptFileError(f"{where}: SCHEMA header is not an Avro schema (the block has none)")
    try:
        schema = fastavro.parse_schema(json.loads(schema_json))
    except Exception as e:  # missing header, bad JSON or an invalid Avro schema
        raise CorruptFileError(f"{where}: SCHEMA header is not an Avro schema ({e!r})") from None
    out: list[dict] = []
    while (pos < len(content)) if count is None else (len(out) < count):
        if pos + 4 > len(content):
            raise CorruptFileError(f"{where}: record count {count} exceeds the block")
        (length,) = struct.unpack_from(">i", content, pos)
        end = pos + 4 + length
        if length < 0 or end > len(content):
            raise CorruptFileError(f"{where}: record {len(out)} has impossible length {length}")
        try:
            record = fastavro.schemaless_reader(io.BytesIO(content[pos + 4:end]), schema, None)
        except Exception as e:  # fastavro raises many types on bytes that do not match the schema
            raise CorruptFileError(f"{where}: record {len(out)} does not decode with the SCHEMA header "
                                   f"({e!r})") from None
        if not isinstance(record, dict):
            raise CorruptFileError(f"{where}: record {len(out)} is a {type(record).__name__}, not an Avro record")
        out.append(record)
        pos = end
    return out


__all__ = ["ArchivedTimeline", "ArchivedInstant"]
