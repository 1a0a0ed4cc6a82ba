"""The targeted deterministic safety pass: one policy decision per Dream assertion, no model.

It runs on exactly the assertion ids a Dream execution created or reused. Which origin x
trust class x type x audience activates, waits for a person or is rejected is the ledger's
one activation table (ledger/policy.py, origin ``dream``; the trust class is the weakest
source of the cited evidence set): safe, durable facts and preferences whose evidence is all
human, at ``dream_activation_confidence``, activate; decisions, constraints, procedures,
workspace-wide assertions and assistant-inferred or imported evidence wait for a person
(``defer``). Missing evidence, unsafe content, transient statements, time-bounded ones
without an end (with a ``validUntil`` they are judged like any other and expire by their
``valid_to``), unsupported types or evidence, low confidence and slot conflicts are
rejected; an explicit
``updates`` correction of an active assertion waits for a person (a conflict row is opened
and the corrected assertion's feedback records a correction). Every state change is an
appended review row (reviewer_kind ``policy``) with a reason code; a human decision is never
overridden, and an
assertion that is already active and approved is never demoted by a Dream's opinion of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.consolidation.lifecycle import open_conflict
from memory_platform.features.dreaming.grounding import unsafe_instruction
from memory_platform.features.dreaming.inputs import DreamInput
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.promote import Promoted, same_text_assertion
from memory_platform.features.dreaming.validate import AcceptedAssertion
from memory_platform.foundation.secrets import find_secret as find_credential
from memory_platform.foundation.settings import Settings
from memory_platform.shared.ledger import assertions as ledger
from memory_platform.shared.ledger import policy
from memory_platform.shared.ledger.assertions import HUMAN_REVIEW_STATES
from memory_platform.shared.ledger.recall import APPROVED_ACTIVE, is_approved_active

# What the activation table (ledger/policy.py) lets a Dream activate, for callers that list it.
ACTIVATABLE_TYPES = policy.OPTIMISTIC_TYPES
UNSUPPORTED_TRUST = policy.UNSUPPORTED_EVIDENCE

# Reason codes of the pass.
ACTIVATED = "dream_policy_safe"
EVIDENCE_NEEDS_REVIEW = "evidence_needs_review"
MISSING_EVIDENCE = "missing_evidence"
CONTAINS_CREDENTIAL = "contains_credential"
UNSAFE_INSTRUCTION = "unsafe_instruction"
TRANSIENT = "transient"
TIME_BOUNDED = "time_bounded"
UNSUPPORTED_TYPE = "unsupported_type"
LOW_CONFIDENCE = "low_confidence"
UNSUPPORTED_EVIDENCE = "unsupported_evidence"
CONFLICTING = "conflicting_assertion"
CORRECTION_NEEDS_REVIEW = "correction_needs_review"
WORKSPACE_NEEDS_REVIEW = "workspace_scope_needs_review"
HUMAN_DECISION = "human_decision"
ALREADY_ACTIVE = "already_active"

_TRANSIENT = re.compile(
    r"\b(?:right now|at the moment|for the moment|for now|this morning|this afternoon"
    r"|tonight|currently working on|im moment|gerade eben|heute abend|heute morgen)\b",
    re.IGNORECASE,
)
_TIME_BOUNDED = re.compile(
    r"\b(?:until (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow"
    r"|next week|the end of)|this week|next week|temporarily|for the next \w+ (?:days|weeks)"
    r"|bis (?:morgen|montag|dienstag|mittwoch|donnerstag|freitag|ende)|diese woche"
    r"|nächste woche|vorübergehend)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Candidate:
    """What the pass knows about one assertion (from the ledger, or for a dry run from the
    validated item and its inputs)."""

    text: str
    assertion_type: str
    confidence: float
    audience_kind: str
    relation: str
    time_bounded: bool
    transient: bool
    evidence_trust: tuple[str, ...]
    status: str | None = None
    review_state: str | None = None
    human_reviewed: bool = False
    conflicts: tuple[UUID, ...] = ()
    valid_until: datetime | None = None   # a time-bounded statement's end (its valid_to)


@dataclass(frozen=True)
class Verdict:
    decision: str      # 'activate' | 'reject' | 'defer' | 'keep'
    reason_code: str


def judge(candidate: Candidate, settings: Settings) -> Verdict:
    """The policy, as a pure function (first matching rule wins).

    Content checks first (they reject whatever the table says); then the activation table
    (ledger/policy.py, origin ``dream``, trust class = the weakest cited source) for its
    rejects; confidence; slot conflicts; then the table's review or activate."""
    c = candidate
    if c.human_reviewed or c.review_state in HUMAN_REVIEW_STATES:
        return Verdict("keep", HUMAN_DECISION)
    if is_approved_active(c.status, c.review_state):
        return Verdict("keep", ALREADY_ACTIVE)
    trust = policy.evidence_trust_class(c.evidence_trust)
    if trust is None:
        return Verdict("reject", MISSING_EVIDENCE)
    if find_credential(c.text):
        return Verdict("reject", CONTAINS_CREDENTIAL)
    if unsafe_instruction(c.text):
        return Verdict("reject", UNSAFE_INSTRUCTION)
    if c.transient or _TRANSIENT.search(c.text):
        return Verdict("reject", TRANSIENT)
    if (c.time_bounded or _TIME_BOUNDED.search(c.text)) and c.valid_until is None:
        # Kept only with its end: the assertion's valid_to, which the read rule and the
        # expiry sweep act on. Without one it would be told as if it held for ever.
        return Verdict("reject", TIME_BOUNDED)
    table = policy.decide("dream", trust, c.assertion_type, c.audience_kind)
    if table.outcome == policy.REJECT:
        return Verdict("reject", table.reason_code)
    if c.confidence < settings.dream_activation_confidence:
        return Verdict("reject", LOW_CONFIDENCE)
    if c.conflicts:
        if c.relation == "updates":
            return Verdict("defer", CORRECTION_NEEDS_REVIEW)
        return Verdict("reject", CONFLICTING)
    return Verdict(table.review_decision, table.reason_code)


