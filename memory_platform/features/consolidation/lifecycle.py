"""The assertion life cycle beyond plain review decisions: the one module that supersedes,
expires, and opens and resolves conflicts (specification, "Storage model" and
"Consolidation").

Every change here runs in the caller's transaction (inside a savepoint, so a refusal or an
error half-way leaves nothing behind), except :func:`expire_due`, a self-committing sweep.
Each one

* writes its before-image audit row first
(:func:`memory_platform.features.consolidation.audit.audit`),
  so an operator can reverse it by hand;
* appends its review row (``supersede``, ``expire``), because review decisions are the
  ledger's account of why a state changed;
* records the ``corrected`` feedback of the assertions it puts into question
  (``record_corrections``: a supersede or an opened conflict is the correction signal), and
* enqueues the assertion projection for a changed recall state, so memories, chunks and
  vectors follow through the outbox; graph jobs follow by the triggers of migration 0020.

Human decisions win: automation (``policy``, ``curator``, ``system``) never supersedes or
expires an assertion a person has decided (:func:`ledger.assertions.human_decided`); a
person's ``supersede`` always works. Plain decisions (approve, reject, revoke, ...) stay with
:func:`ledger.assertions.record_decision`; :func:`decide` is the one entry for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import psycopg
from psycopg import sql

from memory_platform.features.consolidation.audit import audit
from memory_platform.features.projection.outbox import enqueue_assertion_projection
from memory_platform.features.retrieval.feedback.events import record_corrections
from memory_platform.foundation.db.units import committed_unit, require_idle
from memory_platform.foundation.errors import Conflict, InvalidInput, NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.shared.ledger.assertions import PERSON_DECIDED, human_decided, record_decision

SUPERSEDE, DUPLICATE, CONFLICT_OPEN = "assertion_supersede", "assertion_duplicate", "conflict_open"
CONFLICT_RESOLVE = "conflict_resolve"
ASSERTIONS, CONFLICTS = "agent_memory_assertions", "agent_memory_assertion_conflicts"
DECISIONS = ("approve", "reject", "activate", "defer", "revoke", "supersede", "rollback",
             "expire")
RESOLUTIONS = ("superseded", "kept_both", "duplicate", "rejected")
DETECTORS = ("consolidation", "dream", "write_path", "human")
REVIEWERS = ("human", "policy", "curator", "system")
# What automation may still supersede: a standing assertion (or one waiting for a decision).
_STANDING = ("active", "candidate", "conflicted")
EXPIRED_REASON = "validity_ended"


@dataclass(frozen=True)
class _Row:
    id: UUID
    audience: tuple[str, str]
    status: str
    review_state: str
    revision_of: UUID | None
    superseded_by: UUID | None


_LOCK = """
    SELECT id, audience_kind, audience_key, status, review_state, revision_of, superseded_by
      FROM agent_memory_assertions
     WHERE instance_key = %s AND id = ANY(%s::uuid[])
     ORDER BY id
     FOR UPDATE
