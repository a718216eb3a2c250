"""The driver's admission arithmetic and offsets, without Spark or a table: every expected offset is worked out
by hand from the splits' row bounds and file bytes below. (Row limits against real tables and readers:
``test_driver_limits.py``.)"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hudi_streaming.errors import StateError
from hudi_streaming.hoodie.fs_view import FileSlice
from hudi_streaming.hoodie.split import Split
from hudi_streaming.state import PlannedSplit
from hudi_streaming.streaming.admission import BatchLimit, admit, too_few, unbounded_ahead
from hudi_streaming.streaming.offsets import make_offset, position
from hudi_streaming.streaming.options import parse_options


def _planned(seq: int, rnd: int, instants_in_round: int, rows: int | None, nbytes: int) -> PlannedSplit:
    split = Split(FileSlice("p", f"f{seq}", "001"), max_instant="001", est_rows=rows, est_bytes=nbytes)
    return PlannedSplit(seq=seq, round=rnd, instants_in_round=instants_in_round, split=split)


#: round 0 (two instants) wrote two file groups of at most 10 rows / 100 bytes; round 1 (one instant) 5 rows / 50 bytes
PENDING = [_planned(0, 0, 2, 10, 100), _planned(1, 0, 2, 10, 100), _planned(2, 1, 1, 5, 50)]


def _batch(splits: int, rows: int, nbytes: int, instants: int) -> dict:
    return {"splits": splits, "rowsEstimate": rows, "unboundedSplits": 0, "bytesEstimate": nbytes,
            "instants": instants}


def test_max_rows_cuts_inside_a_split_and_the_next_batch_resumes_there():
    # 10 rows of split 0, then 5 of split 1's 10: the batch ends at split 1 record 5 (and reads all of split 1)
    assert admit(PENDING, 0, 0, BatchLimit(max_rows=15)) == ((1, 5), _batch(2, 15, 200, 2))
    # the 5 rows left of split 1 and all 5 of split 2 fit in the next 15
    assert admit(PENDING[1:], 1, 5, BatchLimit(max_rows=15)) == ((3, 0), _batch(2, 10, 150, 3))


def test_a_row_budget_used_up_exactly_ends_at_the_split_boundary():
    assert admit(PENDING, 0, 0, BatchLimit(max_rows=10)) == ((1, 0), _batch(1, 10, 100, 2))
    assert admit(PENDING, 0, 0, BatchLimit(max_rows=20)) == ((2, 0), _batch(2, 20, 200, 2))
    # a split cut inside is read whole (its bytes) and holds changes of its round (its instants)
    assert admit(PENDING, 0, 0, BatchLimit(max_rows=4)) == ((0, 4), _batch(1, 4, 100, 2))
    assert admit(PENDING, 0, 4, BatchLimit(max_rows=4)) == ((0, 8), _batch(1, 4, 100, 2))  # counted from record 4


def test_a_cut_past_the_end_of_a_split_moves_on_to_the_next():
    """A row bound above what a split yields puts a cut past its end: the batch that starts there takes the
    exhausted split whole (no rows left of its bound) and goes on, so no split is skipped or read forever."""
    assert admit(PENDING, 0, 12, BatchLimit(max_rows=15)) == ((3, 0), _batch(3, 15, 250, 3))
    assert admit(PENDING, 0, 10, BatchLimit(max_rows=3)) == ((1, 3), _batch(2, 3, 200, 2))


def test_max_files_counts_splits():
    assert admit(PENDING, 0, 0, BatchLimit(max_files=2)) == ((2, 0), _batch(2, 20, 200, 2))


def test_a_byte_budget_below_any_split_still_admits_one():
    assert admit(PENDING, 0, 0, BatchLimit(max_bytes=1)) == ((1, 0), _batch(1, 10, 100, 2))
    assert admit(PENDING, 0, 0, BatchLimit(max_bytes=250)) == ((3, 0), _batch(3, 25, 250, 3))


def test_a_split_cut_by_rows_counts_its_bytes():
    # split 1 would be cut at record 5, but reading it takes 100 more bytes than the 150 allowed
    assert admit(PENDING, 0, 0, BatchLimit(max_rows=15, max_bytes=150)) == ((1, 0), _batch(1, 10, 100, 2))
    # resumed inside: the whole split is read again
    assert admit(PENDING, 0, 5, BatchLimit(max_bytes=150)) == ((1, 0), _batch(1, 5, 100, 2))


def test_max_instants_never_splits_a_planning_round():
    # round 0 alone has 2 instants, over a limit of 1: it is still admitted whole, round 1 waits
    assert admit(PENDING, 0, 0, BatchLimit(max_instants=1)) == ((2, 0), _batch(2, 20, 200, 2))
    assert admit(PENDING, 0, 0, BatchLimit(max_instants=3)) == ((3, 0), _batch(3, 25, 250, 3))


def test_no_limit_admits_everything_pending():
    assert admit(PENDING, 0, 0, BatchLimit()) == ((3, 0), _batch(3, 25, 250, 3))


#: PENDING with split 1 not bounded yet (the planner could not bound it from write stats), and two more so
UNBOUNDED = [PENDING[0], _planned(1, 0, 2, None, 100), PENDING[2], _planned(3, 1, 1, None, 50),
             _planned(4, 1, 1, None, 50)]


def test_without_a_row_limit_a_split_of_unknown_bound_is_admitted_by_the_other_limits():
    assert admit(UNBOUNDED, 0, 0, BatchLimit()) == ((5, 0), {**_batch(5, 15, 350, 3), "unboundedSplits": 3})
    assert admit(UNBOUNDED, 0, 0, BatchLimit(max_files=2)) == ((2, 0), {**_batch(2, 10, 200, 2), "unboundedSplits": 1})


def test_a_row_limit_never_admits_on_an_unknown_bound():
    with pytest.raises(ValueError, match="split 1 reached by a row limit has no row bound"):
        admit(UNBOUNDED, 0, 0, BatchLimit(max_rows=15))
    assert admit(UNBOUNDED, 0, 0, BatchLimit(max_rows=10)) == ((1, 0), _batch(1, 10, 100, 2))  # ends before it


def test_the_unknown_bounds_a_row_decision_reaches_are_named_in_order():
    """Nothing is unknown before the known bounds cover the rows; an unknown bound counts as the mean of the
    known ones before it (10 rows), or as all the rows while none is known; at most ``most`` at once."""
    assert unbounded_ahead(UNBOUNDED, 0, 10, 8) == []
    assert unbounded_ahead(UNBOUNDED, 0, 15, 8) == [UNBOUNDED[1]]  # 10 + a guessed 10 cover 15
    assert unbounded_ahead(UNBOUNDED, 0, 40, 8) == [UNBOUNDED[1], UNBOUNDED[3], UNBOUNDED[4]]
    assert unbounded_ahead(UNBOUNDED, 0, 40, 2) == [UNBOUNDED[1], UNBOUNDED[3]]
    assert unbounded_ahead(UNBOUNDED, 5, 10, 8) == [UNBOUNDED[1]]  # 5 rows left of split 0
    assert unbounded_ahead(UNBOUNDED[1:], 0, 100, 8) == [UNBOUNDED[1]]  # no bound known: one split first
    assert unbounded_ahead(UNBOUNDED[3:], 0, 100, 8) == [UNBOUNDED[3]]


def test_too_few_rows_is_never_said_of_an_unknown_bound():
    assert too_few(PENDING, 0, 26) and not too_few(PENDING, 0, 25) and too_few(PENDING, 1, 25)
    assert not too_few(UNBOUNDED, 0, 1000) and not too_few(PENDING, 0, None)


def test_the_tighter_of_spark_limit_and_options_applies():
    opts = parse_options({"path": "t", "maxRowsPerTrigger": "5", "maxSplitsPerTrigger": "3"})
    assert BatchLimit(max_rows=100).within(opts) == BatchLimit(max_rows=5, max_files=3)
    assert BatchLimit(max_rows=2, max_bytes=7).within(opts) == BatchLimit(max_rows=2, max_files=3, max_bytes=7)


def test_offset_inside_a_split_of_another_row_order_is_refused():
    with pytest.raises(StateError, match=r"^loc: .*offset version 1, now 3"):
        position({"seq": 3, "rec": 2}, "loc")
    with pytest.raises(StateError, match="offset version 2, now 3"):  # whole base files were one piece
        position({"v": 2, "seq": 3, "rec": 2}, "loc")
    with pytest.raises(StateError, match="ordered differently"):
        position({"v": 1, "seq": 3, "rec": 2}, "loc")
    assert position({"v": 1, "seq": 3, "rec": 0}, "loc") == (3, 0)  # a split boundary means the same in any order
    assert position(make_offset(3, 2), "loc") == (3, 2)


def test_equal_offsets_serialise_identically():
    assert json.dumps(make_offset(3, 7)) == '{"rec": 7, "seq": 3, "v": 3}'


def test_the_driver_imports_nothing_from_pyspark():
    """So that the stream's logic can be tested, and reasoned about, without Spark (a fresh process: this one
    may have imported PySpark already)."""
    check = ("import sys, hudi_streaming.streaming.driver; "
             "print(sorted(m for m in sys.modules if m.startswith('pyspark')))")
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
