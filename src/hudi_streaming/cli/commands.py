"""``hudi-streaming``: look inside Hudi tables, log files and a stream's checkpoint state, read tables, and
run the demo.

The tool exists because a Hudi table cannot be understood from a file listing: which instant is a
compaction, which files form a slice, and what a log file holds (avro-tools cannot read Hudi log files) are
only visible through the format layer. Everything here is a thin layer over ``hoodie``; the tool never
imports PySpark, so it starts fast and works without a JVM.

Errors a user can fix (a wrong path, a folder that is not a Hudi table, damaged table content) are one line
``error: <message>`` on stderr with exit code 2; anything else is a bug and exits 1. Damage that does not stop
the command (a file in the timeline folder that is not an instant, an empty commit) is a ``WARNING`` line on
stderr: the tool is where users look when a table reads oddly. ``--verbose`` adds the traceback and the format
layer's other log messages.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import numbers
import os
import sys
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import NoReturn

import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from .. import __version__
from ..errors import HudiStreamingError, NotFoundError, OptionError, StateError
from ..hoodie.deletes import Deletes
from ..hoodie.logfile.blocks import decode_data_block, decode_delete_block
from ..hoodie.logfile.format import MAGIC, BlockType, HeaderKey, parse_log_file_name
from ..hoodie.logfile.reader import iter_blocks
from ..hoodie.table import HudiTable
from ..hoodie.timeline import Action, TimelineEntry
from ..monitor.feed import ChangeFeed
from ..monitor.monitor import MonitorOptions, StreamMonitor
from ..read import read_changes, read_table
from ..state import StateStore
from ..state.row_rules import describe
from ..state.spark_checkpoint import committed_offset
from ..streaming.options import instant_of
from ..streaming.storage_options import storage_options

USER_ERROR, INTERNAL_ERROR = 2, 1
#: Widest cell of record listings; longer values end in "…" so a row stays on one screen line.
CELL_WIDTH = 40


# --- output ---------------------------------------------------------------------------------------------------

def format_table(rows: Iterable[Sequence], headers: Sequence[str] | None = None, *,
                 max_width: int | None = None) -> str:
    """Rows as aligned plain text, numbers right-aligned, ``None`` as ``-``.

    Every listing of the tool goes through here so all of them read the same way; ``max_width`` cuts long
    cells (record values) so a row stays readable.
    """
    grid = [list(r) for r in rows]
    ncols = max([len(r) for r in grid] + [len(headers or ())])
    grid = [r + [None] * (ncols - len(r)) for r in grid]
    numeric = [bool(grid) and all(_is_number(r[i]) or r[i] is None for r in grid) for i in range(ncols)]
    text = [[_cell(v, max_width) for v in r] for r in grid]
    if headers:
        text.insert(0, list(headers) + [""] * (ncols - len(headers)))
    widths = [max((len(r[i]) for r in text), default=0) for i in range(ncols)]
    if headers:
        text.insert(1, ["-" * w for w in widths])
    lines = []
    for r in text:
        cells = [c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _is_number(v: object) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, bool)


def _cell(v: object, max_width: int | None) -> str:
    s = "-" if v is None else str(v).replace("\n", "\\n")
    if max_width and len(s) > max_width:
        s = s[:max_width - 1] + "…"
    return s


def _human_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@contextlib.contextmanager
def _progress(what: str) -> Iterator[None]:
    """A spinner on stderr while long work runs, so a big read does not look hung; only on a terminal, so
    pipes, logs and tests get the plain output (and errors stay one line)."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(f"{what}…"):
        yield


def _limited(items: list, limit: int | None, *, keep_last: bool = False) -> tuple[list, int]:
    """The items a ``--limit`` lets through and how many it left out."""
    if limit is None or len(items) <= limit:
        return items, 0
    return (items[len(items) - limit:] if keep_last else items[:limit]), len(items) - limit


# --- inspect TABLE_URL --------------------------------------------------------------------------------------

