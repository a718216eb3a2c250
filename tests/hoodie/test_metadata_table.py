"""Listings from the metadata table's ``files`` partition (``hoodie.metadata_table``) against listings of the store.

The oracle's tables (``tests/data/hudi``, written by Hudi 1.2 and 0.15 on table versions 6, 8 and 9) are rebuilt
after every step; wherever the table has a metadata table, the file-system views built from its listing must
equal those built from LIST, as of each of the latest writes, and so must the partitions. A table caught in
the middle of its last step (later instants pending, the metadata table already holding their delta commits)
must list the same too. The fallbacks (turned off, missing, behind, partition not completed) list the store and
say why once.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from oracle.hudi_oracle.fixture import FOLDER, HudiFixture
from oracle.hudi_oracle.matrix import configurations

from hudi_streaming.hoodie.fs_view import PARTITION_METAFILE_PREFIX, FileSystemView
from hudi_streaming.hoodie.logfile.format import BlockType
from hudi_streaming.hoodie.logfile.reader import iter_blocks
from hudi_streaming.hoodie.metadata_table import FilesIndex, Unusable, open_files_index
from hudi_streaming.hoodie.table import HudiTable

WITH_METADATA = sorted(name for name, cfg in configurations().items()
                       if cfg["metadata"] and (FOLDER / f"{name}.zip").exists())
#: how many of the latest completed writes each step's views are compared as of
AS_OF = 3


def _slices(view: FileSystemView, as_of: str) -> list[tuple]:
    return [(s.partition, s.file_id, s.base_instant, s.files, s.size) for s in view.latest_merged_slices(as_of)]


def _pending_bytes_only(table: HudiTable, path: str, start: int) -> bool:
    """Whether a log file holds, from byte ``start`` on, only blocks of writes that have not completed."""
    data = (Path(table.url) / path).read_bytes()[start:]
    return all(b.type is BlockType.CORRUPT or not table.is_committed(b.instant_time or "")
               for b in iter_blocks(data, path))


def assert_same_v6_views(table: HudiTable, listed: FileSystemView, served: FileSystemView, as_of: str,
                         what: str) -> None:
    """Views of a v6 table: the store may also have log files and appended blocks (v6 appends in place) of writes
    that are not committed — a pending write's, or those a rollback or restore undid, which stay in the files
    behind rollback command blocks — which readers skip and the metadata table does not list. Everything else is
    the same."""
    mine = {(s.partition, s.file_id, s.base_instant): s for s in served.latest_merged_slices(as_of)}
    theirs = {(s.partition, s.file_id, s.base_instant): s for s in listed.latest_merged_slices(as_of)}
    assert mine.keys() == theirs.keys(), f"{what}: file slices as of {as_of} differ"
    for key, m in mine.items():
        t = theirs[key]
        assert m.base_file == t.base_file, f"{what}: base files of {key} differ"
        sizes = {lf.path: lf.size for lf in m.log_files}
        assert set(sizes) <= {lf.path for lf in t.log_files}, f"{what}: log files of {key} differ"
        for lf in t.log_files:
            assert sizes.get(lf.path, 0) <= lf.size and (
                sizes.get(lf.path) == lf.size or _pending_bytes_only(table, lf.path, sizes.get(lf.path, 0))), \
                f"{what}: {lf.path} differs beyond a pending write's blocks"


def assert_same_listing(root: Path, what: str) -> None:
    """The table at ``root`` lists the same through its metadata table as through LIST: views (files and sizes)
    as of each of the :data:`AS_OF` latest writes, incremental views of the latest write's files, partitions,
    and the metadata table's HFiles read by key and read whole (on v6 up to the blocks of uncommitted writes, see
    :func:`assert_same_v6_views`)."""
    listed = HudiTable(str(root), metadata_enable=False)
    served = HudiTable(str(root))
    index = served.files_index()
    assert index is not None, f"{what}: the metadata table was not used"
    assert listed.files_index() is None
    lview, mview = listed.file_system_view(), served.file_system_view()
    writes = [e.requested_time for e in served.timeline.completed_writes()]
    for as_of in writes[-AS_OF:]:
        if served.config.version < 8:
            assert_same_v6_views(served, lview, mview, as_of, what)
        else:
            assert _slices(mview, as_of) == _slices(lview, as_of), f"{what}: views as of {as_of} differ"
    if writes:
        paths = served.timeline.commit_metadata(writes[-1]).written_paths()
        assert _slices(served.file_system_view(paths), writes[-1]) == \
            _slices(listed.file_system_view(paths), writes[-1]), f"{what}: incremental views differ"
    partitions = sorted({f.path.rpartition("/")[0] for f in listed.listing()
                         if not f.path.rpartition("/")[2].startswith(PARTITION_METAFILE_PREFIX)})
    assert served.partitions() == partitions == listed.partitions(), f"{what}: partitions differ"
    assert index.partitions(scan=True) == index.partitions()
    assert index.files(partitions, scan=True) == index.files(partitions), f"{what}: lookup and scan differ"


@pytest.mark.slow
@pytest.mark.parametrize("name", WITH_METADATA)
def test_metadata_listing_equals_list_after_every_step(name, tmp_path):
    fx = HudiFixture(FOLDER / f"{name}.zip", tmp_path)
    if not fx.steps:  # a zip of a configuration Hudi failed on holds the steps before the failure
        pytest.skip(f"{name}: Hudi wrote no table ({fx.error})")
    root = tmp_path / "table"
    for step in range(len(fx.steps)):
        fx.materialize(step, root)
        assert_same_listing(root, f"{name} after step {step}")
    last = len(fx.steps) - 1
    if len(fx.new_instants(last)) > 0 and last > 0:
        between = fx.materialize_between(last, 0, tmp_path / "between")
        assert_same_listing(between, f"{name} during step {last}")


def test_oracle_covers_every_writer_and_version():
    """The listing test above meets both writers and table versions 6, 8 and 9."""
    cfgs = configurations()
    assert {(cfgs[n]["writer"], cfgs[n]["version"]) for n in WITH_METADATA} >= {("0.15", 6), ("1.2", 6),
                                                                              ("1.2", 8), ("1.2", 9)}


# --- fallbacks -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=["mor_v9_basic", "mor_v6_015_basic"])
def built(request, tmp_path_factory) -> Path:
    fx = HudiFixture(FOLDER / f"{request.param}.zip", tmp_path_factory.mktemp(request.param))
    return fx.materialize(len(fx.steps) - 1, fx.work / "table")


@pytest.fixture
def table_copy(built, tmp_path) -> Path:
    return Path(shutil.copytree(built, tmp_path / "table"))


def _reason(root: Path) -> str:
    table = HudiTable(str(root))
    found = open_files_index(table.storage, table.config, table.timeline, None)
    assert isinstance(found, Unusable)
    return found.reason


def test_usable_by_default_and_turned_off_by_the_option(built, caplog):
    assert isinstance(HudiTable(str(built)).files_index(), FilesIndex)
    with caplog.at_level(logging.INFO, logger="hudi_streaming.hoodie.metadata_table"):
        for _ in range(2):
            off = HudiTable(str(built), metadata_enable=False)
            assert off.files_index() is None
            assert off.file_system_view().latest_merged_slices()  # listed from the store
    said = [r.getMessage() for r in caplog.records if "hoodie.metadata.enable=false" in r.getMessage()]
    assert len(said) == 1 and str(built) in said[0]


def test_missing_metadata_table_falls_back(table_copy):
    (table_copy / ".hoodie" / "metadata" / ".hoodie" / "hoodie.properties").unlink()
    assert "no metadata table" in _reason(table_copy)


def test_empty_files_partition_falls_back(table_copy):
    shutil.rmtree(table_copy / ".hoodie" / "metadata" / "files")
    assert "holds no completed file slice" in _reason(table_copy)


def test_metadata_table_behind_falls_back(table_copy):
    """The metadata table lacks the data table's latest instant: its listing would miss that write's files."""
    table = HudiTable(str(table_copy))
    latest = table.timeline.active.completed()[-1].requested_time
    timeline = table_copy / ".hoodie" / "metadata" / ".hoodie"
    done = [p for p in timeline.rglob(f"{latest}*deltacommit") if not p.name.startswith(".")]
    assert done, "no completed metadata delta commit of the latest instant"
    for p in done:
        p.unlink()
    assert "behind" in _reason(table_copy) and latest in _reason(table_copy)
    listed = HudiTable(str(table_copy), metadata_enable=False).file_system_view()
    assert _slices(HudiTable(str(table_copy)).file_system_view(), latest) == _slices(listed, latest)


@pytest.mark.parametrize("change,words", [
    ({"hoodie.table.metadata.partitions": "column_stats"}, "'files' is not a completed metadata partition"),
    ({"hoodie.table.metadata.partitions.inflight": "files"}, "'files' is not a completed metadata partition"),
])
def test_files_partition_not_completed_falls_back(built, change, words):
    table = HudiTable(str(built))
    config = table.config.model_copy(update={"raw": {**table.config.raw, **change}})
    found = open_files_index(table.storage, config, table.timeline, None)
    assert isinstance(found, Unusable) and words in found.reason


def test_comparison_sees_a_lost_metadata_log(table_copy):
    """The listing check can fail: without the newest log file of ``files`` the metadata table misses what the
    latest write did, while its timeline still says the write is there."""
    files = table_copy / ".hoodie" / "metadata" / "files"
    logs = sorted((p for p in files.iterdir() if ".log." in p.name and not p.name.endswith(".crc")),
                  key=lambda p: p.name.split("_")[1])
    logs[-1].unlink()
    with pytest.raises(AssertionError, match="differ"):
        assert_same_listing(table_copy, "without its newest metadata log")


@pytest.mark.parametrize("value,used", [("false", False), ("true", True), (None, True)])
def test_read_option_reaches_the_batch_planner(built, value, used, monkeypatch):
    """``hoodie.metadata.enable``, Hudi's read option, as Spark hands it to the source: the batch read's table
    lists the store when it is false, and takes its listing from the metadata table otherwise."""
    from hudi_streaming.streaming import batch_read
    from hudi_streaming.streaming.options import parse_options
    from hudi_streaming.streaming.schema import source_schema
    made: list[HudiTable] = []

    class Recording(HudiTable):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(batch_read, "HudiTable", Recording)
    opts = parse_options({"path": str(built), **({"hoodie.metadata.enable": value} if value else {})})
    assert opts.metadata_enable is used
    assert batch_read.plan_batch_read(opts, source_schema(opts), lambda *task: task)
    assert made and all((t.files_index() is not None) is used for t in made)


@pytest.mark.parametrize("key,record,words", [
    ("a", {"type": 1, "filesystemMetadata": {}}, "of type 1, not 2"),
    ("__all_partitions__", {"type": 2, "filesystemMetadata": {}}, "of type 2, not 1"),
    ("a", {"type": 2, "filesystemMetadata": {"x.parquet": {"size": -1, "isDeleted": False}}}, "size -1"),
    ("a", {"type": 2, "filesystemMetadata": {"../x.parquet": {"size": 1, "isDeleted": False}}}, "'../x.parquet'"),
    ("a", {"type": 2, "filesystemMetadata": {"x.parquet": {"size": 1, "isDeleted": None}}}, "isDeleted None"),
])
def test_impossible_files_record_names_its_file(key, record, words):
    from hudi_streaming.errors import CorruptFileError
    from hudi_streaming.hoodie.metadata_table import _entries
    with pytest.raises(CorruptFileError, match=f"^files/x.hfile: metadata record {key!r} .*{words}"):
        _entries(record, key, "files/x.hfile")


@pytest.mark.parametrize("api", ["read_table", "read_changes"])
def test_python_reads_take_the_option(built, api, monkeypatch):
    """``read_table`` and ``read_changes`` take ``metadata_enable`` (Hudi's ``hoodie.metadata.enable``): the same
    rows either way, listed from the store when False."""
    from hudi_streaming import read as module  # where both are defined
    made: list[HudiTable] = []

    class Recording(HudiTable):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(module, "HudiTable", Recording)
    rows = {}
    for enable in (True, False):
        made.clear()
        rows[enable] = getattr(module, api)(str(built), metadata_enable=enable).sort_by("_hoodie_record_key")
        assert made and all((t.files_index() is not None) is enable for t in made)
    assert rows[True].num_rows and rows[True].equals(rows[False])


def test_damaged_base_hfile_is_named(table_copy):
    """A damaged metadata file fails the listing by name (it is not read as an empty listing)."""
    from hudi_streaming.errors import CorruptFileError
    base = next(p for p in (table_copy / ".hoodie" / "metadata" / "files").glob("*.hfile"))
    data = base.read_bytes()
    base.write_bytes(data[:-4096] + bytes(4096))  # the trailer zeroed
    with pytest.raises(CorruptFileError, match=f"{base.name}: HFile trailer magic missing"):
        HudiTable(str(table_copy)).file_system_view()
