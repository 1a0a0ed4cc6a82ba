"""Vectors in pgvector's binary wire format, for binary COPY: packed in one numpy pass and
sent as they are."""

from __future__ import annotations

from typing import Any

import numpy as np
from psycopg.adapt import Dumper
from psycopg.pq import Format


class PackedVector(bytes):
    """A vector already in pgvector's binary wire format (dims, unused, big-endian f4)."""


def packed_vectors(matrix: np.ndarray) -> list[PackedVector]:
    """All rows of ``matrix`` in pgvector's binary format, converted in one numpy pass."""
    rows, dims = matrix.shape
    packed = np.empty((rows, 4 + 4 * dims), dtype=np.uint8)
    packed[:, :4] = np.frombuffer(np.array([dims, 0], dtype=">u2").tobytes(), dtype=np.uint8)
    packed[:, 4:] = np.ascontiguousarray(matrix, dtype=">f4").view(np.uint8).reshape(rows, -1)
    return [PackedVector(row.tobytes()) for row in packed]


def packed_dumper(oid: int) -> type[Dumper]:
    """A binary dumper for the ``vector`` oid that sends packed vectors as they are (COPY
    with ``set_types`` looks dumpers up by oid)."""

    class PackedVectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return obj

    PackedVectorDumper.oid = oid
    return PackedVectorDumper