def _resolve(url: str, storage: dict) -> tuple[fsspec.AbstractFileSystem, str]:
    """File system and path of ``url``, which must exist.

    Checked up front so a typo reads "no such file or directory" rather than the format layer's "not a Hudi
    table", and an unknown URL scheme or a missing fsspec driver is a one-line user error.
    """
    try:
        fs, path = fsspec.core.url_to_fs(url, **storage)
    except (ValueError, ImportError) as e:
        raise OptionError(f"{url}: {e}") from None
    if not fs.exists(path):
        raise NotFoundError(f"{url}: no such file or directory")
    return fs, path


def _open_table(url: str, storage: dict) -> HudiTable:
    _resolve(url, storage)
    return HudiTable(url, storage or None)


def _action_label(table: HudiTable, entry: TimelineEntry) -> str:
    """What the instant did: planned actions (compaction, clustering, ...) by their plan, not by the file
    they complete as (a finished compaction is a plain ``commit``), because that is what users look for."""
    if entry.planned_as is not None:
        return entry.planned_as.value
    if entry.action is Action.REPLACE_COMMIT and entry.is_completed:
        try:  # layout 1 names no clustering plan: only the commit's operation type tells
            if table.timeline.is_clustering(entry):
                return Action.CLUSTERING.value
        except HudiStreamingError:
            pass  # unreadable metadata: show the plain action rather than fail the whole listing
    return entry.action.value


def _completion(entry: TimelineEntry) -> str | None:
    """Completion time, starred when it is only the file's modification time (layout 1)."""
    if not entry.is_completed or entry.completion_time is None:
        return None
    return entry.completion_time + "*" if entry.instant.legacy else entry.completion_time


def inspect_table(url: str, *, limit: int | None = None, instants_only: bool = False,
                  storage: dict | None = None) -> None:
    """Print the configuration, the timeline and the file groups of a table."""
    table = _open_table(url, storage or {})
    cfg = table.config
    archived = table.storage.list_dir(cfg.archive_dir)
    print(format_table([
        ("table", cfg.name + (f" (database {cfg.database})" if cfg.database else "")),
        ("url", table.url),
        ("type", cfg.table_type.value),
        ("version", cfg.version),
        ("timeline layout", f"{cfg.timeline_layout} ({cfg.timeline_dir}/)"),
        ("record key", ", ".join(cfg.record_key_fields) or "-"),
        ("partition fields", ", ".join(cfg.partition_fields) or "- (not partitioned)"),
        ("ordering fields", ", ".join(cfg.ordering_fields) or "-"),
        ("merge mode", cfg.merge_mode.value),
        ("archived timeline", f"{len(archived)} files in {cfg.archive_dir}/ (not listed)" if archived else "none"),
    ]))

    entries = table.timeline.entries
    shown, hidden = _limited(entries, limit, keep_last=True)
    legacy = any(e.instant.legacy for e in shown)
    print(f"\nTimeline: {_plural(len(entries), 'instant')}, "
          f"{_plural(len(table.timeline.completed_writes()), 'completed write')}")
    if hidden:
        print(f"({hidden} earlier instants not shown; --limit {limit})")
    print(format_table(
        [(e.requested_time, _completion(e), _action_label(table, e), e.instant.state.name) for e in shown],
        ["requested", "completed", "action", "state"]))
    if legacy:
        print("* layout 1 file names carry no completion time: the file's modification time stands in, "
              "as in Hudi 1.x")
    if instants_only:
        return

    view = table.file_system_view()
    latest = table.timeline.latest_write_time()
    replaced = table.timeline.replaced_file_groups(latest) if latest else set()
    pending = table.timeline.pending_compaction_times()
    slices = [s for _, group in sorted(view.groups.items()) for s in group]
    shown, hidden = _limited(slices, limit)
    print(f"\nFile groups: {_plural(len(view.groups), 'group')}, {_plural(len(slices), 'file slice')}")
    print(format_table(
        [(s.partition or "-", s.file_id, s.base_instant, s.base_file.name if s.base_file else None,
          len(s.log_files), _human_size(sum(lf.size for lf in s.log_files)),
          "replaced" if (s.partition, s.file_id) in replaced else
          "pending compaction" if s.base_instant in pending else "") for s in shown],
        ["partition", "file id", "base instant", "base file", "logs", "log size", "note"]))
    if hidden:
        print(f"({hidden} more file slices not shown; --limit {limit})")


