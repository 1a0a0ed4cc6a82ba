"""The Python half of memory search: a search statement's candidate rows ranked into hits.

retrieval/search.py composes and runs the one statement that finds the candidates and their
raw scores (:class:`Candidate`: one row per candidate chunk); :func:`rank` turns them into the
best ``limit`` :class:`MemoryHit` s: both scores normalised over the candidates and fused
(conversation turns with their own weights, context vector, the share of the question's
words they hold and content prior), times the
search's confidence (retrieval/scores.py), gated by ``minScore``, one hit per memory,
conversation turns taking a share of their session's best score and lending each other
score, then reordered by the subject-ref boost, the feedback multiplier and the time priors
(retrieval/when.py), the last hits spread over sessions the others miss. docs/architecture.md,
"Retrieval" and "Conversational retrieval", tells why; docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from memory_platform.features.retrieval.feedback.ranking import feedback_multiplier
from memory_platform.features.retrieval.scores import confidence, evidence
from memory_platform.features.retrieval.when import Period, states_time
from memory_platform.foundation.language import words
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import SUBJECT_REF_KEYS

SUBJECT_BOOST_PER_MATCH, SUBJECT_BOOST_MAX = 0.1, 1.3


@dataclass(frozen=True)
class MemoryHit:
    chunk_id: int
    memory_id: UUID
    content: str
    score: float
    vector_score: float | None
    keyword_score: float
    visibility_scope: str
    audience_key: str
    memory_scope: str
    source_type: str
    subject_refs: dict[str, Any]
    assertion_id: UUID | None
    provenance: dict[str, Any]
    created_at: datetime
    occurred_at: datetime | None = None  # the event time, when the writer gave one



class Candidate(NamedTuple):
    """A row of the search statement: its SELECT list, in order."""

    chunk_id: int
    memory_id: UUID
    content: str
    similarity: float | None  # raw cosine similarity; None outside the query's generation
    keyword_rank: float  # raw ts_rank
    visibility_scope: str
    audience_key: str
    memory_scope: str
    source_type: str
    subject_refs: str  # JSON text, parsed only for the boost and the returned hits
    assertion_id: UUID | None
    provenance: str | None  # JSON text
    created_at: datetime
    occurred_at: datetime | None
    previous_memory_id: UUID | None  # the turn before, for a conversation turn
    turn: bool  # the first chunk of a conversation turn (it carries a context)
    lexemes: int  # distinct lexemes of the chunk (English and German)
    injected: int  # the assertion's feedback counters (0 without an assertion)
    cited: int
    corrected: int
    matched: float  # share of the question's words it contains (_matched_share)
    context_similarity: float | None = None  # with its context vector (shape.context_vectors)
    around: float | None = None  # with the vectors of the turns around it (shape.neighbours)
    session_key: str | None = None  # the memory's session (a conversation turn's)


def candidate_row(cursor: Any) -> Any:
    """Row factory of the search statement: its rows as :class:`Candidate`."""
    return Candidate._make


def subject_boost(row_refs: Mapping[str, Any], wanted: Mapping[str, str]) -> float:
    """How much more a row counts for naming the subjects the caller names (memories and
    assertions alike): ``SUBJECT_BOOST_PER_MATCH`` per matching key, at most
    ``SUBJECT_BOOST_MAX``."""
    matches = sum(1 for k, v in wanted.items()
                  if k in SUBJECT_REF_KEYS and str(row_refs.get(k)) == str(v))
    return min(SUBJECT_BOOST_MAX, 1 + SUBJECT_BOOST_PER_MATCH * matches)


def about_another_subject(audience_kind: str, row_refs: Mapping[str, Any],
                          wanted: Mapping[str, str]) -> bool:
    """Whether a team row belongs to another subject's conversations: it names a subject
    key the caller names too, with another value (specification: unrelated sessions do not
    see contextual team facts unless their subject refs match). Callers naming no subject,
    rows naming none, private and channel rows (their audience already bounds them) are
    never left out by it."""
    return audience_kind == "team" and any(
        k in SUBJECT_REF_KEYS and k in row_refs and str(row_refs[k]) != str(v)
        for k, v in wanted.items())


def rank(rows: list[Candidate], settings: Settings, limit: int,
          wanted_refs: Mapping[str, str], similarity_floor: float,
          named: frozenset[str] = frozenset(), period: Period | None = None,
          when: bool = False, scale: tuple[float, float] | None = None,
          min_score: float | None = None, several: bool = False) -> list[MemoryHit]:
    """Score every candidate row, keep each memory's best chunk, let conversation turns
    lend each other score (:func:`_smooth`), answer the top ``limit``. Subject refs and
    provenance arrive as JSON text and are parsed only where needed (the boost, the
    returned hits): most candidates are dropped. ``named``: the question's words, lower
    case (the speaker prior); ``period``: the time the question names (the time prior);
    ``when``: the question asks when (memories that state a time count more); ``scale``:
    the model's similarity scale, which makes the scores mean the same in every search
    (retrieval/scores.py; None: they stay relative to the best hit); ``min_score``: the
    gate (default ``retrieval_min_score``); ``wanted_refs``: the caller's subject refs (team
    rows about another subject are left out: :func:`about_another_subject`; matching rows
    are boosted: :func:`subject_boost`); ``several``: the question asks for a count or a
    list (retrieval/several.py: more of the last hits go to other sessions)."""
    gate = settings.retrieval_min_score if min_score is None else min_score
    if wanted_refs:
        rows = [r for r in rows if not about_another_subject(
            r.visibility_scope, json.loads(r.subject_refs), wanted_refs)]
    best_keyword = max((r.keyword_rank for r in rows), default=0.0) or 1.0
    around = settings.retrieval_turn_neighbour_vector_weight
    context = settings.retrieval_turn_context_vector_weight
    similarity = [_similarity(r, around, context) for r in rows]
    known = [s for s in similarity if s is not None]
    low, high = (min(known), max(known)) if known else (0.0, 0.0)
    certainty = _confidence(rows, similarity, settings, scale, best_keyword, similarity_floor)
    best: dict[UUID, _Scored] = {}
    for row, vec in zip(rows, similarity, strict=True):
        kw = row.keyword_rank
        vector_score = None
        if vec is not None:
            vector_score = (float(vec) - low) / (high - low) if high > low else 1.0
        keyword_score = float(kw) / best_keyword
        if keyword_score == 0.0 and (vec is None or float(vec) <= similarity_floor):
            continue  # no evidence at all: neither a word nor more than noise similarity
        if row.turn:
            score = (settings.retrieval_turn_vector_weight * (vector_score or 0.0)
                     + settings.retrieval_turn_keyword_weight * keyword_score)
            score = _covered(score, row, settings.retrieval_turn_coverage_weight)
            score *= _content_prior(row, settings.retrieval_turn_content_prior)
        else:
            score = (settings.retrieval_vector_weight * (vector_score or 0.0)
                     + settings.retrieval_keyword_weight * keyword_score)
        score *= certainty
        if score < gate:
            continue  # the gate sees the original score only
        if row.memory_id not in best or score > best[row.memory_id].score:
            best[row.memory_id] = _Scored(score, vector_score, keyword_score, row)
    if settings.retrieval_turn_session_weight:
        best = _with_session(best, settings.retrieval_turn_session_weight)
    if settings.retrieval_neighbour_weight:
        best = _smooth(best, settings.retrieval_neighbour_weight)
    speaker_prior = settings.retrieval_turn_speaker_prior if named else 0.0
    time_prior = settings.retrieval_time_prior if period is not None else 0.0
    when_prior = settings.retrieval_when_prior if when else 0.0
    ordered = sorted(((_order(s, settings, wanted_refs)
                       * (1.0 + speaker_prior * _names_speaker(s.row, named))
                       * (1.0 + time_prior * _in_period(s.row, period))
                       * (1.0 + when_prior * (when and states_time(s.row.content))), s)
                      for s in best.values()),
                     key=lambda entry: entry[0], reverse=True)
    slots, margin = settings.retrieval_turn_session_spread, settings.retrieval_turn_spread_margin
    if several and settings.retrieval_turn_list_spread > slots:
        slots, margin = settings.retrieval_turn_list_spread, 0.0  # a list: its items, whatever
    return [_hit(s.row, round(order, 6), s.vector_score, s.keyword_score)
            for order, s in _spread(ordered, limit, slots, margin)]


def _weights_of(row: Candidate, settings: Settings) -> tuple[float, float]:
    """The (vector, keyword) weights the row's score is fused with."""
    if row.turn:
        return settings.retrieval_turn_vector_weight, settings.retrieval_turn_keyword_weight
    return settings.retrieval_vector_weight, settings.retrieval_keyword_weight


