"""``read_changes`` returns what a stream delivers for the same range, on every fixture table.

The stream is the production driver and consumer driven as Spark drives them (``stream_sim``), started at the
first write after ``start`` with ``endingInstant=end``; ``read_changes`` plans and reads the range in one call.
Both ways the issue asks: every adjacent pair of writes, and the widest range (before the first write to the
last), in upsert and changelog mode.
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import FIXTURES
from support.stream_sim import make_reader, run_batches

from hudi_streaming import DataLossError, OptionError, SchemaChangeError, read_changes
from hudi_streaming.hoodie.table import HudiTable
from hudi_streaming.monitor.monitor import MonitorOptions, StreamMonitor

GOLD = sorted(p.stem for p in (FIXTURES / "tables").glob("*.zip"))
#: the oracle's tables after their last step (not those Hudi failed to write at all: mor_v6_015_orc)
ORACLE = sorted(p.stem for p in (FIXTURES / "hudi").glob("*.zip")
                if json.loads(zipfile.ZipFile(p).read("manifest.json"))["steps"])


def _table_root(zip_path: Path, dest: Path) -> Path | None:
    """The table of a gold zip, or the final state of an oracle zip's table (None: Hudi failed at its first step)."""
    if zip_path.parent.name == "hudi":
        from oracle.hudi_oracle.fixture import HudiFixture
        fx = HudiFixture(zip_path, dest / "fx")
        return fx.materialize(len(fx.steps) - 1, dest / "table") if fx.steps else None
    with zipfile.ZipFile(zip_path) as z:
        z.extractall(dest)
    roots = [p.parent.parent for p in dest.glob("*/.hoodie/hoodie.properties") if "__MACOSX" not in str(p)]
    return roots[0] if roots else None


def _frontiers(table: Path) -> list[str]:
    """The completed writes' positions as ``start``/``end`` name them: completion times on v8/v9, requested on 6."""
    mon = StreamMonitor(HudiTable(str(table)), MonitorOptions())
    done, _ = mon.completed_after(None, from_first=True)
    return [mon._frontier(e)[0] for e in done]


def _streamed(table: Path, state: Path, first: str, end: str, mode: str) -> pa.Table | None:
    reader = make_reader(str(table), str(state), startingInstant=first, endingInstant=end, readMode=mode,
                         emitDeletes="true")
    batches = [b for b in run_batches(reader) if b is not None]
    return pa.concat_tables(batches) if batches else None


def _rows(t: pa.Table | None) -> list[str]:
    return sorted(repr(sorted(r.items())) for r in t.to_pylist()) if t is not None else []


def _check(table: Path, tmp: Path, start: str | None, first: str, end: str, mode: str) -> bool:
    """Compare one range; False when the stream refuses it for a schema change (it asks for a restart there, which
    a batch read has no need of). Where the stream finds files cleaned, read_changes must refuse as well."""
    try:
        streamed = _streamed(table, tmp / f"state-{len(list(tmp.glob('state-*')))}", first, end, mode)
    except SchemaChangeError:
        return False
    except DataLossError:
        with pytest.raises(DataLossError):
            read_changes(str(table), start, end, changelog=mode == "changelog")
        return True
    got = read_changes(str(table), start, end, changelog=mode == "changelog")
    if streamed is not None:
        got = got.cast(streamed.schema)
    assert _rows(got) == _rows(streamed), f"{table.name} ({start}, {end}] {mode}"
    return True


@pytest.mark.slow
@pytest.mark.parametrize("name", GOLD + ORACLE)
def test_read_changes_equals_the_stream(name, tmp_path):
    zip_path = FIXTURES / ("hudi" if name in ORACLE else "tables") / f"{name}.zip"
    table = _table_root(zip_path, tmp_path)
    assert table is not None
    points = _frontiers(table)
    if not points:
        assert read_changes(str(table)).num_rows == 0
        return
    compared = [_check(table, tmp_path, points[i - 1] if i else None, end, end, "upsert")  # adjacent pairs
                for i, end in enumerate(points)]
    compared += [_check(table, tmp_path, None, points[0], points[-1], mode)  # the widest range
                 for mode in ("upsert", "changelog")]
    assert any(compared), f"{name}: the stream refused every range"


def test_bad_arguments_are_option_errors(tmp_path):
    table = _table_root(FIXTURES / "hudi" / "mor_v9_basic.zip", tmp_path)
    first = _frontiers(table)[0]
    for kwargs, words in (({"start": "yesterday"}, "start='yesterday' is not an instant time"),
                          ({"deletes": "drop"}, "deletes='drop'"),
                          ({"columns": ["nope"]}, "has no column nope"),
                          ({"partition_filter": {"nope": "x"}}, "nope, not a partition field")):
        with pytest.raises(OptionError, match=words):
            read_changes(str(table), **{"start": first, **kwargs})


def test_a_stream_started_at_the_first_active_write_delivers_nothing_older(tmp_path):
    """The write before the start is archived: the start position is found in the archive, not taken as 'no write
    before it' (which made the stream deliver the whole archived history first)."""
    table = _table_root(FIXTURES / "hudi" / "cow_v9_archive.zip", tmp_path)
    hudi = HudiTable(str(table))
    mon = StreamMonitor(hudi, MonitorOptions())
    active = hudi.timeline.completed_writes()
    assert hudi.timeline.completed_writes(include_archived=True)[0].requested_time < active[0].requested_time
    streamed = _streamed(table, tmp_path / "state", mon._frontier(active[0])[0], mon._frontier(active[-1])[0],
                         "changelog")
    assert streamed is not None
    assert min(streamed.column("_hoodie_commit_time").to_pylist()) >= active[0].requested_time