@dataclass(frozen=True)
class Decision:
    assertion_id: UUID
    decision: str
    reason_code: str
    changed: bool
    before: tuple[str, str]

    def as_json(self) -> dict[str, Any]:
        return {"assertionId": str(self.assertion_id), "decision": self.decision,
                "reasonCode": self.reason_code, "changed": self.changed}


@dataclass
class SafetyResult:
    decisions: list[Decision] = field(default_factory=list)

    def _ids(self, decision: str) -> list[UUID]:
        return [d.assertion_id for d in self.decisions if d.decision == decision]

    @property
    def activated(self) -> list[UUID]:
        return self._ids("activate")

    @property
    def rejected(self) -> list[UUID]:
        return self._ids("reject")

    @property
    def changed(self) -> list[UUID]:
        return [d.assertion_id for d in self.decisions if d.changed]

    def rejected_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for d in self.decisions:
            if d.decision == "reject":
                counts[d.reason_code] = counts.get(d.reason_code, 0) + 1
        return counts

    def summary(self) -> dict[str, Any]:
        return {"activated": len(self.activated), "rejected": len(self.rejected),
                "deferred": len(self._ids("defer")), "kept": len(self._ids("keep")),
                "rejectedByReason": self.rejected_by_reason(),
                "decisions": [d.as_json() for d in self.decisions]}


# --- ledger reads --------------------------------------------------------------------------

_STATE = """
    SELECT a.status, a.review_state, a.assertion_type, a.assertion_text, a.confidence,
           a.subject, a.predicate, a.valid_to,
           EXISTS (SELECT 1 FROM agent_memory_assertion_reviews r
                    WHERE r.instance_key = a.instance_key AND r.assertion_id = a.id
                      AND r.reviewer_kind = 'human')
      FROM agent_memory_assertions a
     WHERE a.instance_key = %s AND a.id = %s
"""

