"""Search (retrieval/): the hybrid ranking's weights and priors, candidate bounds of the vector
and keyword arms, the score scale and the limits of a context search."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field


def _similarity_scale(value: tuple[float, float] | None) -> tuple[float, float] | None:
    if value is not None and not -1.0 <= value[0] < value[1] <= 1.0:
        raise ValueError("a similarity scale is [unrelated, clear match] with "
                         "-1 <= unrelated < clear match <= 1, e.g. [0.78, 0.85]")
    return value


class RetrievalSettings(BaseModel):
    """How memories and assertions are found and ranked."""

    retrieval_top_k: int = Field(6, ge=1, le=100)
    retrieval_min_score: float = Field(
        0.12, ge=0.0, le=1.0, description="Least score a hit needs (a request's minScore "
        "overrides it). Scores are comparable across questions (retrieval/scores.py): a "
        "question the memories cannot answer scores below 0.12.")
    retrieval_similarity_scale: Annotated[tuple[float, float] | None,
                                          AfterValidator(_similarity_scale)] = Field(
        None, description="The embedding model's similarity of unrelated texts and of a "
        "clear match, as a JSON list ([0.78, 0.85] for e5-small), which makes scores "
        "comparable across questions (retrieval/scores.py). Unset: the model's own (measured "
        "for e5-small; other models keep scores relative to each question's best hit).")
    retrieval_vector_weight: float = Field(0.8, ge=0.0, le=1.0)
    retrieval_keyword_weight: float = Field(0.2, ge=0.0, le=1.0)
    retrieval_keyword_match_cap: int = Field(
        100, ge=10, description="Keyword matches ranked per query (bounds common-word cost)."
    )
    retrieval_context_keyword_weight: float = Field(
        0.75, ge=0.0, le=1.0, description="Share of a conversation turn's keyword score that "
        "its context (the two turns before it, the session's date) may add: a reply is found by "
        "the question it answers (docs/architecture.md, 'Conversational retrieval').")
    retrieval_neighbour_weight: float = Field(
        0.2, ge=0.0, le=1.0, description="How far a conversation turn's score is pulled "
        "toward its best-scoring neighbouring turn among the candidates.")
    retrieval_turn_vector_weight: float = Field(
        0.5, ge=0.0, le=1.0, description="retrieval_vector_weight for conversation turns "
        "(memories written with a sessionKey and an occurredAt).")
    retrieval_turn_keyword_weight: float = Field(
        0.55, ge=0.0, le=1.0, description="retrieval_keyword_weight for conversation turns: "
        "short utterances are found by their words more than notes are.")
    retrieval_turn_content_prior: float = Field(
        0.7, ge=0.0, le=1.0, description="Most score a conversation turn that says little "
        "loses (few words, or a question: 'Which one?', 'Haha, really?'): such turns resemble "
        "every question about their speaker and are hardly ever the answer.")
    retrieval_turn_neighbour_vector_weight: float = Field(
        0.3, ge=0.0, le=1.0, description="Share of a conversation turn's similarity taken "
        "with the vectors of the turns before and after it added to its own (0: off); the "
        "turns around each candidate turn then join the candidates (docs/retrieval-locomo.md).")
    retrieval_turn_context_vector_weight: float = Field(
        0.7, ge=0.0, le=1.0, description="Share of a conversation turn's similarity taken "
        "from its context vector (the turn embedded with the turn before it; 0: off, and no "
        "second vector arm).")
    retrieval_turn_context_extra_candidates: int = Field(
        20, ge=0, le=200, description="Candidates the context-vector arm (conversation "
        "turns only) takes beyond the limit (at least 8 in all).")
    retrieval_turn_coverage_weight: float = Field(
        0.2, ge=0.0, le=1.0, description="Share of a conversation turn's score taken from "
        "the share of the question's words (weighed by rarity) it contains, its context's "
        "counting retrieval_context_keyword_weight: a turn that holds most of what is asked "
        "beats one that shares a single rare word with it; 0: off.")
    retrieval_turn_session_weight: float = Field(
        0.3, ge=0.0, le=1.0, description="Share of a conversation turn's score taken from "
        "the best score of its session (its sessionKey) among the candidates: the turns of "
        "the session a question is about rise together, an answer that says little with "
        "them; 0: off.")
    retrieval_turn_session_spread: int = Field(
        1, ge=0, le=10, description="Of a search's hits (a limit of at least 4), the last "
        "this many go to the best conversation turns of sessions no hit before them comes "
        "from, when the candidates hold such turns: a question about several sessions gets "
        "a turn of each more often; 0: off.")
    retrieval_turn_spread_margin: float = Field(
        0.98, ge=0.0, le=1.0, description="A slot of retrieval_turn_session_spread goes to "
        "another session only when that session's best turn scores at least this share of "
        "the best turn left (a near tie); otherwise to that best turn. Not for a question "
        "asking for a list (retrieval_turn_list_spread: its items, whatever their scores).")
    retrieval_turn_list_spread: int = Field(
        3, ge=0, le=10, description="retrieval_turn_session_spread for a question that asks "
        "for a count or a list ('How many ...', 'Which cities has ...', 'What are ...'; "
        "retrieval/several.py): its items were said on different days.")
    retrieval_turn_speaker_prior: float = Field(
        0.1, ge=0.0, le=1.0, description="How much more a conversation turn counts in the "
        "order when the question names its speaker ('Caroline: ...' asked 'What did "
        "Caroline ...?'); 0: off.")
    retrieval_time_prior: float = Field(
        0.3, ge=0.0, le=1.0, description="How much more a memory counts in the order when "
        "its event time (occurredAt) falls in the time the question names ('in May 2023', 'on "
        "13 October 2023', 'last week', 'three days ago': relative to the moment it is asked; "
        "retrieval/when.py); 0: off.")
    retrieval_when_prior: float = Field(
        0.3, ge=0.0, le=1.0, description="How much more a memory that states a time "
        "('yesterday', 'last Friday', 'in 2022') counts in the order when the question asks "
        "when ('When did ...?', 'What year ...?'; retrieval/when.py); 0: off.")
    retrieval_keyword_idf: bool = Field(
        True, description="Weigh each question word's keyword rank by its rarity.")
    retrieval_exact_scan_max: int = Field(
        1000, ge=0, description="Visible chunks (assertions) up to which memory (assertion) "
        "search scans exactly instead of walking the HNSW index."
    )
    retrieval_vector_extra_candidates: int = Field(
        2, ge=0, le=200, description="Vector candidates a search takes beyond its limit "
        "(at least 8 in all): each is HNSW work (docs/benchmarks.md).")
    retrieval_hnsw_ef_search: int = Field(40, ge=10, le=1000)
    retrieval_keyword_common_share: float = Field(
        0.05, gt=0.0, le=1.0,
        description="A query word found in more than this share of all chunks (planner "
                    "statistics) scores candidates but does not generate them.",
    )
    retrieval_common_terms_fallback: int = Field(
        3, ge=1, le=24, description="When every word of a question is common, this many of the "
        "least common still generate lexical candidates (within the scan cap).")
    retrieval_lexical_scan_cap: int = Field(
        2000, ge=10, description="Full-text matches a lexical arm (chunks, assertions, history, "
        "graph claims) reads before filtering them by audience: bounds what a question of "
        "common words costs, also in a database many instances share.")
    retrieval_context_limit: int = Field(
        8, ge=1, le=100, description="Items a context search answers when the caller names "
        "no limit."
    )
    retrieval_context_deep_limit: int = Field(
        20, ge=1, le=100, description="Items a deep context search (depth 'deep', intent "
        "'wiki_synthesis') answers when the caller names no limit."
    )
