"""Apache Hudi's own environment, for tests and benchmarks only: a virtual environment with the PySpark that a
released Hudi Spark bundle supports, and the bundle jars fetched from Maven Central with ``mvn``.

Nothing of it goes into the package: it lives under the user's cache folder (``$XDG_CACHE_HOME`` or
``~/.cache``, ``hudi-streaming/hudi-oracle``), is built once, and reused while its recipe is unchanged (each
part keeps its recipe beside it). It never shares a process with the project's Spark: Hudi has no bundle for the
project's PySpark 4.3, so tables and answers pass through files.

``python tests/oracle/hudi_oracle/env.py`` builds it (``.ci/run`` does) and prints where it is and how long it took.

Versions: Maven Central serves Hudi's Spark 3.5 bundle at 1.2.0 and 0.15.0, and no ``hudi-spark4.*`` bundle
(checked 2026-11-26: ``hudi-spark4.1-bundle_2.13`` and ``hudi-spark4.0-bundle_2.13`` are not there). Hudi 1.2.0
on Spark 3.5 writes table versions 6, 8 and 9; 0.15.0 writes version 6 as the 0.x writer did.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PYSPARK = "3.5.3"
BUNDLE = "org.apache.hudi:hudi-spark3.5-bundle_2.12"
#: writer name (as in matrix.py) → Hudi release of the bundle that writes it
HUDI = {"1.2": "1.2.0", "0.15": "0.15.0"}
#: Hudi 1.2 writes Lance base files with Lance's Java library, which its bundle does not hold (the versions
#: its pom names); Lance needs Arrow 18, ahead of Spark 3.5's Arrow 12 on the driver's class path
LANCE = ["org.lance:lance-core:4.0.0", "org.lance:lance-spark-3.5_2.12:0.4.0"]
HERE = Path(__file__).resolve().parent


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hudi-streaming" / "hudi-oracle"


@dataclass(frozen=True)
class OracleEnv:
    python: Path
    jars: dict[str, Path]
    lance_jars: list[Path]

    def run_writer(self, writer: str, out: Path, only: list[str] | None = None, timeout: float = 3600,
                   log: Path | None = None, lance: bool = False) -> None:
        """Hudi writes the named configurations of one writer (all of them without ``only``) into ``out``;
        ``lance``: with Lance's jars, in a JVM of their own (they bring their own Arrow). The job runs in ``out``:
        its session's catalog makes ``spark-warehouse`` in the working folder, which would be the caller's (the
        repository, when the suite runs)."""
        out = out.resolve()
        cmd = [str(self.python), str(HERE / "writer_job.py"), "--jar", str(self.jars[writer]), "--writer", writer,
               "--hudi-version", HUDI[writer], "--out", str(out), "--only", ",".join(only or [])]
        with open(log or os.devnull, "a") as sink:
            subprocess.run(cmd, check=True, timeout=timeout, stdout=sink, stderr=subprocess.STDOUT, cwd=out,
                           env=self.spark_env(lance))

    def spark_env(self, lance: bool = False) -> dict[str, str]:
        """The environment of an oracle process: its own PySpark, none of the project's."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_HOME", "PYTHONPATH"))}
        env["PYSPARK_PYTHON"] = str(self.python)
        if lance:
            env["HUDI_ORACLE_EXTRA_JARS"] = ",".join(map(str, self.lance_jars))
            arrow = ":".join(str(j) for j in self.lance_jars if j.name.startswith("arrow-"))
            env["PYSPARK_SUBMIT_ARGS"] = f"--driver-class-path {arrow} pyspark-shell"
        return env


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-15:]
        raise RuntimeError(f"{what} failed ({' '.join(cmd[:4])} …):\n" + "\n".join(tail))


def _fetch_with_dependencies(artifacts: list[str], dest: Path, work: Path) -> None:
    """``mvn dependency:copy-dependencies`` of a throw-away pom naming ``artifacts`` (Spark and Scala left out:
    the oracle's PySpark has them)."""
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version><exclusions>"
        "<exclusion><groupId>org.apache.spark</groupId><artifactId>*</artifactId></exclusion>"
        "<exclusion><groupId>org.scala-lang</groupId><artifactId>*</artifactId></exclusion>"
        "</exclusions></dependency>" for g, a, v in (x.split(":") for x in artifacts))
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>hudi-oracle</groupId><artifactId>extra-jars</artifactId><version>1</version>"
        f"<dependencies>{deps}</dependencies></project>")
    _run(["mvn", "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies",
          f"-DoutputDirectory={dest}", "-DincludeScope=runtime"], f"mvn dependency:copy-dependencies {artifacts}")


def ensure(progress=print) -> OracleEnv:
    """The oracle's environment; each part (the venv, each bundle, Lance's jars) is built when missing or made
    from another recipe, one builder at a time. Each part's recipe is kept beside it."""
    root = cache_root()
    (root / "jars").mkdir(parents=True, exist_ok=True)
    python = root / "venv" / "bin" / "python"
    jars = {w: root / "jars" / f"{BUNDLE.split(':')[1]}-{v}.jar" for w, v in HUDI.items()}
    lance_dir = root / "jars" / "lance"

    def stale(part: Path, recipe) -> bool:
        marker = part.parent / f"{part.name}.recipe.json"
        return not (marker.exists() and json.loads(marker.read_text()) == recipe)

    def done(part: Path, recipe) -> None:
        (part.parent / f"{part.name}.recipe.json").write_text(json.dumps(recipe))

    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        t0 = time.monotonic()
        if stale(root / "venv", PYSPARK) or not python.exists():
            progress(f"hudi oracle: creating a PySpark {PYSPARK} environment in {root / 'venv'}")
            shutil.rmtree(root / "venv", ignore_errors=True)
            _run([sys.executable, "-m", "venv", str(root / "venv")], "creating the oracle venv")
            _run([str(python), "-m", "pip", "install", "--quiet", f"pyspark=={PYSPARK}"],
                 f"pip install pyspark {PYSPARK}")
            done(root / "venv", PYSPARK)
        for writer, version in HUDI.items():
            if not jars[writer].exists():
                progress(f"hudi oracle: fetching {BUNDLE}:{version} with mvn")
                _run(["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={BUNDLE}:{version}",
                      f"-DoutputDirectory={root / 'jars'}", "-Dtransitive=false"],
                     f"mvn dependency:copy {BUNDLE}:{version}")
        if stale(lance_dir, LANCE):
            progress(f"hudi oracle: fetching {', '.join(LANCE)} and their dependencies with mvn")
            shutil.rmtree(lance_dir, ignore_errors=True)
            _fetch_with_dependencies(LANCE, lance_dir, root / "lance-pom")
            done(lance_dir, LANCE)
        if time.monotonic() - t0 > 1:
            progress(f"hudi oracle: ready in {time.monotonic() - t0:.0f} s")
        return OracleEnv(python, jars, sorted(lance_dir.glob("*.jar")))


if __name__ == "__main__":
    started = time.monotonic()
    e = ensure()
    print(f"hudi oracle: {e.python} with {', '.join(str(j) for j in e.jars.values())} "
          f"({time.monotonic() - started:.0f} s)")
