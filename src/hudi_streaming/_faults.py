"""Deterministic crash points for the exactly-once tests: a process SIGKILLs itself at a named place.

A kill at a random wall-clock time almost never lands in the windows that matter (a state write lasts
milliseconds), so the code marks them with :func:`fault_point` and a test names the one to hit::

    HUDI_STREAMING_FAULT=state.after_write@2      # the 2nd visit in a process; several: a,b@3
    HUDI_STREAMING_FAULT_DIR=/some/folder         # where the marker of a point that fired is created

A point fires once per folder: the process that fires it first creates the marker file ``<point>`` there
exclusively, then kills itself with SIGKILL (no handler, no ``finally``, no flush — as a crash). A restarted
driver or a retried task that reaches the point again finds the marker and carries on, so the run recovers
instead of dying at the same place forever, and the test reads the marker to know the point really fired.
Visits are counted per process (``@n``).

The points (where they are and which window each opens):

* ``driver.poll`` — the driver planned new splits but has not saved them (``StreamDriver._poll``);
* ``state.before_write`` / ``state.after_write`` — around the creation of a state file (``StateStore.save``:
  its new split segment already written / the state written, Spark not told yet);
* ``sink.after_write`` — a ``foreachBatch`` sink wrote the batch, Spark has not committed its offset (the
  e2e job, ``tests/e2e/stream_driver.py``);
* ``consumer.read`` — an executor's ``read()`` handed rows of a split to Spark and dies before the rest
  (``consumer.coalesced``): the Python worker crashes and Spark retries the task.

The environment is read once, at import: with ``HUDI_STREAMING_FAULT`` unset a point costs one test of an
empty dict. Not part of the public API.
"""
from __future__ import annotations

import os
import signal

FAULT_ENV, DIR_ENV = "HUDI_STREAMING_FAULT", "HUDI_STREAMING_FAULT_DIR"


def _armed(spec: str) -> dict[str, int]:
    """``"a,b@3"`` → ``{"a": 1, "b": 3}``: each named point and the visit it fires at."""
    points: dict[str, int] = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        name, at, nth = item.partition("@")
        if not name or (at and not (nth.isdigit() and int(nth) >= 1)):
            raise ValueError(f"{FAULT_ENV}={spec!r}: {item!r} is not <point> or <point>@<visit ≥ 1>")
        points[name] = int(nth) if at else 1
    return points


_ARMED = _armed(os.environ.get(FAULT_ENV, ""))
_DIR = os.environ.get(DIR_ENV, "")
if _ARMED and not _DIR:
    raise ValueError(f"{FAULT_ENV} is set but {DIR_ENV} (the folder of the fired points' markers) is not")
_visits: dict[str, int] = {}


def fault_point(name: str) -> None:
    """SIGKILL this process here when the environment arms ``name`` and it has not fired yet (see module)."""
    if _ARMED and name in _ARMED:
        _visit(name)


def _visit(name: str) -> None:
    _visits[name] = n = _visits.get(name, 0) + 1
    if n != _ARMED[name]:
        return
    try:
        fd = os.open(os.path.join(_DIR, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return  # fired already: in an earlier process of this run, or in another task
    os.write(fd, f"{os.getpid()} visit {n}\n".encode())
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)
