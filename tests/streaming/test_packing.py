"""A batch's file groups packed into Spark tasks by size, as Spark's file sources pack files (issue 25.1).

The packing alone (sizes in, runs of file groups out), its options, and a stream and a batch read of a table of
many small file groups: few tasks, and the same rows in the same order as one task per file group.
"""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from support.stream_sim import make_reader, run_batches

from hudi_streaming.errors import OptionError
from hudi_streaming.hoodie.fs_view import BaseFile, FileSlice, LogFile
from hudi_streaming.hoodie.split import Split
from hudi_streaming.streaming.consumer import SplitRange
from hudi_streaming.streaming.options import parse_options
from hudi_streaming.streaming.packing import Packing, group_size, pack_ranges

MiB = 1 << 20


def _check(packing: Packing, items: list[int]) -> list[range]:
    """Pack file groups of sizes ``items`` and check what the packing promises, whatever the sizes."""
    runs = packing.pack(items)
    assert [i for r in runs for i in r] == list(range(len(items)))  # each item once, in order: none divided
    assert all(len(r) > 0 for r in runs)
    weights = [size + packing.open_cost_in_bytes for size in items]  # one open cost per group
    limit = packing.max_split_bytes(sum(weights))
    for r in runs:  # a task of several items stays within the limit; a larger item is a task alone
        assert len(r) == 1 or sum(weights[i] for i in r) <= limit, (r, limit)
    if items:  # at least as many tasks as cores while there are items to share
        assert len(runs) >= min(packing.min_partition_num, len(items)), (len(runs), packing)
    return runs


def test_packing_keeps_order_never_divides_fills_cores_and_stays_within_the_limit():
    rng = random.Random(25)
    for _ in range(2000):
        n = rng.choice([0, 1, 2, 3, 5, 20, 200])
        shape = rng.choice(["small", "mixed", "one big"])
        items = [rng.randrange(1, 2 * MiB) if shape != "mixed" or rng.random() < 0.7 else rng.randrange(1, 600 * MiB)
                 for _ in range(n)]
        if shape == "one big" and items:
            items[rng.randrange(n)] = rng.randrange(200, 2000) * MiB
        packing = Packing(rng.choice([1, MiB, 16 * MiB, 128 * MiB]), rng.choice([0, 1, 64 << 10, 4 * MiB]),
                          rng.choice([1, 2, 3, 8, 64]))
        _check(packing, items)


def test_spark_rule_sets_the_split_size():
    # Spark's maxSplitBytes = min(maxPartitionBytes, max(openCostInBytes, totalBytes / minPartitionNum))
    p = Packing(128 * MiB, 4 * MiB, 2)
    assert p.max_split_bytes(10 * MiB) == 5 * MiB  # shared by the cores
    assert p.max_split_bytes(2 * MiB) == 4 * MiB  # never below one file's open cost
    assert p.max_split_bytes(10_000 * MiB) == 128 * MiB  # never above maxPartitionBytes
    # 1,000 file groups of a base and a log file of 2 KiB each (the table): each weighs 4 MiB + 4 KiB (one
    # open cost: a group is this source's file), so 31 go in a task of 128 MiB, as Spark packs 31 files of 4 KiB;
    # on 2 cores, not 1,000 tasks but 33 (charged per file, a group weighed 8 MiB: 67 tasks)
    runs = _check(p, [4 << 10] * 1000)
    assert len(runs) == 33 and [len(r) for r in runs] == [31] * 32 + [8]
    # a few small groups are shared by the cores, one each while there are as many cores
    assert [list(r) for r in _check(Packing(128 * MiB, 4 * MiB, 4), [100] * 3)] == [[0], [1], [2]]
    # ten: a quarter of their weight is 2.5 groups', so 2 go in a task (Spark packs 10 such files so too)
    assert [len(r) for r in _check(Packing(128 * MiB, 4 * MiB, 4), [100] * 10)] == [2] * 5
    # a group larger than a task is a task alone; the small ones beside it still fill the cores
    runs = _check(Packing(128 * MiB, 4 * MiB, 4), [1000 * MiB] + [1] * 4)
    assert runs[0] == range(0, 1) and len(runs) == 4


