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
import json
import logging
import numbers
import os
import sys
import traceback
from collections.abc import Iterable, Sequence

import fsspec
import pyarrow as pa

from ..errors import HudiStreamingError, NotFoundError, OptionError
from ..hoodie.logfile.blocks import decode_data_block, decode_delete_block
from ..hoodie.logfile.format import BlockType, HeaderKey, parse_log_file_name
from ..hoodie.logfile.reader import iter_blocks
from ..hoodie.read import read_table
from ..hoodie.table import HudiTable
from ..hoodie.timeline import Action
from ..monitor.monitor import MonitorOptions, StreamMonitor
from ..state import StateStore

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


def _is_number(v) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, bool)


def _cell(v, max_width: int | None) -> str:
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


def _limited(items: list, limit: int | None, *, keep_last: bool = False) -> tuple[list, int]:
    """The items a ``--limit`` lets through and how many it left out."""
    if limit is None or len(items) <= limit:
        return items, 0
    return (items[len(items) - limit:] if keep_last else items[:limit]), len(items) - limit


# --- inspect TABLE_URL --------------------------------------------------------------------------------------

def _resolve(url: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """File system and path of ``url``, which must exist.

    Checked up front so a typo reads "no such file or directory" rather than the format layer's "not a Hudi
    table", and an unknown URL scheme or a missing fsspec driver is a one-line user error.
    """
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except (ValueError, ImportError) as e:
        raise OptionError(f"{url}: {e}") from None
    if not fs.exists(path):
        raise NotFoundError(f"{url}: no such file or directory")
    return fs, path


def _open_table(url: str) -> HudiTable:
    _resolve(url)
    return HudiTable(url)


def _action_label(table: HudiTable, entry) -> str:
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


def _completion(entry) -> str | None:
    """Completion time, starred when it is only the file's modification time (layout 1)."""
    if not entry.is_completed:
        return None
    return entry.completion_time + "*" if entry.instant.legacy else entry.completion_time


def inspect_table(url: str, *, limit: int | None = None, instants_only: bool = False) -> None:
    """Print the configuration, the timeline and the file groups of a table."""
    table = _open_table(url)
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


def inspect_log(url: str, *, records: int = 0) -> None:
    """Print every block of one log file; with ``records`` also the first records of each block."""
    fs, path = _resolve(url)
    if fs.isdir(path):
        raise OptionError(f"{url}: is a directory, not a log file (use 'inspect TABLE_URL' for tables)")
    data = fs.cat_file(path)
    name = parse_log_file_name(path)
    print(format_table([
        ("log file", url),
        ("size", f"{len(data)} bytes"),
        ("file id", name.file_id if name else "- (not a Hudi log file name)"),
        ("instant", name.instant if name else None),
        ("version", name.version if name else None),
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
         limit: int) -> None:
    """Print the row count of a query and its first ``limit`` rows."""
    if as_of and (start or end):
        raise OptionError("--as-of is a snapshot query and cannot be combined with --start/--end (incremental)")
    _resolve(url)
    t = read_table(url, columns=columns, as_of=as_of, start=start, end=end)
    query = (f"incremental ({start or 'beginning'}, {end or 'latest'}]" if start or end
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

    def error(self, message: str):
        raise OptionError(f"{message} (see '{self.prog} --help')")



def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return n


def show_state(location: str, *, limit: int | None = None) -> None:
    """Print a stream's checkpoint state: where it is, how far behind the table, and the splits it has planned
    but not yet committed (what a restarted query delivers first)."""
    state = StateStore(location).newest()
    if state is None:
        raise NotFoundError(f"{location}: no hudi-streaming state files here (is it the stream's stateLocation?)")
    pending = state.pending_from(state.committed_seq)
    behind = "-"
    try:
        table = HudiTable(state.table_url)
        monitor = StreamMonitor(table, MonitorOptions())
        after, _ = monitor.completed_after(state.cursor)
        behind = (f"{_plural(len(after), 'completed instant')} (newest {after[-1].requested_time})" if after
                  else "none: caught up")
    except (HudiStreamingError, OSError) as e:
        behind = f"unknown: the table does not open ({e})"
    cursor = state.cursor
    print(format_table([
        ("table", f"{state.table_name} at {state.table_url}"),
        ("cursor", "- (nothing planned yet)" if cursor is None else
         cursor.requested + (f" (completed {cursor.completion})" if cursor.completion else "")),
        ("instants after the cursor", behind),
        ("splits", f"{state.committed_seq} committed, {len(pending)} planned and not committed "
                   f"(next sequence {state.next_seq})"),
        ("pending estimate", f"{sum(p.split.est_rows for p in pending):,} rows, "
                             f"{_human_size(sum(p.split.est_bytes for p in pending))}"),
    ]))
    shown, hidden = _limited(pending, limit)
    if shown:
        print("\nPlanned splits not yet committed:")
        print(format_table(
            [(p.seq, p.round, p.split.partition or "-", p.split.file_id,
              "snapshot" if p.split.instants is None else ", ".join(p.split.instants[:2])
              + (f" (+{len(p.split.instants) - 2})" if len(p.split.instants) > 2 else ""),
              p.split.est_rows, _human_size(p.split.est_bytes),
              f"deletes (replaced by {p.split.replaced_by})" if p.split.replaced_by else "")
             for p in shown],
            ["seq", "round", "partition", "file id", "instants", "rows (est.)", "size", "note"]))
    if hidden:
        print(f"({hidden} more splits not shown; --limit {limit})")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hudi-streaming", description="Inspect and read Apache Hudi tables; run the demo.")
    p.add_argument("--verbose", "-v", action="store_true", help="tracebacks and format-layer log messages")
    # accepted after the command too; SUPPRESS keeps the top-level value when absent there
    common = _Parser(add_help=False)
    common.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
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
    rd.add_argument("--as-of", metavar="T", help="snapshot as of instant T")
    rd.add_argument("--start", metavar="T", help="incremental: after T (exclusive)")
    rd.add_argument("--end", metavar="T", help="incremental: up to T (inclusive)")
    rd.add_argument("--limit", type=_count, default=20, metavar="N", help="rows to print (default 20)")

    st = sub.add_parser("state", parents=[common], help="show a stream's checkpoint state (its stateLocation)")
    st.add_argument("location", metavar="STATE_LOCATION")
    st.add_argument("--limit", type=_count, metavar="N", help="show only the first N planned splits")

    dm = sub.add_parser("demo", parents=[common],
                        help="stream a live table with local Spark while a load generator writes it")
    dm.add_argument("--commits", type=_count, default=12, metavar="N", help="commits to write (default 12)")
    dm.add_argument("--keys", type=_count, default=400, metavar="N", help="distinct record keys (default 400)")
    return p


def _run(args: argparse.Namespace) -> None:
    if args.command == "inspect":
        target = args.target
        if len(target) == 2 and target[0] == "log":
            if args.instants_only or args.limit is not None:
                raise OptionError("--instants-only and --limit apply to tables, not to 'inspect log'")
            inspect_log(target[1], records=args.records)
        elif len(target) == 1:
            if args.records:
                raise OptionError("--records applies to 'inspect log FILE'")
            inspect_table(target[0], limit=args.limit, instants_only=args.instants_only)
        else:
            raise OptionError("inspect takes TABLE_URL, or 'log' and one FILE")
    elif args.command == "read":
        columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
        read(args.table_url, columns=columns, as_of=args.as_of, start=args.start, end=args.end, limit=args.limit)
    elif args.command == "state":
        show_state(args.location, limit=args.limit)
    elif args.command == "demo":
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
