"""THE activation policy: one table for the write path, the bulk import and Dreaming.

Every assertion a write, an import or a Dream creates gets its first decision from
:data:`TABLE`: origin x trust class x assertion type x audience kind -> ``activate``,
``review`` (wait for a person) or ``reject``, with a reason code and the specification line
it implements (``docs/policy.md`` lists the table and the contradictions it resolves).

* ``origin``: ``write`` (``store_memory``), ``import`` (the bulk loader's replay) or
  ``dream`` (the targeted safety pass).
* ``trust_class``: for a write or an import, the trust class of its source; for a Dream, the
  trust class of the *weakest* source its complete cited evidence set contains
  (:func:`evidence_trust_class`): an assertion is only as trustworthy as its weakest cited
  source (seed:262).

Rules are ordered; the first matching rule decides (every combination matches one:
:func:`decide` raises otherwise). Content checks that are not dimensions of the table
(credentials, unsafe instructions, transient or time-bounded text, confidence, conflicts)
stay with the Dream safety pass, which applies them around this table.

A write that creates an assertion leaves it in :func:`created_state`; a later write that
restates it activates it only when :func:`restatement_activates`.
"""

from __future__ import annotations

from dataclasses import dataclass

ORIGINS = ("write", "import", "dream")
TRUST_CLASSES = ("human_direct", "human_channel", "assistant_inference", "automation",
                 "system", "imported", "dream_derived", "session_activity")
ASSERTION_TYPES = ("fact", "preference", "decision", "constraint", "procedure", "correction",
                   "observation")
AUDIENCE_KINDS = ("private", "team", "channel", "workspace")

ACTIVATE, REVIEW, REJECT = "activate", "review", "reject"

SAFE_AUDIENCES = ("private", "team", "channel")
# Types a direct human statement (write) or an all-human evidence set (Dream) activates in a
# safe scope (C4: seed:19 names decisions and constraints; seed:248 and 262 name only
# procedures among the review-only exceptions).
OPTIMISTIC_TYPES = ("fact", "preference", "decision", "constraint")
REVIEW_TYPES = ("procedure",)
WRITE_ORIGINS = ("write", "import")
# Human evidence for a Dream: a person's own words, directly or in a channel (seed:19: "automation
# decisions stated by a person in Team Chat remain normal human evidence"), and the session
# activity of the exact audience (summaries and flushes of human sessions, the Dream's own input
# pool, seed:19; automation sessions are excluded from it). ``session_activity`` is not a
# ledger trust class: Dream promotion stores such sources as ``imported`` and the safety pass
# tells them apart from imported facts by their locator.
SESSION_ACTIVITY = "session_activity"
HUMAN_EVIDENCE = ("human_direct", "human_channel", SESSION_ACTIVITY)
WEAK_EVIDENCE = ("imported", "assistant_inference")
UNSUPPORTED_EVIDENCE = ("automation", "system", "dream_derived")
# Weakest last: the class an evidence set is judged by.
_STRENGTH = (*HUMAN_EVIDENCE, *WEAK_EVIDENCE, *UNSUPPORTED_EVIDENCE)


@dataclass(frozen=True)
class Rule:
    """One cell of the table (``None`` matches anything in that dimension)."""

    origins: tuple[str, ...] | None
    trust_classes: tuple[str, ...] | None
    assertion_types: tuple[str, ...] | None
    audience_kinds: tuple[str, ...] | None
    outcome: str
    reason_code: str
    spec: str

    def matches(self, origin: str, trust_class: str, assertion_type: str,
                audience_kind: str) -> bool:
        return all(allowed is None or value in allowed for allowed, value in (
            (self.origins, origin), (self.trust_classes, trust_class),
            (self.assertion_types, assertion_type), (self.audience_kinds, audience_kind)))


def _per_type(origins: tuple[str, ...], trust: tuple[str, ...], spec: str) -> tuple[Rule, ...]:
    return tuple(Rule(origins, trust, (t,), None, REVIEW, f"{t}_needs_review", spec)
                 for t in REVIEW_TYPES)


_NOT_DIRECT = tuple(t for t in TRUST_CLASSES if t != "human_direct")

