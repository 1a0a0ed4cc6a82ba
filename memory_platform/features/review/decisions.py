"""A person's review decisions: approve, reject or supersede an assertion, resolve a
conflict, approve or reject a Wiki draft, one at a time or in bulk over a filtered queue.

Every assertion decision goes through
:func:`memory_platform.features.consolidation.lifecycle.decide`
or :func:`~memory_platform.features.consolidation.lifecycle.resolve_conflict` with reviewer kind
``human`` and the reviewer's user id, so review rows are appended, human decisions win over
automation (invariant 8) and the projection is enqueued; graph jobs follow by the triggers
of migration 0020. After the decision commits, the decided assertions' projection jobs are
run at once (``projection.outbox.process_outbox`` with their job ids), so recall reflects
the decision right away; a job that fails there stays in the outbox for the worker.

A reviewer decides only what they may see: an assertion, conflict or draft outside the
reviewer's audiences is answered as NotFound (nothing is written, nothing is revealed).

Only a person decides (:func:`_reviewer`): the adapter passes the kind of the key that asks
(``apikeys.ApiKey.kind``) and an agent or runtime key is refused (AccessDenied
``person_required``), even if its row were forced to hold ``memory:review``. In-process
callers without a key (the CLI's ``--reviewer``) are the operator, a person.

Four eyes (:func:`approvable_alone`): a person does not alone activate a team or workspace
assertion whose supporting evidence is only their own writes (their agents write as them):
AccessDenied ``own_evidence``; another reviewer may. A private assertion is the owner's own
business and may be approved by them.

Notes and reasons are stored text: they pass the secret check of every stored field
(``secrets.refuse_secret``, CredentialDetected as on the write path) before anything is
written.

Each function is self-committing (``db.units``): call it on an idle connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.consolidation import lifecycle
from memory_platform.features.projection.outbox import ASSERTION_PROJECTION, process_outbox
from memory_platform.features.review import queues
from memory_platform.features.review.people import is_person
from memory_platform.foundation.db.units import commit_if_idle, committed_unit, require_idle
from memory_platform.foundation.errors import AccessDenied, Conflict, InvalidInput, NotFound
from memory_platform.foundation.secrets import refuse_secret_fields
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext, audience_predicate

ASSERTION_DECISIONS = ("approve", "reject", "supersede")
CONFLICT_ACTIONS = {"keep_one": "superseded", "keep_both": "kept_both",
                    "merge": "duplicate", "reject_challenger": "rejected"}
WIKI_DECISIONS = {"approve": "approved", "reject": "rejected"}
DEFAULT_REASON = "human_review"
BULK_LIMIT = queues.MAX_LIMIT


@dataclass
class Decided:
    """What one decision (or a bulk of them) did."""

    decided: list[str] = field(default_factory=list)      # ids whose state changed
    unchanged: list[str] = field(default_factory=list)    # recorded, state as it was
    refused: list[dict[str, str]] = field(default_factory=list)
    projected: int = 0                                    # projection jobs run at once

    def as_json(self) -> dict[str, Any]:
        return {"decided": self.decided, "unchanged": self.unchanged,
                "refused": self.refused, "projected": self.projected}


def _reviewer(ctx: AccessContext, key_kind: str) -> str:
    """The user id of the person deciding; AccessDenied ``person_required`` for an agent or
    runtime key, or a context without a user."""
    if not is_person(key_kind):
        raise AccessDenied("a review decision needs a person: an agent or runtime key cannot "
                           "decide (sign in with the person's own key)",
                           details={"keyKind": key_kind}, code="person_required")
    if not ctx.user_id:
        raise AccessDenied("a review decision needs a person: use a user key",
                           details={"keyKind": key_kind}, code="person_required")
    return ctx.user_id


@contextmanager
def _deciding(conn: psycopg.Connection, ctx: AccessContext, key_kind: str, name: str,
              texts: dict[str, str | None]) -> Iterator[tuple[str, Decided]]:
    """One decision's committed unit: the reviewer (a person, else AccessDenied), the texts
    it stores checked for secrets, the result to fill; everything inside commits together
    or not at all."""
    reviewer = _reviewer(ctx, key_kind)
    refuse_secret_fields(texts)
    require_idle(conn, name)
    result = Decided()
    with committed_unit(conn):
        yield reviewer, result


_OTHERS_EVIDENCE = """
    SELECT a.audience_kind IN ('team', 'workspace') AND a.status <> 'active', EXISTS (
           SELECT 1 FROM agent_memory_assertion_evidence e
             JOIN agent_memory_sources s
               ON s.instance_key = e.instance_key AND s.id = e.source_id
             LEFT JOIN agent_memories m
               ON m.instance_key = s.instance_key AND m.id = s.memory_id
            WHERE e.instance_key = a.instance_key AND e.assertion_id = a.id
              AND e.stance = 'supports'
              AND coalesce(m.user_id, s.owner_user_id) IS DISTINCT FROM %(reviewer)s)
      FROM agent_memory_assertions a
     WHERE a.instance_key = %(instance)s AND a.id = %(id)s