# --- inspect log FILE ---------------------------------------------------------------------------------------

def _schema_summary(schema_json: str | None) -> str | None:
    """``N fields: a, b, c, …`` with the Hudi meta columns left out of the names (they are always the same)."""
    if not schema_json:
        return None
    try:
        names = [f["name"] for f in json.loads(schema_json).get("fields", [])]
    except (ValueError, AttributeError, KeyError, TypeError):
        return "(unparsable schema)"
    data = [n for n in names if not n.startswith("_hoodie_")]
    return f"{len(names)} fields: " + ", ".join(data[:4]) + (", …" if len(data) > 4 else "")


def inspect_log(url: str, *, records: int = 0, storage: dict | None = None) -> None:
    """Print every block of one log file; with ``records`` also the first records of each block.

    A file that is not a log file (``hoodie.properties``, a base file) is refused up front: read as a log it
    would be one "corrupt block", which sends users looking for damage that is not there. An empty file with a
    log file name is a log file (Hudi creates them before the first append).
    """
    fs, path = _resolve(url, storage or {})
    if fs.isdir(path):
        raise OptionError(f"{url}: is a directory, not a log file (use 'inspect TABLE_URL' for tables)")
    name = parse_log_file_name(path)
    if name is None:
        raise OptionError(f"{url}: not a Hudi log file (the name is not .<file id>_<instant>.log.<version>_<token>)")
    data = fs.cat_file(path)
    if data and not data.startswith(MAGIC):
        raise OptionError(f"{url}: not a Hudi log file (it does not start with the log magic "
                          f"{MAGIC.decode()}: {data[:len(MAGIC)]!r})")
    print(format_table([
        ("log file", url),
        ("size", f"{len(data)} bytes"),
        ("file id", name.file_id),
        ("instant", name.instant),
        ("version", name.version),
    ]))

    rows, notes, decoded = [], [], {}
    for i, b in enumerate(iter_blocks(data, url)):
        count = None
        try:
            if b.is_data:
                decoded[i] = decode_data_block(b)
                count = decoded[i].num_rows
            elif b.type is BlockType.DELETE:
                decoded[i] = decode_delete_block(b)
                count = len(decoded[i].record_keys)
        except HudiStreamingError as e:
            count = "!"
            notes.append(f"block {i}: cannot decode: {e}")
        kind = b.type.name
        if b.type is BlockType.COMMAND:
            kind += " (rollback)" if b.is_rollback else f" (type {b.header.get(HeaderKey.COMMAND_BLOCK_TYPE)})"
        if b.is_corrupt:
            kind = "CORRUPT !!"
            notes.append(f"block {i}: CORRUPT, bytes {b.offset}..{b.offset + b.size}: a torn or damaged write; "
                         "Hudi's readers skip these bytes")
        rows.append((i, b.offset, b.size, kind, b.instant_time, b.target_instant_time, count,
                     _schema_summary(b.schema_json)))
    print(f"\n{_plural(len(rows), 'block')}")
    print(format_table(rows, ["#", "offset", "size", "type", "instant", "target instant", "records", "schema"],
                       max_width=60))
    for note in notes:
        print(note)

    if not records:
        return
    for i, content in decoded.items():
        body: Sequence[Sequence]
        if isinstance(content, pa.Table):
            total, headers = content.num_rows, content.column_names
            body = [[r[c] for c in headers] for r in content.slice(0, records).to_pylist()]
        else:  # delete block
            total, headers = len(content.record_keys), ["record key", "partition path", "ordering value"]
            body = [(k, p, "(commit time)" if ct else v) for k, p, v, ct in
                    zip(content.record_keys, content.partition_paths, content.ordering_values,
                        content.ordering_is_commit_time)][:records]
        print(f"\nBlock {i}: first {len(body)} of {_plural(total, 'record')}")
        print(format_table(body, headers, max_width=CELL_WIDTH))


# --- read ---------------------------------------------------------------------------------------------------

