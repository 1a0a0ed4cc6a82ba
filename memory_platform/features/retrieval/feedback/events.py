"""The feedback recorders: ``injected``, ``cited``, ``corrected``, ``helpful`` and
``unhelpful`` events and their counters.

A run belongs to whoever reports on it first (:func:`record_visible_injection` records the
instance, run id, acting user and session in ``agent_feedback_runs``). Only that user may
report on it later: for anyone else the run does not exist (NotFound, and nothing changes),
and the ``cited`` sensor counts only the run's assertions the reporting user may still see.

Every recorder runs in one transaction (a savepoint when the caller already has one open, so
the ledger can record a correction atomically with the supersede that caused it) and is
idempotent per run: the unique index ``agent_memory_retrieval_feedback_once_per_run`` admits
one event per (assertion, event type, run), and counters move only for newly inserted events.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.retrieval.assertions import (
    recallable_assertion,
    visible_assertion_ids,
)
from memory_platform.features.retrieval.feedback.citation import citation_keys, cites
from memory_platform.features.retrieval.statements import parameter_safe
from memory_platform.foundation.errors import InvalidInput, NotFound
from memory_platform.foundation.settings import Settings, get_settings
from memory_platform.shared.access import AccessContext

Conn = psycopg.Connection[Any]


def _recorder(event: str, eligible: sql.SQL, carried: Mapping[str, sql.Composable],
              counter: str, stamped: str | None = None) -> bytes:
    """One statement that records ``event`` for the assertions ``eligible`` selects (a query
    with an ``assertion_id`` column), with the ``carried`` event columns (column -> value
    expression over ``eligible`` and the parameters); inserts the events the once-per-run index
    admits and bumps ``counter`` (and sets ``stamped`` to now) of exactly the inserted ones.
    Its parameters are named: ``instance`` and whatever ``eligible`` and ``carried`` use."""
    stamp = (sql.SQL(", {} = now()").format(sql.Identifier(stamped)) if stamped
             else sql.SQL(""))
    return sql.SQL("""
    WITH eligible AS ({eligible}),
    inserted AS (
        INSERT INTO agent_memory_retrieval_feedback
               (instance_key, assertion_id, event_type, {columns})
        SELECT %(instance)s, eligible.assertion_id, {event}, {values}
          FROM eligible
        ON CONFLICT (instance_key, assertion_id, event_type, run_id)
            WHERE run_id IS NOT NULL AND assertion_id IS NOT NULL
            DO NOTHING
        RETURNING assertion_id
    )
    UPDATE agent_memory_assertions AS a
       SET {counter} = a.{counter} + 1{stamp}
      FROM inserted
     WHERE a.instance_key = %(instance)s
       AND a.id = inserted.assertion_id
    RETURNING a.id
    """).format(
        eligible=eligible,
        columns=sql.SQL(", ").join(map(sql.Identifier, carried)),
        event=sql.Literal(event),
        values=sql.SQL(", ").join(carried.values()),
        counter=sql.Identifier(counter),
        stamp=stamp,
    ).as_bytes(None)


# The assertions named (``ids``) of the instance, and the run a report names.
_NAMED = sql.SQL("""
    SELECT a.id AS assertion_id
      FROM agent_memory_assertions AS a
     WHERE a.instance_key = %(instance)s
       AND a.id = ANY(%(ids)s::uuid[])
