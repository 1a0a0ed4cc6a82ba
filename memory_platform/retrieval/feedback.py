"""Retrieval feedback: the sensors that record how injected assertions fared, and the ranking
multiplier computed from them.

Three signals feed ranking, each kept as an event row in ``agent_memory_retrieval_feedback``
and as a denormalised counter on the assertion, so retrieval reads three integers instead of
aggregating events on the hot path:

- ``injected``: the runtime put the assertion into a prompt (:func:`record_injection`);
- ``cited``: the final response reuses enough of its informative tokens (:func:`record_response`);
- ``corrected``: the ledger put a recently injected assertion into conflict or superseded it
  (:func:`record_corrections`). Only the ledger says so; no NLP guesses at corrections.

Every recorder runs in one transaction (a savepoint when the caller already has one open, so
the ledger can record a correction atomically with the supersede that caused it) and is
idempotent per run: the unique index ``agent_memory_retrieval_feedback_once_per_run`` admits
one event per (assertion, event type, run), and counters move only for newly inserted events.

The multiplier rewards the citation *rate*, not a count, so an assertion injected everywhere
but rarely used does not get richer by being injected; corrections damp it geometrically.
It reorders results that already passed the score gates: apply it after filtering.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.access import AccessContext
from memory_platform.errors import InvalidInput, NotFound
from memory_platform.retrieval import stopwords
from memory_platform.settings import Settings, get_settings

Conn = psycopg.Connection[Any]
ExplicitEvent = Literal["helpful", "unhelpful", "retrieved"]

EXPLICIT_EVENTS: frozenset[str] = frozenset({"helpful", "unhelpful", "retrieved"})

# The formula caps the correction exponent at three corrections (part of the spec's formula,
# not a tunable): beyond that the multiplier sits at the floor anyway with default settings.
CORRECTION_EXPONENT_CAP = 3


class FeedbackTargetNotFound(NotFound):
    """The assertion or memory named by explicit feedback does not exist in the instance."""


# --- ranking multiplier ------------------------------------------------------------------


def feedback_multiplier(injected: int, cited: int, corrected: int, settings: Settings) -> float:
    """The ranking multiplier of one assertion from its denormalised counters.

    ``clamp((1 + (boostMax - 1) * cited / max(rateFloor, injected))
    * correctionPenalty ** min(corrected, 3), minMultiplier, boostMax)``; 1.0 when feedback
    ranking is disabled. :func:`multiplier_sql` computes the same value inside SQL.
    """
    if not settings.feedback_ranking_enabled:
        return 1.0
    boost_max = settings.feedback_boost_max
    rate = cited / max(settings.feedback_rate_floor, injected)
    damping = settings.feedback_correction_penalty ** min(corrected, CORRECTION_EXPONENT_CAP)
    raw = (1 + (boost_max - 1) * rate) * damping
    return min(max(raw, settings.feedback_min_multiplier), boost_max)


def multiplier_sql(alias: str, settings: Settings) -> sql.Composable:
    """:func:`feedback_multiplier` as a SQL expression over the counters of the assertion row
    ``alias`` (``multiplier_sql("a", s)`` reads ``a.injected_count`` ...), so retrieval can
    order by ``score * multiplier`` in the query. The settings are inlined as literals: they
    are numbers validated by :class:`Settings`, and a literal keeps the expression usable in
    any query without threading extra parameters through it."""
    if not settings.feedback_ranking_enabled:
        return sql.SQL("CAST(1 AS double precision)")
    return sql.SQL(
        "LEAST("
        "GREATEST("
        "(1 + ({boost_max} - 1) * ({a}.cited_count::double precision"
        " / GREATEST({rate_floor}, {a}.injected_count)))"
        " * power({penalty}, LEAST({a}.corrected_count, {cap})),"
        " {min_multiplier}),"
        " {boost_max})"
    ).format(
        a=sql.Identifier(alias),
        boost_max=_float_literal(settings.feedback_boost_max),
        rate_floor=sql.Literal(settings.feedback_rate_floor),
        penalty=_float_literal(settings.feedback_correction_penalty),
        cap=sql.Literal(CORRECTION_EXPONENT_CAP),
        min_multiplier=_float_literal(settings.feedback_min_multiplier),
    )


def _float_literal(value: float) -> sql.Composable:
    # Without the cast a decimal literal is numeric, and numeric arithmetic would round
    # differently from the float64 arithmetic of feedback_multiplier.
    return sql.SQL("CAST({} AS double precision)").format(sql.Literal(float(value)))


# --- text normalisation and the cited sensor ---------------------------------------------

_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,}).*$", re.MULTILINE)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_INLINE_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_REFERENCE_LINK = re.compile(r"\[([^\]]*)\]\[[^\]]*\]")
_LINK_DEFINITION = re.compile(r"^[ \t]*\[[^\]]+\]:[ \t]*\S+.*$", re.MULTILINE)
_HTML_TAG = re.compile(r"<[^<>\n]+>")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]*", re.MULTILINE)
_SETEXT_UNDERLINE = re.compile(r"^[ \t]*(?:=+|-+)[ \t]*$", re.MULTILINE)
_BLOCKQUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+", re.MULTILINE)
_MARKUP_CHARS = re.compile(r"[`*_~|]+")
_APOSTROPHE_IN_WORD = re.compile(r"(?<=\w)['\u2019](?=\w)")
_WORD = re.compile(r"[^\W_]+")

_UMLAUTS = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})

# Inflection endings stripped (repeatedly, longest first) before tokens are compared, so
# "Rechnungen"/"Rechnung" and "deployed"/"deploys"/"deploy" meet. A stem keeps at least
# _MIN_STEM characters. Crude on purpose: both sides get the same treatment, which is all a
# overlap measure needs, and it stays deterministic without a language guess.
_SUFFIXES = ("ing", "ern", "en", "er", "em", "es", "ed", "e", "n", "s")
_MIN_STEM = 4
_MIN_TOKEN = 3  # shorter tokens are dropped, except numbers of two or more digits


def strip_markdown(text: str) -> str:
    """The prose of a Markdown text: fence lines, backticks, emphasis, heading, quote and list
    markers and link targets removed; link and image texts and code contents kept (an agent
    quoting a fact inside code or a link still cites it)."""
    text = _FENCE_LINE.sub(" ", text)
    text = _IMAGE.sub(r"\1", text)
    text = _INLINE_LINK.sub(r"\1", text)
    text = _REFERENCE_LINK.sub(r"\1", text)
    text = _LINK_DEFINITION.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    text = _HEADING.sub("", text)
    text = _SETEXT_UNDERLINE.sub(" ", text)
    text = _BLOCKQUOTE.sub("", text)
    text = _LIST_MARKER.sub("", text)
    return _MARKUP_CHARS.sub(" ", text)


def fold(text: str) -> str:
    """Lowercase, spell umlauts out (ä -> ae, ß -> ss) and drop other diacritics, so "Grüße",
    "Gruesse" and "GRÜSSE" compare equal."""
    folded = text.casefold().translate(_UMLAUTS)
    decomposed = unicodedata.normalize("NFKD", folded)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _words(text: str) -> list[str]:
    return _WORD.findall(_APOSTROPHE_IN_WORD.sub("", text))


_STOPWORDS: frozenset[str] = frozenset(
    word for entry in stopwords.ALL for word in _words(fold(entry))
)


def _informative(token: str) -> bool:
    if token in _STOPWORDS:
        return False
    if token.isdigit():
        return len(token) >= 2
    return len(token) >= _MIN_TOKEN


def informative_tokens(text: str) -> list[str]:
    """The words of ``text`` that can show a citation, in order: Markdown and punctuation
    removed, lowercased and folded (see :func:`fold`), German and English stopwords and very
    short tokens dropped."""
    return [token for token in _words(fold(strip_markdown(text))) if _informative(token)]


def stem(token: str) -> str:
    """A light, deterministic inflection stem of a folded token (see ``_SUFFIXES``)."""
    stripped = True
    while stripped:
        stripped = False
        for suffix in _SUFFIXES:
            if token.endswith(suffix) and len(token) - len(suffix) >= _MIN_STEM:
                token = token[: -len(suffix)]
                stripped = True
                break
    return token


def citation_keys(text: str) -> frozenset[str]:
    """The distinct stems of the informative tokens of ``text``: what the sensor compares."""
    return frozenset(stem(token) for token in informative_tokens(text))


def _cites(assertion_keys: frozenset[str], response_keys: frozenset[str],
           settings: Settings) -> bool:
    if not assertion_keys:
        return False
    overlap = len(assertion_keys & response_keys)
    return (overlap >= settings.cited_min_overlap_tokens
            and overlap / len(assertion_keys) >= settings.cited_containment_threshold)


def is_cited(assertion_text: str, response_text: str, settings: Settings) -> bool:
    """Whether a response cites an assertion: at least ``cited_min_overlap_tokens`` distinct
    informative assertion tokens occur in the response, and they make up at least
    ``cited_containment_threshold`` of the assertion's distinct informative tokens."""
    return _cites(citation_keys(assertion_text), citation_keys(response_text), settings)


