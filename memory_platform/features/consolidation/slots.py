"""Same-slot resolution: the model classifies a pair, code decides its outcome (specification,
"Consolidation", pass 1).

Candidate pairs (``pairs.py``) go to the judge (``judge.py``) batch by batch; then, in order of
similarity, code applies these rules and nothing else:

- an assertion that took part in a decision earlier in this run (anything but ``kept``) is not
  decided again: the pair is ``skipped`` (its state may have changed under the first decision);
- ``duplicate``: the survivor is the one of higher :func:`trust`, then the newer (created_at),
  whatever the model proposed; the loser is folded into it through the ledger's
  ``lifecycle.supersede`` (operation ``assertion_duplicate``) -> ``duplicate``;
- ``contradiction``: the model's proposed survivor supersedes the other only when it is
  strictly newer AND of equal or higher trust -> ``superseded``; any other case (an older or
  less trusted winner, no winner named) opens a conflict (both out of recall) ->
  ``conflict_opened``: a person decides;
- ``unrelated`` -> ``kept``;
- ``lifecycle.supersede`` refusing (a person decided the loser: human decisions win) ->
  ``refused``; for a contradiction a conflict is opened instead.

Supersession goes through the ledger, so the loser's ``corrected`` feedback fires and its
projections follow through the outbox; ``lifecycle`` writes the audit row before each
mutation. Each applied outcome is its own committed transaction (``db.units``): the function
is self-committing. A batch the judge could not answer (:class:`ConsolidationRetryable`)
becomes a diagnostic and its pairs are left alone. A dry run runs the same candidate query,
judgments and rules (a human decision is looked up, not acted on) and writes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from uuid import UUID

import psycopg

from memory_platform.features.consolidation import lifecycle
from memory_platform.features.consolidation.judge import Judgment, batches, judge_batch
from memory_platform.features.consolidation.pairs import PairMember, candidate_pairs
from memory_platform.features.consolidation.types import (
    ConsolidationRetryable,
    Outcome,
    PairDecision,
    Partition,
    StepResult,
)
from memory_platform.features.graph.model import GraphModel
from memory_platform.foundation.db.units import commit_if_idle, committed_unit, require_idle
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.generations import active_generation
from memory_platform.shared.ledger.assertions import human_decided

log = logging.getLogger(__name__)

# Origins a person stated (explicitly, by review, or as a shared fact) outrank derived ones
# (a flush, a Dream, an import, consolidation itself).
PERSON_ORIGINS = frozenset({"explicit", "manual_review", "shared_fact"})
_REVIEW_RANK = {"human_approved": 2, "policy_approved": 1}


def trust(assertion: PairMember) -> tuple[int, int, float]:
    """How much an assertion is trusted, compared as a tuple (higher wins):

    1. its review: approved by a person (``human_approved``) over approved by policy;
    2. its origin: stated by a person (:data:`PERSON_ORIGINS`) over derived by automation;
    3. its confidence.
    """
    return (_REVIEW_RANK.get(assertion.review_state, 0),
            1 if assertion.origin in PERSON_ORIGINS else 0, assertion.confidence)


def duplicate_survivor(one: PairMember, two: PairMember) -> tuple[PairMember, PairMember]:
    """(survivor, loser) of a duplicate: higher trust, then newer; the id breaks a full tie
    so the choice is deterministic."""
    ranked = sorted((one, two), key=lambda m: (trust(m), m.created_at, str(m.id)))
    return ranked[1], ranked[0]


def contradiction_supersedes(survivor: PairMember, loser: PairMember) -> bool:
    """Whether the proposed survivor may supersede automatically: strictly newer and trusted
    at least as much."""
    return survivor.created_at > loser.created_at and trust(survivor) >= trust(loser)


@dataclass(frozen=True)
class _Plan:
    """What code decided for one judgment, before it is applied."""

    outcome: Outcome
    survivor: PairMember | None = None
    loser: PairMember | None = None
    reason: str = ""
    conflict: bool = False        # a contradiction that opens a conflict (or falls back to one)


def plan(judgment: Judgment) -> _Plan:
    """The rules of the module docstring for one judgment (no database)."""
    pair = judgment.pair
    if judgment.relation == "unrelated":
        return _Plan("kept", reason="unrelated")
    if judgment.relation == "duplicate":
        survivor, loser = duplicate_survivor(pair.left, pair.right)
        return _Plan("duplicate", survivor, loser,
                     "duplicate: survivor by trust, then recency")
    if judgment.survivor is None:
        return _Plan("conflict_opened", reason="contradiction without a proposed survivor",
                     conflict=True)
    survivor, loser = pair.member(judgment.survivor), pair.other(judgment.survivor)
    if contradiction_supersedes(survivor, loser):
        return _Plan("superseded", survivor, loser,
                     "contradiction: the newer, equally or more trusted assertion stands")
    why = ("not newer" if survivor.created_at <= loser.created_at else "less trusted")
    return _Plan("conflict_opened", survivor, loser,
                 f"contradiction: the proposed survivor is {why}; a person decides",
                 conflict=True)


def _audit_rows(conn: psycopg.Connection, instance_key: str, targets: list[str]) -> int:
    """Audit rows this transaction wrote about ``targets`` (the lifecycle writes them)."""
    return conn.execute(
        "SELECT count(*) FROM agent_memory_v2_cleanup_audit"
        " WHERE instance_key = %s AND target_id = ANY(%s) AND created_at = now()",
        (instance_key, targets)).fetchone()[0]


def _open_conflict(conn: psycopg.Connection, settings: Settings, partition: Partition,
                   judgment: Judgment, reason: str, dream_id: UUID | None) -> UUID | None:
    """The conflict of the pair (both active ones out of recall until it is resolved:
    lifecycle.open_conflict); the challenger is the model's proposed
    survivor, else the newer assertion."""
    pair = judgment.pair
    challenger = pair.member(judgment.survivor) if judgment.survivor else pair.right
    note = f"{reason}: {judgment.reason}" if judgment.reason else reason
    return lifecycle.open_conflict(conn, partition.instance_key, challenger.id,
                                   pair.other(challenger.id).id, detected_by="consolidation",
                                   reason=note[:1000], dream_id=dream_id, settings=settings)


def _apply(conn: psycopg.Connection, settings: Settings, partition: Partition,
           judgment: Judgment, chosen: _Plan, dream_id: UUID | None
           ) -> tuple[Outcome, str, int]:
    """Apply ``chosen`` in one committed transaction: (outcome, reason, audit rows)."""
    instance = partition.instance_key
    targets = [str(i) for i in judgment.pair.ids]
    outcome, reason = chosen.outcome, chosen.reason
    with committed_unit(conn):
        if chosen.survivor is not None and chosen.outcome in ("duplicate", "superseded"):
            duplicate = chosen.outcome == "duplicate"
            applied = lifecycle.supersede(
                conn, instance, chosen.loser.id, chosen.survivor.id, reviewer_kind="curator",
                reason_code=("consolidation_duplicate" if duplicate
                             else "consolidation_contradiction"),
                dream_id=dream_id, note=(judgment.reason or None),
                operation="assertion_duplicate" if duplicate else "assertion_supersede",
                settings=settings)
            if not applied:
                outcome, reason = "refused", "the ledger refused the supersession"
                if not duplicate:
                    conflict = _open_conflict(conn, settings, partition, judgment, reason,
                                              dream_id)
                    reason += "; a conflict is open instead"
                    targets += [str(conflict)] if conflict else []
        elif chosen.conflict:
            conflict = _open_conflict(conn, settings, partition, judgment, reason, dream_id)
            targets += [str(conflict)] if conflict else []
        rows = _audit_rows(conn, instance, targets)
    return outcome, reason, rows


def _dry(conn: psycopg.Connection, partition: Partition, chosen: _Plan) -> tuple[Outcome, str]:
    """What :func:`_apply` would answer, without writing: a human decision on the loser
    would make the ledger refuse."""
    if chosen.loser is None or chosen.outcome not in ("duplicate", "superseded"):
        return chosen.outcome, chosen.reason
    with conn.transaction():
        decided = human_decided(conn, partition.instance_key, chosen.loser.id)
    commit_if_idle(conn)
    if decided:
        reason = "a person decided the loser"
        return "refused", reason + ("; a conflict would be opened instead"
                                    if chosen.outcome == "superseded" else "")
    return chosen.outcome, chosen.reason


def _decision(judgment: Judgment, outcome: Outcome, chosen: _Plan, reason: str
              ) -> PairDecision:
    pair = judgment.pair
    named = outcome in ("duplicate", "superseded", "refused", "conflict_opened")
    text = f"{reason}; model: {judgment.reason}" if judgment.reason else reason
    return PairDecision(
        pair.left.id, pair.right.id, pair.left.text, pair.right.text, pair.similarity,
        judgment.relation, outcome,
        survivor=chosen.survivor.id if named and chosen.survivor else None,
        loser=chosen.loser.id if named and chosen.loser else None, reason=text)


def _judge(pairs, model: GraphModel, settings: Settings, result: StepResult
           ) -> list[Judgment]:
    judged: list[Judgment] = []
    for batch in batches(pairs, settings.consolidation_max_pairs_per_batch):
        try:
            judged += judge_batch(batch, model, settings)
        except ConsolidationRetryable as exc:
            log.warning("consolidation judge batch unusable: %s", exc)
            result.diagnostics.append({
                "code": exc.code, "phase": "slots", "message": exc.message,
                "problems": exc.problems[:10], "model": model.name,
                "pairs": [[str(i) for i in pair.ids] for pair in batch]})
    return judged


def resolve_slots(conn: psycopg.Connection, settings: Settings, partition: Partition,
                  model: GraphModel, *, dry_run: bool = False,
                  dream_id: UUID | None = None) -> StepResult:
    """Pass 1 of consolidation over one exact partition (module docstring). Self-committing:
    call it outside a transaction."""
    require_idle(conn, "resolve_slots")
    result = StepResult()
    pairs = candidate_pairs(conn, settings, partition,
                            limit=settings.consolidation_max_pairs)
    if not pairs and active_generation(conn, partition.instance_key) is None:
        result.diagnostics.append({
            "code": "no_active_generation", "phase": "slots",
            "message": "no active embedding generation: no pairs (no lexical fallback)"})
    commit_if_idle(conn)
    result.pairs_considered = len(pairs)
    judged = _judge(pairs, model, settings, result)
    judged.sort(key=lambda j: -j.pair.similarity)   # stable: the candidates' order on ties
    decided: set[UUID] = set()
    for judgment in judged:
        chosen = plan(judgment)
        if decided.intersection(judgment.pair.ids):
            result.pair_decisions.append(_decision(
                judgment, "skipped", chosen, "an assertion of the pair was decided earlier "
                "in this run"))
            continue
        if chosen.outcome == "kept":
            outcome, reason = chosen.outcome, chosen.reason
        elif dry_run:
            outcome, reason = _dry(conn, partition, chosen)
        else:
            outcome, reason, rows = _apply(conn, settings, partition, judgment, chosen,
                                          dream_id)
            result.audit_rows += rows
        if outcome != "kept":
            decided.update(judgment.pair.ids)
        result.pair_decisions.append(_decision(judgment, outcome, chosen, reason))
    return result
