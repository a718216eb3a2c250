"""ORC and Lance base files: a table read the same whatever format its base files are in.

Each fixture table is copied with its parquet base files rewritten as ORC (``pyarrow.orc``) or Lance
(``pylance``) — same file-group name, the format's suffix, tiny stripes and batches so every file is read in
several — ``hoodie.properties`` naming the format and the timeline's commit metadata naming the new files. The
copy must read exactly as the parquet original: snapshot (MOR tables merge their log files over the new base
files), projection, incremental, and the stream (whose planner bounds splits by the base files' footer row
counts). Hudi-written ORC and Lance tables are checked by the oracle (tests/oracle/hudi_oracle).
"""
from __future__ import annotations

import io
import shutil
import sys
import uuid
from pathlib import Path

import fastavro
import fsspec
import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest
from support.gold import assert_same_rows
from support.stream_sim import make_reader, run_batches

from hudi_streaming import read_table
from hudi_streaming.errors import CorruptFileError, UnsupportedTableError
from hudi_streaming.hoodie import base_file, slice_reader
from hudi_streaming.hoodie.base_file import open_base_file
from hudi_streaming.hoodie.storage import Storage
from hudi_streaming.hoodie.table import HudiTable

#: MOR v9 with every type (ints, longs, doubles, floats, strings, bytes, decimals, dates, timestamps in both
#: units, nested struct, list of structs, map of structs) and log files; MOR and COW v9; MOR v6 (JSON metadata)
TABLES = ["mor_avro__table_all_data_types", "mor_avro__v9_txns_simple_meta", "cow__v9_txns_simple_meta",
          "mor_avro__v6_trips_8i1u"]
#: rows per ORC stripe and per Lance batch in the copies: every base file of a fixture is read in several
ROWS_PER_UNIT = 2


def _write_orc(t: pa.Table, path: Path) -> None:
    # Hudi's ORC writer stores timestamps as ORC TIMESTAMP (no zone), as AvroOrcUtils maps timestamp-micros
    t = t.cast(pa.schema([pa.field(f.name, pa.timestamp(f.type.unit) if pa.types.is_timestamp(f.type) else f.type)
                          for f in t.schema]))
    po.write_table(t, str(path), stripe_size=1, batch_size=ROWS_PER_UNIT)


def _write_lance(t: pa.Table, path: Path) -> None:
    lance_file = pytest.importorskip("lance.file")
    w = lance_file.LanceFileWriter(str(path), t.schema)
    w.write_batch(t)
    w.close()


WRITERS = {"orc": _write_orc, "lance": _write_lance}


def _renamed(value, names: dict[str, str]):
    """``value`` (decoded commit metadata) with every base file name in ``names`` replaced."""
    if isinstance(value, str):
        for old, new in names.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


def convert(src: Path, dest: Path, fmt: str) -> Path:
    """A copy of table ``src`` whose parquet base files are ``fmt`` files (see the module docstring)."""
    shutil.copytree(src, dest)
    names = {}
    for p in sorted(dest.rglob("*.parquet")):
        if ".hoodie" in p.relative_to(dest).parts:
            continue
        new = p.with_suffix(f".{fmt}")
        WRITERS[fmt](pq.read_table(p), new)
        p.unlink()
        p.with_name(f".{p.name}.crc").unlink(missing_ok=True)
        names[p.name] = new.name
    # the metadata table still lists the parquet names: the copy is a table without one, listed from the store
    shutil.rmtree(dest / ".hoodie" / "metadata", ignore_errors=True)
    props = dest / ".hoodie" / "hoodie.properties"
    lines = [ln for ln in props.read_text().splitlines() if not ln.startswith(("hoodie.table.base.file.format=",
                                                                                "hoodie.table.metadata.partitions"))]
    props.write_text("\n".join(lines + [f"hoodie.table.base.file.format={fmt.upper()}"]) + "\n")
    timeline = dest / HudiTable(str(dest)).config.timeline_dir
    for f in (p for p in timeline.iterdir() if p.is_file()):
        data = f.read_bytes()
        if b".parquet" not in data:
            continue
        if data.startswith(b"Obj\x01"):  # v8/v9: an Avro container
            reader = fastavro.reader(io.BytesIO(data))
            out = io.BytesIO()
            fastavro.writer(out, reader.writer_schema, [_renamed(r, names) for r in reader], codec=reader.codec)
            f.write_bytes(out.getvalue())
        else:  # v6: JSON
            f.write_text(_renamed(data.decode(), names))
    return dest


