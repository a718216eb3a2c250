"""Filters pushed into reads: one small model of predicates, what it can skip, and what it leaves to the rows.

Readers get predicates in three shapes: pyarrow's DNF (``[[("col", "=", v), ...], ...]``, what ``read_table`` and
``read_changes`` take after pyarrow and delta-rs), a ``pyarrow.compute.Expression`` (read from its text where it
has the forms DNF and plain comparisons make; pyarrow has no other public view of one) and Spark's pushed
filters (``streaming.source``). All become one :data:`Filter` tree, which decides two things without reading a
row:

* **partition pruning** (:class:`PartitionPruner`): whether a partition may hold a matching row, from its path's
  values; exact for ``=``, ``IN``, ranges, ``IS NULL`` (Hudi writes a null or empty value as
  ``__HIVE_DEFAULT_PARTITION__``) and AND/OR/NOT of them;
* **file skipping** (:func:`stats_may_match`): whether a file may hold one, from per-file column min/max/null
  counts (Hudi's metadata table keeps them in its ``column_stats`` partition).

A pushed filter never changes a result: it only skips what cannot match. So every decision is "may match"
unless proven otherwise, anything the model cannot decide keeps the partition or file, and the evaluation is
three-valued, as SQL's and pyarrow's are (a row whose predicate is null is filtered out). Where Spark's SQL and
pyarrow disagree (``NOT IN`` on a null value: null for SQL, true for pyarrow) both outcomes are kept possible.
"""
from __future__ import annotations

import datetime
import decimal
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import OptionError
from .table import HIVE_DEFAULT_PARTITION, HudiTable

#: the leaf operators: pyarrow DNF's, plus SQL's null tests, null-safe equality and Spark's string matches
OPS = frozenset({"=", "!=", "<", "<=", ">", ">=", "in", "not in", "is_null", "not_null", "<=>", "starts_with",
                 "ends_with", "contains"})
_NEGATED = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">", "in": "not in", "not in": "in",
            "is_null": "not_null", "not_null": "is_null"}


@dataclass(frozen=True)
class Compare:
    """``column op value``; ``value`` is a tuple for ``in``/``not in`` and unused by the null tests."""

    column: str
    op: str
    value: Any = None


@dataclass(frozen=True)
class And:
    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class Not:
    """Kept only where the negation cannot move into the leaf (``<=>``, the string matches)."""

    part: Filter


Filter = Union[Compare, And, Or, Not]

#: the outcomes a predicate may have over some rows: True, False and None (SQL's null)
Outcomes = frozenset
ALL: Outcomes = frozenset({True, False, None})


def negate(f: Filter) -> Filter:
    """NOT ``f`` pushed into the leaves (De Morgan holds in three-valued logic, and so does ``NOT a < b`` ⇔
    ``a >= b``: both are null exactly when a side is null)."""
    if isinstance(f, And):
        return Or(tuple(negate(p) for p in f.parts))
    if isinstance(f, Or):
        return And(tuple(negate(p) for p in f.parts))
    if isinstance(f, Not):
        return f.part
    if f.op in _NEGATED:
        return Compare(f.column, _NEGATED[f.op], f.value)
    return Not(f)


def columns_of(f: Filter) -> set[str]:
    if isinstance(f, Compare):
        return {f.column}
    if isinstance(f, Not):
        return columns_of(f.part)
    return set().union(*(columns_of(p) for p in f.parts))


