"""The activation policy of the write path (no model call).

Direct human facts and preferences in a safe scope activate at once; everything else
(assistant inferences, automation, decisions, procedures, corrections, workspace-wide
writes) waits for review. Workspace-wide is not a safe scope: it reaches everyone in the
instance, so a person or curator looks at it first.

A write that creates an assertion leaves it in :func:`created_state`; a later write that
restates it activates it only when :func:`restatement_activates`. The single write
(``store_memory``) and the bulk import's replay both apply these functions.
"""

from __future__ import annotations

from dataclasses import dataclass

SAFE_AUDIENCES = ("private", "team", "channel")
OPTIMISTIC_TYPES = ("fact", "preference")


@dataclass(frozen=True)
class PolicyDecision:
    activate: bool
    reason_code: str


def write_path_decision(
    trust_class: str, assertion_type: str, audience_kind: str
) -> PolicyDecision:
    if trust_class != "human_direct":
        return PolicyDecision(False, "not_direct_human")
    if assertion_type not in OPTIMISTIC_TYPES:
        return PolicyDecision(False, f"{assertion_type}_needs_review")
    if audience_kind not in SAFE_AUDIENCES:
        return PolicyDecision(False, "workspace_scope_needs_review")
    return PolicyDecision(True, "direct_human_safe_scope")


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