"""


def approvable_alone(conn: psycopg.Connection, instance_key: str, assertion_id: UUID,
                     reviewer: str) -> bool:
    """THE four-eyes rule: whether ``reviewer`` may approve the assertion alone. Not when
    the approval would activate a team or workspace assertion none of whose supporting
    evidence was written by anyone else (the writer of a source is its memory's user, or
    its owner; an agent key writes as its user, so an agent's inference counts as its
    person's own). Approving what is already active (a person's own statement the write
    policy activated) tells nobody anything new: it only marks it as a person's decision."""
    row = conn.execute(_OTHERS_EVIDENCE, {"instance": instance_key, "id": assertion_id,
                                          "reviewer": reviewer}).fetchone()
    return row is None or not row[0] or bool(row[1])


def _own_evidence(assertion_id: UUID) -> AccessDenied:
    return AccessDenied(
        f"assertion {assertion_id} is a team or workspace fact backed only by your own writes "
        "(or your agents'): another reviewer has to approve it",
        details={"assertionId": str(assertion_id)}, code="own_evidence")


def _reason(reason_code: str | None) -> str:
    return reason_code or DEFAULT_REASON


def _project(conn: psycopg.Connection, settings: Settings, instance_key: str,
             assertion_ids: list[UUID]) -> int:
    """Run the pending projection jobs of ``assertion_ids`` now (each commits on its own)."""
    if not assertion_ids:
        return 0
    jobs = [r[0] for r in conn.execute(
        "SELECT id FROM agent_memory_ingestion_outbox"
        " WHERE instance_key = %s AND job_type = %s AND subject_id = ANY(%s::uuid[])"
        "   AND status IN ('pending', 'failed')",
        (instance_key, ASSERTION_PROJECTION, list(assertion_ids))).fetchall()]
    commit_if_idle(conn)
    if not jobs:
        return 0
    return process_outbox(conn, settings, limit=len(jobs), instance_key=instance_key,
                          job_ids=jobs).done


def _visible_ids(conn: psycopg.Connection, ctx: AccessContext, ids: list[UUID]) -> set[UUID]:
    return set(queues.visible_assertions(conn, ctx, ids))


def _decide_one(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
                assertion_id: UUID, decision: str, *, reviewer: str, reason_code: str,
                successor_id: UUID | None, note: str | None) -> bool:
    """One decision in the caller's transaction (after the visibility check)."""
    if decision == "supersede":
        if successor_id is None:
            raise InvalidInput("a supersede needs successor_id", details={"field": "successorId"})
        if successor_id not in _visible_ids(conn, ctx, [successor_id]):
            raise NotFound(f"no assertion {successor_id}", details={"field": "successorId"})
    if decision == "approve" and not approvable_alone(conn, ctx.instance_key, assertion_id,
                                                      reviewer):
        raise _own_evidence(assertion_id)
    return lifecycle.decide(conn, ctx.instance_key, assertion_id, decision,
                            reviewer_kind="human", reason_code=reason_code,
                            reviewer_id=reviewer, successor_id=successor_id, note=note,
                            settings=settings)


