"""What a reader of changes does with a delete: an option of the stream, the batch API and the CLI alike.

Its own module because the options (``streaming.options``, the CLI) and the planner take it without reading any
change.
"""
from __future__ import annotations

import enum


class Deletes(str, enum.Enum):
    """What a reader of changes does with a delete: deliver it, drop it, or stop — the stream's default, as
    Delta's source does, since dropping deletes the user did not ask to drop lets an upsert sink drift from the
    table without a word."""

    EMIT = "emit"
    IGNORE = "ignore"
    FAIL = "fail"
