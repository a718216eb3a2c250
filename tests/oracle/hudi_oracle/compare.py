"""Our reads of a table Hudi wrote, step by step, against Hudi's own answers for that step.

Each function returns the differences it found as one line each (an empty list when ours equals Hudi's), so a
test can assert either "none" or exactly the differences listed in ``differences.py``:
- :func:`snapshot_and_incremental`: our snapshot read after every step against Hudi's snapshot query, and our
  incremental read of every range Hudi was asked (each pair of adjacent writes, and wider ranges);
- :func:`stream`: our streaming source on the table revealed step by step, restarted from its state between
  steps; replaying what it delivered (upserts and deletes, and a sink's own rename or drop of a column when the
  table's schema changes) must rebuild Hudi's snapshot after each step;
- :func:`cdc`: on CDC tables, our changelog (before and after images) against Hudi's CDC query.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
from collections import Counter
from pathlib import Path

from oracle.hudi_oracle.fixture import HudiFixture
from oracle.hudi_oracle.matrix import DROPPED, RENAMED
from support.gold import assert_same_rows, read_gold
from support.stream_sim import make_reader, run_batches
from support.verify import apply_upserts, state_differences

from hudi_streaming import read_table
from hudi_streaming.hoodie.table import HudiTable

#: meta columns whose values legitimately differ between a replayed stream and a snapshot: the stream skips
#: compaction and clustering, which move rows to new files without changing them
REWRITTEN_META = ("_hoodie_file_name", "_hoodie_commit_seqno")
#: and on tables with log compaction: it repeats the records of the blocks it compacts under its own instant, which
#: Hudi's snapshot shows as their commit time until a full compaction; the stream delivers each change under the
#: write that made it (the reads compare commit times in full)
LOG_COMPACTED_META = ("_hoodie_commit_time",)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {' | '.join(text[:3])[:400]}" if text else type(exc).__name__


def _without(t, columns: tuple[str, ...]):
    return t.drop_columns([c for c in columns if c in t.column_names])


def snapshot_and_incremental(fx: HudiFixture, table: Path, ignore: tuple[str, ...] = ()) -> list[str]:
    """``ignore``: columns left out on both sides (a listed difference of one column, checked on its own)."""
    out = []
    for k, step in enumerate(fx.steps):
        fx.materialize(k, table)
        for g in step["gold"]:
            if g["kind"] == "cdc":
                continue
            what = f"step {k} {g['kind']} {g['dir'].split('/')[-1]}"
            try:
                if g["kind"] == "snapshot":
                    ours = read_table(str(table))
                else:
                    ours = read_table(str(table), start=g["start"], end=g["end"])
                assert_same_rows(_without(ours, ignore), _without(read_gold(fx.gold(g["dir"])), ignore), what)
            except Exception as exc:  # noqa: BLE001 - every difference is reported, not only the first
                out.append(f"{what}: {_first_line(exc)}")
    return out


def _rows(batches, first: int) -> list[dict]:
    out = []
    for i, b in enumerate(batches, first):
        for r in (b.to_pylist() if b is not None else []):
            r["_batch"] = i
            out.append(r)
    return out


def stream(fx: HudiFixture, table: Path, state: Path, ignore: tuple[str, ...] = (), **options: str) -> list[str]:
    """The stream started at earliest on the table after step 0, stopped and restarted from its state after
    each instant of the later steps; after each step its deliveries must rebuild Hudi's snapshot."""
    out: list[str] = []
    delivered: list[dict] = []
    offset = None
    for k, step in enumerate(fx.steps):
        # within a step of several instants (a write, then its compaction, clean, archive), also stopped and
        # restarted after each instant but the last
        visible = [*range(1, len(fx.new_instants(k)) if k else 1), None]  # None: the whole step
        try:
            for j in visible:
                fx.materialize_between(k, j, table) if j else fx.materialize(k, table)
                reader = make_reader(str(table), str(state), emitDeletes="true", **options)
                batches = run_batches(reader, start=offset)
                offset = reader._last_offset
                delivered += _rows(batches, len(delivered) and delivered[-1]["_batch"] + 1)
        except Exception as exc:  # noqa: BLE001
            out.append(f"step {k} stream: {_first_line(exc)}")
            break
        _alter_sink(delivered, step["step"]["op"])
        snapshot = read_gold(fx.gold(next(g["dir"] for g in step["gold"] if g["kind"] == "snapshot")))
        meta = REWRITTEN_META + (LOG_COMPACTED_META if "log_compact" in fx.manifest["config"]["services"] else ())
        config = HudiTable(str(table)).config
        keys = None if config.populate_meta_fields else config.record_key_fields  # no _hoodie_record_key
        diffs = state_differences(apply_upserts(delivered, keys), snapshot, ignore=meta + ignore, key_fields=keys)
        if diffs:
            out.append(f"step {k} stream replay: {len(diffs)} keys differ, e.g. {diffs[0][:300]}")
    return out