def _confidence(rows: list[Candidate], similarity: list[float | None], settings: Settings,
                scale: tuple[float, float] | None, best_keyword: float,
                similarity_floor: float) -> float:
    """The search's confidence (retrieval/scores.py): from its best candidate's evidence on
    the model's absolute ``scale``; 1 without a scale. Only candidates that are evidence at
    all count (a keyword match, or a similarity above the noise floor). A search without
    a question vector (the provider failed) has only its words: their share is its
    strength."""
    if scale is None:
        return 1.0
    if all(vec is None for vec in similarity):
        return confidence(max((float(row.matched) for row in rows), default=0.0))
    strength = max((evidence(vec, float(row.matched), *_weights_of(row, settings), scale)
                    for row, vec in zip(rows, similarity, strict=True)
                    if row.keyword_rank / best_keyword > 0.0
                    or (vec is not None and vec > similarity_floor)), default=0.0)
    return confidence(strength)


# "Caroline: ..." / "Dr. Ada Lee: ...": the speaker a turn's text names first (one to three
# words before a colon), as agents commonly store a turn.
_SPEAKER = re.compile(r"\s*([^\W\d_][\w'.-]{0,40}(?: [^\W\d_][\w'.-]{0,40}){0,2}):\s")


def _names_speaker(row: Candidate, named: frozenset[str]) -> bool:
    """Whether the question names the speaker of the turn ``row`` (any word of the name)."""
    if not row.turn:
        return False
    match = _SPEAKER.match(row.content)
    return bool(match) and any(w in named for w in words(match.group(1).lower()))


