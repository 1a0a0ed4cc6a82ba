"""What a search score means, and what makes ``minScore`` mean it.

The ranking of one search fuses scores normalised *within* that search (retrieval/search.py:
the min-max scaled similarity, the keyword rank divided by the best), which orders its
candidates well but says nothing across searches: the best hit of a question the memories
cannot answer would score as high as the best hit of one they answer well. So every score a
search returns is its fused ranking score times the search's **confidence**:

* a candidate's **evidence** is measured on a scale that is the same for every search: its
  similarity placed between the similarity unrelated texts reach with the embedding model
  and the similarity of a clear match (the model's ``similarity_scale``; a conversation
  turn's mixed with its context vector's), and the share of the question's words (weighed by
  rarity) it contains, fused with the ranking's weights;
* the search's **strength** is its best candidate's evidence, and its **confidence**
  rises from 0 at :data:`CONFIDENT_FROM` to 1 at :data:`CONFIDENT_AT` of strength.

A search whose best candidate is a clear match keeps its scores as ranked (confidence 1); a
search about something the memories never mention scores near 0, below the default
``minScore`` (0.12), so it answers nothing. The order within a search never changes. Chosen on
LoCoMo with e5-small on every other question and checked on the rest (docs/retrieval-scores.md):
of the held-out questions asked as another conversation's user, 93% get nothing above 0.12,
while on-topic recall@10 moves by 0.003. A model without a measured scale
(``similarity_scale`` None, and no ``MEMORY_RETRIEVAL_SIMILARITY_SCALE``) keeps the relative
scores: confidence 1.
"""

from __future__ import annotations

from collections.abc import Sequence

CONFIDENT_FROM = 0.44
CONFIDENT_AT = 0.64


def calibrated_similarity(similarity: float, scale: Sequence[float]) -> float:
    """``similarity`` on the model's scale: 0 at or below what unrelated texts reach, 1 at or
    above a clear match."""
    unrelated, clear = scale
    return min(1.0, max(0.0, (similarity - unrelated) / (clear - unrelated)))


def evidence(similarity: float | None, matched: float, vector_weight: float,
             keyword_weight: float, scale: Sequence[float]) -> float:
    """A candidate's evidence on the absolute scale (0-1): its calibrated similarity and the
    share of the question's words it contains, fused with the ranking's weights."""
    vector = calibrated_similarity(similarity, scale) if similarity is not None else 0.0
    return vector_weight * vector + keyword_weight * matched


def confidence(strength: float) -> float:
    """How far a search's best evidence ``strength`` goes toward a clear answer (0-1)."""
    return min(1.0, max(0.0, (strength - CONFIDENT_FROM) / (CONFIDENT_AT - CONFIDENT_FROM)))
