"""Decoded Avro values encoded back to Avro binary, vectorized: the proof that a decode read the bytes as written.

Avro binary carries no checksum, and both decoders are lenient where the bytes are not what a writer makes:
polars reads every union index but the null branch's as the value and any boolean byte but 1 as false,
fastavro reads a negative union index from the end of the branch list and any nonzero boolean byte as true,
and neither checks that a record's bytes end where its last value ends. Two lenient decoders disagree on
such bytes, and either may hand out values nobody wrote (a fare of 29.1 read as 3.9e155).

A decode is right exactly when its values encode to the very bytes it read, because the writers of Hudi
log blocks (Java's ``BinaryEncoder`` and fastavro, which this project writes with) produce one encoding of
each value: shortest zig-zag varints, a non-empty array or map as one block of items then 0, an empty one
as 0, the index of the branch the value is in, booleans as 0 or 1. The one exception is a decimal, whose
two's complement may carry sign-extension bytes (fastavro pads -128 to two bytes, Java does not), so decimals
are decoded as their raw bytes (the decode schema drops their logical type) and converted afterwards.

:func:`encode_records` works column by column with numpy on the decoded Arrow arrays, so checking a block
costs a small fraction of decoding it.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["NotCanonical", "binary_parts", "encode_records", "named_types"]

_SHIFTS = np.arange(0, 64, 7, dtype=np.uint64)  # the ten 7-bit groups of a 64-bit varint
_VARINT_LIMITS = np.left_shift(np.uint64(1), _SHIFTS[1:])  # z < 2**(7k): k bytes
_FIXED_WIDTH: dict[str, tuple[pa.DataType, np.dtype]] = {"float": (pa.float32(), np.dtype("<f4")),
                                                          "double": (pa.float64(), np.dtype("<f8"))}
_INT_TYPES = {"int": pa.int32(), "long": pa.int64()}
_EMPTY = np.empty(0, np.uint8)

# One encoded value per row: the bytes of all rows end to end, and how many bytes each row has.
_Rows = tuple[np.ndarray, np.ndarray]


class NotCanonical(Exception):
    """The values cannot be the reading of any bytes (a null where the schema has none, a fixed of another
    size, an enum symbol not in the schema); the message says which."""


def named_types(decode_json: Any) -> dict[str, dict]:
    """Full name -> definition of every record, enum and fixed in a decode schema (references are names)."""
    found: dict[str, dict] = {}

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for branch in node:
                walk(branch)
        elif isinstance(node, dict):
            if "name" in node and node.get("type") in ("record", "enum", "fixed"):
                found[node["name"]] = node
            for field in node.get("fields", ()):
                walk(field["type"])
            walk(node.get("items"))

    walk(decode_json)
    return found


def encode_records(columns: list[pa.Array], fields: list[Any], named: dict[str, dict]) -> _Rows:
    """The Avro binary of each row of ``columns`` (one array per record field, of the decode schema types
    ``fields``), as (bytes end to end, size of each row). Raises :class:`NotCanonical`."""
    return _concat_rows([_encode(column, node, named) for column, node in zip(columns, fields)],
                        len(columns[0]) if columns else 0)


def _encode(array: pa.Array, node: Any, named: dict[str, dict]) -> _Rows:
    """Every element of ``array`` (all present: no row of it is below a null) as Avro ``node``."""
    if isinstance(node, str) and node in named:
        node = named[node]
    if isinstance(node, list):
        return _union(array, node, named)
    kind = node if isinstance(node, str) else node["type"]
    if kind == "null":
        return _EMPTY, np.zeros(len(array), np.int64)
    if array.null_count:
        raise NotCanonical(f"a null among {kind} values that cannot be null")
    if kind == "boolean":
        return array.to_numpy(zero_copy_only=False).astype(np.uint8), np.ones(len(array), np.int64)
    if kind in _INT_TYPES:  # also the raw ints of dates, times and timestamps (the decode schema drops those)
        int_type = _INT_TYPES[kind]
        values = array if array.type == int_type else array.view(int_type)
        return _varints(values.to_numpy())
    if kind in _FIXED_WIDTH:
        arrow_type, little_endian = _FIXED_WIDTH[kind]
        values = array.cast(arrow_type).to_numpy().astype(little_endian, copy=False)
        if kind == "float" and _signalling_nan(values.view(np.uint32)).any():
            raise NotCanonical("a signalling NaN float, which no writer makes (any float conversion quiets it, "
                               "so it cannot be read back as it is)")
        return values.view(np.uint8), np.full(len(array), little_endian.itemsize, np.int64)
    if kind in ("bytes", "string"):
        data, lengths = binary_parts(array)
        return _concat_rows([_varints(lengths), (data, lengths)], len(array))
    if kind == "fixed":
        data, lengths = binary_parts(array)
        if len(lengths) and (lengths != node["size"]).any():
            raise NotCanonical(f"a fixed({node['size']}) value of another size")
        return data, lengths
    if kind == "enum":
        indices = pc.index_in(array, value_set=pa.array(node["symbols"], pa.string()))
        if indices.null_count:
            raise NotCanonical("an enum symbol the schema does not have")
        return _varints(indices.to_numpy())
    if kind == "record":
        return _concat_rows([_encode(array.field(i), field["type"], named) for i, field in enumerate(node["fields"])],
                            len(array))
    if kind == "array":
        return _array(array, node["items"], named)
    raise NotCanonical(f"no encoder for Avro type {kind!r}")


def _signalling_nan(bits: np.ndarray) -> np.ndarray:
    """float32 bit patterns of signalling NaNs: all exponent bits, a nonzero mantissa without its quiet bit."""
    return ((bits & 0x7F800000) == 0x7F800000) & ((bits & 0x003FFFFF) != 0) & ((bits & 0x00400000) == 0)


def _union(array: pa.Array, branches: list, named: dict[str, dict]) -> _Rows:
    """``["null", T]``, ``[T, "null"]`` or ``[T]``: the branch index, then the value of T."""
    value_branch = next((i for i, b in enumerate(branches) if b != "null"), None)
    if value_branch is None:  # ["null"]
        return _concat_rows([_varints(np.zeros(len(array), np.int64)), _encode(array, "null", named)], len(array))
    if len(branches) == 1:
        return _concat_rows([_varints(np.zeros(len(array), np.int64)), _encode(array, branches[0], named)],
                            len(array))
    present = array.is_valid().to_numpy(zero_copy_only=False)
    index = np.where(present, value_branch, 1 - value_branch)
    value_data, value_sizes = _encode(array.filter(present), branches[value_branch], named)
    sizes = np.zeros(len(array), np.int64)
    sizes[present] = value_sizes
    return _concat_rows([_varints(index), (value_data, sizes)], len(array))


def _array(array: pa.Array, items: Any, named: dict[str, dict]) -> _Rows:
    """One block of all items (its count, the items, a terminating 0) or, for an empty array, just 0."""
    offsets = array.offsets.to_numpy().astype(np.int64)
    counts = np.diff(offsets)
    item_data, item_sizes = _encode(array.flatten(), items, named)
    ends = np.concatenate([[0], np.cumsum(item_sizes)])
    first = offsets - offsets[0]
    nonempty = (counts > 0).astype(np.int64)
    return _concat_rows([_varints(counts), (item_data, ends[first[1:]] - ends[first[:-1]]),
                         (np.zeros(int(nonempty.sum()), np.uint8), nonempty)], len(array))


def binary_parts(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of a string or binary array (any layout) end to end, and each value's length."""
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type) or pa.types.is_string_view(array.type):
        array = array.cast(pa.large_string()).view(pa.large_binary())
    else:
        array = array.cast(pa.large_binary())
    offsets = np.frombuffer(array.buffers()[1], np.int64, len(array) + 1, array.offset * 8)
    data = array.buffers()[2]
    values = np.frombuffer(data, np.uint8)[offsets[0]:offsets[-1]] if data is not None else _EMPTY
    return values, np.diff(offsets)