def _in_period(row: Candidate, period: Period | None) -> bool:
    """Whether the memory's event time falls in the period the question names."""
    return period is not None and row.occurred_at is not None and period.contains(
        row.occurred_at)


def _similarity(row: Candidate, around: float, context: float) -> float | None:
    """The candidate's cosine similarity; a conversation turn's mixed with the similarity of
    its context vector (``context`` of it) and with its similarity taken together with the
    turns around it (``around`` of it), when the statement gave them."""
    if row.similarity is None:
        return None
    similarity = float(row.similarity)
    if context and row.turn and row.context_similarity is not None:
        similarity = (1.0 - context) * similarity + context * float(row.context_similarity)
    if around and row.turn and row.around is not None:
        return (1.0 - around) * similarity + around * float(row.around)
    return similarity


# Distinct lexemes (English and German: most words count twice) of a turn that says enough to
# be an answer, and what share of its words a question counts with: a question asks, it does
# not tell. Both chosen on the conversational benchmark (docs/benchmarks.md).
CONTENT_LEXEMES = 16
QUESTION_SHARE = 0.5


def _content_prior(row: Candidate, weight: float) -> float:
    """Up to ``weight`` less score for a turn that says little ("Which one?", "Haha,
    really?", "What did you do there?"): such a turn resembles every question about its
    speaker and is hardly ever the answer."""
    lexemes = row.lexemes * (QUESTION_SHARE if row.content.rstrip().endswith("?") else 1.0)
    return 1.0 - weight * max(0.0, 1.0 - lexemes / CONTENT_LEXEMES)


def _covered(score: float, row: Candidate, weight: float) -> float:
    """A turn's fused score with ``weight`` of it taken from the share of the question's
    words it contains (``row.matched``, absolute: the same scale in every search). The
    normalised keyword rank says how a turn's words compare with the best match's; the
    share says how much of the question it holds, which tells an answer from a turn that
    shares one rare word with it."""
    return (1.0 - weight) * score + weight * float(row.matched)


def _session(row: Candidate) -> str | None:
    """The session a conversation turn belongs to (None for other memories)."""
    return row.session_key if row.turn else None


class _Scored(NamedTuple):
    score: float  # fused (and smoothed) score of the memory's best chunk
    vector_score: float | None
    keyword_score: float
    row: Candidate


