"""The layer rule: format ← planner ← state ← Spark source ← tools, each importing only downward.

Read from the installed package's sources with ``ast`` (every ``import`` and ``from`` statement, top-level or
inside a function), so a module that reaches upward fails here, whatever the import's form.
"""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import hudi_streaming

#: the installed package (not resolved: the strict editable install is a tree of links into the repository)
ROOT = Path(hudi_streaming.__file__).parent

#: each subpackage's rank; a module may import its own rank or lower. The package root's modules (public
#: names, ``errors``, ``_faults``) sit apart: every layer may import ``errors`` and ``_faults``, the root's
#: ``__init__`` gathers the public names from below, and only the tools import the root. The writer sits at the
#: edge beside the planner: it imports the format layer, and neither it nor the planner imports the other.
RANKS = {"hoodie": 0, "monitor": 1, "state": 2, "streaming": 3, "writer": 1, "cli": 4}
SHARED = {"errors", "_faults"}


def _modules() -> list[tuple[str, Path]]:
    """Every module of the package with its dotted name (the strict editable install links folders: followed)."""
    out = []
    for folder, _, files in os.walk(ROOT, followlinks=True):
        for name in sorted(f for f in files if f.endswith(".py")):
            path = Path(folder) / name
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out.append((".".join(["hudi_streaming", *parts]), path))
    return out


def _imports(module: str, path: Path) -> set[str]:
    """The ``hudi_streaming`` modules ``module`` imports, absolute."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("hudi_streaming")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("hudi_streaming"):
                names = [f"{target}.{a.name}" for a in node.names] if not node.module else [target]
                out |= set(names)
    return out


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANKS else None


def upward_imports() -> list[str]:
    bad = []
    for module, path in _modules():
        layer = _layer(module)
        if layer is None:
            continue
        for target in sorted(_imports(module, path)):
            other = _layer(target)
            if target.split(".")[1:2] and target.split(".")[1] in SHARED:
                continue
            if other is None and layer != "cli":  # the tools may use the public names
                bad.append(f"{module} imports the package root ({target})")
            elif other is not None and other != layer and (
                    RANKS[other] > RANKS[layer] or {layer, other} == {"writer", "monitor"}):
                bad.append(f"{module} ({layer}) imports {target} ({other})")
    return bad


def test_every_layer_imports_only_downward():
    assert upward_imports() == []


def test_the_rule_catches_an_upward_import(tmp_path, monkeypatch):
    """The check itself can fail: a format-layer module importing the Spark source is reported."""
    fake = tmp_path / "hudi_streaming"
    (fake / "hoodie").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "hoodie" / "__init__.py").write_text("")
    (fake / "hoodie" / "bad.py").write_text("def f():\n    from ..streaming.source import X\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", fake)
    assert upward_imports() == [
        "hudi_streaming.hoodie.bad (hoodie) imports hudi_streaming.streaming.source (streaming)"]


@pytest.mark.parametrize("layer", sorted(RANKS))
def test_each_layer_exists(layer):
    assert (ROOT / layer / "__init__.py").exists()