@pytest.fixture
def small_pieces(monkeypatch):
    """Lance batches of :data:`ROWS_PER_UNIT` rows, and slice pieces of 3 base rows, cut across stripes and
    batches (the parquet original is read in the same pieces, so its row order is the one to match)."""
    monkeypatch.setattr(base_file, "LANCE_BATCH_ROWS", ROWS_PER_UNIT)
    monkeypatch.setattr(slice_reader, "PIECE_ROWS", 3)


def _copy(unzip_fixture, tmp_path, name: str, fmt: str) -> tuple[Path, Path]:
    original = unzip_fixture(name).table
    return original, convert(original, tmp_path / fmt, fmt)


@pytest.mark.parametrize("fmt", ["orc", "lance"])
@pytest.mark.parametrize("name", TABLES)
def test_a_table_reads_as_its_parquet_original(name, fmt, unzip_fixture, tmp_path, small_pieces):
    original, copy = _copy(unzip_fixture, tmp_path, name, fmt)
    files = [f.path for f in HudiTable(str(copy)).listing()]
    assert not any(f.endswith(".parquet") for f in files) and any(f.endswith(f".{fmt}") for f in files)
    if fmt == "orc":  # every base file is read in several stripes
        assert all(po.ORCFile(str(copy / f)).nstripes > 1 for f in files if f.endswith(".orc")
                   and po.ORCFile(str(copy / f)).nrows > ROWS_PER_UNIT)
    want = read_table(str(original))
    got = read_table(str(copy))
    assert got.schema == want.schema and got.equals(want)  # same types, same rows, same order
    assert_same_rows(got, want, f"{name} as {fmt}")
    table = HudiTable(str(copy))
    columns = [c for c in table.arrow_schema().names if not c.startswith("_hoodie")][-3:]
    assert read_table(str(copy), columns=columns).equals(read_table(str(original), columns=columns))
    assert read_table(str(copy), read_optimized=True).equals(read_table(str(original), read_optimized=True))
    writes = table.timeline.completed_writes()
    if len(writes) > 1 and table.config.populate_meta_fields:  # incremental: the files named by commit metadata
        start = writes[0].completion_time if table.config.version >= 8 else writes[0].requested_time
        assert read_table(str(copy), start=start).equals(read_table(str(original), start=start))


@pytest.mark.parametrize("fmt", ["orc", "lance"])
@pytest.mark.parametrize("name", ["mor_avro__v9_txns_simple_meta", "mor_avro__table_all_data_types"])
def test_a_stream_reads_as_on_parquet(name, fmt, unzip_fixture, tmp_path, small_pieces):
    """The stream's batches (split by footer row counts with ``maxRowsPerTrigger``) are the parquet table's."""
    original, copy = _copy(unzip_fixture, tmp_path, name, fmt)

    def stream(table: Path, state: str) -> list[pa.Table]:
        reader = make_reader(str(table), str(tmp_path / state), emitDeletes="true", maxRowsPerTrigger="3")
        return [b for b in run_batches(reader) if b is not None]
    want, got = stream(original, "s_parquet"), stream(copy, f"s_{fmt}")
    assert len(got) == len(want) > 1
    assert all(g.equals(w) for g, w in zip(got, want))


@pytest.mark.parametrize("fmt", ["orc", "lance"])
def test_a_table_on_an_object_store_reads_through_fsspec(fmt, unzip_fixture, tmp_path, small_pieces):
    original, copy = _copy(unzip_fixture, tmp_path, "mor_avro__table_all_data_types", fmt)
    url = f"memory://base-formats-{uuid.uuid4().hex}"
    fsspec.filesystem("memory").put(str(copy), url.removeprefix("memory://"), recursive=True)
    assert read_table(url).equals(read_table(str(original)))


def _big(rows: int) -> pa.Table:
    return pa.table({"k": pa.array([f"key-{i:08d}" for i in range(rows)]), "v": pa.array(range(rows), pa.int64()),
                     "d": pa.array([i / 3 for i in range(rows)])})


