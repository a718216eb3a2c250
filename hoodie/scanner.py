"""Which log blocks of a file slice count, in which order (Hudi's log record scanner, spec §5.10).

Log files are read in slice order and blocks in file order. A data or delete block counts when its instant is
at or before the read's upper bound, inside the optional instant range and — on table v6, where failed writes
leave blocks behind — belongs to a completed instant. A rollback command block removes every queued block of
its target instant (and queued corrupt blocks). The result is the ordered list the merger folds.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .logfile.format import BlockType, LogBlock
from .logfile.reader import iter_blocks
from .storage import Storage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InstantRange:
    """Instants a read covers: an explicit set (1.x incremental) and/or bounds on the instant time string."""

    start: str | None = None  # exclusive
    end: str | None = None  # inclusive
    instants: frozenset[str] | None = None

    def __contains__(self, instant: str) -> bool:
        if self.instants is not None and instant not in self.instants:
            return False
        if self.start is not None and instant <= self.start:
            return False
        return not (self.end is not None and instant > self.end)


@dataclass
class ScanStats:
    blocks: int = 0
    corrupt_blocks: int = 0
    rollback_blocks: int = 0
    skipped_blocks: int = 0
    spilled_bytes: int = 0


def scan_blocks(storage: Storage, log_files: Iterable[tuple[str, int | None]], max_instant: str | None,
                is_committed: Callable[[str], bool] | None, instant_range: InstantRange | None = None,
                stats: ScanStats | None = None, skip_instants: frozenset[str] = frozenset()) -> list[LogBlock]:
    """The data and delete blocks to merge, oldest first.

    ``log_files`` are (path, size) pairs: only the first ``size`` bytes of a file are read when a size is given,
    so a v6 log file that a later write appended to reads exactly as it was planned. ``is_committed`` is the
    v6 timeline check (None on v8/v9, whose uncommitted log files were already dropped by the file-system view).
    Blocks of ``skip_instants`` are left out: the slice as it was before those instants.
    """
    stats = stats if stats is not None else ScanStats()
    queue: list[LogBlock] = []
    for path, size in log_files:
        data = storage.read_bytes(path)
        for block in iter_blocks(data[:size] if size else data, path):
            stats.blocks += 1
            if block.type is BlockType.CORRUPT:
                stats.corrupt_blocks += 1
                queue.append(block)
                continue
            if block.type is BlockType.COMMAND:
                if block.is_rollback:
                    stats.rollback_blocks += 1
                    target = block.target_instant_time
                    queue = [b for b in queue if b.type is not BlockType.CORRUPT and b.instant_time != target]
                continue
            if block.type is BlockType.CDC_DATA:
                continue
            instant = block.instant_time
            if instant is None or (max_instant is not None and instant > max_instant) \
                    or (is_committed is not None and not is_committed(instant)) \
                    or (instant_range is not None and instant not in instant_range) or instant in skip_instants:
                stats.skipped_blocks += 1
                continue
            queue.append(block)
    return [b for b in queue if b.type is not BlockType.CORRUPT]