def read(url: str, *, columns: list[str] | None, as_of: str | None, start: str | None, end: str | None,
         limit: int, changes: bool = False, storage: dict | None = None) -> None:
    """Print the row count of a query and its first ``limit`` rows.

    Positions take the stream's forms (an instant time or a timestamp, see ``options.instant_of``): the format
    layer compares instants as strings, so ``2026-03-08`` or a typo passed on unchecked selects every row or
    none without a word.
    """
    if as_of and (start or end or changes):
        raise OptionError("--as-of is a snapshot query and cannot be combined with --start/--end/--changes")
    for v, o in ((as_of, "--as-of"), (start, "--start"), (end, "--end")):
        if v:
            instant_of(v, o)  # a malformed position fails before the table is opened
    _resolve(url, storage or {})
    zone = HudiTable(url, storage or None).config.timeline_zone  # a timestamp names a moment on the table's clock
    as_of, start, end = (instant_of(v, o, zone) if v else None
                         for v, o in ((as_of, "--as-of"), (start, "--start"), (end, "--end")))
    with _progress(f"reading {url}"):
        if changes:
            t = read_changes(url, start, end, changelog=True, columns=columns, storage_options=storage or None)
        else:
            t = read_table(url, columns=columns, as_of=as_of, start=start, end=end, storage_options=storage or None)
    query = (f"changes ({start or 'beginning'}, {end or 'latest'}]" if changes
             else f"incremental ({start or 'beginning'}, {end or 'latest'}]" if start or end
             else f"snapshot as of {as_of}" if as_of else "snapshot")
    print(f"{_plural(t.num_rows, 'row')} ({query})")
    shown = t.slice(0, limit)
    print(format_table([[r[c] for c in t.column_names] for r in shown.to_pylist()], t.column_names,
                       max_width=CELL_WIDTH))
    if t.num_rows > limit:
        print(f"({_plural(t.num_rows - limit, 'more row')} not shown; --limit {limit})")


# --- demo ---------------------------------------------------------------------------------------------------

def demo(commits: int, keys: int) -> None:
    """A live table written by the load generator, streamed by local Spark, checked against the table."""
    from .demo import run_demo

    if not run_demo(commits=commits, keys=keys):
        raise HudiStreamingError("demo: the streamed state differs from the table (see above)")


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage mistakes like every other error: one line, exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise OptionError(f"{message} (see '{self.prog} --help')")



def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return n