""")
_OF_RUN = {"user_id": sql.SQL("%(user_id)s"), "session_key": sql.SQL("%(session_key)s"),
           "run_id": sql.SQL("%(run_id)s")}

_RECORD_INJECTION = _recorder("injected", _NAMED, _OF_RUN, counter="injected_count",
                              stamped="last_injected_at")

_RECORD_CITED = _recorder(
    "cited",
    sql.SQL("""
        SELECT f.assertion_id, f.user_id, f.session_key
          FROM agent_memory_retrieval_feedback AS f
         WHERE f.instance_key = %(instance)s
           AND f.run_id = %(run_id)s
           AND f.event_type = 'injected'
           AND f.assertion_id = ANY(%(ids)s::uuid[])
    """),
    {"user_id": sql.SQL("eligible.user_id"), "session_key": sql.SQL("eligible.session_key"),
     "run_id": sql.SQL("%(run_id)s")},
    counter="cited_count",
)

_RECORD_CORRECTIONS = _recorder(
    "corrected",
    sql.SQL("""
        SELECT a.id AS assertion_id
          FROM agent_memory_assertions AS a
         WHERE a.instance_key = %(instance)s
           AND a.id = ANY(%(ids)s::uuid[])
           AND a.last_injected_at >= now() - make_interval(hours => %(window_hours)s)
    """),
    {"run_id": sql.SQL("%(event_key)s"), "details": sql.SQL("%(details)s")},
    counter="corrected_count",
)

# Explicit feedback: what a runtime (or its user) says about recalled assertions.
ExplicitKind = Literal["helpful", "unhelpful"]
EXPLICIT_KINDS: tuple[str, ...] = get_args(ExplicitKind)
_RECORD_EXPLICIT = {kind: _recorder(kind, _NAMED, {**_OF_RUN, "details": sql.SQL("%(details)s")},
                                    counter=f"{kind}_count")
                    for kind in EXPLICIT_KINDS}

_CLAIM_RUN = """
    INSERT INTO agent_feedback_runs (instance_key, run_id, user_id, session_key)
    VALUES (%(instance)s, %(run_id)s, %(user_id)s, %(session_key)s)
    ON CONFLICT (instance_key, run_id) DO NOTHING
"""
_RUN_OWNED_BY = """
    SELECT 1 FROM agent_feedback_runs
     WHERE instance_key = %(instance)s AND run_id = %(run_id)s
       AND user_id IS NOT DISTINCT FROM %(user_id)s
"""


def _injected_in_run(ctx: AccessContext) -> sql.Composable:
    """The run's first ``max_candidates`` injected assertions ``ctx`` may still recall, with
    their text (parameters ``instance``, ``run_id`` and ``max_candidates``)."""
    return parameter_safe(sql.SQL("""
        SELECT a.id, a.assertion_text
          FROM agent_memory_retrieval_feedback AS f
          JOIN agent_memory_assertions AS a
            ON a.instance_key = f.instance_key
           AND a.id = f.assertion_id
         WHERE f.instance_key = %(instance)s
           AND f.run_id = %(run_id)s
           AND f.event_type = 'injected'
           AND {visible}
         ORDER BY f.id
         LIMIT %(max_candidates)s
    """).format(visible=recallable_assertion(ctx)))


def _require_run_id(run_id: str) -> None:
    if not run_id:
        raise InvalidInput("run_id must be a non-empty string: it makes recording idempotent",
                           details={"field": "run_id"})


def _record(conn: Conn, recorder: bytes, assertion_ids: Iterable[uuid.UUID],
            **params: Any) -> int:
    """Run ``recorder`` over the distinct ``assertion_ids`` (parameter ``ids``) in one
    transaction; return how many events were new."""
    ids = list(dict.fromkeys(assertion_ids))
    if not ids:
        return 0
    with conn.transaction():
        return len(conn.execute(recorder, {"ids": ids, **params}).fetchall())


def _require_own_run(conn: Conn, ctx: AccessContext, run_id: str) -> None:
    """NotFound unless ``run_id`` is a run of ``ctx``'s user; the same answer whether the
    run does not exist or belongs to someone else."""
    params = {"instance": ctx.instance_key, "run_id": run_id, "user_id": ctx.user_id}
    if conn.execute(_RUN_OWNED_BY, params).fetchone() is None:
        raise NotFound(f"no run {run_id[:200]!r}", details={"field": "runId"})


def record_visible_injection(conn: Conn, ctx: AccessContext,
                             assertion_ids: Sequence[uuid.UUID], *, run_id: str) -> tuple[int, int]:
    """Record a run's injected assertions that ``ctx`` may recall (only those count):
    (how many counted, how many were new).

    The first report of ``run_id`` makes it ``ctx``'s run (user and session); a report on a
    run of another user raises NotFound and records nothing."""
    _require_run_id(run_id)
    with conn.transaction():
        visible = _visible_in_own_run(conn, ctx, assertion_ids, run_id)
        new = record_injection(conn, ctx.instance_key, visible, run_id=run_id,
                               user_id=ctx.user_id, session_key=ctx.session_key)
    return len(visible), new


def _visible_in_own_run(conn: Conn, ctx: AccessContext, assertion_ids: Sequence[uuid.UUID],
                        run_id: str) -> list[uuid.UUID]:
    """Claim ``run_id`` for ``ctx`` if nobody reported on it yet, require it to be ``ctx``'s
    (NotFound otherwise), and answer the ``assertion_ids`` ``ctx`` may recall."""
    conn.execute(_CLAIM_RUN, {"instance": ctx.instance_key, "run_id": run_id,
                              "user_id": ctx.user_id, "session_key": ctx.session_key})
    _require_own_run(conn, ctx, run_id)
    return visible_assertion_ids(conn, ctx, list(assertion_ids))


def record_explicit(conn: Conn, ctx: AccessContext, assertion_ids: Sequence[uuid.UUID], *,
                    kind: str, run_id: str, note: str | None = None) -> tuple[int, int]:
    """Record that recalled assertions were ``helpful`` or ``unhelpful`` in ``run_id``:
    (how many counted: those ``ctx`` may recall, how many were new). Once per assertion,
    kind and run (a retry changes nothing); the run is the caller's as for injections (a run
    of another user: NotFound, nothing recorded). ``note`` goes to the event's details."""
    _require_run_id(run_id)
    if kind not in EXPLICIT_KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(EXPLICIT_KINDS)}",
                           details={"field": "kind"})
    with conn.transaction():
        visible = _visible_in_own_run(conn, ctx, assertion_ids, run_id)
        new = _record(conn, _RECORD_EXPLICIT[kind], visible, instance=ctx.instance_key,
                      user_id=ctx.user_id, session_key=ctx.session_key, run_id=run_id,
                      details=Jsonb({"note": note} if note else {}))
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
    return _record(conn, _RECORD_INJECTION, assertion_ids, instance=instance_key,
                   user_id=user_id, session_key=session_key, run_id=run_id)