# Session activity (a source-less summary or flush Dream promotion stored as ``imported``) is
# told apart from an imported fact by its locator (ledger/policy.py, SESSION_ACTIVITY).
_EVIDENCE_TRUST = """
    SELECT CASE WHEN s.trust_class = 'imported' AND s.source_kind = 'memory'
                     AND s.source_locator->>'sourceType' IN ('summary', 'flush')
                THEN 'session_activity' ELSE s.trust_class END
      FROM agent_memory_assertion_evidence e
      JOIN agent_memory_sources s ON s.instance_key = e.instance_key AND s.id = e.source_id
     WHERE e.instance_key = %s AND e.assertion_id = %s AND e.stance = 'supports'
"""

# Active, approved assertions of the same audience filling the same slot with another text.
_CONFLICTS = sql.SQL("""
    SELECT a.id
      FROM agent_memory_assertions a
     WHERE a.instance_key = %(instance)s AND a.audience_kind = %(kind)s
       AND a.audience_key = %(key)s
       AND {approved_active}
       AND lower(btrim(a.subject)) = lower(btrim(%(subject)s))
       AND lower(btrim(a.predicate)) = lower(btrim(%(predicate)s))
       AND a.id IS DISTINCT FROM %(id)s
       AND lower(btrim(a.assertion_text)) <> lower(btrim(%(text)s))
     ORDER BY a.created_at
""").format(approved_active=APPROVED_ACTIVE)


def slot_conflicts(conn, partition: Partition, subject: str | None, predicate: str | None,
                   text: str, assertion_id: UUID | None) -> tuple[UUID, ...]:
    if not subject or not predicate:
        return ()
    return tuple(r[0] for r in conn.execute(_CONFLICTS, {
        "instance": partition.instance_key, "kind": partition.kind, "key": partition.key,
        "subject": subject, "predicate": predicate, "id": assertion_id, "text": text}))


def _ledger_candidate(conn, partition: Partition, assertion_id: UUID,
                      item: AcceptedAssertion) -> Candidate:
    (status, review, atype, text, confidence, subject, predicate, valid_to,
     human) = conn.execute(_STATE, (partition.instance_key, assertion_id)).fetchone()
    trust = tuple(r[0] for r in conn.execute(_EVIDENCE_TRUST,
                                             (partition.instance_key, assertion_id)))
    return Candidate(
        # A reused assertion is judged at the better of its own confidence and the Dream's.
        text=text, assertion_type=atype, confidence=max(float(confidence), item.confidence),
        audience_kind=partition.kind, relation=item.relation,
        time_bounded=item.time_bounded, transient=item.transient, evidence_trust=trust,
        status=status, review_state=review, human_reviewed=human, valid_until=valid_to,
        conflicts=slot_conflicts(conn, partition, subject, predicate, text, assertion_id))


def _already_decided(conn, instance_key: str, assertion_id: UUID, verdict: Verdict) -> bool:
    return conn.execute(
        "SELECT 1 FROM agent_memory_assertion_reviews"
        " WHERE instance_key = %s AND assertion_id = %s AND decision = %s AND reason_code = %s"
        " LIMIT 1",
        (instance_key, assertion_id, verdict.decision, verdict.reason_code)).fetchone() is not None


def _unchanged(candidate: Candidate, verdict: Verdict) -> bool:
    if verdict.decision == "activate":
        return candidate.status == "active" and candidate.review_state == "policy_approved"
    if verdict.decision == "reject":
        return candidate.status == "rejected"
    return False