def _alter_sink(rows: list[dict], op: str) -> None:
    """What a sink does when the table's schema changes under the stream: the rows it holds are renamed or lose
    the dropped column like the table's (the stream delivers each row as it was written; a restarted query
    delivers the new schema from then on)."""
    for r in rows:
        if op == "evolve:rename_column" and RENAMED[0] in r:
            r[RENAMED[1]] = r.pop(RENAMED[0])
        elif op == "evolve:drop_column":
            r.pop(DROPPED, None)


def _plain(v):
    """A value as Hudi's CDC JSON writes it."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    return v


def _image(values: dict | None) -> str | None:
    if values is None:
        return None
    # Hudi's JSON leaves out null fields
    return json.dumps({k: _plain(v) for k, v in values.items() if v is not None and not k.startswith("_hoodie_")
                       and k not in ("_change_type", "_commit_version", "_commit_timestamp", "_batch")}, sort_keys=True)


def cdc(fx: HudiFixture, table: Path, work: Path) -> list[str]:
    """Per step: Hudi's CDC rows (op, instant, before, after) against ours from readMode=changelog."""
    out = []
    for k, step in enumerate(fx.steps):
        gold = [g for g in step["gold"] if g["kind"] == "cdc"]
        if not gold:
            continue
        fx.materialize(k, table)
        g = gold[0]
        hudi = Counter()
        for r in read_gold(fx.gold(g["dir"])).to_pylist():
            before = json.loads(r["before"]) if r["before"] else None
            after = json.loads(r["after"]) if r["after"] else None
            hudi[(r["op"], r["ts_ms"], _image(before), _image(after))] += 1
        start = {"startingInstant": "earliest"} if g["start"] == "000" else \
            {"hoodie.datasource.read.begin.instanttime": g["start"]}
        try:
            reader = make_reader(str(table), str(work / f"cdc_state_{k}"), readMode="changelog", emitDeletes="true",
                                 endingInstant=g["end"], **start)
            rows = _rows(run_batches(reader), 0)
        except Exception as exc:  # noqa: BLE001
            out.append(f"step {k} cdc: {_first_line(exc)}")
            continue
        ours: Counter = Counter()
        pre = {(r["_hoodie_record_key"], r["_hoodie_commit_time"]): r for r in rows
               if r["_change_type"] == "update_preimage"}
        for r in rows:
            t, key = r["_change_type"], (r["_hoodie_record_key"], r["_hoodie_commit_time"])
            if t == "insert":
                ours[("i", r["_hoodie_commit_time"], None, _image(r))] += 1
            elif t == "update_postimage":
                ours[("u", r["_hoodie_commit_time"], _image(pre.get(key)), _image(r))] += 1
            elif t == "delete":
                ours[("d", r["_hoodie_commit_time"], _image(r), None)] += 1
        missing, extra = hudi - ours, ours - hudi
        if missing or extra:
            out.append(f"step {k} cdc: {sum(missing.values())} of Hudi's {sum(hudi.values())} changes missing, "
                       f"{sum(extra.values())} extra; e.g. missing {list(missing)[:1]} extra {list(extra)[:1]}")
    return out
