"""Shared test fixtures: the real Hudi tables and log files in ``tests/data``, unzipped unchanged."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "data"
TABLE_ZIPS = sorted((FIXTURES / "tables").glob("*.zip"))
LOG_FILES = sorted(p for p in (FIXTURES / "log_files").glob("*/.*") if ".log." in p.name)


def fixture_names() -> list[str]:
    return [z.stem for z in TABLE_ZIPS]


@pytest.fixture(scope="session")
def fixtures_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fixture_tables")


class UnzippedFixture:
    """One fixture zip unzipped: ``table`` is the table root, ``root`` holds the gold outputs beside it."""

    def __init__(self, root: Path):
        self.root = root
        candidates = [p.parent.parent for p in root.glob("*/.hoodie/hoodie.properties") if "__MACOSX" not in str(p)]
        if len(candidates) != 1:
            raise AssertionError(f"{root}: expected one table root, found {candidates}")
        self.table = candidates[0]


@pytest.fixture(scope="session")
def unzip_fixture(fixtures_root):
    """Return a function name -> :class:`UnzippedFixture`, unzipping each fixture once per session."""
    cache: dict[str, UnzippedFixture] = {}

    def get(name: str) -> UnzippedFixture:
        if name not in cache:
            dest = fixtures_root / name
            with zipfile.ZipFile(FIXTURES / "tables" / f"{name}.zip") as z:
                z.extractall(dest)
            cache[name] = UnzippedFixture(dest)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test run (start-up costs seconds; sessions are shared)."""
    from hudi_streaming.streaming.local_spark import local_spark

    session = local_spark("hudi-streaming-tests")
    yield session
    session.stop()
