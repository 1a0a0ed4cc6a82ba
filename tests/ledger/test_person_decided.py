"""THE "a person decided" rule (``ledger.assertions.person_decided``): a person's review
state, or any review row a person wrote. ``record_decision`` guards with it, so no
automated decision changes an assertion a person has decided, whatever their decision was;
``human_decided`` answers the same rule."""

from __future__ import annotations

import psycopg
import pytest

from memory_platform.shared.ledger.assertions import human_decided, record_decision
from tests.db import rows

INSTANCE = "default"


def _state(conn: psycopg.Connection, assertion_id) -> tuple[str, str]:
    return conn.execute("SELECT status, review_state FROM agent_memory_assertions"
                        " WHERE id = %s", (assertion_id,)).fetchone()


@pytest.mark.parametrize("person_said", ["defer", "expire", "supersede"])
@pytest.mark.parametrize(("automation", "reviewer_kind"),
                         [("activate", "policy"), ("reject", "curator"),
                          ("revoke", "system"), ("rollback", "system")])
def test_automation_changes_nothing_a_person_decided_in_any_way(
        database_url: str, person_said: str, automation: str, reviewer_kind: str):
    with psycopg.connect(database_url) as conn:
        assertion = rows.assertion(conn, INSTANCE, status="candidate", review_state="pending")
        # A person's review that leaves the state as it is: still their decision.
        record_decision(conn, instance_key=INSTANCE, assertion_id=assertion,
                        decision=person_said, reviewer_kind="human", reviewer_id="rita",
                        reason_code="reviewed")
        assert _state(conn, assertion) == ("candidate", "pending")
        assert human_decided(conn, INSTANCE, assertion) is True

        record_decision(conn, instance_key=INSTANCE, assertion_id=assertion,
                        decision=automation, reviewer_kind=reviewer_kind,
                        reason_code="automated")
        assert _state(conn, assertion) == ("candidate", "pending")
        decisions = [r[0] for r in conn.execute(
            "SELECT decision FROM agent_memory_assertion_reviews WHERE assertion_id = %s"
            " ORDER BY created_at, id", (assertion,))]
        assert decisions == [person_said, automation]  # recorded, not applied


def test_automation_decides_what_no_person_has(database_url: str):
    with psycopg.connect(database_url) as conn:
        assertion = rows.assertion(conn, INSTANCE, status="candidate", review_state="pending")
        assert human_decided(conn, INSTANCE, assertion) is False
        record_decision(conn, instance_key=INSTANCE, assertion_id=assertion,
                        decision="activate", reviewer_kind="policy", reason_code="policy")
        assert _state(conn, assertion) == ("active", "policy_approved")


def test_a_person_overrides_a_persons_decision(database_url: str):
    with psycopg.connect(database_url) as conn:
        assertion = rows.assertion(conn, INSTANCE, status="active",
                                   review_state="human_approved")
        record_decision(conn, instance_key=INSTANCE, assertion_id=assertion,
                        decision="reject", reviewer_kind="policy", reason_code="policy")
        assert _state(conn, assertion) == ("active", "human_approved")
        record_decision(conn, instance_key=INSTANCE, assertion_id=assertion,
                        decision="reject", reviewer_kind="human", reviewer_id="rita",
                        reason_code="wrong")
        assert _state(conn, assertion) == ("rejected", "human_rejected")