def record_response(
    conn: Conn,
    ctx: AccessContext,
    *,
    run_id: str,
    response_text: str,
    settings: Settings,
) -> list[uuid.UUID]:
    """Run the ``cited`` sensor over a run's final response; return the cited assertion ids.

    The run must be ``ctx``'s (see :func:`record_visible_injection`), else NotFound. Only
    assertions injected in the same run that ``ctx`` may still recall are candidates (the
    first ``cited_max_candidates`` of them). Each cited one gets a ``cited`` event (once per
    run; ``cited_count`` moves with it). Calling again for the same run returns the same ids
    and records nothing new. A response longer than ``cited_response_max_chars`` is refused
    (InvalidInput) before anything is read."""
    _require_run_id(run_id)
    limit = settings.cited_response_max_chars
    if len(response_text) > limit:
        raise InvalidInput(
            f"responseText has {len(response_text)} characters; the cited sensor reads at most "
            f"{limit}: send the response's first {limit} characters",
            code="response_too_long", details={"field": "responseText", "maxChars": limit})
    response_keys = citation_keys(response_text)
    params = {"instance": ctx.instance_key, "run_id": run_id}
    with conn.transaction():
        _require_own_run(conn, ctx, run_id)
        injected = conn.execute(
            _injected_in_run(ctx),
            {**params, "max_candidates": settings.cited_max_candidates}).fetchall()
        cited = [
            assertion_id
            for assertion_id, text in injected
            if cites(citation_keys(text), response_keys, settings)
        ]
        if cited:
            conn.execute(_RECORD_CITED, {**params, "ids": cited})
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

    Whoever puts assertions into conflict or supersedes them calls this in the transaction
    that changes them (it opens a savepoint there), with the assertions just changed; it is
    the only source of the ``corrected`` signal. ``reason`` is stored in the event details.
    ``window_hours`` defaults to ``feedback_correction_window_hours``.

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
    details = Jsonb({"reason": reason} | ({"event_key": event_key} if event_key else {}))
    return _record(conn, _RECORD_CORRECTIONS, assertion_ids, instance=instance_key,
                   window_hours=window_hours, event_key=event_key, details=details)