# --- recorders ---------------------------------------------------------------------------

# One statement per recorder: pick the instance's assertions, insert the events the unique
# index agent_memory_retrieval_feedback_once_per_run admits (one per assertion, event type
# and run), and bump the counters of exactly the inserted ones.
_RECORD_INJECTION = """
    WITH eligible AS (
        SELECT a.id
          FROM agent_memory_assertions AS a
         WHERE a.instance_key = %s
           AND a.id = ANY(%s::uuid[])
    ),
    inserted AS (
        INSERT INTO agent_memory_retrieval_feedback
               (instance_key, assertion_id, event_type, user_id, session_key, run_id)
        SELECT %s, eligible.id, 'injected', %s, %s, %s
          FROM eligible
        ON CONFLICT (instance_key, assertion_id, event_type, run_id)
            WHERE run_id IS NOT NULL AND assertion_id IS NOT NULL
            DO NOTHING
        RETURNING assertion_id
    )
    UPDATE agent_memory_assertions AS a
       SET injected_count = a.injected_count + 1,
           last_injected_at = now()
      FROM inserted
     WHERE a.instance_key = %s
       AND a.id = inserted.assertion_id
    RETURNING a.id
"""

_INJECTED_IN_RUN = """
    SELECT a.id, a.assertion_text
      FROM agent_memory_retrieval_feedback AS f
      JOIN agent_memory_assertions AS a
        ON a.instance_key = f.instance_key
       AND a.id = f.assertion_id
     WHERE f.instance_key = %s
       AND f.run_id = %s
       AND f.event_type = 'injected'
     ORDER BY f.id
"""