def _split(file_id: str, size: int, logs: int = 0, prior: bool = False) -> Split:
    fs = FileSlice("p", file_id, "1", BaseFile(f"p/{file_id}_1-0-1_1.parquet", file_id, "1-0-1", "1", size),
                   [LogFile(f"p/.{file_id}_1.log.{v}_0-1-1", file_id, "1", v, "0-1-1", 10) for v in range(1, logs + 1)])
    before = FileSlice("p", file_id, "0", BaseFile(f"p/{file_id}_0-0-1_0.parquet", file_id, "0-0-1", "0", 20),
                       [LogFile(f"p/.{file_id}_0.log.1_0-1-1", file_id, "0", 1, "0-1-1", 10)])
    return Split(fs, max_instant="1", est_bytes=size + 10 * logs + (30 if prior else 0),
                 prior=before if prior else None, prior_max_instant="0" if prior else "")


def test_a_group_counts_every_byte_its_splits_read_and_its_ranges_stay_together():
    a1, a2 = _split("a", 100, logs=2), _split("a", 100, logs=2, prior=True)
    assert group_size([SplitRange(a1, 0, None), SplitRange(a2, 5, 9)]) == 100 + 20 + 100 + 20 + 30
    groups = [[SplitRange(a1, 3, None), SplitRange(a2, 0, None)], [SplitRange(_split("b", 5 * MiB), 0, 4)],
              [SplitRange(_split("c", 1), 0, None)], [SplitRange(_split("d", 1), 0, None)]]
    # each group weighs its bytes and one open cost (1 MiB): a and b weigh 7 MiB and 270 bytes, so c, 1 MiB
    # and a byte, would take the task past 8 MiB and starts the next
    tasks = pack_ranges(groups, Packing(8 * MiB, MiB, 1))
    assert [[(r.split.file_id, r.skip) for r in t] for t in tasks] == [[("a", 3), ("a", 0), ("b", 0)],
                                                                       [("c", 0), ("d", 0)]]
    assert pack_ranges([], Packing()) == []


@pytest.mark.parametrize("value, expected", [("134217728", 128 * MiB), ("128m", 128 * MiB), ("4MB", 4 * MiB),
                                             (" 64 k ", 64 << 10), ("1g", 1 << 30), ("0", 0)])
def test_sizes_are_read_as_spark_writes_them(value, expected):
    assert parse_options({"path": "t", "openCostInBytes": value}).open_cost_in_bytes == expected


@pytest.mark.parametrize("option, value, message", [
    ("maxPartitionBytes", "0", "maxPartitionBytes"), ("maxPartitionBytes", "12 parsecs", "maxPartitionBytes"),
    ("openCostInBytes", "-1", "openCostInBytes"), ("minPartitionNum", "0", "minPartitionNum"),
    ("maxPartitionByte", "1m", "unknown option 'maxPartitionByte'")])
def test_bad_packing_options_are_one_clear_error(option, value, message):
    with pytest.raises(OptionError, match=message):
        parse_options({"path": "t", option: value})


def test_options_set_the_packing():
    opts = parse_options({"path": "t", "maxPartitionBytes": "1m", "openCostInBytes": "1k", "minPartitionNum": "3"})
    assert opts.packing() == Packing(MiB, 1024, 3)
    assert parse_options({"path": "t"}).packing().max_partition_bytes == 128 * MiB  # Spark's defaults
    assert parse_options({"path": "t"}).packing().open_cost_in_bytes == 4 * MiB


