"""Our reader against hudi-rs (Apache Hudi's Rust reader, PyPI ``hudi``), a test-only second oracle.

Spark's gold output covers only the latest snapshot of each fixture table; hudi-rs also answers time-travel
queries, so every fixture table is read as of every completed write instant (and at the latest snapshot) by
both readers and the results must be the same multiset of rows.

Spark wins where hudi-rs and Spark disagree: hudi-rs's latest snapshot is first checked against ``gold_data``,
and a table where they differ is listed in :data:`HUDI_RS_DISAGREES_WITH_SPARK` (its comparisons with ours are
skipped); a table hudi-rs cannot read is listed in :data:`HUDI_RS_CANNOT_READ`. Both lists are themselves
tested, so they shrink when hudi-rs is upgraded.

hudi-rs API used (``hudi`` 0.5.0)::

    table = HudiTableBuilder.from_base_uri(path).build()                 # once per table
    table.read(HudiReadOptions())                                        # latest snapshot -> [RecordBatch]
    table.read(HudiReadOptions().with_as_of_timestamp(t))                # time travel ("hoodie.read.as.of.timestamp")
    table.get_timeline().get_completed_{commits,deltacommits,replacecommits}()   # HudiInstant.timestamp
    table.get_schema_with_meta_fields() / get_schema()                   # schema when a read yields no batch

hudi-rs 0.5.0 reads every snapshot, time travel included, with the table's latest schema, while ours reads as of
an instant with the schema of that instant (as Spark's time travel does: ``HoodieBaseRelation`` resolves the table
schema at the queried instant). Two differences follow, both allowed in as-of comparisons only:

- a column added later is present, all null, in hudi-rs's answer and absent from ours: rows are compared over the
  common columns, and a column only one side has must be entirely null there (``mor_avro__table_evo_add_col``);
- a column whose type Hudi's schema evolution promoted later (e.g. ``ts_millis`` long -> string in
  ``cow__v9_timebasedkeygen_epochmillis``) has the old type in ours and the latest type in hudi-rs: ours is then
  promoted the way Hudi promotes (:func:`hudi_promotes`), provided hudi-rs's type is the latest schema's.
"""
from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import FIXTURES, fixture_names
from hudi import HudiReadOptions, HudiTableBuilder  # hudi-rs, the 'test' extra: missing it is an error, not a skip
from support.gold import assert_same_rows, read_gold
from support.hudi_rs import assert_same_as_hudi_rs, rs_table

# Tables whose latest snapshot read by hudi-rs differs from Spark's gold output: name -> what differs.
# Their comparisons with our reader are skipped (Spark is the reference); test_hudi_rs_still_disagrees_with_spark
# fails once hudi-rs agrees again, so that the entry is removed and the table compared.
# With hudi 0.5.0, hudi-rs's latest snapshot equals gold_data on every fixture table that has one.
HUDI_RS_DISAGREES_WITH_SPARK: dict[str, str] = {}

# Tables hudi-rs cannot read at all (building the table or reading its latest snapshot raises):
# name -> a fragment of the error it raises. test_hudi_rs_still_cannot_read fails once it reads them.
# With hudi 0.5.0, hudi-rs reads every fixture table.
HUDI_RS_CANNOT_READ: dict[str, str] = {}

WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")


# -- the completed write instants, from the zip's timeline file names (needed at collection time) --------------