def show_state(location: str, *, checkpoint: str | None = None, limit: int | None = None,
               storage: dict | None = None) -> None:
    """Print a stream's checkpoint state: where it is, how far behind the table, and the splits it has planned
    but not yet committed (what a restarted query delivers first).

    What is committed is Spark's to say (see ``state.spark_checkpoint``); without ``checkpoint`` the output
    says only what the source has recorded, worded as such.
    """
    storage = storage or {}
    state = StateStore(location, storage or None).newest()
    if state is None:
        raise NotFoundError(f"{location}: no hudi-streaming state files here (is it the stream's stateLocation?)")
    spark = committed_offset(checkpoint, state.stream_id, storage) if checkpoint else None
    seq, rec = state.committed_seq, 0
    if spark is not None:
        seq, rec = int(spark[1]["seq"]), int(spark[1]["rec"])
        if seq < state.committed_seq or seq > state.next_seq:
            raise StateError(f"{checkpoint}: Spark's last committed batch {spark[0]} is at split {seq}, but the state "
                             f"has committed splits below {state.committed_seq} and planned below {state.next_seq}: "
                             "the state folder does not belong to this checkpoint")
    pending = state.pending_from(seq)
    behind = "-"
    try:
        table = HudiTable(state.table_url, storage or None)
        monitor = StreamMonitor(table, MonitorOptions())
        after, _ = monitor.completed_after(state.cursor)
        behind = (f"{_plural(len(after), 'completed instant')} (newest {after[-1].requested_time})" if after
                  else "none: caught up")
    except (HudiStreamingError, OSError) as e:
        behind = f"unknown: the table does not open ({e})"
    cursor = state.cursor
    within = f", and {_plural(rec, 'record')} of split {seq}" if rec else ""
    if checkpoint is None:
        committed = [("committed by the source", f"splits below {state.committed_seq} (Spark may have committed "
                                                 "more: the source hears of a commit at the next batch; see "
                                                 "--checkpoint)"),
                     ("planned, not committed by the source", f"{_plural(len(pending), 'split')} "
                                                              f"(next sequence {state.next_seq})")]
    else:
        committed = [("committed by Spark", "no batch yet" if spark is None else
                      f"batch {spark[0]}: splits below {seq}{within}"),
                     ("planned and not committed",
                      f"{_plural(len(pending), 'split')} (next sequence {state.next_seq})")]
    unbounded = sum(p.split.est_rows is None for p in pending)
    print(format_table([
        ("table", f"{state.table_name} at {state.table_url}"),
        ("cursor", "- (nothing planned yet)" if cursor is None else
         cursor.requested + (f" (completed {cursor.completion})" if cursor.completion else "")),
        ("instants after the cursor", behind),
        ("row rules", describe(state.rules)),
        *committed,
        ("pending estimate", f"{sum(p.split.est_rows or 0 for p in pending):,} rows"
                             + (f" and those of {_plural(unbounded, 'split')} not bounded yet" if unbounded else "")
                             + f", {_human_size(sum(p.split.est_bytes for p in pending))}"),
    ]))
    shown, hidden = _limited(pending, limit)
    if shown:
        print("\nPlanned splits not yet committed" + ("" if checkpoint else " by the source") + ":")
        print(format_table(
            [(p.seq, p.round, p.split.partition or "-", p.split.file_id,
              "snapshot" if p.split.instants is None else ", ".join(p.split.instants[:2])
              + (f" (+{len(p.split.instants) - 2})" if len(p.split.instants) > 2 else ""),
              "not bounded yet" if p.split.est_rows is None else p.split.est_rows, _human_size(p.split.est_bytes),
              "; ".join(n for n in (f"{rec} records delivered" if p.seq == seq and rec else "",
                                    f"deletes (replaced by {p.split.replaced_by})" if p.split.replaced_by else "")
                        if n))
             for p in shown],
            ["seq", "round", "partition", "file id", "instants", "rows (est.)", "size", "note"]))
    if hidden:
        print(f"({hidden} more splits not shown; --limit {limit})")


# --- tail ---------------------------------------------------------------------------------------------------

def tail(url: str, *, start: str, columns: list[str] | None, interval: float, limit: int | None,
         fs_options: dict[str, str] | None = None) -> None:
    """Print each write's changes in the order writes became visible, like ``tail -f``, until ``limit`` of them
    (or ^C). ``--from earliest`` first prints the table as of its latest write, as one block.

    It follows the table with the change feed ``read_changes`` reads (``monitor.feed``): the change types are
    exactly what a streaming query delivers in changelog mode, deletes included, and it starts at once with no
    JVM and keeps no state.
    """
    storage = storage_options(fs_options or {})
    _resolve(url, storage)
    table = HudiTable(url, storage or None)
    data = [n for n in table.arrow_schema().names if not n.startswith("_hoodie_")]
    unknown = [c for c in columns or [] if c not in data]
    if unknown:
        raise OptionError(f"--columns: {table.url} has no column {', '.join(unknown)}; its columns: "
                          f"{', '.join(data)}")
    shown_cols = columns or data
    feed = ChangeFeed(table, changelog=True, deletes=Deletes.EMIT, columns=columns)
    where = start.strip().lower()
    at = None if where in ("earliest", "latest") else instant_of(start, "--from", table.config.timeline_zone)
    print(f"tailing {table.url} from {start} (every {interval:g}s; ^C stops)", flush=True)
    if at is not None:
        feed.start_at(at)
    elif where == "earliest":
        cursor, rows = feed.snapshot()
        as_of = f"as of instant {cursor.completion or cursor.requested}" if cursor else "(the table has no write yet)"
        _print_changes(f"snapshot {as_of}: {_plural(rows.num_rows, 'row')}", rows, shown_cols)
    else:
        feed.start_latest()
    printed = 0
    while limit is None or printed < limit:
        for plan, rows in feed.rounds(wait_for_pending=True):
            changes = rows.filter(pc.field("_change_type") != "update_preimage")
            if not changes.num_rows:
                continue  # a skipped compaction or clustering, or a write outside the columns' partitions
            (e,) = plan.instants  # changelog mode: one write per round
            kinds = ", ".join(f"{n} {k}" for k, n in Counter(changes["_change_type"].to_pylist()).items())
            shown = e.requested_time + (f" (completed {e.completion_time})" if e.completion_time else "")
            _print_changes(f"instant {shown}: {_plural(changes.num_rows, 'change')} ({kinds})", changes, shown_cols)
            printed += 1
            if limit is not None and printed >= limit:
                return
        time.sleep(interval)


