"""Decoded Avro values held against the bytes they were read from: the proof that a decode read the bytes as
written.

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

:func:`check_records` proves that without encoding anything. The size of a value's encoding follows from
the value, so the decoded values lay themselves out over the block (each starts where the one before it
ends), and each value is compared in place with the bytes at its position: a varint with the shortest
encoding of the number, a union index with the branch the value is in, a double bit for bit, and the bytes
of strings, bytes and fixed values by Arrow. It reads only those bytes, field by field with numpy, where
encoding the records again would assemble every byte of the block once per field and cost several times
the decode it checks.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["NotCanonical", "check_records", "named_types"]

_VARINT_LIMITS = np.left_shift(np.uint64(1), np.arange(7, 64, 7, dtype=np.uint64))  # z < 2**(7k): k bytes
_LOW_BYTES = np.array([(1 << 8 * k) - 1 for k in range(9)], np.uint64)  # [k]: the k low bytes of a uint64
_CONTINUATION_BITS = np.uint64(0x8080808080808080)
_FLOATS: dict[str, tuple[pa.DataType, np.dtype]] = {"float": (pa.float32(), np.dtype("<f4")),
                                                     "double": (pa.float64(), np.dtype("<f8"))}
_INT_TYPES = {"int": pa.int32(), "long": pa.int64()}
_MAX_OFFSET = 2**31 - 1  # Arrow's binary offsets are int32


class NotCanonical(Exception):
    """The values are not proven to be the reading of the bytes (one is not what the bytes at its position
    say, a null where the schema has none, an enum symbol not in the schema); the message says which."""


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


def check_records(columns: list[pa.Array], fields: list[Any], named: dict[str, dict], payload: memoryview,
                  starts: np.ndarray) -> np.ndarray:
    """How many bytes the values of each row take where the row starts, having proven that they are those
    bytes; :class:`NotCanonical` where a value is not.

    ``columns`` hold one array per record field, of the decode schema types ``fields``; row ``i`` starts at
    byte ``starts[i]`` of ``payload``. That the sizes are the record lengths is left to the caller: it proves
    that no byte of a record is left over or belongs to the next record.
    """
    proof = _Proof(payload, named)
    ends = np.array(starts, np.int64)
    for column, node in zip(columns, fields):
        ends += proof.walk(column, node, ends)
    return ends - starts


class _Proof:
    """The walk over the values of one block.

    :meth:`walk` returns the encoded size of each value and, given where each value starts, compares it
    with the bytes there. The items of an array are walked twice: once without positions, for their sizes,
    which place them; then at their places.
    """

    def __init__(self, payload: memoryview, named: dict[str, dict]):
        self._named = named
        self._buffer = pa.py_buffer(payload)
        self._bytes = np.frombuffer(payload, np.uint8)
        self._size = len(self._bytes)
        # The last bytes again, with zeros after them: reads near or past the end go there.
        self._tail_start = max(0, self._size - 8)
        self._tail = np.concatenate([self._bytes[self._tail_start:], np.zeros(16, np.uint8)])

    def walk(self, array: pa.Array, node: Any, starts: np.ndarray | None) -> np.ndarray:
        """Size of each element of ``array`` (all present: no row of it is below a null) as Avro ``node``,
        proven to be the bytes at ``starts`` (None: sizes only)."""
        if isinstance(node, str) and node in self._named:
            node = self._named[node]
        if isinstance(node, list):
            return self._union(array, node, starts)
        kind = node if isinstance(node, str) else node["type"]
        if kind == "null":
            return np.zeros(len(array), np.int64)
        if array.null_count:
            raise NotCanonical(f"a null among {kind} values that cannot be null")
        if kind == "boolean":
            if starts is not None:
                values = array.to_numpy(zero_copy_only=False).view(np.uint8)
                self._expect(self._read(starts, 1) == values, starts, "a boolean byte other than 0 or 1")
            return np.ones(len(array), np.int64)
        if kind in _INT_TYPES:  # also the raw ints of dates, times and timestamps (the decode schema drops those)
            int_type = _INT_TYPES[kind]
            return self._varints((array if array.type == int_type else array.view(int_type)).to_numpy(), starts)
        if kind in _FLOATS:  # compared bit for bit: every NaN as it is
            arrow_type, little_endian = _FLOATS[kind]
            width = little_endian.itemsize
            bits = array.cast(arrow_type).to_numpy().astype(little_endian, copy=False).view(f"<u{width}")
            if kind == "float" and _signalling_nan(bits).any():
                raise NotCanonical("a signalling NaN float, which no writer makes (any float conversion quiets it, "
                                   "so it cannot be read back as it is)")
            if starts is not None:
                self._expect(self._read(starts, width) == bits, starts, f"another {kind}")
            return np.full(len(array), width, np.int64)
        if kind in ("bytes", "string"):
            lengths = pc.binary_length(array).to_numpy().astype(np.int64)
            length_sizes = self._varints(lengths, starts)
            if starts is not None:
                self._contents(array, starts + length_sizes, lengths)
            return length_sizes + lengths
        if kind == "fixed":
            lengths = pc.binary_length(array).to_numpy().astype(np.int64)
            if (lengths != node["size"]).any():
                raise NotCanonical(f"a fixed({node['size']}) value of another size")
            if starts is not None:
                self._contents(array, starts, lengths)
            return lengths
        if kind == "enum":
            indices = pc.index_in(array, value_set=pa.array(node["symbols"], pa.string()))
            if indices.null_count:
                raise NotCanonical("an enum symbol the schema does not have")
            return self._varints(indices.to_numpy(), starts)
        if kind == "record":
            sizes = np.zeros(len(array), np.int64)
            for i, field in enumerate(node["fields"]):
                sizes += self.walk(array.field(i), field["type"], None if starts is None else starts + sizes)
            return sizes
        if kind == "array":
            return self._array(array, node["items"], starts)
        raise NotCanonical(f"no rule for Avro type {kind!r}")

    def _union(self, array: pa.Array, branches: list, starts: np.ndarray | None) -> np.ndarray:
        """``["null", T]``, ``[T, "null"]`` or ``[T]``: the index of the value's branch (one byte, as there are
        at most two), then the value."""
        value_branch = next((i for i, b in enumerate(branches) if b != "null"), None)
        if value_branch is None:  # ["null"]: the index 0 alone
            if starts is not None:
                self._expect(self._read(starts, 1) == 0, starts, "a union index out of range")
            return np.ones(len(array), np.int64)
        if not array.null_count:  # the common case, spared the filtering
            if starts is None:
                return 1 + self.walk(array, branches[value_branch], None)
            self._expect(self._read(starts, 1) == 2 * value_branch, starts, "another union index")
            return 1 + self.walk(array, branches[value_branch], starts + 1)
        if len(branches) == 1:
            raise NotCanonical(f"a null among {branches} values")
        present = array.is_valid().to_numpy(zero_copy_only=False)
        sizes = np.ones(len(array), np.int64)
        if starts is None:
            sizes[present] += self.walk(array.filter(present), branches[value_branch], None)
            return sizes
        index = np.where(present, 2 * value_branch, 2 * (1 - value_branch))  # the zig-zag varints of 0 and 1
        self._expect(self._read(starts, 1) == index, starts, "another union index")
        sizes[present] += self.walk(array.filter(present), branches[value_branch], starts[present] + 1)
        return sizes

    def _array(self, array: pa.Array, items: Any, starts: np.ndarray | None) -> np.ndarray:
        """One block of all items (its count, the items, a terminating 0) or, for an empty array, just 0."""
        offsets = array.offsets.to_numpy().astype(np.int64)
        counts = np.diff(offsets)
        count_sizes = self._varints(counts, starts)
        values = array.flatten()
        item_ends = np.concatenate([[0], np.cumsum(self.walk(values, items, None))])
        first = offsets - offsets[0]
        block_sizes = item_ends[first[1:]] - item_ends[first[:-1]]
        nonempty = counts > 0
        if starts is not None:
            block_starts = starts + count_sizes
            self.walk(values, items, np.repeat(block_starts - item_ends[first[:-1]], counts) + item_ends[:-1])
            ends = (block_starts + block_sizes)[nonempty]
            self._expect(self._read(ends, 1) == 0, ends, "an array block not ended by 0")
        return count_sizes + block_sizes + nonempty

    def _varints(self, values: np.ndarray, starts: np.ndarray | None) -> np.ndarray:
        """Size of each value's zig-zag varint in its shortest form, the one every writer emits, proven to be
        the bytes at ``starts``."""
        signed = values.astype(np.int64, copy=False)
        zigzag = ((signed << 1) ^ (signed >> 63)).view(np.uint64)
        if not len(values) or int(zigzag.max()) < 0x80:  # one byte each: most lengths and counts
            if starts is not None:
                self._expect(self._read(starts, 1) == zigzag, starts, "a number not in the shortest varint")
            return np.ones(len(values), np.int64)
        sizes = 1 + np.searchsorted(_VARINT_LIMITS, zigzag, side="right").astype(np.int64)
        if starts is None:
            return sizes
        width = int(sizes.max())
        low = zigzag & np.uint64(0x7F)  # bytes 0..7: seven bits each, the high bit set on all but the last
        for k in range(1, min(width, 8)):
            low |= ((zigzag >> np.uint64(7 * k)) & np.uint64(0x7F)) << np.uint64(8 * k)
        low |= _LOW_BYTES[np.minimum(sizes - 1, 8)] & _CONTINUATION_BITS
        same = (self._read(starts, 8) & _LOW_BYTES[np.minimum(sizes, 8)]) == low
        if width > 8:  # bytes 8 and 9 of the longest varints
            long = sizes > 8
            top = zigzag[long] >> np.uint64(56)  # byte 8: bits 56..62 and the continuation bit; byte 9: bit 63
            high = (top & np.uint64(0x7F)) | (top >> np.uint64(7) << np.uint64(8)) | np.where(
                sizes[long] > 9, np.uint64(0x80), np.uint64(0))
            same[long] &= (self._read(starts[long] + 8, 2) & _LOW_BYTES[sizes[long] - 8]) == high
        self._expect(same, starts, "a number not in the shortest varint")
        return sizes

    def _contents(self, array: pa.Array, starts: np.ndarray, lengths: np.ndarray) -> None:
        """That the bytes of each string, bytes or fixed value are the ``lengths`` bytes at ``starts``.

        Arrow compares them: the values at ``starts`` are every other value of a binary array over the block
        (the others are the bytes between them), which Arrow takes out and compares with ``array``."""
        if not len(array):
            return
        ends = starts + lengths
        # the offsets of a valid binary array: inside the block, in order (values of later rows come later)
        if starts[0] < 0 or ends[-1] > self._size or (starts[1:] < ends[:-1]).any():
            raise NotCanonical("string, bytes or fixed values overlapping or running past the end of the block")
        if self._size > _MAX_OFFSET:
            raise NotCanonical("a block too large for Arrow's binary offsets (no Java writer makes one)")
        offsets = np.empty(2 * len(array), np.int32)
        offsets[0::2] = starts
        offsets[1::2] = ends
        spans = pa.Array.from_buffers(pa.binary(), 2 * len(array) - 1, [None, pa.py_buffer(offsets), self._buffer])
        actual = array if array.type == pa.binary() else array.cast(pa.binary())
        if not actual.equals(spans.take(np.arange(0, len(spans), 2))):
            raise NotCanonical("a string, bytes or fixed value other than the bytes at its position")

    def _read(self, positions: np.ndarray, width: int) -> np.ndarray:
        """The ``width`` (1, 2, 4 or 8) bytes at each position, as a little-endian unsigned int; bytes past the
        end of the block read as 0."""
        if width == 1 and (not len(positions) or int(positions.max()) < self._size):
            return self._bytes[positions]
        dtype = np.dtype(f"<u{width}")
        whole = self._size - width + 1  # positions whose bytes are all in the block
        if len(positions) and 0 < whole and int(positions.max()) < whole:
            return _unaligned(self._bytes, dtype, whole)[positions]
        near_end = positions >= whole
        out = np.empty(len(positions), dtype)
        if whole > 0:
            out[~near_end] = _unaligned(self._bytes, dtype, whole)[positions[~near_end]]
        tail = _unaligned(self._tail, dtype, len(self._tail) - width + 1)
        out[near_end] = tail[np.minimum(positions[near_end], self._size) - self._tail_start]
        return out

    def _expect(self, same: np.ndarray, starts: np.ndarray, what: str) -> None:
        if not same.all():
            raise NotCanonical(f"{what} at byte {int(starts[np.argmin(same)])} of the block")


def _unaligned(data: np.ndarray, dtype: np.dtype, count: int) -> np.ndarray:
    """``dtype`` values starting at each of the first ``count`` bytes of ``data`` (overlapping, unaligned)."""
    return np.ndarray((count,), dtype, buffer=data, strides=(1,))


def _signalling_nan(bits: np.ndarray) -> np.ndarray:
    """float32 bit patterns of signalling NaNs: all exponent bits, a nonzero mantissa without its quiet bit."""
    return ((bits & 0x7F800000) == 0x7F800000) & ((bits & 0x003FFFFF) != 0) & ((bits & 0x00400000) == 0)