def _smooth(best: dict[UUID, _Scored], weight: float) -> dict[UUID, _Scored]:
    """Each conversation turn's score pulled ``weight`` of the way toward its best-scoring
    neighbour among the candidates (the turn before it, the turn after it), never down: an
    answer that scored low alone sits next to the question that matched."""
    neighbours: dict[UUID, list[UUID]] = {}
    for memory_id, scored in best.items():
        previous = scored.row.previous_memory_id
        if previous is not None and previous in best:
            neighbours.setdefault(memory_id, []).append(previous)
            neighbours.setdefault(previous, []).append(memory_id)
    smoothed = dict(best)
    for memory_id, around in neighbours.items():
        own = best[memory_id]
        pull = max(best[n].score for n in around) - own.score
        if pull > 0:
            smoothed[memory_id] = own._replace(score=own.score + weight * pull)
    return smoothed


def _with_session(best: dict[UUID, _Scored], weight: float) -> dict[UUID, _Scored]:
    """Each conversation turn's score mixed ``weight`` of the way toward the best score of
    its session among the candidates, never down: a question is mostly about one session,
    and the turns around the one that matched best (an answer that says little, the next
    part of a story) rise with it above look-alikes from other sessions."""
    strongest: dict[str, float] = {}
    for scored in best.values():
        session = _session(scored.row)
        if session is not None:
            strongest[session] = max(strongest.get(session, 0.0), scored.score)
    mixed = dict(best)
    for memory_id, scored in best.items():
        session = _session(scored.row)
        if session is not None:
            mixed[memory_id] = scored._replace(
                score=(1.0 - weight) * scored.score + weight * strongest[session])
    return mixed


# Below this limit a search answers its best hits only: spreading them over sessions would
# give away a large share of a short answer.
SPREAD_FROM_LIMIT = 4


def _spread(ordered: list[tuple[float, _Scored]], limit: int, slots: int,
            margin: float = 0.0) -> list[tuple[float, _Scored]]:
    """The best ``limit`` of ``ordered`` (best first), of which each of the last ``slots``
    goes to the best conversation turn of a session none of the hits before it comes from,
    when there is such a turn that scores at least ``margin`` of the best turn left
    (otherwise to that best turn, as without it). Still best first: the turns that take
    those slots rank below every hit before them."""
    if not slots or limit < SPREAD_FROM_LIMIT or len(ordered) <= limit:
        return ordered[:limit]
    slots = min(slots, limit - 1)  # the best hit always keeps its place
    head, rest = ordered[:limit - slots], ordered[limit - slots:]
    sessions = {session for _, s in head if (session := _session(s.row)) is not None}
    tail: list[tuple[float, _Scored]] = []
    for _ in range(slots):
        floor = margin * rest[0][0]
        chosen = next((index for index, (order, s) in enumerate(rest) if order >= floor
                       and (session := _session(s.row)) is not None
                       and session not in sessions), 0)
        entry = rest.pop(chosen)
        tail.append(entry)
        if (session := _session(entry[1].row)) is not None:
            sessions.add(session)
    return head + sorted(tail, key=lambda entry: entry[0], reverse=True)


def _order(scored: _Scored, settings: Settings, wanted_refs: Mapping[str, str]) -> float:
    """The ranking key: the score, boosted by matching subject refs and by the assertion's
    feedback (they reorder what passed the gate)."""
    order, row = scored.score, scored.row
    if wanted_refs:
        order *= subject_boost(json.loads(row.subject_refs), wanted_refs)
    if row.assertion_id is not None and settings.feedback_ranking_enabled:
        order *= feedback_multiplier(row.injected, row.cited, row.corrected, settings)
    return order


def _hit(row: Candidate, score: float, vector_score: float | None,
         keyword_score: float) -> MemoryHit:
    return MemoryHit(row.chunk_id, row.memory_id, row.content, score, vector_score,
                     keyword_score, row.visibility_scope, row.audience_key, row.memory_scope,
                     row.source_type, json.loads(row.subject_refs), row.assertion_id,
                     json.loads(row.provenance) if row.provenance else {}, row.created_at,
                     row.occurred_at)