def _many_groups(path: str, partitions: int = 30, rows: int = 3) -> None:
    """A v9 MOR table of ``partitions`` one-group partitions of ``rows`` rows, then one update in each (logs)."""
    from hudi_streaming.writer import create_table

    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("part", pa.string())])

    def data(keys, ts):
        return pa.table({"id": [f"k{k:05d}" for k in keys], "ts": np.full(len(keys), ts),
                         "part": [f"p{k % partitions:03d}" for k in keys]}, schema=schema)

    w = create_table(path, "many", schema, record_key="id", partition_fields="part", ordering_field="ts", version=9)
    w.insert(data(np.arange(partitions * rows), 1))
    w.upsert(data(np.arange(partitions), 2))


#: options that give every file group a task of its own, as before packing
ONE_TASK_PER_GROUP = {"maxPartitionBytes": "1"}
#: the packing of a 2-core machine, wherever the test runs
TWO_CORES = {"minPartitionNum": "2"}


def test_packed_batches_deliver_the_same_rows_in_the_same_order(tmp_path):
    """Batches cut inside splits by a row limit: the same offsets, rows and order, in far fewer tasks."""
    table = str(tmp_path / "t")
    _many_groups(table)
    runs = {}
    for name, extra in (("packed", TWO_CORES), ("alone", ONE_TASK_PER_GROUP)):
        reader = make_reader(table, str(tmp_path / name), maxRowsPerTrigger="38", **extra)
        tasks: list[int] = []
        partitions = reader.partitions

        def counted(start, end, partitions=partitions, tasks=tasks):
            parts = partitions(start, end)
            tasks.append(len(parts))
            return parts
        reader.partitions = counted
        runs[name] = (run_batches(reader, available_now=True), tasks)
    (packed, packed_tasks), (alone, alone_tasks) = runs["packed"], runs["alone"]
    assert sum(b.num_rows for b in packed) == 90 and len(packed) >= 3 and all(b.num_rows <= 38 for b in packed)
    assert [b.to_pylist() for b in packed] == [b.to_pylist() for b in alone]
    # a batch of at most 38 rows spans about 10 groups of 3 rows (each bounded by 4: the log may update a row)
    assert max(packed_tasks) <= 3 and min(alone_tasks[:-1]) >= 9, (packed_tasks, alone_tasks)


@pytest.mark.spark
def test_a_batch_of_many_small_file_groups_runs_in_few_tasks(spark, tmp_path):
    table = str(tmp_path / "t")
    _many_groups(table)
    tracker = spark.sparkContext.statusTracker()
    got: dict[str, tuple[list, list[int]]] = {}
    for name, extra in (("packed", TWO_CORES), ("alone", ONE_TASK_PER_GROUP)):
        batches: list = []
        reader = spark.readStream.format("hudi_streaming").option("stateLocation", str(tmp_path / f"s-{name}"))
        for k, v in extra.items():
            reader = reader.option(k, v)
        q = (reader.load(table).writeStream.foreachBatch(lambda df, _, into=batches: into.append(df.collect()))
             .option("checkpointLocation", str(tmp_path / f"ck-{name}")).trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert q.exception() is None
        jobs = sorted(tracker.getJobIdsForGroup(q.runId))  # a query's jobs: one collect per batch here
        tasks = [sum(tracker.getStageInfo(s).numTasks for s in tracker.getJobInfo(j).stageIds) for j in jobs]
        got[name] = ([[r.asDict() for r in rows] for rows in batches], tasks)
    (packed, packed_tasks), (alone, alone_tasks) = got["packed"], got["alone"]
    assert len(packed) == 1 and len(packed[0]) == 90
    assert packed == alone  # the same rows, in the same order
    assert alone_tasks == [30]
    assert 2 <= packed_tasks[0] <= 3, packed_tasks  # 30 groups of a few KiB shared by 2 cores
    batch = spark.read.format("hudi_streaming").options(**TWO_CORES).load(table)
    assert 2 <= batch.rdd.getNumPartitions() <= 3
    assert sorted(map(repr, batch.collect())) == sorted(
        map(repr, spark.read.format("hudi_streaming").options(**ONE_TASK_PER_GROUP).load(table).collect()))
