"""Tables written by Apache Hudi itself, in every configuration of ``tests/oracle/hudi_oracle/matrix.py``, read by us
exactly as Hudi reads them, after every step (no JVM here: Hudi's answers are the gold files in the zips).

Per configuration: our snapshot and incremental reads against Hudi's queries; our stream, revealed step by step
and restarted between steps, replayed against Hudi's snapshots; on CDC tables our changelog against Hudi's CDC
query. Differences are either none or exactly those listed in ``tests/oracle/hudi_oracle/differences.py``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO
from oracle.hudi_oracle import compare  # noqa: E402
from oracle.hudi_oracle.differences import COLUMNS, HUDI_REFUSES, KNOWN, REWOUND  # noqa: E402
from oracle.hudi_oracle.fixture import FOLDER, HudiFixture, fixture_names  # noqa: E402
from oracle.hudi_oracle.matrix import configurations  # noqa: E402
from support.gold import read_gold  # noqa: E402

from hudi_streaming import read_table

README = REPO / "README.md"
NAMES = fixture_names()
#: configurations Hudi wrote at least one step of (one it refused at once is only checked for its refusal)
WRITTEN = [n for n in NAMES if HudiFixture(FOLDER / f"{n}.zip", Path()).steps]


def check(name: str, kind: str, diffs: list[str]) -> None:
    known = KNOWN.get((name, kind))
    if known is None:
        assert diffs == [], f"{name} {kind}: {len(diffs)} differences from Hudi:\n" + "\n".join(diffs[:8])
        return
    assert diffs, f"{name} {kind}: listed as differing from Hudi ({known.reason}) but now equal: remove the entry"
    unexplained = [d for d in diffs if not re.search(known.pattern, d)]
    assert not unexplained, f"{name} {kind}: differences beyond the listed one:\n" + "\n".join(unexplained[:8])


def fixture(name: str, tmp_path: Path) -> HudiFixture:
    fx = HudiFixture(FOLDER / f"{name}.zip", tmp_path)
    assert fx.steps, f"{name}: Hudi wrote no step ({fx.error})"
    return fx


@pytest.mark.slow
@pytest.mark.parametrize("name", WRITTEN)
def test_snapshot_and_incremental_reads_equal_hudi(name, tmp_path):
    fx = fixture(name, tmp_path)
    check(name, "read", compare.snapshot_and_incremental(fx, tmp_path / "table", ignore=tuple(COLUMNS.get(name, {}))))


@pytest.mark.slow
@pytest.mark.parametrize("name", WRITTEN)
def test_stream_restarted_between_steps_rebuilds_hudi_snapshots(name, tmp_path):
    fx = fixture(name, tmp_path)
    check(name, "stream", compare.stream(fx, tmp_path / "table", tmp_path / "state",
                                         ignore=tuple(COLUMNS.get(name, {}))))


@pytest.mark.parametrize("name", REWOUND)
def test_a_reconciled_stream_rebuilds_hudi_snapshots_through_restores(name, tmp_path):
    """onRewind=reconcile: after the restore (or rollback) the sink that applied every batch equals Hudi's
    snapshot, as at every other step (the stream restarted between steps, as above)."""
    fx = fixture(name, tmp_path)
    assert compare.stream(fx, tmp_path / "table", tmp_path / "state", ignore=tuple(COLUMNS.get(name, {})),
                          onRewind="reconcile") == []


@pytest.mark.parametrize("name", [n for n in WRITTEN if configurations()[n]["cdc"]])
def test_changelog_equals_hudi_cdc(name, tmp_path):
    fx = fixture(name, tmp_path)
    check(name, "cdc", compare.cdc(fx, tmp_path / "table", tmp_path))


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_listed_column_differences_are_exactly_as_described(name, tmp_path):
    """The columns left out of the comparisons above differ from Hudi's in the way the README says, and no other."""
    fx = fixture(name, tmp_path)
    last = len(fx.steps) - 1
    ours = read_table(str(fx.materialize(last, tmp_path / "table")))
    hudi = read_gold(fx.gold(f"gold/{last}/snapshot"))
    for column, difference in COLUMNS[name].items():
        assert difference.check(ours, hudi, column) == []


@pytest.mark.parametrize("name", NAMES)
def test_hudi_wrote_every_step_or_its_refusal_is_listed(name, tmp_path):
    fx = HudiFixture(FOLDER / f"{name}.zip", tmp_path)
    refused = HUDI_REFUSES.get(name)
    if refused is None:
        assert fx.error is None, f"{name}: Hudi failed writing step {len(fx.steps)}: {fx.error}"
    else:
        assert fx.error and re.search(refused.pattern, fx.error), f"{name}: Hudi's error changed: {fx.error}"


@pytest.mark.parametrize("name", [n for n in WRITTEN if configurations()[n]["scenario"] == "concurrent"])
def test_the_concurrent_writers_really_collided(name, tmp_path):
    """The two writers of each concurrent step wrote at once: one lost Hudi's optimistic-concurrency check,
    its instant was rolled back, and it wrote again (the tables above are read after all that)."""
    fx = fixture(name, tmp_path)
    concurrent = [k for k, s in enumerate(fx.steps) if s["step"]["op"] == "concurrent"]
    assert concurrent
    assert len(fx.manifest["conflicts"]) >= len(concurrent)
    assert all("HoodieWriteConflictException" in c for c in fx.manifest["conflicts"])
    for k in concurrent:
        assert [e["action"] for e in fx.new_instants(k)].count("rollback") >= 1, f"step {k}: no conflict"


def test_the_matrix_is_complete():
    """Every configuration has its zip, none is left over, and each difference or refusal is in the README."""
    configs = configurations()
    assert len(configs) >= 60
    assert sorted(configs) == NAMES
    readme = README.read_text()
    for name, kind in KNOWN:
        assert name in NAMES and kind in ("read", "stream", "cdc")
        assert f"`{name}`" in readme, f"README's table of differences from Hudi does not name {name}"
    for name in [*HUDI_REFUSES, *COLUMNS]:
        assert f"`{name}`" in readme, f"README's table of what Hudi refuses does not name {name}"
