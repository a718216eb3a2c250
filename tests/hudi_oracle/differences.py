"""Where our answers knowingly differ from Hudi's, and configurations Hudi itself refuses to write, each with
its reason. The README's table "Differences from Hudi" lists the same entries (a test checks it names each).

A listed difference is asserted, not skipped: the check must still find differences, and every one of them
must match the entry's pattern. A fix therefore fails the test until the entry is removed.
"""
from __future__ import annotations

from typing import NamedTuple


class Difference(NamedTuple):
    pattern: str   # every difference line of the check matches this regular expression
    reason: str    # why: a Hudi bug (with its issue) or a semantic choice of ours


#: (configuration, check) → the difference; checks are "read" (snapshot and incremental), "stream", "cdc"
KNOWN: dict[tuple[str, str], Difference] = {}

#: configuration → (pattern of the error Hudi raised while writing it, why); the steps before the error are
#: still compared
HUDI_REFUSES: dict[str, Difference] = {}