def _varints(values: np.ndarray) -> _Rows:
    """Avro's zig-zag varint of each value, shortest form (what every writer emits)."""
    signed = values.astype(np.int64)
    zigzag = ((signed << 1) ^ (signed >> 63)).view(np.uint64)
    sizes = 1 + np.searchsorted(_VARINT_LIMITS, zigzag, side="right").astype(np.int64)
    width = int(sizes.max()) if len(sizes) else 1
    groups = (zigzag[:, None] >> _SHIFTS[None, :width]) & np.uint64(0x7F)
    position = np.arange(width)[None, :]
    more = (position < sizes[:, None] - 1).astype(np.uint64) << np.uint64(7)
    return (groups | more).astype(np.uint8)[position < sizes[:, None]], sizes


def _concat_rows(parts: list[_Rows], rows: int) -> _Rows:
    """Row ``i`` of the result is row ``i`` of each part, in order."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return _EMPTY, np.zeros(rows, np.int64)
    sizes = np.stack([part_sizes for _, part_sizes in parts], axis=1)
    starts = np.cumsum(sizes.ravel()) - sizes.ravel()  # where each (row, part) chunk goes
    out = np.empty(int(sizes.sum()), np.uint8)
    for i, (data, part_sizes) in enumerate(parts):
        if len(data):
            source_starts = np.cumsum(part_sizes) - part_sizes
            out[np.arange(len(data)) + np.repeat(starts[i::len(parts)] - source_starts, part_sizes)] = data
    return out, sizes.sum(axis=1)