_RECORD_CITED = """
    WITH cited AS (
        SELECT f.assertion_id, f.user_id, f.session_key
          FROM agent_memory_retrieval_feedback AS f
         WHERE f.instance_key = %s
           AND f.run_id = %s
           AND f.event_type = 'injected'
           AND f.assertion_id = ANY(%s::uuid[])
    ),
    inserted AS (
        INSERT INTO agent_memory_retrieval_feedback
               (instance_key, assertion_id, event_type, user_id, session_key, run_id)
        SELECT %s, cited.assertion_id, 'cited', cited.user_id, cited.session_key, %s
          FROM cited
        ON CONFLICT (instance_key, assertion_id, event_type, run_id)
            WHERE run_id IS NOT NULL AND assertion_id IS NOT NULL
            DO NOTHING
        RETURNING assertion_id
    )
    UPDATE agent_memory_assertions AS a
       SET cited_count = a.cited_count + 1
      FROM inserted
     WHERE a.instance_key = %s
       AND a.id = inserted.assertion_id
    RETURNING a.id
"""

_RECORD_CORRECTIONS = """
    WITH recently_injected AS (
        SELECT a.id
          FROM agent_memory_assertions AS a
         WHERE a.instance_key = %s
           AND a.id = ANY(%s::uuid[])
           AND a.last_injected_at >= now() - make_interval(hours => %s)
    ),
    inserted AS (
        INSERT INTO agent_memory_retrieval_feedback
               (instance_key, assertion_id, event_type, run_id, details)
        SELECT %s, recently_injected.id, 'corrected', %s, %s
          FROM recently_injected
        ON CONFLICT (instance_key, assertion_id, event_type, run_id)
            WHERE run_id IS NOT NULL AND assertion_id IS NOT NULL
            DO NOTHING
        RETURNING assertion_id
    )
    UPDATE agent_memory_assertions AS a
       SET corrected_count = a.corrected_count + 1
      FROM inserted
     WHERE a.instance_key = %s
       AND a.id = inserted.assertion_id
    RETURNING a.id
"""