def decide_assertion(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
                     assertion_id: UUID, decision: str, *, reason_code: str | None = None,
                     successor_id: UUID | None = None, note: str | None = None,
                     project: bool = True, key_kind: str) -> Decided:
    """A person's ``approve``, ``reject`` or ``supersede`` (by ``successor_id``, with a
    reason) of one assertion ``ctx`` may see (NotFound otherwise). Conflict when a
    supersede is refused (another audience, a superseded successor); AccessDenied
    ``own_evidence`` for an approval the four-eyes rule refuses. The decided assertion's
    projection runs at once unless ``project`` is False."""
    if decision not in ASSERTION_DECISIONS:
        raise InvalidInput(f"unknown decision {decision!r}",
                           details={"field": "decision", "allowed": list(ASSERTION_DECISIONS)})
    with _deciding(conn, ctx, key_kind, "decide_assertion",
                   {"note": note}) as (reviewer, result):
        if assertion_id not in _visible_ids(conn, ctx, [assertion_id]):
            raise NotFound(f"no assertion {assertion_id}", details={"field": "assertionId"})
        changed = _decide_one(conn, settings, ctx, assertion_id, decision, reviewer=reviewer,
                              reason_code=_reason(reason_code), successor_id=successor_id,
                              note=note)
        if decision == "supersede" and not changed:
            raise Conflict(f"the supersede of {assertion_id} was refused",
                           details={"assertionId": str(assertion_id)})
    (result.decided if changed else result.unchanged).append(str(assertion_id))
    if project:
        result.projected = _project(conn, settings, ctx.instance_key, [assertion_id])
    return result


def decide_pending(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
                   decision: str, *, assertion_type: str | None = None,
                   audience: str | None = None, origin: str | None = None,
                   ids: list[UUID] | None = None, limit: int = BULK_LIMIT,
                   reason_code: str | None = None, note: str | None = None,
                   key_kind: str) -> Decided:
    """Bulk ``approve`` or ``reject`` of the pending assertions of a filtered queue (the
    filters of :func:`queues.pending_assertions`, optionally narrowed to ``ids``), at most
    ``limit`` (<= :data:`BULK_LIMIT`) of them, oldest first, in one committed unit; then
    their projections run. An approval the four-eyes rule refuses is listed in
    ``refused`` (code ``own_evidence``) and left pending. Call again while it decides
    ``limit`` of them."""
    if decision not in ("approve", "reject"):
        raise InvalidInput("a bulk decision is approve or reject",
                           details={"field": "decision", "allowed": ["approve", "reject"]})
    if not 1 <= limit <= BULK_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {BULK_LIMIT}",
                           details={"field": "limit"})
    queues.check_filters(assertion_type=assertion_type, audience=audience, origin=origin)
    with _deciding(conn, ctx, key_kind, "decide_pending",
                   {"note": note}) as (reviewer, result):
        rows = queues.pending_assertion_rows(conn, ctx, assertion_type=assertion_type,
                                             audience=audience, origin=origin, limit=limit,
                                             ids=ids)
        for row in rows:
            if decision == "approve" and not approvable_alone(conn, ctx.instance_key,
                                                              row["id"], reviewer):
                result.refused.append({"id": str(row["id"]), "code": "own_evidence"})
                continue
            changed = lifecycle.decide(conn, ctx.instance_key, row["id"], decision,
                                       reviewer_kind="human", reason_code=_reason(reason_code),
                                       reviewer_id=reviewer, note=note, settings=settings)
            (result.decided if changed else result.unchanged).append(str(row["id"]))
    taken = set(result.decided) | set(result.unchanged)
    result.projected = _project(conn, settings, ctx.instance_key,
                                [r["id"] for r in rows if str(r["id"]) in taken])
    return result