def _print_changes(title: str, rows: pa.Table, columns: list[str]) -> None:
    print(f"\n{title}")
    print(format_table([[r["_hoodie_record_key"], r["_change_type"], *(r[c] for c in columns)]
                        for r in rows.to_pylist()],
                       ["key", "change", *columns], max_width=CELL_WIDTH), flush=True)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hudi-streaming", description="Inspect, read and tail Apache Hudi tables; show a stream's "
                                                   "state; run the demo.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--verbose", "-v", action="store_true", help="tracebacks and format-layer log messages")
    p.add_argument("--storage-option", "-s", action="append", default=[], metavar="NAME=VALUE", dest="storage_top",
                   help="an fsspec storage option (repeatable), typed and named as the source's fs.* options: "
                        "key=..., anon=true, client_kwargs={\"endpoint_url\": ...}, or Hadoop's fs.s3a.* names; "
                        "without credentials s3fs uses the AWS_* environment variables, ~/.aws and instance roles")
    # accepted after the command too; SUPPRESS keeps the top-level value when absent there
    common = _Parser(add_help=False)
    common.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("--storage-option", "-s", action="append", default=[], metavar="NAME=VALUE",
                        dest="storage_sub", help="an fsspec storage option (repeatable; see 'hudi-streaming --help')")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    ins = sub.add_parser("inspect", parents=[common], help="show a table (inspect TABLE_URL) or a log file "
                                                             "(inspect log FILE)",
                         usage="%(prog)s [-h] [--instants-only] [--limit N] TABLE_URL\n"
                               "       %(prog)s [-h] [--records N] log FILE")
    ins.add_argument("target", nargs="+", metavar="TABLE_URL | log FILE",
                     help="table root (any fsspec URL), or 'log' and one log file")
    ins.add_argument("--instants-only", action="store_true", help="tables: the timeline only, no file listing")
    ins.add_argument("--limit", type=_count, metavar="N",
                     help="tables: show only the latest N instants and the first N file slices")
    ins.add_argument("--records", type=_count, default=0, metavar="N",
                     help="log files: also print the first N records of every data and delete block")

    rd = sub.add_parser("read", parents=[common], help="read a table: snapshot, time travel or incremental")
    rd.add_argument("table_url", metavar="TABLE_URL")
    rd.add_argument("--columns", help="comma-separated column names")
    rd.add_argument("--as-of", metavar="T", help="snapshot as of T: an instant time (yyyyMMddHHmmss[SSS]) or a "
                                                 "timestamp YYYY-MM-DD[ HH:MM:SS] (UTC unless zoned)")
    rd.add_argument("--start", metavar="T", help="incremental: after T (exclusive; instant or timestamp; v8/v9 "
                                                 "completion times, v6 requested times)")
    rd.add_argument("--end", metavar="T", help="incremental: up to T (inclusive; instant or timestamp)")
    rd.add_argument("--changes", action="store_true",
                    help="the change feed of the range (--start/--end): every version of each key with its change "
                         "type, pre-images and deletes included, as a changelog stream delivers it")
    rd.add_argument("--limit", type=_count, default=20, metavar="N", help="rows to print (default 20)")

    st = sub.add_parser("state", parents=[common], help="show a stream's checkpoint state (its stateLocation)")
    st.add_argument("location", metavar="STATE_LOCATION")
    st.add_argument("--checkpoint", metavar="SPARK_CHECKPOINT",
                    help="the query's checkpointLocation: show what Spark has committed (its commits/ and offsets/); "
                         "without it only what the source has recorded is known")
    st.add_argument("--limit", type=_count, metavar="N", help="show only the first N planned splits")

    tl = sub.add_parser("tail", parents=[common], help="print a table's changes as instants complete (like tail -f)",
                        description="Follow a table: one listing per new instant (key, change type, columns), "
                                    "deletes included. Runs the stream's planner and reader without Spark, so it "
                                    "starts at once; its position is kept in a temporary folder.")
    tl.add_argument("table_url", metavar="TABLE_URL")
    tl.add_argument("--from", dest="start", default="latest", metavar="INSTANT|TIMESTAMP",
                    help="latest (default: only new instants), earliest (the table, then changes), an instant time "
                         "or a timestamp YYYY-MM-DD[ HH:MM:SS] (UTC unless zoned)")
    tl.add_argument("--columns", help="comma-separated columns to show (default: all)")
    tl.add_argument("--interval", type=_seconds, default=2.0, metavar="S",
                    help="seconds between timeline polls (default 2)")
    tl.add_argument("--limit-batches", type=_count, metavar="N", help="stop after N instants (default: never)")

    dm = sub.add_parser("demo", parents=[common],
                        help="stream a live table with local Spark while a load generator writes it")
    dm.add_argument("--commits", type=_count, default=12, metavar="N", help="commits to write (default 12)")
    dm.add_argument("--keys", type=_count, default=400, metavar="N", help="distinct record keys (default 400)")
    return p