_RECORD_EXPLICIT = """
    INSERT INTO agent_memory_retrieval_feedback
           (instance_key, assertion_id, memory_id, event_type, user_id, session_key, run_id,
            details)
    SELECT %s, %s, %s, %s, %s, %s, %s, %s
     WHERE (%s::uuid IS NULL OR EXISTS (
               SELECT 1
                 FROM agent_memory_assertions
                WHERE instance_key = %s
                  AND id = %s))
       AND (%s::uuid IS NULL OR EXISTS (
               SELECT 1
                 FROM agent_memories
                WHERE instance_key = %s
                  AND id = %s))
    ON CONFLICT (instance_key, assertion_id, event_type, run_id)
        WHERE run_id IS NOT NULL AND assertion_id IS NOT NULL
        DO NOTHING
    RETURNING id
"""

_TARGETS_EXIST = """
    SELECT (%s::uuid IS NULL OR EXISTS (
               SELECT 1
                 FROM agent_memory_assertions
                WHERE instance_key = %s
                  AND id = %s))
       AND (%s::uuid IS NULL OR EXISTS (
               SELECT 1
                 FROM agent_memories
                WHERE instance_key = %s
                  AND id = %s))
"""

# The unique index covers assertion events only; a memory-only event of a run is
# de-duplicated here instead (enough for an API hook that a client may retry).
_MEMORY_EVENT_IN_RUN = """
    SELECT 1
      FROM agent_memory_retrieval_feedback
     WHERE instance_key = %s
       AND assertion_id IS NULL
       AND memory_id = %s
       AND event_type = %s
       AND run_id = %s
"""


def _require_run_id(run_id: str) -> None:
    if not run_id:
        raise InvalidInput("run_id must be a non-empty string: it makes recording idempotent",
                           details={"field": "run_id"})