def test_orc_is_read_a_stripe_at_a_time_with_bounded_memory(tmp_path):
    rows = 400_000
    po.write_table(_big(rows), str(tmp_path / "f_0-0-0_1.orc"), stripe_size=1 << 20, batch_size=50_000)
    f = open_base_file(Storage(str(tmp_path)), "f_0-0-0_1.orc")
    assert f.num_rows == rows and f.names == ["k", "v", "d"]
    whole = po.ORCFile(str(tmp_path / "f_0-0-0_1.orc")).read().nbytes
    before, peak, seen, count = pa.total_allocated_bytes(), 0, 0, 0
    for batch in f.batches(["v", "k"], 131_072):
        assert batch.schema.names == ["v", "k"] and batch.num_rows <= 50_000
        seen, count = seen + batch.num_rows, count + 1
        peak = max(peak, pa.total_allocated_bytes() - before)
        del batch
    assert seen == rows and count == f.file.nstripes >= 8
    assert peak < whole / 3, (peak, whole)  # a stripe or two, not the file


def test_lance_is_read_in_bounded_batches(tmp_path):
    lance_file = pytest.importorskip("lance.file")
    rows = 100_000
    w = lance_file.LanceFileWriter(str(tmp_path / "f_0-0-0_1.lance"))
    w.write_batch(_big(rows))
    w.close()
    f = open_base_file(Storage(str(tmp_path)), "f_0-0-0_1.lance")
    assert f.num_rows == rows and f.names == ["k", "v", "d"]
    batches = [b.num_rows for b in f.batches(["d", "k"], 131_072) if b.schema.names == ["d", "k"]]
    assert sum(batches) == rows and max(batches) <= base_file.LANCE_BATCH_ROWS and len(batches) > 1


def test_without_pylance_a_lance_table_fails_naming_the_file_and_the_extra(unzip_fixture, tmp_path, monkeypatch):
    _, copy = _copy(unzip_fixture, tmp_path, "mor_avro__v9_txns_simple_meta", "lance")
    monkeypatch.setitem(sys.modules, "lance", None)  # import lance raises ImportError
    monkeypatch.setitem(sys.modules, "lance.file", None)
    with pytest.raises(UnsupportedTableError) as e:
        read_table(str(copy))
    message = str(e.value)
    assert "\n" not in message and ".lance" in message and str(copy) in message
    assert "pip install 'hudi-streaming[lance]'" in message


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_corrupt_orc_base_file_is_one_error_naming_it(damage, unzip_fixture, tmp_path):
    _, copy = _copy(unzip_fixture, tmp_path, "cow__v9_txns_simple_meta", "orc")
    victim = sorted(copy.rglob("*.orc"))[-1]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"\x00" * len(data))
    with pytest.raises(CorruptFileError) as e:
        read_table(str(copy))
    assert victim.name in str(e.value) and "not a readable ORC file" in str(e.value) and "\n" not in str(e.value)


def test_a_corrupt_lance_base_file_is_one_error_naming_it(unzip_fixture, tmp_path):
    _, copy = _copy(unzip_fixture, tmp_path, "cow__v9_txns_simple_meta", "lance")
    victim = sorted(copy.rglob("*.lance"))[-1]
    victim.write_bytes(victim.read_bytes()[:-20])
    with pytest.raises(CorruptFileError) as e:
        read_table(str(copy))
    assert victim.name in str(e.value) and "not a readable Lance file" in str(e.value)


def test_a_base_file_of_another_kind_is_refused_naming_it(tmp_path):
    (tmp_path / "f_0-0-0_1.hfile").write_bytes(b"x")
    with pytest.raises(UnsupportedTableError, match=r"f_0-0-0_1\.hfile: base files of this kind"):
        open_base_file(Storage(str(tmp_path)), "f_0-0-0_1.hfile")


@pytest.mark.parametrize("failure", [ConnectionResetError, TimeoutError, PermissionError])
def test_a_store_that_fails_is_not_called_a_corrupt_file(failure, tmp_path, monkeypatch):
    """A connection reset, a timeout or a refused permission while a base file is opened is the store's failure,
    raised as it is, not a claim about the file's bytes (they are OSErrors, like Arrow's decode errors)."""
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "f.parquet")
    storage = Storage(str(tmp_path))

    def failing(rel, size=None):
        raise failure("the store failed")
    monkeypatch.setattr(storage, "parquet_file", failing)
    with pytest.raises(failure):
        open_base_file(storage, "f.parquet")
