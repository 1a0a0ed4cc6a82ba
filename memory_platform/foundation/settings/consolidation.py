"""Consolidation (consolidation/): which assertion and entity pairs are judged, how many per
run, and when an unsupported claim or edge is stale."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ConsolidationSettings(BaseModel):
    """The consolidation sweep."""

    consolidation_max_pairs_per_batch: int = Field(8, ge=1, le=8, description="Assertion "
                                                   "pairs per strict-JSON judge request.")
    consolidation_similarity_threshold: float = Field(
        0.85, ge=0.0, le=1.0, description="Cosine similarity of two assertions' vectors "
        "(active generation) from which a same-slot pair is judged.")
    consolidation_max_pairs: int = Field(
        64, ge=1, description="Most assertion pairs judged per partition and run.")
    consolidation_entity_similarity_threshold: float = Field(
        0.92, ge=0.0, le=1.0, description="Cosine similarity of two same-type entities' "
        "vectors from which the model is asked whether they are one.")
    consolidation_max_entity_pairs: int = Field(
        32, ge=1, description="Most entity pairs of the vector merge pass per partition.")
    consolidation_stale_days: float = Field(
        90.0, gt=0.0, description="Active claims and edges untouched this long and without "
        "a currently supported ref are superseded (stale pruning).")
    consolidation_sweep_partitions: int = Field(
        5, ge=0, description="Quiet partitions a consolidation sweep takes besides the "
        "fresh ones (the most recently updated eligible ones).")
