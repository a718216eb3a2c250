"""Admission: how much of the pending splits one micro-batch takes, as Spark's ``ReadLimit`` and the query's
``max*PerTrigger`` options bound it.

Pure arithmetic over the state's planned splits, apart from the driver so that the bounds (and the promise
that every batch moves the offset forward) are read and tested as one idea. ``source.py`` turns Spark's
``ReadLimit`` into a :class:`BatchLimit`.

A split's row bound may be unknown (``est_rows`` None: the planner could not bound a whole slice from write
stats and opened no file). Only the row decisions need bounds; :func:`unbounded_ahead` names the unknown ones
such a decision reaches, which the driver bounds before deciding (``StreamDriver._read_bounds``: from the commits'
stats, else from the files), so the files opened on the driver are those of the splits a batch may admit, not
every pending one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from ..state import PlannedSplit
from .options import SourceOptions


class BatchSummary(TypedDict):
    """What an admitted batch holds (see :func:`admit`): the source's ``lastBatch`` metric."""

    splits: int
    rowsEstimate: int
    unboundedSplits: int
    bytesEstimate: int
    instants: int


def _min(a: int | None, b: int | None) -> int | None:
    vals = [v for v in (a, b) if v]
    return min(vals) if vals else None


@dataclass(frozen=True)
class BatchLimit:
    """The bounds of one micro-batch as plain numbers (None: unbounded).

    ``max_rows``: the batch delivers at most this many rows (each split's ``est_rows`` is an upper bound of
    the rows it yields in the stream's read mode, and the last split is cut at an exact record offset).
    ``max_bytes``: the files the batch's splits read (each split's ``est_bytes``: its file slice and, for a
    rewritten base file, the slice before it; a split resumed or cut inside counts in full, as it is read in
    full) total at most this many bytes, unless one split alone is larger: then the batch is that split.
    ``max_files``: splits; ``max_instants``: instants of whole planning rounds.
    """

    max_rows: int | None = None
    max_files: int | None = None
    max_bytes: int | None = None
    max_instants: int | None = None

    def within(self, opts: SourceOptions) -> BatchLimit:
        """The tighter of this limit (Spark's, for one trigger) and the query's ``max*PerTrigger`` options."""
        return BatchLimit(_min(opts.max_rows_per_trigger, self.max_rows),
                          _min(opts.max_splits_per_trigger, self.max_files),
                          _min(opts.max_bytes_per_trigger, self.max_bytes),
                          _min(opts.max_instants_per_trigger, self.max_instants))