def _seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        s = -1.0
    if not s > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return s


def _fs_options(pairs: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` pairs as the source's ``fs.*`` options (the ``fs.`` prefix is optional)."""
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise OptionError(f"--storage-option {pair!r}: expected NAME=VALUE")
        name = name.strip()
        out[name if name.startswith("fs.") else f"fs.{name}"] = value
    return out


def _columns(text: str | None) -> list[str] | None:
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


def _run(args: argparse.Namespace) -> None:
    fs_options = _fs_options(args.storage_top + getattr(args, "storage_sub", []))
    storage = storage_options(fs_options)
    if args.command == "inspect":
        target = args.target
        if len(target) == 2 and target[0] == "log":
            if args.instants_only or args.limit is not None:
                raise OptionError("--instants-only and --limit apply to tables, not to 'inspect log'")
            inspect_log(target[1], records=args.records, storage=storage)
        elif len(target) == 1:
            if args.records:
                raise OptionError("--records applies to 'inspect log FILE'")
            inspect_table(target[0], limit=args.limit, instants_only=args.instants_only, storage=storage)
        else:
            raise OptionError("inspect takes TABLE_URL, or 'log' and one FILE")
    elif args.command == "read":
        read(args.table_url, columns=_columns(args.columns), as_of=args.as_of, start=args.start, end=args.end,
             limit=args.limit, changes=args.changes, storage=storage)
    elif args.command == "state":
        show_state(args.location, checkpoint=args.checkpoint, limit=args.limit, storage=storage)
    elif args.command == "tail":
        tail(args.table_url, start=args.start, columns=_columns(args.columns), interval=args.interval,
             limit=args.limit_batches, fs_options=fs_options)
    elif args.command == "demo":
        with _progress("running the demo"):
            demo(args.commits, args.keys)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 2 user error, 1 internal error)."""
    verbose = False
    try:
        args = build_parser().parse_args(argv)
        verbose = args.verbose
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                            format="%(levelname)s %(name)s: %(message)s")
        _run(args)
        return 0
    except KeyboardInterrupt:  # ^C ends `tail` (and anything long): the shell's code for SIGINT, no traceback
        return 130
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    except BrokenPipeError:  # output piped into `head`: stop quietly, and keep Python's exit flush quiet too
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except (HudiStreamingError, OSError) as e:
        return _fail(USER_ERROR, str(e) or type(e).__name__, verbose)
    except Exception as e:  # a bug: still one line unless asked for more
        hint = "" if verbose else " (run with --verbose for the traceback)"
        return _fail(INTERNAL_ERROR, f"internal error: {type(e).__name__}: {e}{hint}", verbose)


def _fail(code: int, message: str, verbose: bool) -> int:
    """Report the exception being handled as one line (messages may span lines; they are joined)."""
    if verbose:
        traceback.print_exc()
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
