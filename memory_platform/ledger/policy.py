"""The activation policy of the write path (no model call).

Direct human facts and preferences in a safe scope activate at once; everything else
(assistant inferences, automation, decisions, procedures, corrections, workspace-wide
writes) waits for review. Workspace-wide is not a safe scope: it reaches everyone in the
instance, so a person or curator looks at it first.
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
