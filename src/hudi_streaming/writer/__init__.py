"""A writer of real Apache Hudi tables (MERGE_ON_READ and COPY_ON_WRITE, table versions 6 and 9), pure Python.

API::

    from hudi_streaming.writer import create_table, HudiWriter

    w = create_table(url, "trips", schema, record_key="uuid", partition_fields="city", ordering_field="ts",
                     table_type="MERGE_ON_READ", version=9, merge_mode=None)   # -> HudiWriter
    w = HudiWriter.open(url)                      # an existing table
    t1 = w.upsert(arrow_table_or_batches)         # each write returns its instant time
    t2 = w.insert(arrow_table, on_existing="drop")
    t3 = w.delete(keys_table)                     # key (+ partition, + optional ordering) columns
    w.compact()                                   # MOR: schedule + run, -> instant or None
    w.clean(retain_commits=10)                    # KEEP_LATEST_COMMITS, -> instant or None
    w.archive(keep_active=20)                     # -> archived requested times
    w.rollback_failed()                           # -> rollback instants (also run before every write)
    w.extra_metadata = {"k": "v"}                 # string pairs for the next write's commit metadata

Everything after the table (``url``, with ``name`` and ``schema`` for a new one) or the data is a keyword
argument; the docstrings of :func:`create_table` and :class:`HudiWriter` say what each means. The writer's
options (``HudiWriter(url, max_file_records=100_000, parquet_compression="snappy", ...)``, also
``create_table(..., **options)``): ``max_file_records``, the record count at which a file group stops taking
new keys; ``max_log_block_records=N`` cuts a log append into Avro data blocks of at most N records (default:
one block; Hudi cuts by bytes). A bad argument (an unknown field, a column the table does not have or that
does not cast to the table's type, a null key, ...) raises :class:`~hudi_streaming.errors.OptionError` before
the write starts.

Table creation writes ``hoodie.properties`` (Java-escaped; key, partition, ordering and merge settings
consistent with each other: v9 ``hoodie.record.merge.mode``, v6 the matching payload class) and the
timeline folders. ``merge_mode`` defaults to EVENT_TIME_ORDERING when an ordering field is given, else
COMMIT_TIME_ORDERING; on v6 they become ``DefaultHoodieRecordPayload`` / ``OverwriteWithLatestAvroPayload``.
Key generators: one key field and at most one partition field → SIMPLE / NON_PARTITION, otherwise COMPLEX
(keys ``f1:v1,f2:v2``). Partition paths are hive style (``f=v``) unless ``hive_style=False``; the index is
non-global (a record is its partition path plus key). The data schema is fixed at creation (no evolution).

A write (one instant): duplicates of a key in the batch are combined first (greatest ordering value wins,
ties to the later record); the record index (``.hoodie/.aux/hoodie_py_writer_index/``, rebuilt from the
table when missing or stale)
splits the batch into updates of known keys and inserts. MOR: updates (and deletes, as a delete block) are
appended to the log of their file group — v9: a new log file named after the delta commit; v6: a new log
version in the latest slice — and inserts fill small file groups (log appends) before new file groups get a
parquet base file. COW: each touched file group's base file is rewritten, merged with the stored records by
the table's merge rules (the reader's merge code). Meta columns are written as Hudi writes them.

Crash safety: ``requested`` → ``inflight`` → markers (``.hoodie/.temp/<instant>/``, as Hudi's direct markers)
and data files → the completed instant file, written last and atomically (temporary name, rename); readers
ignore everything of an instant that is not completed. (Atomic against a killed process; files are not
fsync'ed, so a power loss may lose the last commits.) Every write (and
service) first runs :meth:`HudiWriter.recover`: pending writes are rolled back (``rollback`` instant; v6
with rollback command blocks, v9 by deleting the files), killed compactions / cleans / rollbacks re-run from
their plans. One writer at a time per table (no lock is taken).

Not supported: schema evolution, url-encoded partitions, clustering / insert overwrite, bloom filters in
base file footers (min/max record keys are written), concurrent writers.

Modules: ``core`` (table creation, writes), ``services`` (recovery, rollback, compaction, clean, archive; they
need only the small ``services.Writer`` interface, so ``core`` depends on them and not the reverse), ``files``
(data files and markers, shared by both), ``index`` (record index), ``timeline_io`` (instant times and state
files, commit metadata), ``avro_meta`` (Avro schemas of timeline metadata, object-container encoding),
``avro_encode`` (vectorised Avro records for log blocks), ``schema`` (Arrow → Avro), ``props`` (Java properties
files), ``loadgen`` (below).

``hudi_streaming.writer.loadgen`` drives a writer with a steady, reproducible workload (demos, tests, benchmarks):
``python -m hudi_streaming.writer.loadgen URL --keys N --partitions P --rate ROWS_PER_S --duration S``.
"""
from __future__ import annotations

from .core import HudiWriter, create_table

__all__ = ["HudiWriter", "create_table"]

