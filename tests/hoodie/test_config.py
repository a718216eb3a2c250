"""hoodie.properties parsing (Java escapes, checksum, backup file) and the derived table configuration."""
from __future__ import annotations

import json
import zlib

import fsspec
import pytest

from hudi_streaming.errors import CorruptFileError, InvalidTableContentError, UnsupportedTableError
from hudi_streaming.hoodie.config import MergeMode, TableConfig, load_table_config, parse_java_properties
from hudi_streaming.hoodie.storage import Storage


def test_java_properties_escapes_and_continuations():
    text = ("#comment\n! also comment\n"
            "a=1\n"
            "b\\:c = x\\=y\\:z\n"
            "uni=caf\\u00e9\n"
            "emoji=\\uD83D\\uDE00\n"
            "long=one,\\\n    two\n"
            "back=C\\\\dir\n"
            "spaced  value with spaces\n"
            "colon:v\n"
            "empty=\n")
    p = parse_java_properties(text)
    assert p == {"a": "1", "b:c": "x=y:z", "uni": "café", "emoji": "\U0001F600", "long": "one,two", "back": "C\\dir",
                 "spaced": "value with spaces", "colon": "v", "empty": ""}


def _write(url: str, text: str, name: str = "hoodie.properties") -> Storage:
    s = Storage(url)
    s.fs.makedirs(s.full(".hoodie"), exist_ok=True)
    with s.fs.open(s.full(f".hoodie/{name}"), "wb") as f:
        f.write(text.encode("latin-1"))
    return s


BASE = ("hoodie.table.name=t\nhoodie.table.type=MERGE_ON_READ\nhoodie.table.version={v}\n"
        "hoodie.table.recordkey.fields=id\nhoodie.table.partition.fields=region\\:SIMPLE\n")


def test_v6_payload_decides_merge_mode_and_missing_payload_means_overwrite_with_latest():
    s = _write("memory://cfg-v6", BASE.format(v=6) + "hoodie.table.precombine.field=ts\n"
               "hoodie.compaction.record.merger.strategy=eeb8d96f-b1e4-49fd-bbf8-28ac514178e5\n")
    c = load_table_config(s)
    # 0.x: eeb8d96f was the payload-based default merger, so the (absent → default) payload decides
    assert c.merge_mode is MergeMode.COMMIT_TIME_ORDERING
    assert c.partition_fields == ["region"] and c.ordering_fields == ["ts"] and c.timeline_layout == 1
    s = _write("memory://cfg-v6b", BASE.format(v=6) + "hoodie.table.precombine.field=ts\n"
               "hoodie.compaction.payload.class=org.apache.hudi.common.model.DefaultHoodieRecordPayload\n")
    assert load_table_config(s).merge_mode is MergeMode.EVENT_TIME_ORDERING


def test_v9_strategy_and_ordering_fields():
    s = _write("memory://cfg-v9", BASE.format(v=9) + "hoodie.table.ordering.fields=ts,seq\n"
               "hoodie.record.merge.strategy.id=eeb8d96f-b1e4-49fd-bbf8-28ac514178e5\n")
    c = load_table_config(s)
    assert c.merge_mode is MergeMode.EVENT_TIME_ORDERING and c.ordering_fields == ["ts", "seq"]
    assert c.timeline_dir == ".hoodie/timeline" and c.archive_dir == ".hoodie/timeline/history"
    # event-time ordering without an ordering field degrades to commit-time ordering, as Hudi does
    s = _write("memory://cfg-v9b", BASE.format(v=9) + "hoodie.record.merge.mode=EVENT_TIME_ORDERING\n")
    assert load_table_config(s).merge_mode is MergeMode.COMMIT_TIME_ORDERING


