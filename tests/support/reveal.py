"""Replay a real fixture table's history: hide its timeline, then reveal completed instants one at a time.

Data files of hidden instants stay in place — exactly what a reader sees while a writer is mid-commit: files
of instants that are not completed yet, which every reader must ignore.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

_NAME = re.compile(r"^(\d+)(?:_(\d+))?\.")


class TimelineReveal:
    def __init__(self, table: Path, hidden: Path):
        self.table = table
        props = (table / ".hoodie" / "hoodie.properties").read_text()
        layout2 = "hoodie.timeline.layout.version=2" in props
        self.timeline = table / ".hoodie" / ("timeline" if layout2 else "")
        self.hidden = hidden
        hidden.mkdir(parents=True, exist_ok=True)
        groups: dict[str, list[Path]] = {}
        order: dict[str, str] = {}
        for f in self.timeline.iterdir():
            m = _NAME.match(f.name)
            if not f.is_file() or not m:
                continue
            groups.setdefault(m.group(1), []).append(f.name)
            if m.group(2) or not f.name.endswith((".requested", ".inflight")):
                order[m.group(1)] = m.group(2) or m.group(1)  # completion time orders reveals
        # completed instants in completion order, then pending ones (never revealed as completed)
        self.instants = sorted(order, key=lambda t: (order[t], t))
        self.pending = sorted(set(groups) - set(order))
        self.files = groups
        for names in groups.values():
            for n in names:
                shutil.move(self.timeline / n, hidden / n)
        self.revealed = 0

    def reveal_next(self, skip: int = 0) -> str | None:
        """Make the next instant completed on the timeline (requested, inflight, then the completed file).

        ``skip`` reveals one that many instants further on first: the skipped ones then complete *late* — after
        an instant that completed later than they did, as when two writers' clocks or renames disagree.
        """
        if self.revealed + skip >= len(self.instants):
            return None
        t = self.instants.pop(self.revealed + skip)
        self.instants.insert(self.revealed, t)
        for n in sorted(self.files[t], key=lambda n: (not n.endswith(".requested"), not n.endswith(".inflight"))):
            shutil.move(self.hidden / n, self.timeline / n)
        self.revealed += 1
        return t

    def reveal_all(self) -> None:
        while self.reveal_next():
            pass
        for t in self.pending:
            for n in self.files[t]:
                shutil.move(self.hidden / n, self.timeline / n)
        self.pending = []
