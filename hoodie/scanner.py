"""Which log blocks of a file slice count, in which order (Hudi's log record scanner, spec §5.10).

Log files are read in slice order and blocks in file order. A data or delete block counts when its instant is
at or before the read's upper bound, inside the optional instant range and — on table v6, where failed writes
leave blocks behind — belongs to a completed instant. A rollback command block removes every queued block of
its target instant (and queued corrupt blocks). The result is the ordered list the merger folds.
"""
from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from ..errors import DataLossError
from .logfile.format import BlockType, HeaderKey, LogBlock
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
    """What a slice read did, kept when the caller passes one: blocks by kind, bytes spilled, and seconds per
    phase. The phases are timed with ``time.perf_counter`` around a file, block, piece or merge step, never per
    record; phases nest (``log_records_seconds`` includes ``log_decode_seconds``)."""

    blocks: int = 0
    corrupt_blocks: int = 0
    rollback_blocks: int = 0
    skipped_blocks: int = 0
    spilled_bytes: int = 0
    #: reading the log files and framing their blocks (:func:`scan_blocks`)
    log_scan_seconds: float = 0.0
    #: decoding Avro data blocks into Arrow rows
    log_decode_seconds: float = 0.0
    #: making the log records of the counted blocks: the decode, plus aligning, joining, keys and merge flags
    log_records_seconds: float = 0.0
    #: reading the base file in pieces (in the read-ahead thread when a merged read has one)
    base_read_seconds: float = 0.0
    #: waiting for the read-ahead thread's next base piece (the part of the base read not overlapped)
    base_wait_seconds: float = 0.0
    #: folding the log records and merging them onto the base pieces, and the log-only tail
    merge_seconds: float = 0.0


_T = TypeVar("_T")


@contextlib.contextmanager
def timed(stats: ScanStats | None, phase: str) -> Iterator[None]:
    """Adds the seconds of the ``with`` body to ``stats.<phase>`` (nothing without ``stats``)."""
    if stats is None:
        yield
        return
    t0 = time.perf_counter()
    try:
        yield
    finally:
        setattr(stats, phase, getattr(stats, phase) + time.perf_counter() - t0)


def timed_steps(items: Iterator[_T], stats: ScanStats | None, phase: str) -> Iterator[_T]:
    """``items``, the time each one takes to come added to ``stats.<phase>`` (``items`` itself without
    ``stats``): the work of a generator between its items, not its caller's."""
    if stats is None:
        return items

    def steps() -> Iterator[_T]:
        try:
            while True:
                t0 = time.perf_counter()
                try:
                    item = next(items)
                except StopIteration:
                    return
                finally:
                    setattr(stats, phase, getattr(stats, phase) + time.perf_counter() - t0)
                yield item
                del item  # not held while the next one is made
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()
    return steps()


def scan_blocks(storage: Storage, log_files: Iterable[tuple[str, int | None]], max_instant: str | None,
                is_committed: Callable[[str], bool] | None, instant_range: InstantRange | None = None,
                stats: ScanStats | None = None, skip_instants: frozenset[str] = frozenset(),
                skip_log_compaction: bool = False) -> list[LogBlock]:
    """The data and delete blocks to merge, oldest first.

    ``log_files`` are (path, size) pairs: only the first ``size`` bytes of a file are read when a size is given,
    so a v6 log file that a later write appended to reads exactly as it was planned. ``is_committed`` is the
    v6 timeline check (None on v8/v9, whose uncommitted log files were already dropped by the file-system view).
    Blocks of ``skip_instants`` are left out: the slice as it was before those instants.

    ``skip_log_compaction`` leaves out the blocks a log compaction wrote (header ``COMPACTED_BLOCK_TIMES``): they
    repeat the merged records of the blocks they name, stamped with the log compaction's own instant, so a read of
    changes that kept them would lose the writes' commit times (and, filtered by instant, the writes themselves).
    The blocks they repeat stay in the slice until a full compaction; one that is gone is refused by name.
    """
    stats = stats if stats is not None else ScanStats()
    t0 = time.perf_counter()
    queue: list[LogBlock] = []
    seen: set[str] = set()  # instants of every data and delete block met, counted or not
    compacted: dict[str, tuple[str, list[str]]] = {}  # log compaction instant -> (its file, the instants it repeats)
    for path, size in log_files:
        data = storage.read_bytes(path, size=size or None)  # shorter than planned: retried, then an error
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
            if instant is not None:
                seen.add(instant)
            repeats = block.header.get(HeaderKey.COMPACTED_BLOCK_TIMES)
            if skip_log_compaction and repeats and instant is not None:
                compacted[instant] = (path, repeats.split(","))
                stats.skipped_blocks += 1
                continue
            if instant is None or (max_instant is not None and instant > max_instant) \
                    or (is_committed is not None and not is_committed(instant)) \
                    or (instant_range is not None and instant not in instant_range) or instant in skip_instants:
                stats.skipped_blocks += 1
                continue
            queue.append(block)
    for instant, (path, repeated) in compacted.items():
        missing = sorted(set(repeated) - seen)
        if missing:
            raise DataLossError(f"{storage.url}/{path}: the log compaction {instant} repeats blocks of instants "
                                f"{', '.join(missing)} that are no longer in the file slice; their changes are known "
                                "only under the log compaction's instant")
    stats.log_scan_seconds += time.perf_counter() - t0
    return [b for b in queue if b.type is not BlockType.CORRUPT]
