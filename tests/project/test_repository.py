"""The repository names no folder of the machine it is worked on: a path of one engineer's machine in a committed
file is wrong everywhere else, and it says nothing the next reader can use.

What is committed comes from two places: files written by hand, and files tools wrote here — above all the
manifests of Apache Hudi's tables in ``tests/data/hudi/*.zip``, whose recorded errors and tracebacks quote the
files Hudi wrote (``tests/oracle/hudi_oracle/writer_job.scrubbed`` names those folders ``<out>``, ``<repo>``,
``<oracle-venv>`` since session 12). The folders checked are this machine's: the checkout's, the home folder's
and the Python environment's, so a regenerated zip or a pasted log is caught where it is made.
"""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import REPO

#: what a run or an install writes into the tree, never committed (checked only where git cannot list the files)
NOT_COMMITTED = {".git", ".venv", "build", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
                 "spark-warehouse"}


def _committed() -> list[Path]:
    """The repository's files: git's list in a checkout; in a copy without git (an unpacked ``git archive`` or
    source archive), every file but what runs and installs write (:data:`NOT_COMMITTED`, ``*.egg-info``)."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True)
    if listed.returncode == 0 and (REPO / ".git").exists():
        return [REPO / name for name in listed.stdout.decode().split("\0") if name]
    return [p for p in REPO.rglob("*") if p.is_file() and not any(
        part in NOT_COMMITTED or part.endswith(".egg-info") for part in p.relative_to(REPO).parts)]


def _texts(path: Path) -> list[tuple[str, str]]:
    """(where, text) of one tracked file: a zip's text members, or the file itself when it is text."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as z:
            return [(f"{path.name}:{m}", z.read(m).decode(errors="replace")) for m in z.namelist()
                    if m.endswith((".json", ".txt", ".log"))]
    data = path.read_bytes()
    return [] if b"\0" in data else [(str(path.relative_to(REPO)), data.decode(errors="replace"))]


def test_no_committed_file_names_a_folder_of_this_machine():
    # a folder as short as "/" or "/src" would match what is no machine's path
    folders = {f for f in (str(REPO), str(Path.home()), sys.prefix) if len(f) > 4}
    found = [f"{where}: {folder}" for path in _committed() if path.is_file() for where, text in _texts(path)
             for folder in folders if folder + "/" in text]
    assert not found, "committed files name this machine's folders:\n" + "\n".join(found[:20])
