"""Who is a person: the one rule that review decisions, the sharing preference and the
person-only key scopes share (issue 28, finding 4).

A key kind (``apikeys.ApiKey.kind``) is ``user``, ``agent`` or ``runtime``; an in-process
caller without a key (the CLI naming the user it acts as) is the ``operator``. People act
through a user key or at the shell; agent and runtime keys are software, which may write
(their writes wait for review) but never decide what agents are told.
"""

from __future__ import annotations

PERSON_KINDS = ("user", "operator")
OPERATOR = "operator"


def is_person(kind: str | None) -> bool:
    """Whether a caller of this key kind is a person."""
    return kind in PERSON_KINDS