"""


def _lock(conn: psycopg.Connection, instance_key: str, *ids: UUID) -> dict[UUID, _Row]:
    """The assertions, locked in id order (two writers locking one pair cannot deadlock)."""
    rows = conn.execute(_LOCK, (instance_key, list(ids))).fetchall()
    return {r[0]: _Row(r[0], (r[1], r[2]), r[3], r[4], r[5], r[6]) for r in rows}


def _review(conn: psycopg.Connection, instance_key: str, assertion_id: UUID, decision: str,
            reviewer_kind: str, reason_code: str, reviewer_id: str | None, note: str | None,
            dream_id: UUID | None) -> int:
    """Append one review row and answer its id (the event key of the correction)."""
    return conn.execute(
        """
        INSERT INTO agent_memory_assertion_reviews
               (instance_key, assertion_id, decision, reviewer_kind, reviewer_id, reason_code,
                note, dream_id)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
        RETURNING id
        """,
        (instance_key, assertion_id, decision, reviewer_kind, reviewer_id, reason_code, note,
         dream_id)).fetchone()[0]


def _check_reviewer(reviewer_kind: str) -> None:
    if reviewer_kind not in REVIEWERS:
        raise InvalidInput(f"unknown reviewer kind {reviewer_kind!r}",
                           details={"field": "reviewer_kind", "allowed": list(REVIEWERS)})


# --- supersede ------------------------------------------------------------------------------


def _may_supersede(conn: psycopg.Connection, instance_key: str, loser: _Row | None,
                   survivor: _Row | None, reviewer_kind: str) -> bool:
    """The refusals of :func:`supersede` (nothing is written for any of them)."""
    if loser is None or survivor is None or loser.audience != survivor.audience:
        return False                   # another instance, a missing row, another audience
    if survivor.status == "superseded" or loser.superseded_by == survivor.id:
        return False                   # a dead end, or done already
    if reviewer_kind == "human":
        return True
    return loser.status in _STANDING and not human_decided(conn, instance_key, loser.id)


def supersede(
    conn: psycopg.Connection,
    instance_key: str,
    loser_id: UUID,
    survivor_id: UUID,
    *,
    reviewer_kind: str,
    reason_code: str,
    reviewer_id: str | None = None,
    dream_id: UUID | None = None,
    note: str | None = None,
    operation: str = SUPERSEDE,
    settings: Settings | None = None,
) -> bool:
    """Supersede ``loser_id`` by ``survivor_id`` in the caller's transaction; whether it did.

    Refused (False, nothing written): the same id twice; either one missing in
    ``instance_key``; two audiences; a survivor that is itself superseded; a loser already
    superseded by this survivor; automation touching a loser that a person decided or that
    no longer stands (superseded, rejected, expired, tombstoned). A person's supersede
    otherwise always works.

    Else: the audit row (``operation``: ``assertion_supersede``, or ``assertion_duplicate``
    when a duplicate is folded) with the loser's before-image, a ``supersede`` review, the
    loser ``superseded`` with ``superseded_by`` = survivor, the survivor's ``revision_of`` =
    loser when it had none (audited too), the loser's ``corrected`` feedback (event key
    ``supersede:<review id>``) and its projection job (archived when it runs; its graph refs
    are retracted by the trigger's job)."""
    if operation not in (SUPERSEDE, DUPLICATE):
        raise ValueError(f"supersede writes {SUPERSEDE} or {DUPLICATE}, not {operation!r}")
    _check_reviewer(reviewer_kind)
    if loser_id == survivor_id:
        return False
    with conn.transaction():
        rows = _lock(conn, instance_key, loser_id, survivor_id)
        loser, survivor = rows.get(loser_id), rows.get(survivor_id)
        if not _may_supersede(conn, instance_key, loser, survivor, reviewer_kind):
            return False
        mapping = {"loserId": str(loser_id), "survivorId": str(survivor_id),
                   "reviewerKind": reviewer_kind, "reasonCode": reason_code}
        audit(conn, instance_key, operation, ASSERTIONS, loser_id, dream_id=dream_id,
              after={"status": "superseded", "superseded_by": str(survivor_id)},
              mapping=mapping)
        review_id = _review(conn, instance_key, loser_id, "supersede", reviewer_kind,
                            reason_code, reviewer_id, note, dream_id)
        conn.execute(
            "UPDATE agent_memory_assertions SET status = 'superseded', superseded_by = %s"
            " WHERE instance_key = %s AND id = %s",
            (survivor_id, instance_key, loser_id))
        # The survivor names what it revised, unless it names another already or that would
        # close a loop (the loser was a revision of the survivor: a return to the old text).
        if survivor.revision_of is None and loser.revision_of != survivor_id:
            audit(conn, instance_key, operation, ASSERTIONS, survivor_id, dream_id=dream_id,
                  after={"revision_of": str(loser_id)}, mapping=mapping)
            conn.execute(
                "UPDATE agent_memory_assertions SET revision_of = %s"
                " WHERE instance_key = %s AND id = %s",
                (loser_id, instance_key, survivor_id))
        record_corrections(conn, instance_key, [loser_id], reason=reason_code,
                           event_key=f"supersede:{review_id}", settings=settings)
        enqueue_assertion_projection(conn, instance_key, loser_id)
    return True


# --- conflicts ------------------------------------------------------------------------------

_OPEN_CONFLICT = """
    SELECT id FROM agent_memory_assertion_conflicts
     WHERE status = 'open'
       AND LEAST(assertion_id, conflicting_assertion_id) = LEAST(%(a)s::uuid, %(b)s::uuid)
       AND GREATEST(assertion_id, conflicting_assertion_id) = GREATEST(%(a)s::uuid, %(b)s::uuid)
"""


def open_conflict(
    conn: psycopg.Connection,
    instance_key: str,
    left_id: UUID,
    right_id: UUID,
    *,
    detected_by: str,
    reason: str,
    dream_id: UUID | None = None,
    settings: Settings | None = None,
) -> UUID | None:
    """The open conflict between two assertions of one audience, opened if there is none
    (idempotent per unordered pair); None when refused (the same id twice, a missing row,
    two audiences). ``left_id`` is the challenger (the newer statement, the correction),
    ``right_id`` the one it challenges: :func:`resolve_conflict`'s ``rejected`` reads them
    so. When both are ``active`` (two recalled facts contradict each other), each becomes
    ``conflicted`` (specification: conflicted assertions never enter recall) unless a person
    decided it and automation detected the conflict (human decisions win); a challenger
    still waiting for review leaves the standing one recalled. :func:`resolve_conflict`
    makes the survivors active again. A new conflict writes its audit rows
    (``conflict_open``: the conflict with no before-image, each marked assertion with its
    before-image) and records a correction of both (event key ``conflict:<id>``; only
    recently injected ones count)."""
    if detected_by not in DETECTORS:
        raise InvalidInput(f"unknown detector {detected_by!r}",
                           details={"field": "detected_by", "allowed": list(DETECTORS)})
    if left_id == right_id:
        return None
    with conn.transaction():
        rows = _lock(conn, instance_key, left_id, right_id)
        left, right = rows.get(left_id), rows.get(right_id)
        if left is None or right is None or left.audience != right.audience:
            return None
        existing = conn.execute(_OPEN_CONFLICT, {"a": left_id, "b": right_id}).fetchone()
        if existing:
            return existing[0]
        conflict_id = uuid4()
        kind, key = left.audience
        row = {"id": str(conflict_id), "instance_key": instance_key, "audience_kind": kind,
               "audience_key": key, "assertion_id": str(left_id),
               "conflicting_assertion_id": str(right_id), "status": "open",
               "detected_by": detected_by, "reason": reason}
        audit(conn, instance_key, CONFLICT_OPEN, CONFLICTS, conflict_id, dream_id=dream_id,
              read_before=False, after=row,
              mapping={"assertionId": str(left_id), "conflictingAssertionId": str(right_id)})
        conn.execute(
            """
            INSERT INTO agent_memory_assertion_conflicts
                   (id, instance_key, audience_kind, audience_key, assertion_id,
                    conflicting_assertion_id, detected_by, reason)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
            """,
            (conflict_id, instance_key, kind, key, left_id, right_id, detected_by, reason))
        if left.status == right.status == "active":  # two recalled facts contradict
            for row in (left, right):
                if detected_by == "human" or not human_decided(conn, instance_key, row.id):
                    _set_status(conn, instance_key, row.id, "conflicted", CONFLICT_OPEN,
                                conflict_id, dream_id)
        record_corrections(conn, instance_key, [left_id, right_id], reason=reason,
                           event_key=f"conflict:{conflict_id}", settings=settings)
    return conflict_id


def resolve_conflict(
    conn: psycopg.Connection,
    instance_key: str,
    conflict_id: UUID,
    *,
    resolution: str,
    resolved_by: str,
    survivor_id: UUID | None = None,
    reviewer_kind: str = "human",
    settings: Settings | None = None,
) -> None:
    """Resolve an open conflict (caller's transaction):

    * ``superseded``: ``survivor_id`` (one of the pair) wins; the other is superseded through
      :func:`supersede` (reason ``conflict_superseded``);
    * ``duplicate``: the same, folded as a duplicate (audit operation ``assertion_duplicate``);
    * ``kept_both``: both stay as they are (they do not contradict each other);
    * ``rejected``: the challenge was wrong: the challenger (``assertion_id``, the left of
      :func:`open_conflict`) is rejected and the challenged one stands; with ``survivor_id``
      the other one of the pair is rejected instead (a ``reject`` review through
      ``record_decision``, its projection enqueued).

    ``resolved_at``/``resolved_by`` are set, and each of the pair still ``conflicted`` with
    no other open conflict is ``active`` again (audit ``conflict_resolve``). NotFound for an
    unknown conflict (or one of another instance), Conflict when it is already resolved or
    when the change is refused (automation against a person's decision, a survivor already
    superseded): then nothing is written. InvalidInput for an unknown resolution or a
    survivor outside the pair."""
    if resolution not in RESOLUTIONS:
        raise InvalidInput(f"unknown resolution {resolution!r}",
                           details={"field": "resolution", "allowed": list(RESOLUTIONS)})
    _check_reviewer(reviewer_kind)
    with conn.transaction():
        row = conn.execute(
            "SELECT assertion_id, conflicting_assertion_id, status"
            "  FROM agent_memory_assertion_conflicts"
            " WHERE instance_key = %s AND id = %s FOR UPDATE",
            (instance_key, conflict_id)).fetchone()
        if row is None:
            raise NotFound(f"no conflict {conflict_id}", details={"field": "conflictId"})
        challenger, challenged, status = row
        if status != "open":
            raise Conflict(f"conflict {conflict_id} is already resolved",
                           details={"conflictId": str(conflict_id)})
        pair = (challenger, challenged)
        if survivor_id is not None and survivor_id not in pair:
            raise InvalidInput("survivor_id must be one of the conflict's two assertions",
                               details={"field": "survivor_id"})
        if resolution in ("superseded", "duplicate"):
            if survivor_id is None:
                raise InvalidInput(f"resolution {resolution!r} needs survivor_id",
                                   details={"field": "survivor_id"})
            loser = challenged if survivor_id == challenger else challenger
            done = supersede(conn, instance_key, loser, survivor_id,
                             reviewer_kind=reviewer_kind, reason_code=f"conflict_{resolution}",
                             reviewer_id=resolved_by,
                             note=f"conflict {conflict_id}",
                             operation=DUPLICATE if resolution == "duplicate" else SUPERSEDE,
                             settings=settings)
            if not done:
                raise Conflict(f"conflict {conflict_id}: the supersede was refused",
                               details={"conflictId": str(conflict_id)})
        elif resolution == "rejected":
            rejected = challenger if survivor_id in (None, challenged) else challenged
            if reviewer_kind != "human" and human_decided(conn, instance_key, rejected):
                raise Conflict(f"conflict {conflict_id}: a person decided {rejected}",
                               details={"conflictId": str(conflict_id)})
            _decide_plain(conn, instance_key, rejected, "reject", reviewer_kind=reviewer_kind,
                          reason_code="conflict_rejected", reviewer_id=resolved_by,
                          note=f"conflict {conflict_id}", dream_id=None)
        conn.execute(
            "UPDATE agent_memory_assertion_conflicts"
            "   SET status = 'resolved', resolution = %s, resolved_at = now(), resolved_by = %s"
            " WHERE instance_key = %s AND id = %s",
            (resolution, resolved_by, instance_key, conflict_id))
        for settled in conn.execute(_SETTLED, (instance_key, list(pair))).fetchall():
            _set_status(conn, instance_key, settled[0], "active", CONFLICT_RESOLVE,
                        conflict_id, None)


# The assertions of a pair still marked conflicted that no other open conflict involves.
_SETTLED = """
    SELECT a.id FROM agent_memory_assertions a
     WHERE a.instance_key = %s AND a.id = ANY(%s) AND a.status = 'conflicted'
       AND NOT EXISTS (SELECT 1 FROM agent_memory_assertion_conflicts c
                        WHERE c.instance_key = a.instance_key AND c.status = 'open'
                          AND a.id IN (c.assertion_id, c.conflicting_assertion_id))
     ORDER BY a.id
"""


def _set_status(conn: psycopg.Connection, instance_key: str, assertion_id: UUID, status: str,
                operation: str, conflict_id: UUID, dream_id: UUID | None) -> None:
    """An assertion marked ``conflicted`` by an opened conflict, or ``active`` again by its
    resolution: the audit row with its before-image, the change, its projection job (recall
    follows at once through the trigger of migration 0008; the projection memory is archived
    or restored when the job runs)."""
    audit(conn, instance_key, operation, ASSERTIONS, assertion_id, dream_id=dream_id,
          after={"status": status}, mapping={"conflictId": str(conflict_id)})
    conn.execute("UPDATE agent_memory_assertions SET status = %s"
                 " WHERE instance_key = %s AND id = %s", (status, instance_key, assertion_id))
    enqueue_assertion_projection(conn, instance_key, assertion_id)


# --- decisions ------------------------------------------------------------------------------

_STATE = ("SELECT status, review_state FROM agent_memory_assertions"
          " WHERE instance_key = %s AND id = %s FOR UPDATE")


def _expire_one(conn: psycopg.Connection, instance_key: str, assertion_id: UUID, *,
                reviewer_kind: str, reason_code: str, reviewer_id: str | None,
                note: str | None, dream_id: UUID | None) -> None:
    """The ``expire`` decision: a review row; an active assertion becomes ``expired``
    (automation never expires what a person decided)."""
    _review(conn, instance_key, assertion_id, "expire", reviewer_kind, reason_code,
            reviewer_id, note, dream_id)
    if reviewer_kind == "human" or not human_decided(conn, instance_key, assertion_id):
        conn.execute(
            "UPDATE agent_memory_assertions SET status = 'expired'"
            " WHERE instance_key = %s AND id = %s AND status = 'active'",
            (instance_key, assertion_id))


def _decide_plain(conn: psycopg.Connection, instance_key: str, assertion_id: UUID,
                  decision: str, *, reviewer_kind: str, reason_code: str,
                  reviewer_id: str | None, note: str | None, dream_id: UUID | None) -> bool:
    """A decision other than ``supersede``; whether the recall state changed (then the
    projection is enqueued)."""
    before = conn.execute(_STATE, (instance_key, assertion_id)).fetchone()
    if before is None:
        raise NotFound(f"no assertion {assertion_id}", details={"field": "assertionId"})
    if decision == "expire":
        _expire_one(conn, instance_key, assertion_id, reviewer_kind=reviewer_kind,
                    reason_code=reason_code, reviewer_id=reviewer_id, note=note,
                    dream_id=dream_id)
    else:
        record_decision(conn, instance_key=instance_key, assertion_id=assertion_id,
                        decision=decision, reviewer_kind=reviewer_kind,
                        reason_code=reason_code, reviewer_id=reviewer_id, note=note,
                        dream_id=dream_id)
    after = conn.execute(_STATE, (instance_key, assertion_id)).fetchone()
    if tuple(after) == tuple(before):
        return False
    enqueue_assertion_projection(conn, instance_key, assertion_id)
    return True


def decide(
    conn: psycopg.Connection,
    instance_key: str,
    assertion_id: UUID,
    decision: str,
    *,
    reviewer_kind: str,
    reason_code: str,
    reviewer_id: str | None = None,
    successor_id: UUID | None = None,
    note: str | None = None,
    dream_id: UUID | None = None,
    settings: Settings | None = None,
) -> bool:
    """The one entry for review decisions (caller's transaction); whether the assertion's
    state changed. ``supersede`` needs ``successor_id`` and goes through :func:`supersede`
    (False when refused); ``expire`` ends an active assertion; every other decision goes
    through ``ledger.assertions.record_decision`` (which never lets automation override a
    person). A changed state enqueues the assertion's projection. NotFound for an unknown
    assertion; InvalidInput for an unknown decision or a supersede without successor."""
    if decision not in DECISIONS:
        raise InvalidInput(f"unknown decision {decision!r}",
                           details={"field": "decision", "allowed": list(DECISIONS)})
    _check_reviewer(reviewer_kind)
    if decision == "supersede":
        if successor_id is None:
            raise InvalidInput("a supersede decision needs successor_id (the assertion that "
                               "replaces this one)", details={"field": "successor_id"})
        if conn.execute("SELECT 1 FROM agent_memory_assertions WHERE instance_key = %s"
                        " AND id = %s", (instance_key, assertion_id)).fetchone() is None:
            raise NotFound(f"no assertion {assertion_id}", details={"field": "assertionId"})
        return supersede(conn, instance_key, assertion_id, successor_id,
                         reviewer_kind=reviewer_kind, reason_code=reason_code,
                         reviewer_id=reviewer_id, dream_id=dream_id, note=note,
                         settings=settings)
    with conn.transaction():
        return _decide_plain(conn, instance_key, assertion_id, decision,
                             reviewer_kind=reviewer_kind, reason_code=reason_code,
                             reviewer_id=reviewer_id, note=note, dream_id=dream_id)


# --- expiry ---------------------------------------------------------------------------------

_DUE = """
    SELECT a.instance_key, a.id
      FROM agent_memory_assertions a
     WHERE a.status = 'active' AND a.valid_to IS NOT NULL AND a.valid_to <= now()
       {instance}
       AND NOT {decided}
     ORDER BY a.valid_to
     LIMIT %(limit)s
     FOR UPDATE OF a SKIP LOCKED
"""


def expire_due(conn: psycopg.Connection, settings: Settings, *,
               instance_key: str | None = None, limit: int = 1000) -> list[UUID]:
    """The expiry sweep (self-committing, one unit): at most ``limit`` active assertions (of
    one instance, or all) whose ``valid_to`` has passed become ``expired``, each with a
    ``expire`` review (reviewer ``system``, reason ``validity_ended``) and a projection job;
    answers their ids. Rows another sweep holds are skipped (``SKIP LOCKED``); call again
    while it answers ``limit`` ids.

    Assertions a person decided are left as they are (automation never changes them): the
    read rule (``TOLD``) already keeps them from agents once their window has passed, and the
    graph's sweep retracts their refs; they are excluded in SQL, so they never fill a batch.
    ``settings`` is the sweep's configuration (the rule itself has no tunable yet)."""
    if limit < 1:
        raise InvalidInput("limit must be at least 1", details={"field": "limit"})
    require_idle(conn, "expire_due")
    instance = (sql.SQL("AND a.instance_key = %(instance)s") if instance_key is not None
                else sql.SQL(""))
    statement = sql.SQL(_DUE).format(instance=instance, decided=PERSON_DECIDED)
    params: dict[str, Any] = {"instance": instance_key, "limit": limit}
    expired: list[UUID] = []
    with committed_unit(conn):
        due = conn.execute(statement, params).fetchall()
        for instance_of, assertion_id in due:
            _review(conn, instance_of, assertion_id, "expire", "system", EXPIRED_REASON,
                    None, None, None)
            conn.execute(
                "UPDATE agent_memory_assertions SET status = 'expired'"
                " WHERE instance_key = %s AND id = %s",
                (instance_of, assertion_id))
            enqueue_assertion_projection(conn, instance_of, assertion_id)
            expired.append(assertion_id)
    return expired