@pytest.mark.parametrize("extra,needle", [
    ("hoodie.table.base.file.format=HFILE\n", "hoodie.table.base.file.format=HFILE"),
    ("hoodie.record.merge.mode=CUSTOM\n", "hoodie.record.merge.mode=CUSTOM"),
    ("hoodie.bootstrap.base.path=/x\n", "hoodie.bootstrap.base.path"),
    # v9 merge rules (RFC-97) this reader does not apply: refused rather than read with other rows than Hudi's
    ("hoodie.table.partial.update.mode=FILL_UNAVAILABLE\n", "FILL_UNAVAILABLE without hoodie.record.merge.property"),
    ("hoodie.table.partial.update.mode=IGNORE_MARKERS\n", "hoodie.table.partial.update.mode=IGNORE_MARKERS"),
    ("hoodie.table.partial.update.mode=FILL_DEFAULTS\n", "hoodie.table.partial.update.mode=FILL_DEFAULTS"),
    ("hoodie.record.merge.property.some.future.rule=x\n", "merge property hoodie.record.merge.property.some.future"),
])
def test_unsupported_features_name_table_and_property(extra, needle):
    s = _write(f"memory://cfg-unsup-{abs(hash(extra))}", BASE.format(v=9) + extra)
    with pytest.raises(UnsupportedTableError) as e:
        load_table_config(s)
    assert needle in str(e.value) and "cfg-unsup" in str(e.value)


def test_v9_merge_properties_are_read():
    """RFC-97's custom delete marker and Debezium's unavailable-value marker, as a v9 table records them."""
    s = _write("memory://cfg-v9-markers", BASE.format(v=9) + "hoodie.table.partial.update.mode=FILL_UNAVAILABLE\n"
               "hoodie.record.merge.property.hoodie.write.partial.update.unavailable.value=__debezium_unavailable_value\n"
               "hoodie.record.merge.property.hoodie.payload.delete.field=_change_operation_type\n"
               "hoodie.record.merge.property.hoodie.payload.delete.marker=d\n")
    c = load_table_config(s)
    assert (c.unavailable_marker, c.delete_field, c.delete_marker) == (
        "__debezium_unavailable_value", "_change_operation_type", "d")
    half = _write("memory://cfg-v9-half",
                  BASE.format(v=9) + "hoodie.record.merge.property.hoodie.payload.delete.field=Op\n")
    with pytest.raises(CorruptFileError, match="delete.marker come together"):
        load_table_config(half)


def test_old_table_version_is_refused():
    s = _write("memory://cfg-v5", BASE.format(v=5))
    with pytest.raises(UnsupportedTableError, match=r"hoodie.table.version=5"):
        load_table_config(s)


def test_checksum_mismatch_falls_back_to_backup_then_fails():
    good = zlib.crc32(b"db.t")
    text = BASE.format(v=9) + "hoodie.database.name=db\nhoodie.table.checksum={c}\n"
    s = _write("memory://cfg-sum", text.format(c=good + 1))
    with pytest.raises(CorruptFileError, match="checksum"):
        load_table_config(s)
    _write("memory://cfg-sum", text.format(c=good), name="hoodie.properties.backup")
    assert load_table_config(s).name == "t"


def test_not_a_table():
    fsspec.filesystem("memory").makedirs("/empty-dir", exist_ok=True)
    with pytest.raises(UnsupportedTableError, match="not a Hudi table"):
        load_table_config(Storage("memory://empty-dir"))


def test_every_fixture_config_loads(unzip_fixture):
    from conftest import fixture_names
    for name in fixture_names():
        c = load_table_config(Storage(str(unzip_fixture(name).table)))
        assert isinstance(c, TableConfig) and c.version in (6, 8, 9), name


