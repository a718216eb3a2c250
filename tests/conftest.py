"""Shared test fixtures: the real Hudi tables and log files in ``tests/data``, unzipped unchanged."""
from __future__ import annotations

import fcntl
import inspect
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import types
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "data"
TABLE_ZIPS = sorted((FIXTURES / "tables").glob("*.zip"))
LOG_FILES = sorted(p for p in (FIXTURES / "log_files").glob("*/.*") if ".log." in p.name)

#: Every JVM the suite starts (the local session, the e2e jobs, the Connect and cluster daemons and executors,
#: Hudi's writer) is started for small, short jobs, where compiling hot code well does not pay back: the client
#: compiler alone and the serial collector bring a local session up in about half the time (measured on two loaded
#: cores: 37 s -> 20 s). What the tests check does not depend on either. Set before any JVM starts, and inherited
#: by every process the tests start; options the caller already set come after, so they win.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
os.environ["JAVA_TOOL_OPTIONS"] = f"{JVM_OPTIONS} {os.environ.get('JAVA_TOOL_OPTIONS', '')}".strip()


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
    from hudi_streaming.cli.local_spark import local_spark

    session = local_spark("hudi-streaming-tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def s3():
    """A local S3 server (moto on loopback) for a module's tests: one start per module, its buckets left behind."""
    from support.s3_server import S3Server

    server = S3Server()
    yield server
    server.stop()


#: what building the wheel reads: pyproject's ``package-dir`` folders, its ``readme`` and itself
WHEEL_SOURCES = ("pyproject.toml", "README.md", "src", "hoodie", "monitor", "state", "streaming")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built once per run: what users install (the test venv's install is editable).

    Built from a copy of the sources, not in the checkout: setuptools builds in the source tree's ``build/``, where
    a ``build/lib`` left by an older tree carries modules deleted since into the wheel. The suite's workers
    (pytest-xdist) share one build, made by the first to ask under a lock, in the folder above their own
    temporary folders."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out, tree = shared / "wheel", shared / "wheel-sources"
    with open(shared / "wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not any(out.glob("hudi_streaming-*.whl")):
            shutil.rmtree(tree, ignore_errors=True)
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
            for name in WHEEL_SOURCES:
                if (REPO / name).is_dir():
                    shutil.copytree(REPO / name, tree / name, ignore=ignore)
                else:
                    tree.mkdir(parents=True, exist_ok=True)
                    shutil.copy(REPO / name, tree / name)
            subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(tree)],
                           check=True, capture_output=True)
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


# --- markers: spark, s3, slow (registered in pyproject.toml) ----------------------------------------------------
#
# `-m "not spark and not s3 and not slow"` is the fast part of the suite. A test is marked here by what it reaches:
# its own function, the fixtures it gets (autouse ones included) and the test-side code they call (functions and
# classes of modules in tests/, followed through their names), never hudi_streaming's own code.
#
# * spark: the session's `spark` fixture, or code that starts Spark or a JVM: a SparkSession (the name, in code or
#   as `SparkSession.builder` in a script given to a subprocess), local_spark, the e2e harness's Driver (a job
#   with Spark's JVM), a script of tests/ that makes a SparkSession, named as a path (stream_driver.py,
#   cluster_job.py, the Hudi oracle's writer_job.py), or a launcher as a program name (spark-submit, spark-class,
#   start-connect-server.sh, java, docker: the compose stack runs Spark in its containers).
# * s3: the `s3` fixture, the local S3 server (support.s3_server.S3Server, moto) or the fault proxy in front of
#   it (support.s3_fault_proxy).
# * slow is not found but stated: `@pytest.mark.slow` on a test, or a parametrized matrix taken as one test (all its
#   cases), measured above ~5 s on two cores (`--durations=0 -n 0 -p no:randomly -m "not spark and not s3"`, summed per
#   function); `pytestmark = pytest.mark.slow` on a module slow as a whole.
# A module wholly of one kind says so itself (`pytestmark = pytest.mark.spark`); these rules catch the others.

TESTS = Path(__file__).resolve().parent
SPARK_NAMES = frozenset({"SparkSession", "local_spark"})
SPARK_OBJECTS = frozenset({("harness", "Driver"), ("hudi_streaming.cli.local_spark", "local_spark"),
                           ("pyspark.sql.session", "SparkSession")})
SPARK_PROGRAM = re.compile(r"(?:^|/)(?:spark-submit|spark-class|spark-shell|start-connect-server\.sh|java|docker|"
                           r"docker-compose)$")
SPARK_SCRIPT = re.compile(r"\bSparkSession\s*\.\s*builder\b")
SPARK_FILE = re.compile(r"\bSparkSession\b|\blocal_spark\b")
S3_MODULES = frozenset({"support.s3_server", "support.s3_fault_proxy"})
_is_test_side: dict[str, bool] = {}
_found: dict[int, tuple[set[str], list]] = {}


def _test_side(module_name: str | None) -> bool:
    """Whether a module is one of tests/ (the test-side code followed), not the package's or a library's."""
    if module_name is None:
        return False
    if module_name not in _is_test_side:
        file = getattr(sys.modules.get(module_name), "__file__", None)
        _is_test_side[module_name] = file is not None and Path(file).resolve().is_relative_to(TESTS)
    return _is_test_side[module_name]


_spark_files: dict[Path, bool] = {}


def _starts_spark(text: str, folder: Path | None) -> bool:
    """Whether a string of test-side code launches Spark: a launcher, a script making a SparkSession, or the path
    of a script of tests/ that does (``folder``: where a bare file name is looked for, the code's module's)."""
    if SPARK_PROGRAM.search(text) or SPARK_SCRIPT.search(text):
        return True
    if not text.endswith(".py") or "\n" in text or folder is None:
        return False
    path = (folder / text).resolve()
    if path not in _spark_files:
        _spark_files[path] = (path.is_relative_to(TESTS) and path.is_file()
                              and SPARK_FILE.search(path.read_text(errors="replace")) is not None)
    return _spark_files[path]


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def _strings(code: types.CodeType) -> list[str]:
    """A code object's string constants but its docstring."""
    consts = code.co_consts
    flag = getattr(inspect, "CO_HAS_DOCSTRING", None)
    has_doc = bool(code.co_flags & flag) if flag is not None else bool(consts) and isinstance(consts[0], str)
    return [c for c in consts[1 if has_doc else 0:] if isinstance(c, str)]


def _classify(obj: object) -> tuple[set[str], list]:
    """(markers obj's own code calls for, the test-side functions and classes it uses), once per object."""
    key = id(obj)
    if key in _found:
        return _found[key]
    kinds: set[str] = set()
    uses: list = []
    _found[key] = (kinds, uses)  # before following: cycles end here

    def consider(o: object) -> None:
        module, name = getattr(o, "__module__", None), getattr(o, "__qualname__", None)
        if isinstance(o, (str, PurePath)):  # a module's constant: a script, a path
            if _starts_spark(str(o), folder):
                kinds.add("spark")
        elif (module, name) in SPARK_OBJECTS:
            kinds.add("spark")
        elif module in S3_MODULES and isinstance(o, type):
            kinds.add("s3")
        elif isinstance(o, (types.FunctionType, type)) and _test_side(module):
            uses.append(o)

    folder = None
    if isinstance(obj, type):
        for base in obj.__mro__[1:]:
            consider(base)
        for attr in vars(obj).values():
            attr = getattr(attr, "__func__", attr)  # staticmethod, classmethod
            if isinstance(attr, property):
                uses.extend(f for f in (attr.fget, attr.fset, attr.fdel) if f is not None)
            elif isinstance(attr, types.FunctionType):
                uses.append(attr)
    elif isinstance(obj, types.FunctionType):
        g = obj.__globals__
        folder = Path(g["__file__"]).parent if g.get("__file__") else None
        for code in _codes(obj.__code__):
            names = code.co_names
            if SPARK_NAMES.intersection(names):
                kinds.add("spark")
            if any(_starts_spark(s, folder) for s in _strings(code)):
                kinds.add("spark")
            modules = []
            for n in names:
                o = g.get(n)
                if isinstance(o, types.ModuleType):
                    if _test_side(o.__name__):
                        modules.append(o)
                elif o is not None:
                    consider(o)
            for m in modules:  # module.attr: the attribute names are among the code's names too
                for n in names:
                    if n in vars(m):
                        consider(vars(m)[n])
        for cell in obj.__closure__ or ():
            try:
                consider(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
    return kinds, uses


def reached_kinds(item: pytest.Item) -> set[str]:
    """The markers the code an item reaches calls for (see the section's comment)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs if info is not None else {}
    kinds = {kind for kind in ("spark", "s3") if kind in defs}  # the fixtures of those names
    todo = [getattr(item.obj, "__func__", item.obj)] if hasattr(item, "obj") else []
    todo += [fd[-1].func for fd in defs.values() if fd]
    seen: set[int] = set()
    while todo:
        o = todo.pop()
        o = getattr(o, "__func__", o)
        if id(o) in seen:
            continue
        seen.add(id(o))
        own, uses = _classify(o)
        kinds |= own
        todo += uses
    return kinds


#: a module's place in the run by the heaviest marker among its tests (modules of the same rank keep their order)
RANK = {"spark": 0, "s3": 1, "slow": 2}


def heavy_modules_first(items: list[pytest.Item]) -> None:
    """Reorder ``items`` (in place) so that the modules which start Spark or another JVM run first, then those
    with the S3 server, then slow ones, then the rest; a module's tests stay together and in order.

    The suite runs on two workers (pyproject's addopts: ``-n 2 --dist loadfile``), each taking the next module as
    it runs out. The long modules are few tests each (a killed and restarted job, a cluster, Connect, Hudi's
    writers), so xdist's own order (most tests first) left them to the end, one worker running them while the
    other had nothing left; started first, the many short modules fill the other worker meanwhile.
    ``--no-loadscope-reorder`` makes xdist keep this order."""
    rank: dict[Path, int] = {}
    for item in items:
        here = min((RANK[m.name] for m in item.iter_markers() if m.name in RANK), default=len(RANK))
        rank[item.path] = min(rank.get(item.path, here), here)
    items.sort(key=lambda item: rank[item.path])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        kinds = reached_kinds(item)
        for kind in sorted(kinds - {m.name for m in item.iter_markers()}):
            item.add_marker(kind)
    heavy_modules_first(items)
