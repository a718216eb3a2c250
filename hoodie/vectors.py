"""Hudi 1.2's VECTOR columns: fixed-size arrays of numbers, stored as one Avro ``fixed`` (a parquet
``FIXED_LEN_BYTE_ARRAY``) of ``dimension`` little-endian values, returned by Hudi's Spark reader as an array of
the element type.

The Avro schema marks them ``{"type": "fixed", "logicalType": "vector", "dimension": 4, "elementType": "FLOAT",
"storageBacking": "FIXED_BYTES", ...}``. Decoders read the bytes (the Avro decoders and the parquet reader know
nothing of vectors); the table's schema types the column as the array, and the slice reader's alignment turns the
bytes into it (:func:`bytes_as_vectors`).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedTableError

#: element type → (Arrow type, the values' NumPy type, little-endian)
ELEMENTS: dict[str, tuple[pa.DataType, np.dtype]] = {
    "FLOAT": (pa.float32(), np.dtype("<f4")), "DOUBLE": (pa.float64(), np.dtype("<f8")),
    "INT8": (pa.int8(), np.dtype("i1"))}


def _vector_node(node: object) -> dict | None:
    """The vector ``fixed`` of an Avro field type (itself or the non-null branch of a union with null)."""
    branches = node if isinstance(node, list) else [node]
    for b in branches:
        if isinstance(b, dict) and b.get("type") == "fixed" and b.get("logicalType") == "vector":
            return b
    return None


def _holds_vector(node: object) -> bool:
    """Whether an Avro type holds a VECTOR anywhere below it."""
    if isinstance(node, list):
        return any(map(_holds_vector, node))
    if isinstance(node, dict):
        return node.get("logicalType") == "vector" or any(map(_holds_vector, node.values()))
    return False


def vector_columns(avro_schema: dict) -> dict[str, pa.DataType]:
    """Top-level VECTOR columns of a record schema → the Arrow array type Hudi returns them as. A vector nested in a
    struct, or of an element type not read here, is refused by name."""
    out: dict[str, pa.DataType] = {}
    for field in avro_schema.get("fields") or []:
        node = _vector_node(field.get("type"))
        if node is not None:
            kind, dimension, size = node.get("elementType"), node.get("dimension"), node.get("size")
            if kind not in ELEMENTS or not isinstance(dimension, int) or size != dimension * ELEMENTS[kind][1].itemsize:
                raise UnsupportedTableError(f"Avro schema: {field.get('name')} is a VECTOR({dimension}) of {kind} in "
                                            f"{size} bytes, which this reader does not read")
            out[field["name"]] = pa.list_(pa.field("element", ELEMENTS[kind][0], nullable=False))
        elif _holds_vector(field.get("type")):
            raise UnsupportedTableError(f"Avro schema: {field.get('name')} holds a VECTOR below its top level, which "
                                        "this reader does not read")
    return out


def with_vectors(schema: pa.Schema, avro_schema: dict) -> pa.Schema:
    """``schema`` (:func:`~.logfile.avro_arrow.arrow_schema_from_avro` of ``avro_schema``) with its VECTOR columns
    typed as the arrays they are read as."""
    vectors = vector_columns(avro_schema)
    return pa.schema([f.with_type(vectors[f.name]) if f.name in vectors else f for f in schema]) if vectors else schema


def is_vector_cast(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether ``source`` holds the bytes of vectors of ``target`` (an array of a VECTOR element type)."""
    return ((pa.types.is_binary(source) or pa.types.is_fixed_size_binary(source)) and pa.types.is_list(target)
            and any(target.value_type == t for t, _ in ELEMENTS.values()))


def bytes_as_vectors(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """Each value's bytes as the array of numbers they encode (nulls stay null)."""
    dtype = next(d for t, d in ELEMENTS.values() if t == target.value_type)
    chunks = []
    for chunk in col.chunks:
        values = chunk.cast(pa.binary())
        lengths = np.asarray(pc.binary_length(values).fill_null(0), dtype=np.int64)
        if (lengths % dtype.itemsize).any():
            raise UnsupportedTableError(f"a VECTOR of {target.value_type} holds a value of "
                                        f"{int(lengths[(lengths % dtype.itemsize) != 0][0])} bytes")
        data = b"".join(v for v in values.to_pylist() if v is not None)
        flat = pa.array(np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("=")), target.value_type)
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths // dtype.itemsize)]).astype(np.int32))
        chunks.append(pa.ListArray.from_arrays(offsets, flat, type=target, mask=values.is_null()))
    return pa.chunked_array(chunks, target)