def resolve(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
            conflict_id: UUID, action: str, *, keep_id: UUID | None = None,
            project: bool = True, key_kind: str) -> Decided:
    """A person resolves an open conflict ``ctx`` may see (NotFound otherwise):

    * ``keep_one``: ``keep_id`` stays, the other is superseded by it;
    * ``merge``: the same, folded as a duplicate;
    * ``keep_both``: both stand (they do not contradict each other); both are approved by
      the person (``approve`` reviews), so automation treats the pair as decided;
    * ``reject_challenger``: the challenge was wrong (the challenger, or the other one of
      the pair when ``keep_id`` names the challenger, is rejected).

    Through ``lifecycle.resolve_conflict`` (reviewer kind ``human``, ``resolved_by`` the
    reviewer). Conflict when already resolved or refused; AccessDenied ``own_evidence``
    when ``keep_both`` would approve an assertion the four-eyes rule keeps from the
    reviewer alone."""
    if action not in CONFLICT_ACTIONS:
        raise InvalidInput(f"unknown action {action!r}",
                           details={"field": "action", "allowed": list(CONFLICT_ACTIONS)})
    with _deciding(conn, ctx, key_kind, "resolve", {}) as (reviewer, result):
        row = conn.execute(
            "SELECT assertion_id, conflicting_assertion_id, status"
            "  FROM agent_memory_assertion_conflicts WHERE instance_key = %s AND id = %s",
            (ctx.instance_key, conflict_id)).fetchone()
        if row is None or not {row[0], row[1]} <= _visible_ids(conn, ctx, [row[0], row[1]]):
            raise NotFound(f"no conflict {conflict_id}", details={"field": "conflictId"})
        pair = [row[0], row[1]]
        resolution = CONFLICT_ACTIONS[action]
        if resolution in ("superseded", "duplicate") and keep_id is None:
            raise InvalidInput(f"{action} needs keepId (the assertion that stays)",
                               details={"field": "keepId"})
        lifecycle.resolve_conflict(conn, ctx.instance_key, conflict_id, resolution=resolution,
                                   resolved_by=reviewer, survivor_id=keep_id,
                                   reviewer_kind="human", settings=settings)
        if resolution == "kept_both":          # (a refusal rolls the resolution back too)
            for assertion_id in pair:
                if not approvable_alone(conn, ctx.instance_key, assertion_id, reviewer):
                    raise _own_evidence(assertion_id)
            for assertion_id in pair:
                lifecycle.decide(conn, ctx.instance_key, assertion_id, "approve",
                                 reviewer_kind="human", reason_code="conflict_kept_both",
                                 reviewer_id=reviewer, note=f"conflict {conflict_id}",
                                 settings=settings)
    result.decided.append(str(conflict_id))
    if project:
        result.projected = _project(conn, settings, ctx.instance_key, pair)
    return result


def decide_wiki_draft(conn: psycopg.Connection, ctx: AccessContext, proposal_id: UUID,
                      decision: str, *, reason: str | None = None,
                      key_kind: str) -> Decided:
    """A person approves or rejects a Wiki draft ``ctx`` may see (NotFound otherwise;
    Conflict when it is no longer a draft). ``decided_by`` is the reviewer; nothing is
    published here."""
    if decision not in WIKI_DECISIONS:
        raise InvalidInput(f"unknown decision {decision!r}",
                           details={"field": "decision", "allowed": list(WIKI_DECISIONS)})
    with _deciding(conn, ctx, key_kind, "decide_wiki_draft",
                   {"reason": reason}) as (reviewer, result):
        if not queues.wiki_draft_rows(conn, ctx, limit=1, ids=[proposal_id]):
            exists = conn.execute(
                "SELECT state FROM wiki_change_proposals WHERE instance_key = %s AND id = %s",
                (ctx.instance_key, proposal_id)).fetchone()
            visible = exists is not None and conn.execute(
                sql.SQL("SELECT 1 FROM {wiki} w WHERE w.id = %(id)s AND {visible}").format(
                    wiki=queues.WIKI, visible=audience_predicate(ctx, "w")),
                {"id": proposal_id}).fetchone() is not None
            if not visible:
                raise NotFound(f"no wiki proposal {proposal_id}",
                               details={"field": "proposalId"})
            raise Conflict(f"wiki proposal {proposal_id} is {exists[0]}, not a draft",
                           details={"proposalId": str(proposal_id)})
        conn.execute(
            "UPDATE wiki_change_proposals SET state = %s, decided_by = %s, decided_at = now(),"
            " decision_reason = %s WHERE instance_key = %s AND id = %s AND state = 'draft'",
            (WIKI_DECISIONS[decision], reviewer, reason or DEFAULT_REASON, ctx.instance_key,
             proposal_id))
    result.decided.append(str(proposal_id))
    return result