# -- three-valued logic ----------------------------------------------------------------------------------------
def _and3(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or3(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _combine(parts: Iterable[Outcomes], op: Callable[[bool | None, bool | None], bool | None],
             unit: bool) -> Outcomes:
    acc: Outcomes = frozenset({unit})
    for p in parts:
        acc = frozenset(op(a, b) for a in acc for b in p)
    return acc


def evaluate(f: Filter, leaf: Callable[[Compare], Outcomes]) -> Outcomes:
    """The outcomes ``f`` may have, given those of its leaves."""
    if isinstance(f, Compare):
        return leaf(f)
    if isinstance(f, Not):
        return frozenset(None if o is None else not o for o in evaluate(f.part, leaf))
    if isinstance(f, And):
        return _combine((evaluate(p, leaf) for p in f.parts), _and3, True)
    return _combine((evaluate(p, leaf) for p in f.parts), _or3, False)


def _family(v: Any) -> str | None:
    """Values of one family compare as the engines compare them; across families nothing is decided (Python's
    ``1 == "1"`` and a zone-less datetime's ``==`` with a zoned one are False where an engine would cast or
    refuse; a float and a decimal compare exactly in Python, not as an engine casts them)."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return None if math.isnan(v) else "float"  # NaN orders differently in Spark and pyarrow
    if isinstance(v, decimal.Decimal):
        return None if v.is_nan() else "decimal"
    if isinstance(v, datetime.datetime):
        return "datetime" if v.tzinfo is None else "zoned datetime"
    for t in (datetime.date, str, bytes):
        if isinstance(v, t):
            return t.__name__
    return None


def _comparable(a: Any, b: Any) -> bool:
    fa, fb = _family(a), _family(b)
    return fa is not None and fb is not None and (fa == fb or {fa, fb} in ({"int", "float"}, {"int", "decimal"}))


def value_outcomes(c: Compare, v: Any) -> Outcomes:
    """The outcomes of leaf ``c`` on the one value ``v`` (None: null)."""
    op, x = c.op, c.value
    if op == "is_null":
        return frozenset({v is None})
    if op == "not_null":
        return frozenset({v is not None})
    if op == "<=>":
        if v is None or x is None:
            return frozenset({v is None and x is None})
        return frozenset({v == x}) if _comparable(v, x) else ALL
    if op in ("in", "not in"):
        values = tuple(x)
        if v is None:  # SQL: null; pyarrow's is_in matches a null only to a null in the set
            hit = None in values
            return frozenset({None, hit if op == "in" else not hit})
        known = [y for y in values if y is not None]
        if not all(_comparable(v, y) for y in known):
            return ALL
        if v in known:
            return frozenset({op == "in"})
        miss = op == "not in"
        return frozenset({None, miss}) if None in values else frozenset({miss})  # SQL: null, pyarrow: the miss
    if v is None or x is None:
        return frozenset({None})
    if op in ("starts_with", "ends_with", "contains"):
        if not (isinstance(v, str) and isinstance(x, str)):
            return ALL
        return frozenset({v.startswith(x) if op == "starts_with" else v.endswith(x) if op == "ends_with"
                          else x in v})
    if not _comparable(v, x):
        return ALL
    try:
        return frozenset({_compare(op, v, x)})
    except TypeError:  # e.g. a zone-less and a zoned datetime
        return ALL


def _compare(op: str, v: Any, x: Any) -> bool:
    return {"=": v == x, "!=": v != x, "<": v < x, "<=": v <= x, ">": v > x, ">=": v >= x}[op]


# -- partition pruning -----------------------------------------------------------------------------------------
#: key generators whose partition path holds each partition column's value as written, not a formatting of it
_VALUE_KEY_GENERATORS = frozenset({"SIMPLE", "COMPLEX", "SimpleKeyGenerator", "ComplexKeyGenerator",
                                   "SimpleAvroKeyGenerator", "ComplexAvroKeyGenerator"})
_CUSTOM_KEY_GENERATORS = frozenset({"CUSTOM", "CUSTOM_AVRO", "CustomKeyGenerator", "CustomAvroKeyGenerator"})


def value_partition_columns(table: HudiTable) -> list[str]:
    """The partition fields whose path value is the column's value (Simple/Complex key generators, a Custom
    one's ``field:simple``). A timestamp key generator's path (``2024/01/01`` for an epoch-millis column) is a
    formatting that ``=`` or a range cannot be checked against, and an unrecorded or user-written key generator
    may format values any way: their fields prune nothing. Neither does the field of slash-separated date
    partitioning (Hudi 1.2: ``yyyy-MM-dd`` written as the path ``yyyy/MM/dd``, known to readers by its
    partition value extractor)."""
    cfg = table.config
    if cfg.raw.get("hoodie.table.partition_extractor_class", "").endswith("SlashEncodedDayPartitionValueExtractor"):
        return []
    kind = (cfg.key_generator or "").rsplit(".", 1)[-1]
    if kind in _VALUE_KEY_GENERATORS:
        return list(cfg.partition_fields)
    if kind in _CUSTOM_KEY_GENERATORS:
        spec = cfg.raw.get("hoodie.table.partition.fields", "")
        typed = [f.strip().split(":", 1) for f in spec.split(",") if f.strip()]
        return [t[0] for t in typed if len(t) == 2 and t[1].strip().upper() == "SIMPLE"]
    return []


class PartitionPruner:
    """Which partitions of ``table`` may hold rows matching ``filter``: the filter is evaluated on each
    partition's values, cast to the columns' types as readers fill them, every other column unknown."""

    def __init__(self, table: HudiTable, filter: Filter, schema: pa.Schema | None = None):
        self.table, self.filter = table, filter
        schema = schema if schema is not None else table.arrow_schema()
        self.types = {c: schema.field(c).type for c in value_partition_columns(table) if c in schema.names}
        self.used = bool(self.types.keys() & columns_of(filter))

    def _values(self, partition: str) -> dict[str, tuple[Any, ...]] | None:
        """Each value partition column's possible values in ``partition``, or None when its path is not one
        level per field (a value that spans levels is a formatting, see :meth:`HudiTable.partition_values`)."""
        fields = self.table.config.partition_fields
        if not self.table.config.hive_style_partitioning and len(partition.split("/")) != len(fields):
            return None
        out = {}
        for name, text in self.table.partition_values(partition).items():
            if name not in self.types:
                continue
            ftype = self.types[name]
            if text == HIVE_DEFAULT_PARTITION:
                out[name] = (None, "") if pa.types.is_string(ftype) or pa.types.is_large_string(ftype) else (None,)
                continue
            try:
                out[name] = (pa.scalar(text, pa.string()).cast(ftype).as_py(),)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                continue  # not decidable from the path: the column stays unknown
        return out

    def outcomes(self, partition: str) -> Outcomes:
        """The outcomes the filter may have on ``partition``'s rows."""
        values = self._values(partition) if self.used else None
        if values is None:
            return ALL

        def leaf(c: Compare) -> Outcomes:
            if c.column not in values:
                return ALL
            return frozenset().union(*(value_outcomes(c, v) for v in values[c.column]))
        return evaluate(self.filter, leaf)

    def may_match(self, partition: str) -> bool:
        return True in self.outcomes(partition)

    def decides(self, partitions: Iterable[str]) -> bool:
        """True when the filter's value on every row of these partitions is known from the partition alone
        (always true, or never): a reader that keeps only the partitions that may match has then applied it."""
        return all(len(self.outcomes(p)) == 1 for p in partitions)


# -- file skipping ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ColumnStats:
    """One column's statistics in one file, as Hudi's ``column_stats`` keeps them; None where not known."""

    min: Any = None
    max: Any = None
    null_count: int | None = None
    value_count: int | None = None


def _stats_leaf(stats: Mapping[str, ColumnStats]) -> Callable[[Compare], Outcomes]:
    """Leaf outcomes over a file's rows from its statistics. Only whether True is possible is worked out; False
    and null are always kept possible, which keeps the answer a safe over-approximation under NOT too."""

    def leaf(c: Compare) -> Outcomes:
        s = stats.get(c.column)
        if s is None:
            return ALL
        all_null = s.value_count is not None and s.null_count is not None and s.null_count >= s.value_count
        if all_null:
            return value_outcomes(c, None)
        if c.op == "is_null":
            return ALL if s.null_count is None or s.null_count > 0 else frozenset({False})
        if c.op in ("not_null", "starts_with", "ends_with", "contains") or s.min is None or s.max is None:
            return ALL
        return ALL if _range_may_hold(c, s.min, s.max) else frozenset({False, None})
    return leaf


def _range_may_hold(c: Compare, lo: Any, hi: Any) -> bool:
    """Whether some value in [lo, hi] may satisfy ``c`` (True when it cannot be told)."""
    op, x = c.op, c.value
    candidates = tuple(x) if op in ("in", "not in") else (x,)
    if any(y is None or not (_comparable(y, lo) and _comparable(y, hi)) for y in candidates):
        return True
    try:
        if op in ("=", "<=>"):
            return bool(lo <= x <= hi)
        if op == "in":
            return any(lo <= y <= hi for y in candidates)
        if op == "!=":
            return not (lo == hi == x)
        if op == "not in":
            return not (lo == hi and lo in candidates)
        return {"<": lo < x, "<=": lo <= x, ">": hi > x, ">=": hi >= x}.get(op, True)
    except TypeError:
        return True


def stats_may_match(f: Filter, stats: Mapping[str, ColumnStats]) -> bool:
    """Whether a file with these column statistics may hold a row matching ``f``."""
    return True in evaluate(f, _stats_leaf(stats))


# -- input forms -----------------------------------------------------------------------------------------------
_DNF_OPS = {"=": "=", "==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "in": "in",
            "not in": "not in"}

DNF = Sequence[Any]
FilterArg = Union[DNF, pc.Expression]


@dataclass(frozen=True)
class PushedFilters:
    """A reader's ``filters=`` argument: the model (None for an Expression it cannot read), and the expression
    that filters the rows."""

    model: Filter | None
    expression: pc.Expression


def _dnf_leaf(item: Any, where: str) -> Compare:
    if not (isinstance(item, (tuple, list)) and len(item) == 3 and isinstance(item[0], str)):
        raise OptionError(f"{where}: filter {item!r} is not a (column, op, value) tuple")
    column, op, value = item
    if op not in _DNF_OPS:
        raise OptionError(f"{where}: filter {item!r}: operator {op!r} is not one of {sorted(_DNF_OPS)}")
    if op in ("in", "not in"):
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise OptionError(f"{where}: filter {item!r}: '{op}' takes a list of values")
        value = tuple(value)
    return Compare(column, _DNF_OPS[op], value)


def from_dnf(filters: DNF, where: str) -> Filter:
    """pyarrow's DNF: a list of (column, op, value) tuples (their AND), or a list of such lists (the OR of their
    ANDs)."""
    if not isinstance(filters, (list, tuple)) or not filters:
        raise OptionError(f"{where}: filters must be a non-empty list of (column, op, value) tuples or of lists "
                          f"of them, or a pyarrow.compute.Expression; got {filters!r}")
    if all(isinstance(f, (list, tuple)) and f and all(isinstance(g, (list, tuple)) for g in f) for f in filters):
        return Or(tuple(And(tuple(_dnf_leaf(g, where) for g in conj)) for conj in filters))
    return And(tuple(_dnf_leaf(f, where) for f in filters))


_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_LITERAL = r'-?\d+(?:\.\d+)?|"[^"\\]*"|true|false'
_EXPR_TOKEN = re.compile(rf"\s*(is_in\(|is_null\(|is_valid\(|invert\(|\(|\)|==|!=|<=|>=|<|>|\band\b|\bor\b|"
                         rf"{_LITERAL}|{_NAME}|, \{{nan_is_null=false\}}|, \{{value_set=\w+:\[|\], "
                         rf"null_matching_behavior=MATCH\}}|,)")
_EXPR_OPS = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _literal(token: str) -> Any:
    if token in ("true", "false"):
        return token == "true"
    if token.startswith('"'):
        return token[1:-1]
    return float(token) if "." in token else int(token)


def _expression_model(expr: pc.Expression) -> Filter | None:
    """The model of an Expression in the forms pyarrow's DNF and plain comparisons make (field op literal,
    ``and``, ``or``, ``invert``, ``is_in``, ``is_null``, ``is_valid``), read from its text, which is pyarrow's
    only public view of it. The reading is trusted only when the model, made into an Expression again, equals
    ``expr`` (literal types included); otherwise None, and the Expression filters rows without pruning."""
    tokens, pos, text = [], 0, str(expr)
    while pos < len(text):
        m = _EXPR_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            return None
        tokens.append(m.group(1))
        pos = m.end()
    at = 0

    def take(*expected: str) -> str:
        nonlocal at
        if at >= len(tokens) or (expected and tokens[at] not in expected):
            raise ValueError(text)
        at += 1
        return tokens[at - 1]

    def name() -> str:
        token = take()
        if not re.fullmatch(_NAME, token) or token in ("and", "or", "true", "false"):
            raise ValueError(text)
        return token

    def value() -> Any:
        token = take()
        return None if token == "null" else _literal(token)

    def node() -> Filter:
        head = take()
        if head == "invert(":
            inner = node()
            take(")")
            return Not(inner)
        if head in ("is_null(", "is_valid("):
            column = name()
            take(", {nan_is_null=false}" if head == "is_null(" else ")")
            if head == "is_null(":
                take(")")
            return Compare(column, "is_null" if head == "is_null(" else "not_null")
        if head == "is_in(":
            column = name()
            if not tokens[at].startswith(", {value_set="):
                raise ValueError(text)
            take()
            values = [value()]
            while tokens[at] == ",":
                take(",")
                values.append(value())
            take("], null_matching_behavior=MATCH}")
            take(")")
            return Compare(column, "in", tuple(values))
        if head != "(":
            raise ValueError(text)
        if tokens[at] in ("(", "invert(", "is_in(", "is_null(", "is_valid("):
            left = node()
            op = take("and", "or")
            right = node()
            take(")")
            return And((left, right)) if op == "and" else Or((left, right))
        column = name()
        op = take(*_EXPR_OPS)
        literal = _literal(take())
        take(")")
        return Compare(column, _EXPR_OPS[op], literal)

    try:
        model = node()
        if at != len(tokens):
            return None
        return model if _to_expression(model).equals(expr) else None
    except (ValueError, IndexError, pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None


def _to_expression(f: Filter) -> pc.Expression:
    if isinstance(f, Not):
        return ~_to_expression(f.part)
    if isinstance(f, (And, Or)):
        left, right = (_to_expression(p) for p in f.parts)
        return left & right if isinstance(f, And) else left | right
    column = pc.field(f.column)
    if f.op == "is_null":
        return column.is_null()
    if f.op == "not_null":
        return column.is_valid()
    if f.op == "in":
        return column.isin(list(f.value))
    return {"=": column == f.value, "!=": column != f.value, "<": column < f.value, "<=": column <= f.value,
            ">": column > f.value, ">=": column >= f.value}[f.op]


def pushed_filters(filters: FilterArg, schema: pa.Schema, where: str) -> PushedFilters:
    """Read a ``filters=`` argument against the rows' schema: unknown columns are refused by name."""
    model = _expression_model(filters) if isinstance(filters, pc.Expression) else from_dnf(filters, where)
    unknown = sorted(columns_of(model) - set(schema.names)) if model is not None else []
    if unknown:
        raise OptionError(f"{where}: filters name {', '.join(unknown)}, not a column of the table (its columns: "
                          f"{', '.join(schema.names)})")
    if isinstance(filters, pc.Expression):
        return PushedFilters(model, filters)
    try:
        import pyarrow.parquet as pq  # here: the schema and planning workers need no parquet reader

        expression = pq.filters_to_expression(filters)
    except (TypeError, ValueError) as exc:
        raise OptionError(f"{where}: filters {filters!r}: {exc}") from None
    return PushedFilters(model, expression)


def filter_rows(rows: pa.Table, pushed: PushedFilters, where: str) -> pa.Table:
    """``rows`` that match, as pyarrow filters them (a null outcome drops the row)."""
    try:
        return rows.filter(pushed.expression)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise OptionError(f"{where}: filters cannot be applied to the rows: {exc}") from None