TABLE: tuple[Rule, ...] = (
    # --- the write path and the bulk import (optimistic activation, seed:248) -------------
    Rule(WRITE_ORIGINS, _NOT_DIRECT, None, None, REVIEW, "not_direct_human",
         "seed:248 optimistic path only for direct human facts; assistant/automation "
         "inferences never use it"),
    *_per_type(WRITE_ORIGINS, ("human_direct",),
               "seed:248 procedures remain pending until an admin or user reviews them (C4)"),
    Rule(WRITE_ORIGINS, ("human_direct",), ("correction",), None, REVIEW,
         "correction_needs_review", "seed:248 corrections remain pending"),
    Rule(WRITE_ORIGINS, ("human_direct",), ("observation",), None, REVIEW,
         "observation_needs_review", "seed:248 optimistic path covers facts and preferences"),
    Rule(WRITE_ORIGINS, ("human_direct",), OPTIMISTIC_TYPES, ("workspace",), REVIEW,
         "workspace_scope_needs_review", "seed:248 only when their scope is safe (C2)"),
    Rule(WRITE_ORIGINS, ("human_direct",), OPTIMISTIC_TYPES, SAFE_AUDIENCES, ACTIVATE,
         "direct_human_safe_scope",
         "seed:248 direct human facts and preferences activate; seed:19 decisions and "
         "constraints (C4)"),
    # --- Dreaming (targeted deterministic safety pass, seed:19, 262, 285) ------------------
    Rule(("dream",), None, ("correction", "observation"), None, REJECT, "unsupported_type",
         "seed:19 unsupported outputs are rejected automatically"),
    Rule(("dream",), UNSUPPORTED_EVIDENCE, None, None, REJECT, "unsupported_evidence",
         "seed:19 automation sessions are excluded; seed:262 evidence must be direct-human"),
    Rule(("dream",), WEAK_EVIDENCE, None, None, REVIEW, "evidence_needs_review",
         "seed:262 assistant inferences and weak evidence remain human-review-only (C3)"),
    *_per_type(("dream",), HUMAN_EVIDENCE,
               "seed:262 procedures remain human-review-only (C4; seed:19 overruled)"),
    Rule(("dream",), HUMAN_EVIDENCE, OPTIMISTIC_TYPES, ("workspace",), REVIEW,
         "workspace_scope_needs_review",
         "seed:262 only safe assertions; exceptions stay human-review-only (C2)"),
    Rule(("dream",), HUMAN_EVIDENCE, OPTIMISTIC_TYPES, SAFE_AUDIENCES, ACTIVATE,
         "dream_policy_safe", "seed:19 safe facts, preferences, decisions, constraints; "
         "seed:262 with an all-human evidence set"),
)


@dataclass(frozen=True)
class PolicyDecision:
    outcome: str
    reason_code: str
    spec: str = ""

    @property
    def activate(self) -> bool:
        return self.outcome == ACTIVATE

    @property
    def review_decision(self) -> str:
        """The ``decision`` of the review row that records it (``defer`` for review)."""
        return "defer" if self.outcome == REVIEW else self.outcome


def rule_for(origin: str, trust_class: str, assertion_type: str, audience_kind: str) -> Rule:
    for rule in TABLE:
        if rule.matches(origin, trust_class, assertion_type, audience_kind):
            return rule
    raise ValueError(f"no activation policy for {origin}/{trust_class}/{assertion_type}/"
                     f"{audience_kind}")


def decide(origin: str, trust_class: str, assertion_type: str,
           audience_kind: str) -> PolicyDecision:
    """The table's decision for one assertion."""
    rule = rule_for(origin, trust_class, assertion_type, audience_kind)
    return PolicyDecision(rule.outcome, rule.reason_code, rule.spec)


def evidence_trust_class(trust_classes: tuple[str, ...] | list[str]) -> str | None:
    """The weakest trust class of a cited evidence set (``None`` when there is none)."""
    if not trust_classes:
        return None
    return max(trust_classes,
               key=lambda t: _STRENGTH.index(t) if t in _STRENGTH else len(_STRENGTH))


def write_path_decision(
    trust_class: str, assertion_type: str, audience_kind: str, origin: str = "write"
) -> PolicyDecision:
    """The table's decision for a write (``origin='import'`` for the bulk loader)."""
    return decide(origin, trust_class, assertion_type, audience_kind)


# (status, review_state) of an assertion the policy activated, and of one left for review.
POLICY_ACTIVATED = ("active", "policy_approved")
UNDECIDED = ("candidate", "pending")
RESTATEMENT_REASON = "direct_human_restatement"


def created_state(decision: PolicyDecision) -> tuple[str, str]:
    """The (status, review_state) an assertion starts in when a write under ``decision``
    creates it."""
    return POLICY_ACTIVATED if decision.activate else UNDECIDED


def restatement_activates(review_state: str, decision: PolicyDecision) -> bool:
    """Whether a write under ``decision`` that restates an existing assertion activates it
    (to :data:`POLICY_ACTIVATED`, reason :data:`RESTATEMENT_REASON`): only an undecided
    (``pending``) assertion, and only when the write qualifies on its own. A decided
    assertion stays as it is (a human decision always stands)."""
    return review_state == "pending" and decision.activate