def _properties(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip().replace("\\:", ":")
    return out


def zip_completed_writes(name: str) -> list[str]:
    """Requested times of the completed commit / deltacommit / replacecommit instants of a fixture's table.

    Table version 6 (timeline layout 1) marks a completed instant by ``.hoodie/<requested>.<action>``; versions
    8 and 9 (layout 2) by ``.hoodie/timeline/<requested>_<completion>.<action>``. Compactions complete as
    ``commit``, log compactions as ``deltacommit``, clusterings as ``replacecommit``.
    """
    with zipfile.ZipFile(FIXTURES / "tables" / f"{name}.zip") as z:
        names = [n for n in z.namelist() if "__MACOSX" not in n]
        props = [n for n in names if n.endswith("/.hoodie/hoodie.properties") and n.count(".hoodie") == 1]
        assert len(props) == 1, f"{name}: expected one table in the zip, found {props}"
        root = props[0][: -len("hoodie.properties")]  # ".../.hoodie/"
        cfg = _properties(z.read(props[0]).decode())
    version = int(cfg.get("hoodie.table.version", "6"))
    layout = int(cfg.get("hoodie.timeline.layout.version", "2" if version >= 8 else "1"))
    folder = root if layout < 2 else f"{root}{cfg.get('hoodie.timeline.path', 'timeline')}/"
    pattern = re.compile(r"(\d+)\.(%s)" % "|".join(WRITE_ACTIONS) if layout < 2
                         else r"(\d+)_\d+\.(%s)" % "|".join(WRITE_ACTIONS))
    out = []
    for n in names:
        rel = n[len(folder):] if n.startswith(folder) else None
        if rel and "/" not in rel:
            m = pattern.fullmatch(rel)
            if m:
                out.append(m.group(1))
    return sorted(out)


INSTANTS = {name: zip_completed_writes(name) for name in fixture_names()}
AS_OF_CASES = [pytest.param(name, t, id=f"{name}-{t}") for name, ts in INSTANTS.items() for t in ts]


# -- hudi-rs, one table object per fixture for the session ------------------------------------------------------

@dataclass
class HudiRs:
    name: str
    table_path: Path
    gold_dir: Path
    table: object | None = None
    error: str | None = None  # what building the table or reading its latest snapshot raised
    latest: pa.Table | None = None
    _as_of: dict[str, pa.Table] = field(default_factory=dict)
    _spark_checked: bool = False
    _spark_disagreement: str | None = None

    def load(self) -> "HudiRs":
        try:
            self.table = HudiTableBuilder.from_base_uri(str(self.table_path)).build()
            self.latest = rs_table(self.table.read(HudiReadOptions()), self.table)
        except Exception as e:  # hudi-rs raises its own error types (HudiCoreError, ...)
            self.error = f"{type(e).__name__}: {e}"
        return self

    def as_of(self, t: str) -> pa.Table:
        if t not in self._as_of:
            self._as_of[t] = rs_table(self.table.read(HudiReadOptions().with_as_of_timestamp(t)), self.table)
        return self._as_of[t]

    def completed_writes(self) -> list[str]:
        tl = self.table.get_timeline()
        return sorted(i.timestamp for get in (tl.get_completed_commits, tl.get_completed_deltacommits,
                                              tl.get_completed_replacecommits) for i in get())

    @property
    def has_gold(self) -> bool:
        return self.gold_dir.is_dir()

    def spark_disagreement(self) -> str | None:
        """None when hudi-rs's latest snapshot equals Spark's gold output, else how they differ."""
        if not self._spark_checked:
            try:
                assert_same_rows(self.latest, read_gold(self.gold_dir), f"{self.name}: hudi-rs vs Spark")
            except AssertionError as e:
                self._spark_disagreement = str(e)
            self._spark_checked = True
        return self._spark_disagreement


@pytest.fixture(scope="session")
def hudi_rs(unzip_fixture):
    cache: dict[str, HudiRs] = {}

    def get(name: str) -> HudiRs:
        if name not in cache:
            fx = unzip_fixture(name)
            cache[name] = HudiRs(name, fx.table, fx.root / "gold_data").load()
        return cache[name]

    return get


def oracle(hudi_rs, name: str) -> HudiRs:
    """hudi-rs for ``name`` when it may judge our reader; skips (with the reason) when Spark overrules it."""
    if name in HUDI_RS_CANNOT_READ:
        pytest.skip(f"hudi-rs cannot read {name} (HUDI_RS_CANNOT_READ): {HUDI_RS_CANNOT_READ[name]}")
    if name in HUDI_RS_DISAGREES_WITH_SPARK:
        pytest.skip(f"hudi-rs disagrees with Spark on {name} (HUDI_RS_DISAGREES_WITH_SPARK): "
                    f"{HUDI_RS_DISAGREES_WITH_SPARK[name]}")
    rs = hudi_rs(name)
    if rs.error is not None:
        pytest.skip(f"hudi-rs raised on {name}, not yet listed in HUDI_RS_CANNOT_READ "
                    f"(test_hudi_rs_latest_matches_spark fails for it): {rs.error}")
    if rs.has_gold and rs.spark_disagreement() is not None:
        pytest.skip(f"hudi-rs disagrees with Spark on {name}, not yet listed in HUDI_RS_DISAGREES_WITH_SPARK "
                    f"(test_hudi_rs_latest_matches_spark fails for it)")
    return rs


def read_ours(fx_table: Path, **kw) -> pa.Table:
    from hudi_streaming import read_table
    return read_table(str(fx_table), **kw)


# -- tests ------------------------------------------------------------------------------------------------------

def _with_gold() -> list[str]:
    import zipfile

    from conftest import FIXTURES
    return [n for n in fixture_names()
            if any("/gold_data/" in f or f.startswith("gold_data/")
                   for f in zipfile.ZipFile(FIXTURES / "tables" / f"{n}.zip").namelist())]


@pytest.mark.parametrize("name", _with_gold())
def test_hudi_rs_latest_matches_spark(name, hudi_rs):
    """hudi-rs's latest snapshot equals Spark's gold output, unless the table is listed as an exception."""
    if name in HUDI_RS_CANNOT_READ or name in HUDI_RS_DISAGREES_WITH_SPARK:
        pytest.skip(f"{name} is listed as a hudi-rs exception; checked by test_listed_hudi_rs_exceptions_still_hold")
    rs = hudi_rs(name)
    assert rs.error is None, f"hudi-rs cannot read {name} ({rs.error}): if hudi-rs is at fault, list it in " \
                             f"HUDI_RS_CANNOT_READ"
    problem = rs.spark_disagreement()
    assert problem is None, f"hudi-rs disagrees with Spark: list {name} in HUDI_RS_DISAGREES_WITH_SPARK " \
                            f"with the reason found\n{problem}"


def test_listed_hudi_rs_exceptions_still_hold(hudi_rs):
    """Each listed disagreement or failure of hudi-rs is still real (the lists shrink when hudi-rs improves)."""
    for name in sorted(HUDI_RS_DISAGREES_WITH_SPARK):
        rs = hudi_rs(name)
        assert rs.error is None, f"hudi-rs now raises on {name}: {rs.error}"
        assert rs.spark_disagreement() is not None, \
            f"hudi-rs now agrees with Spark on {name}: remove it from HUDI_RS_DISAGREES_WITH_SPARK"
    for name in sorted(HUDI_RS_CANNOT_READ):
        rs = hudi_rs(name)
        assert rs.error is not None, f"hudi-rs now reads {name}: remove it from HUDI_RS_CANNOT_READ"
        assert HUDI_RS_CANNOT_READ[name] in rs.error, f"hudi-rs fails differently on {name}: {rs.error}"


@pytest.mark.parametrize("name", fixture_names())
def test_completed_writes_match_hudi_rs_timeline(name, hudi_rs):
    """The instants the as-of cases were collected from are hudi-rs's completed writes, and ours."""
    rs = oracle(hudi_rs, name)
    assert INSTANTS[name] == rs.completed_writes(), f"{name}: timeline files vs hudi-rs's completed writes"
    from hudi_streaming import hoodie
    ours = [e.requested_time for e in hoodie.HudiTable(str(rs.table_path)).timeline.completed_writes()]
    assert ours == INSTANTS[name], f"{name}: our completed writes {ours}, hudi-rs's {INSTANTS[name]}"


@pytest.mark.parametrize("name", fixture_names())
def test_latest_snapshot_matches_hudi_rs(name, hudi_rs):
    rs = oracle(hudi_rs, name)
    ours = read_ours(rs.table_path)
    assert_same_as_hudi_rs(ours, rs.latest, f"{name} latest snapshot")


@pytest.mark.slow
@pytest.mark.parametrize("name,instant", AS_OF_CASES)
def test_snapshot_as_of_matches_hudi_rs(name, instant, hudi_rs):
    rs = oracle(hudi_rs, name)
    ours = read_ours(rs.table_path, as_of=instant)
    assert_same_as_hudi_rs(ours, rs.as_of(instant), f"{name} as of {instant}", latest=rs.latest.schema)
