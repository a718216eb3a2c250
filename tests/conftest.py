"""Shared test fixtures: the real Hudi tables and log files in ``tests/data``, unzipped unchanged."""
from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
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


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built once per session: what users install (the test venv's install is editable)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)], check=True,
                   capture_output=True)
    (whl,) = out.glob("hudi_streaming-*.whl")
    return whl


@dataclass(frozen=True)
class Venv:
    root: Path
    python: Path
    site: Path  # its site-packages


@pytest.fixture(scope="session")
def wheel_venv(wheel):
    """Return a function ``(path, install=True, copies=False) -> Venv``: a fresh venv, with the wheel unless not
    ``install``, ``copies`` makes it relocatable (its interpreter copied, not linked, so it can be packed).

    The dependencies (PySpark, pyarrow, ...) are borrowed from the test environment through a ``.pth`` line
    instead of being downloaded again; ``.pth`` files inside a folder added that way are not run, so the test
    environment's own (editable) hudi_streaming stays invisible and only the wheel's copy can be imported.
    """

    def make(path: Path, install: bool = True, copies: bool = False) -> Venv:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", *(["--copies"] if copies else []), str(path)],
                       check=True)
        python = path / "bin" / "python"
        site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                   check=True, capture_output=True, text=True).stdout.strip())
        (site / "test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
        if install:
            subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                            str(wheel)], check=True, capture_output=True)
        return Venv(path, python, site)

    return make
