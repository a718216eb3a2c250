"""A batch's file groups packed into Spark tasks by size, as Spark's file sources pack files.

One task per file group made a batch of 1,000 small file groups 1,000 tasks, each paying a task's and a Python
worker's fixed cost, for 20 rows apiece (issue 25). Spark's own file sources (``FilePartition`` in Spark's
``execution/datasources``) pack small files into a few tasks, and so does this source, by Spark's rule:

* a file group weighs the bytes its splits read (``est_bytes``: base and log files as stored, and a prior slice
  where a split has one) plus ``openCostInBytes`` once;
* ``maxSplitBytes = min(maxPartitionBytes, max(openCostInBytes, totalWeight / minPartitionNum))``, with
  ``minPartitionNum`` the cores the work is shared by;
* file groups go into the current task until the next one would take it past ``maxSplitBytes``.

One departure for speed: Spark charges the open cost per file, this source per file group, which is its file:
one task reads a group's base and log files in one pass, and what packing has to spread is a Python task's fixed
cost (0.15-0.25 s a task on PySpark 4.3), not the opening of a small log file. Charged per file, a group of a base
and a log file weighed two of Spark's files: a batch of Hudi's 10,000-partition table ran in 667 tasks where
``spark.read.parquet`` of its base files ran in 345, at 0.72x its speed.

Two for what this source promises: file groups keep their order (Spark sorts files by size,
largest first; here a task's ranges, and the batch's, stay in the order the driver planned them), and the next
group's own open cost counts before it is added (Spark counts it after), so that no task of several groups
weighs more than ``maxSplitBytes`` and a batch of at least ``minPartitionNum`` groups has at least that many
tasks: where groups of very different sizes still leave fewer, the heaviest task of several groups is split in
two until there are enough. A file group is never divided (its ranges are read in order by one task, which keeps
each key's changes in order), so a task holds one group alone when that group is larger than ``maxSplitBytes``.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the options import this module: it stays free of the readers' imports
    from .consumer import SplitRange

#: Spark's defaults of ``spark.sql.files.maxPartitionBytes`` and ``spark.sql.files.openCostInBytes``
MAX_PARTITION_BYTES = 128 << 20
OPEN_COST_IN_BYTES = 4 << 20


def default_parallelism() -> int:
    """The cores of this machine (those this process may run on): a Python data source sees neither the session's
    conf nor the cluster, so this is Spark's ``local[*]`` parallelism; option ``minPartitionNum`` sets another."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Packing:
    """How a batch's file groups are packed into tasks (see the module docstring)."""

    max_partition_bytes: int = MAX_PARTITION_BYTES
    open_cost_in_bytes: int = OPEN_COST_IN_BYTES
    min_partition_num: int = 1

    def max_split_bytes(self, total_weight: int) -> int:
        """Spark's ``FilePartition.maxSplitBytes``: the weight a task may reach, from the batch's total weight."""
        per_core = total_weight // max(self.min_partition_num, 1)
        return min(self.max_partition_bytes, max(self.open_cost_in_bytes, per_core))

    def pack(self, sizes: Sequence[int]) -> list[range]:
        """The tasks for file groups of these ``sizes`` (each the bytes one group reads), as consecutive runs of
        their indices: every group in exactly one run, in order."""
        weights = [size + self.open_cost_in_bytes for size in sizes]
        limit = self.max_split_bytes(sum(weights))
        runs: list[range] = []
        start, weight = 0, 0
        for i, w in enumerate(weights):
            if i > start and weight + w > limit:
                runs.append(range(start, i))
                start, weight = i, 0
            weight += w
        if weights:
            runs.append(range(start, len(weights)))
        return _spread(runs, weights, min(self.min_partition_num, len(weights)))


def _spread(runs: list[range], weights: list[int], at_least: int) -> list[range]:
    """``runs`` with the heaviest run of several items cut in two, at its most even cut, until there are
    ``at_least`` (at most the number of items, so a run of several is always left to cut)."""
    runs = list(runs)
    while len(runs) < at_least:
        k = max((i for i, r in enumerate(runs) if len(r) > 1), key=lambda i: sum(weights[j] for j in runs[i]))
        r = runs[k]
        total, left, cut, best = sum(weights[j] for j in r), 0, r.start + 1, None
        for j in range(r.start, r.stop - 1):
            left += weights[j]
            worst = max(left, total - left)
            if best is None or worst < best:
                best, cut = worst, j + 1
        runs[k:k + 1] = [range(r.start, cut), range(cut, r.stop)]
    return runs


def group_size(ranges: Sequence[SplitRange]) -> int:
    """The bytes one file group's ranges read: a range is read in full from its split's start, however late it
    starts or early it stops, and a split's ``est_bytes`` count its prior slice too."""
    return sum(r.split.est_bytes for r in ranges)


def pack_ranges(groups: Sequence[list[SplitRange]], packing: Packing) -> list[list[SplitRange]]:
    """Each task's ranges: ``groups`` (each the ranges of one file group, in the order tasks read them) packed by
    :meth:`Packing.pack`, each task's groups one after the other."""
    return [[r for g in run for r in groups[g]] for run in packing.pack([group_size(g) for g in groups])]