def _open_correction_conflict(conn, settings: Settings, partition: Partition, dream_id: UUID,
                              assertion_id: UUID, conflicts: Iterable[UUID]) -> None:
    """The correction and each active assertion it corrects stand in an open conflict until a
    person decides (the ledger's life cycle: audited, idempotent per pair, the corrected
    assertion's ``corrected`` feedback recorded)."""
    for other in conflicts:
        open_conflict(conn, partition.instance_key, assertion_id, other, detected_by="dream",
                      reason=CORRECTION_NEEDS_REVIEW, dream_id=dream_id, settings=settings)


# --- the pass ------------------------------------------------------------------------------


def run_safety_pass(
    conn: psycopg.Connection,
    settings: Settings,
    partition: Partition,
    dream_id: UUID,
    promoted: list[Promoted],
) -> SafetyResult:
    """Decide every assertion this run created or reused (in the caller's transaction)."""
    result = SafetyResult()
    seen: set[UUID] = set()
    for p in promoted:
        if p.assertion_id in seen:
            continue
        seen.add(p.assertion_id)
        candidate = _ledger_candidate(conn, partition, p.assertion_id, p.item)
        verdict = judge(candidate, settings)
        before = (candidate.status or "", candidate.review_state or "")
        changed = False
        if verdict.decision in ("activate", "reject") and not _unchanged(candidate, verdict):
            ledger.record_decision(
                conn, instance_key=partition.instance_key, assertion_id=p.assertion_id,
                decision=verdict.decision, reviewer_kind="policy",
                reason_code=verdict.reason_code, dream_id=dream_id,
                note=f"before={before[0]}/{before[1]}")
            changed = True
        elif verdict.decision == "defer" and not _already_decided(
                conn, partition.instance_key, p.assertion_id, verdict):
            ledger.record_decision(
                conn, instance_key=partition.instance_key, assertion_id=p.assertion_id,
                decision="defer", reviewer_kind="policy", reason_code=verdict.reason_code,
                dream_id=dream_id, note=f"before={before[0]}/{before[1]}")
            if verdict.reason_code == CORRECTION_NEEDS_REVIEW:
                _open_correction_conflict(conn, settings, partition, dream_id,
                                          p.assertion_id, candidate.conflicts)
        result.decisions.append(Decision(p.assertion_id, verdict.decision,
                                         verdict.reason_code, changed, before))
    return result


def preview(
    conn: psycopg.Connection,
    settings: Settings,
    partition: Partition,
    items: list[AcceptedAssertion],
    inputs: dict[str, DreamInput],
) -> list[dict[str, Any]]:
    """The decisions a real run would make, without writing anything (dry runs)."""
    out = []
    for item in items:
        existing = same_text_assertion(conn, partition, item)
        if existing:
            candidate = _ledger_candidate(conn, partition, existing.id, item)
            # A dry run's evidence would be added: judge with it.
            trust = candidate.evidence_trust + tuple(
                _dry_trust(inputs[e.memory_id]) for e in item.evidence)
            candidate = Candidate(**{**candidate.__dict__, "evidence_trust": trust})
        else:
            candidate = Candidate(
                text=item.text, assertion_type=item.type, confidence=item.confidence,
                audience_kind=partition.kind, relation=item.relation,
                time_bounded=item.time_bounded, transient=item.transient,
                valid_until=item.valid_until,
                evidence_trust=tuple(_dry_trust(inputs[e.memory_id]) for e in item.evidence),
                conflicts=slot_conflicts(conn, partition, item.subject, item.predicate,
                                         item.text, None))
        verdict = judge(candidate, settings)
        out.append({"index": item.index,
                    "existingAssertionId": str(existing.id) if existing else None,
                    "decision": verdict.decision, "reasonCode": verdict.reason_code})
    return out


def _dry_trust(row: DreamInput) -> str:
    if row.trust_class:
        return row.trust_class
    if row.source_type == "dream":
        return "dream_derived"
    if row.source_type in ("summary", "flush"):
        return policy.SESSION_ACTIVITY
    return "imported"