def admit(pending: list[PlannedSplit], seq: int, rec: int, limit: BatchLimit
          ) -> tuple[tuple[int, int], BatchSummary]:
    """The end (split, record) of the batch that starts at (``seq``, ``rec``), and what it holds.

    Whole splits are taken while every limit allows. A split whose remaining rows (its row bound minus the
    records already delivered) do not fit the row budget ends the batch inside it, at record ``skip + budget``:
    the reader yields at most that range, so a batch never delivers more than ``max_rows`` rows — as long as
    the splits' ``est_rows`` bound their rows, which the planner makes them do (``monitor.row_bounds.row_bound``). Where
    a bound exceeds the rows a split really yields, a cut may lie past its end: that batch delivers fewer rows
    and the next one starts past the end, reads nothing more of the split, and goes on with the next (its
    remaining bound is ``est_rows - rec``, and a split with nothing left is taken whole, reading no rows). So
    every batch moves the offset forward and no split is skipped.

    A batch always takes something — one split, or one record of it — so the stream makes progress whatever
    the limit; only then may it exceed ``max_bytes`` (one split larger than the budget) or ``max_files``/
    ``max_instants`` (one planning round). An instant counts once per planning round.

    Under a row limit every split the batch reaches must have a known bound (:func:`unbounded_ahead` names those
    that do not: the driver reads them first). Without one, a split of unknown bound is admitted by the other
    limits alone.

    The dict (``lastBatch`` of the metrics): ``splits`` read, ``rowsEstimate`` (the most rows the batch can
    deliver: its splits' bounds, the cut one up to its cut; the splits of unknown bound not counted),
    ``unboundedSplits`` (its splits whose bound is unknown: no row limit needed it), ``bytesEstimate`` (the
    exact bytes of the files its splits read), ``instants``.
    """
    rows = files = nbytes = instants = unbounded = 0
    rounds: set[int] = set()
    end_seq, end_rec = seq, rec
    for p in pending:
        skip = rec if p.seq == seq else 0
        bound = p.split.est_rows
        new_round = p.round not in rounds
        taken_any = (end_seq, end_rec) != (seq, rec)
        if taken_any and ((limit.max_files and files + 1 > limit.max_files)
                          or (limit.max_bytes and nbytes + p.split.est_bytes > limit.max_bytes)
                          or (limit.max_instants and new_round
                              and instants + p.instants_in_round > limit.max_instants)):
            break
        if bound is None and limit.max_rows:
            if rows >= limit.max_rows:  # the budget is used up before it
                break
            raise ValueError(f"split {p.seq} reached by a row limit has no row bound: resolve it first "
                             "(unbounded_ahead)")
        left = max((bound or 0) - skip, 0)
        cut = bool(limit.max_rows) and rows + left > (limit.max_rows or 0)
        if cut:
            budget = (limit.max_rows or 0) - rows
            if budget <= 0:  # used up exactly by the splits before (a first split always has a budget)
                break
            left, end_seq, end_rec = budget, p.seq, skip + budget
        else:
            end_seq, end_rec = p.seq + 1, 0
        rows += left
        unbounded += bound is None
        files += 1
        nbytes += p.split.est_bytes  # read in full, however few of its rows the batch takes
        if new_round:
            rounds.add(p.round)
            instants += p.instants_in_round
        if cut:
            break
    return (end_seq, end_rec), BatchSummary(splits=files, rowsEstimate=rows, unboundedSplits=unbounded,
                                            bytesEstimate=nbytes, instants=instants)


def unbounded_ahead(pending: list[PlannedSplit], rec: int, rows: int, most: int) -> list[PlannedSplit]:
    """The next splits of unknown bound (at most ``most``) that a decision over ``rows`` rows from record ``rec``
    of the first split reaches: a row budget (``maxRowsPerTrigger``, with ``pending`` ending where the other
    limits end the batch), or the rows ``minRowsPerTrigger`` asks to be pending. [] when the known bounds answer it.

    Walks ``pending`` in order, counting each unknown bound as the mean of the known bounds seen before it (as
    many rows as the whole budget while none is known), and takes an unknown split only while the rows before it
    fall short of ``rows``: the driver reads as many splits' files as the budget likely needs, in parallel, then
    asks again with the bounds it read, until the known bounds cover the budget or nothing is pending. A
    guess too small reads a few splits past the batch (still pending: the next batch admits them); too large,
    one more round of reads."""
    seen = known = 0.0
    ahead: list[PlannedSplit] = []
    have = 0.0
    for i, p in enumerate(pending):
        if have >= rows or len(ahead) >= most:
            break
        skip = rec if i == 0 else 0
        if p.split.est_rows is None:
            ahead.append(p)
            have += known / seen if seen else rows
        else:
            seen, known = seen + 1, known + p.split.est_rows
            have += max(p.split.est_rows - skip, 0)
    return ahead


def too_few(pending: list[PlannedSplit], rec: int, least: int | None) -> bool:
    """Fewer rows pending from record ``rec`` of the first split than ``minRowsPerTrigger`` (``least``) asks
    for, by the splits' row bounds (upper bounds, so a batch may still deliver fewer). A split of unknown bound
    may hold any number of rows: while one is pending the answer is no (the driver reads bounds until the known
    ones reach ``least``, :func:`unbounded_ahead`, so one is left only when they do)."""
    if least is None or any(p.split.est_rows is None for p in pending):
        return False
    return sum(p.split.est_rows or 0 for p in pending) - rec < least
