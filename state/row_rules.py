"""The row rules a stream's record offsets were counted under, and which change of them a checkpoint survives.

An offset names a split and a record inside it. Which records a split yields — and so what record 120 is —
depends on options: ``readMode`` (pre-images), the deletes options, ``mergeType``, ``deduplicationMode`` with
``carryoverIgnoreColumns`` and, while carry-overs are dropped, ``columns`` (they are judged by the delivered
columns). A query resumed with another value would count the same records differently and skip or repeat
changes without a word, so the state records the rules and a query that changes one is refused, naming it.

One change is safe and allowed: from failing on deletes to delivering or ignoring them, the remedy the error of
a stopped stream proposes. A split that fails on deletes stops at the first piece holding one, before yielding
any of its rows, and the pieces before it are the same in every deletes mode: no offset the stream reached
counts differently.
"""
from __future__ import annotations

from ..errors import StateError
from .records import RowRulesRecord as RowRules

__all__ = ["RowRules", "check_rules", "describe"]


def check_rules(recorded: RowRules | None, asked: RowRules, where: str) -> None:
    """Refuse ``asked`` unless the offsets counted under ``recorded`` (None: a state of format 1 to 3, which did
    not record them, so the query's are taken) count the same records under it."""
    if recorded is None or recorded == asked:
        return
    for field, old, new in _changes(recorded, asked):
        if field == "deletes" and old == "fail":
            continue
        raise StateError(f"{where}: this stream ran with {_setting(field, old)}, the query now has "
                         f"{_setting(field, new)}; its checkpoint counts records as the first reads them, so "
                         "resuming would skip or repeat changes. Set the option back, or start a new stream (a new "
                         "checkpointLocation and stateLocation, startingInstant at the last instant delivered)")


def describe(rules: RowRules | None) -> str:
    """The rules as the options that set them, e.g. ``readMode=upsert, emitDeletes=true, ...`` (for the CLI)."""
    if rules is None:
        return "not recorded (a state of format 3 or older, until a query saves it)"
    return ", ".join(_setting(f, getattr(rules, f)) for f in _fields(rules))


def _changes(recorded: RowRules, asked: RowRules) -> list[tuple[str, object, object]]:
    """The fields that differ; the columns carry-overs are judged by only where they are dropped before and now."""
    return [(f, getattr(recorded, f), getattr(asked, f)) for f in _fields(recorded, asked)
            if getattr(recorded, f) != getattr(asked, f)]


def _fields(*rules: RowRules) -> list[str]:
    """The fields that count: the carry-over columns only where every one of ``rules`` drops carry-overs."""
    judged = all(r.deduplication_mode == "dropCarryovers" for r in rules)
    return [f for f in RowRules.model_fields if judged or f not in ("columns", "carryover_ignore_columns")]


def _setting(field: str, value: object) -> str:
    """A rule as the option that sets it, e.g. ``readMode=changelog`` or ``emitDeletes=true``."""
    if field == "deletes":
        return {"emit": "emitDeletes=true", "ignore": "ignoreDeletes=true"}.get(
            str(value), "neither emitDeletes nor ignoreDeletes")
    option = {"read_mode": "readMode", "merge_type": "mergeType", "deduplication_mode": "deduplicationMode",
              "carryover_ignore_columns": "carryoverIgnoreColumns", "columns": "columns"}[field]
    if isinstance(value, list):
        return f"{option}={','.join(value)}" if value else f"no {option}"
    return f"{option}={value}" if value is not None else f"no {option}"
