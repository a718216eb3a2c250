"""One configuration Hudi wrote, as packed in ``tests/data/hudi/<name>.zip``: rebuild its table as it was after
any step, and find Hudi's answers for that step.

The zip holds ``manifest.json`` (see ``writer_job.py``), ``blobs/<sha1>`` (every file content the table ever
had) and ``gold/<step>/<query>/*.parquet`` (Hudi's answers). A table after step k is its step's file list with
each file's content taken from the blobs, so files that a later clean removed or a later write changed come back
exactly as they were.
"""
from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[2] / "data" / "hudi"
#: what a gold folder holds besides Spark's parquet output
GOLD_SKIP = ("_SUCCESS", ".crc")


def fixture_names() -> list[str]:
    return sorted(p.stem for p in FOLDER.glob("*.zip"))


class HudiFixture:
    def __init__(self, zip_path: Path, work: Path):
        self.zip_path, self.work = zip_path, work
        with zipfile.ZipFile(zip_path) as z:
            self.manifest = json.loads(z.read("manifest.json"))
        self.config: dict = self.manifest["config"]
        self.steps: list[dict] = self.manifest["steps"]
        self.error: str | None = self.manifest["error"]
        self._unpacked = False

    @property
    def name(self) -> str:
        return self.config["name"]

    def _unpack(self) -> None:
        if not self._unpacked:
            with zipfile.ZipFile(self.zip_path) as z:
                z.extractall(self.work / "zip")
            self._unpacked = True

    def gold(self, rel: str) -> Path:
        self._unpack()
        return self.work / "zip" / rel

    def new_instants(self, step: int) -> list[dict]:
        """The instants ``step`` completed, in timeline order (the step's write, then any table service)."""
        before = {e["requested"] for e in self.steps[step - 1]["instants"]} if step else set()
        return [e for e in self.steps[step]["instants"] if e["requested"] not in before]

    def materialize_between(self, step: int, visible: int, dest: Path) -> Path:
        """Make ``dest`` the table while ``step`` was under way: the first ``visible`` of its new instants
        completed, the later ones still requested or inflight. Every file of the step before and of this step is
        there (a clean later in the step has removed nothing yet), but the completed timeline files of the later
        instants and the archive files this step wrote."""
        v8 = self.config["version"] >= 8
        hidden = set()
        for e in self.new_instants(step)[visible:]:
            name = f"{e['requested']}_{e['completed']}.{e['action']}" if v8 else f"{e['requested']}.{e['action']}"
            folder = ".hoodie/timeline" if v8 else ".hoodie"
            hidden |= {f"{folder}/{name}", f"{folder}/.{name}.crc"}
        before: dict[str, str] = self.steps[step - 1]["files"]
        now: dict[str, str] = self.steps[step]["files"]
        archive = (".hoodie/timeline/history/", ".hoodie/archived/")
        want = {**before, **{rel: h for rel, h in now.items()
                             if rel in before or not rel.startswith(archive)}}
        return self._write_tree({rel: h for rel, h in want.items() if rel not in hidden}, dest)

    def materialize(self, step: int, dest: Path) -> Path:
        """Make ``dest`` hold exactly the table after ``step``: files added, changed and removed as Hudi did."""
        return self._write_tree(self.steps[step]["files"], dest)

    def _write_tree(self, want: dict[str, str], dest: Path) -> Path:
        """``dest`` with exactly the files ``want`` names (relative path -> content hash)."""
        self._unpack()
        dest.mkdir(parents=True, exist_ok=True)
        for root, _dirs, files in os.walk(dest):
            for f in files:
                p = Path(root) / f
                rel = str(p.relative_to(dest))
                if rel not in want:
                    p.unlink()
        # the timeline last, so a reader listing it mid-way never sees an instant before its files
        for rel in sorted(want, key=lambda r: (r.startswith(".hoodie"), r)):
            p = dest / rel
            blob = (self.work / "zip" / "blobs" / want[rel]).read_bytes()
            if p.exists() and hashlib.sha1(p.read_bytes()).hexdigest() == want[rel]:
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp = p.with_name(p.name + ".materializing")
            tmp.write_bytes(blob)
            os.replace(tmp, p)
        return dest


def pack(work: Path, dest: Path) -> int:
    """Zip one configuration's output of ``writer_job.py`` (its folder ``work``) into ``dest``; returns bytes."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.write(work / "manifest.json", "manifest.json")
        for sub in ("blobs", "gold"):
            for p in sorted((work / sub).rglob("*")) if (work / sub).exists() else []:
                if p.is_file() and not p.name.endswith(GOLD_SKIP) and not p.name.startswith("."):
                    z.write(p, str(p.relative_to(work)))
    return dest.stat().st_size
