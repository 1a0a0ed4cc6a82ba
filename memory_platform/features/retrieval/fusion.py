"""Reciprocal-rank fusion: how one rank in one ranking counts when rankings are merged.

``1 / (RRF_K + rank)`` (rank 1 is the best). ``RRF_K`` damps the difference between the top
ranks, so an item found by several rankings beats one found first by a single ranking.
"""

from __future__ import annotations

RRF_K = 60


def reciprocal_rank(rank: int) -> float:
    """The fusion score of one item at ``rank`` (from 1) in one ranking."""
    return 1.0 / (RRF_K + rank)