@pytest.mark.parametrize("extra,error,says", [
    # java.util.Properties.load refuses these too ("Malformed \uxxxx encoding")
    ("hoodie.table.comment=caf\\uZZZZ\n", CorruptFileError, "line 'hoodie.table.comment=caf\\\\uZZZZ': malformed"),
    ("hoodie.table.comment=\\u12\n", CorruptFileError, "malformed \\uxxxx escape '\\\\u12'"),
    ("hoodie.table.comment=\\uD83D\n", CorruptFileError, "half of a UTF-16 surrogate pair"),
    ("hoodie.timeline.layout.version=two\n", UnsupportedTableError, "hoodie.timeline.layout.version=two is not "
                                                                    "supported (supported: 1, 2)"),
    ("hoodie.timeline.layout.version=3\n", UnsupportedTableError, "hoodie.timeline.layout.version=3"),
    ("hoodie.timeline.path=../../elsewhere\n", InvalidTableContentError,
     "hoodie.timeline.path=../../elsewhere does not name a folder inside .hoodie"),
    ("hoodie.timeline.history.path=/abs\n", InvalidTableContentError, "hoodie.timeline.history.path=/abs"),
    ("hoodie.archivelog.folder=x/..\n", InvalidTableContentError, "hoodie.archivelog.folder=x/.."),
    ("hoodie.table.create.schema={\"type\": \n", CorruptFileError,
     "hoodie.table.create.schema is not an Avro record schema (not JSON: "),
    ("hoodie.table.create.schema=[]\n", CorruptFileError, "(the top-level type is not a record)"),
    ("hoodie.table.create.schema={\"type\": \"int\"}\n", CorruptFileError, "(the top-level type is not a record)"),
    # HoodieTableConfig.validateChecksum: Long.parseLong fails on these, so Hudi refuses the file too
    ("hoodie.table.checksum=\u00b2\n", CorruptFileError, "hoodie.table.checksum='²' cannot be checked"),
    ("hoodie.table.checksum=" + "9" * 5000 + "\n", CorruptFileError, "cannot be checked"),
])
def test_garbage_in_properties_is_one_error_naming_the_file(extra, error, says):
    url = f"memory://cfg-garbage-{abs(hash(extra))}"
    s = _write(url, BASE.format(v=9) + extra)
    with pytest.raises(error) as e:
        load_table_config(s)
    assert str(e.value).startswith(f"{url}/.hoodie/hoodie.properties: ") and says in str(e.value), str(e.value)


def test_a_malformed_properties_file_falls_back_to_the_backup():
    """Hudi's ``HoodieTableConfig.fetchConfigs`` reads the backup when the main file fails to load."""
    s = _write("memory://cfg-malformed", BASE.format(v=9) + "hoodie.table.comment=\\uXYZW\n")
    _write("memory://cfg-malformed", BASE.format(v=9), name="hoodie.properties.backup")
    assert load_table_config(s).name == "t"


def test_schema_history_maps_renamed_columns_by_id_and_refuses_a_damaged_file(tmp_path):
    """Schema on read: data written before a rename names the column as it was then (tests/oracle/hudi_oracle's
    cow_v9_evolve checks the reads against Hudi); a history file that is not one is one clear error."""
    from hudi_streaming.errors import CorruptFileError
    from hudi_streaming.hoodie.schema_history import FOLDER, load_schema_history
    from hudi_streaming.hoodie.storage import Storage

    def version(vid, names):
        return {"version_id": vid, "fields": [{"id": i, "name": n} for i, n in enumerate(names)]}
    folder = tmp_path / FOLDER
    folder.mkdir(parents=True)
    storage = Storage(str(tmp_path))
    assert load_schema_history(storage) is None
    (folder / "20260101000000000.schemacommit.requested").write_text("")  # not completed: not read
    (folder / "20260101000000000_20260101000000100.schemacommit").write_text(json.dumps({"schemas": [
        version(0, ["id", "amount", "name"]), version(20260101000000000, ["id", "total"])]}))
    history = load_schema_history(storage)
    assert history.renames("20251231000000000") == {"amount": "total"}  # name was dropped, not renamed
    assert history.renames("20260102000000000") == {}
    (folder / "20260103000000000_20260103000000100.schemacommit").write_text("{not json")
    with pytest.raises(CorruptFileError, match="20260103000000000_20260103000000100.schemacommit: not a Hudi"):
        load_schema_history(storage)