def _distinct(ids: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    return list(dict.fromkeys(ids))


def record_visible_injection(conn: Conn, ctx: AccessContext,
                             assertion_ids: Sequence[uuid.UUID], *, run_id: str) -> tuple[int, int]:
    """Record a run's injected assertions that ``ctx`` may recall (only those count):
    (how many counted, how many were new)."""
    from memory_platform.retrieval.assertions import visible_assertion_ids

    visible = visible_assertion_ids(conn, ctx, list(assertion_ids))
    new = record_injection(conn, ctx.instance_key, visible, run_id=run_id,
                           user_id=ctx.user_id, session_key=ctx.session_key)
    return len(visible), new


def record_injection(
    conn: Conn,
    instance_key: str,
    assertion_ids: Sequence[uuid.UUID],
    *,
    run_id: str,
    user_id: str | None = None,
    session_key: str | None = None,
) -> int:
    """Record that a run put these assertions into its prompt; return how many were new.

    One ``injected`` event per assertion and run; ``injected_count`` and ``last_injected_at``
    move only for new events, so retrying a run changes nothing. Ids that are not assertions
    of ``instance_key`` are ignored."""
    _require_run_id(run_id)
    ids = _distinct(assertion_ids)
    if not ids:
        return 0
    with conn.transaction():
        rows = conn.execute(
            _RECORD_INJECTION,
            (instance_key, ids, instance_key, user_id, session_key, run_id, instance_key),
        ).fetchall()
    return len(rows)


def record_response(
    conn: Conn,
    instance_key: str,
    *,
    run_id: str,
    response_text: str,
    settings: Settings,
) -> list[uuid.UUID]:
    """Run the ``cited`` sensor over a run's final response; return the cited assertion ids.

    Only assertions injected in the same run are candidates. Each cited one gets a ``cited``
    event (once per run; ``cited_count`` moves with it). Calling again for the same run
    returns the same ids and records nothing new."""
    _require_run_id(run_id)
    response_keys = citation_keys(response_text)
    with conn.transaction():
        injected = conn.execute(_INJECTED_IN_RUN, (instance_key, run_id)).fetchall()
        cited = [
            assertion_id
            for assertion_id, text in injected
            if _cites(citation_keys(text), response_keys, settings)
        ]
        if cited:
            conn.execute(
                _RECORD_CITED,
                (instance_key, run_id, cited, instance_key, run_id, instance_key),
            )
    return cited


def record_corrections(
    conn: Conn,
    instance_key: str,
    assertion_ids: Sequence[uuid.UUID],
    *,
    reason: str,
    window_hours: int | None = None,
    event_key: str | None = None,
    settings: Settings | None = None,
) -> int:
    """Record one ledger event (a conflict opened or a supersede) as a correction of each of
    ``assertion_ids`` that was injected within the correction window; return how many.

    The ledger's conflict and supersede functions call this in the transaction that changes
    the assertions (it opens a savepoint there), with the assertions just put into conflict
    or superseded; it is the only source of the ``corrected`` signal. ``reason`` is stored in
    the event details. ``window_hours`` defaults to ``feedback_correction_window_hours``.

    ``event_key`` names the ledger event (e.g. ``conflict:<id>``, ``supersede:<review id>``)
    and makes the call idempotent: it is stored in the event's ``run_id`` column, so the
    once-per-run index admits one correction per assertion and ledger event. Without it every
    call records a new correction."""
    if window_hours is None:
        window_hours = (settings or get_settings()).feedback_correction_window_hours
    if window_hours < 1:
        raise InvalidInput("window_hours must be at least 1", details={"field": "window_hours"})
    if event_key == "":
        raise InvalidInput("event_key must be non-empty when given",
                           details={"field": "event_key"})
    ids = _distinct(assertion_ids)
    if not ids:
        return 0
    details = Jsonb({"reason": reason} | ({"event_key": event_key} if event_key else {}))
    with conn.transaction():
        rows = conn.execute(
            _RECORD_CORRECTIONS,
            (instance_key, ids, window_hours, instance_key, event_key, details, instance_key),
        ).fetchall()
    return len(rows)


def record_explicit(
    conn: Conn,
    instance_key: str,
    event_type: ExplicitEvent,
    *,
    assertion_id: uuid.UUID | None = None,
    memory_id: uuid.UUID | None = None,
    run_id: str | None = None,
    user_id: str | None = None,
    session_key: str | None = None,
    details: dict[str, Any] | None = None,
) -> bool:
    """Record an API feedback hook (``helpful``, ``unhelpful``, ``retrieved``) about an
    assertion and/or a memory; return whether a new event was stored.

    With a ``run_id`` the event is recorded once per run (a retried request stores nothing
    new); without one every call is an event. These events do not move the ranking counters.
    Raises :class:`FeedbackTargetNotFound` (a ``NotFound``) when a named assertion or memory is
    not in the instance, and ``InvalidInput`` for another event type or no target."""
    if event_type not in EXPLICIT_EVENTS:
        raise InvalidInput(f"event_type must be one of {sorted(EXPLICIT_EVENTS)}",
                           details={"field": "event_type"})
    if assertion_id is None and memory_id is None:
        raise InvalidInput("explicit feedback needs an assertion_id or a memory_id",
                           details={"field": "assertion_id"})
    if run_id == "":
        raise InvalidInput("run_id must be non-empty when given", details={"field": "run_id"})
    with conn.transaction():
        if assertion_id is None and run_id is not None:
            # Serialise concurrent retries of the same memory event, then check for it.
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"feedback:{instance_key}:{memory_id}:{event_type}:{run_id}",),
            )
            if conn.execute(
                _MEMORY_EVENT_IN_RUN, (instance_key, memory_id, event_type, run_id)
            ).fetchone():
                return False
        inserted = conn.execute(
            _RECORD_EXPLICIT,
            (
                instance_key, assertion_id, memory_id, event_type, user_id, session_key,
                run_id, Jsonb(details or {}),
                assertion_id, instance_key, assertion_id,
                memory_id, instance_key, memory_id,
            ),
        ).fetchone()
        if inserted is None and not _targets_exist(conn, instance_key, assertion_id, memory_id):
            raise FeedbackTargetNotFound(
                f"no assertion {assertion_id} / memory {memory_id} in instance {instance_key!r}"
            )
    return inserted is not None


def _targets_exist(
    conn: Conn, instance_key: str, assertion_id: uuid.UUID | None, memory_id: uuid.UUID | None
) -> bool:
    row = conn.execute(
        _TARGETS_EXIST,
        (assertion_id, instance_key, assertion_id, memory_id, instance_key, memory_id),
    ).fetchone()
    return bool(row and row[0])
