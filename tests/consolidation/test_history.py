"""asOf against the real ledger: the history triggers of migration 0021 record each state
change (not feedback counters); what was believed before a supersede and after it, with the
revision chain both ways; valid time and recorded time both honoured; the full-text filter;
another user's private rows never returned; bounded, validated input."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import psycopg
import pytest

from memory_platform.features.consolidation import lifecycle
from memory_platform.features.consolidation.history import CHAIN_DEPTH, assertions_as_of
from memory_platform.features.retrieval.feedback.events import record_injection
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext, Audience
from memory_platform.shared.ledger.assertions import ensure_assertion, record_decision

OLD = "The VAT filing for Mandant Nord is due on the tenth of each month."
NEW = "The VAT filing for Mandant Nord is due on the fifteenth of each month."


def assertion(db, instance, text, *, audience=None, owner=None, approve=True):
    audience = audience or Audience("team", instance)
    with db.transaction():
        ref = ensure_assertion(db, instance_key=instance, audience=audience, text=text,
                               assertion_type="fact", origin="explicit", owner_user_id=owner)
        if approve:
            record_decision(db, instance_key=instance, assertion_id=ref.id,
                            decision="activate", reviewer_kind="policy",
                            reason_code="test_setup")
    return ref.id


def clock(db) -> datetime:
    """The database's time now (recorded time is the database's)."""
    return db.execute("SELECT clock_timestamp()").fetchone()[0]


def history(db, assertion_id) -> list[tuple]:
    return db.execute("SELECT status, review_state, superseded_by, revision_of FROM"
                      " agent_memory_assertion_history WHERE assertion_id = %s ORDER BY id",
                      (assertion_id,)).fetchall()


def ids(results) -> list[str]:
    return [r["id"] for r in results]


def test_triggers_record_state_changes_only(db, instance):
    first = assertion(db, instance, OLD, approve=False)
    record_decision(db, instance_key=instance, assertion_id=first, decision="activate",
                    reviewer_kind="policy", reason_code="test_setup")
    record_injection(db, instance, [first], run_id="r1")         # counters: no history
    db.execute("UPDATE agent_memory_assertions SET metadata = '{\"x\": 1}' WHERE id = %s",
               (first,))
    assert history(db, first) == [("candidate", "pending", None, None),
                                  ("active", "policy_approved", None, None)]
    with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
        db.execute("UPDATE agent_memory_assertion_history SET status = 'x'"
                   " WHERE assertion_id = %s", (first,))
    # an unreviewed assertion can go, and its history goes with it
    gone = assertion(db, instance, "A draft nobody reviewed.", approve=False)
    db.execute("DELETE FROM agent_memory_assertions WHERE id = %s", (gone,))
    assert history(db, gone) == []


def test_as_of_shows_the_old_belief_before_a_supersede_and_the_new_one_after(db, instance):
    ctx = AccessContext(instance, user_id="ada")
    before_any = clock(db)
    old = assertion(db, instance, OLD)
    between = clock(db)
    new = assertion(db, instance, NEW, approve=False)        # a pending correction
    pending = clock(db)
    with db.transaction():
        record_decision(db, instance_key=instance, assertion_id=new, decision="activate",
                        reviewer_kind="human", reviewer_id="lead", reason_code="confirmed")
        assert lifecycle.supersede(db, instance, old, new, reviewer_kind="human",
                                   reviewer_id="lead", reason_code="corrected")
    after = clock(db)

    assert assertions_as_of(db, ctx, before_any) == []
    [then] = assertions_as_of(db, ctx, between, query="VAT filing")
    assert then["id"] == str(old) and then["text"] == OLD
    assert then["then"]["status"] == "active" and then["then"]["backfilled"] is False
    assert then["now"]["status"] == "superseded"
    assert [c["id"] for c in then["later"]] == [str(new)] and then["earlier"] == []
    assert then["later"][0]["text"] == NEW and then["later"][0]["distance"] == 1
    # the correction was recorded but not yet approved: still only the old belief
    assert ids(assertions_as_of(db, ctx, pending, query="VAT")) == [str(old)]

    [now] = assertions_as_of(db, ctx, after, query="VAT filing Mandant Nord")
    assert now["id"] == str(new) and now["then"]["status"] == "active"
    assert [c["id"] for c in now["earlier"]] == [str(old)] and now["later"] == []
    assert now["earlier"][0]["status"] == "superseded"


def test_the_chain_is_walked_both_ways_and_bounded(db, instance):
    ctx = AccessContext(instance, user_id="ada")
    chain = [assertion(db, instance, f"The Nord payroll cutoff is day {n} of the month.")
             for n in range(CHAIN_DEPTH + 3)]
    for loser, survivor in zip(chain, chain[1:], strict=False):
        assert lifecycle.supersede(db, instance, loser, survivor, reviewer_kind="human",
                                   reason_code="corrected")
    # a duplicate folded into the last one (which already names what it revised)
    folded = assertion(db, instance, "Payroll cutoff for Nord: day 14 each month.")
    before_fold = clock(db)
    assert lifecycle.supersede(db, instance, folded, chain[-1], reviewer_kind="human",
                               reason_code="duplicate", operation="assertion_duplicate")
    was = {r["id"]: r for r in assertions_as_of(db, ctx, before_fold, query="payroll cutoff")}
    assert set(was) == {str(chain[-1]), str(folded)}
    assert [c["id"] for c in was[str(folded)]["later"]] == [str(chain[-1])]
    assert was[str(folded)]["now"]["status"] == "superseded"

    [last] = assertions_as_of(db, ctx, clock(db), query="payroll cutoff")
    assert last["id"] == str(chain[-1])
    assert len(last["earlier"]) == CHAIN_DEPTH
    assert [c["id"] for c in last["earlier"]] == [str(i) for i in
                                                  reversed(chain[-1 - CHAIN_DEPTH:-1])]
    assert [c["distance"] for c in last["earlier"]] == list(range(1, CHAIN_DEPTH + 1))


def test_valid_time_and_recorded_time_are_both_honoured(db, instance):
    ctx = AccessContext(instance, user_id="ada")
    later_text = "From June the Nord office opens at eight."
    window = assertion(db, instance, later_text)
    now = clock(db)
    db.execute("UPDATE agent_memory_assertions SET valid_from = %s, valid_to = %s"
               " WHERE id = %s", (now + timedelta(days=30), now + timedelta(days=60), window))
    recorded = clock(db)
    assert ids(assertions_as_of(db, ctx, recorded, query="Nord office")) == []
    assert ids(assertions_as_of(db, ctx, now + timedelta(days=31),
                                query="Nord office")) == [str(window)]
    assert ids(assertions_as_of(db, ctx, now + timedelta(days=61), query="Nord office")) == []
    # before the window was recorded the assertion was believed without one
    assert ids(assertions_as_of(db, ctx, now, query="Nord office")) == [str(window)]


def test_rejected_and_other_states_are_not_believed(db, instance):
    ctx = AccessContext(instance, user_id="ada")
    wrong = assertion(db, instance, "The Nord audit is in March.")
    believed = clock(db)
    record_decision(db, instance_key=instance, assertion_id=wrong, decision="reject",
                    reviewer_kind="human", reviewer_id="lead", reason_code="wrong")
    assert ids(assertions_as_of(db, ctx, believed)) == [str(wrong)]
    assert ids(assertions_as_of(db, ctx, clock(db))) == []
    assert assertions_as_of(db, ctx, believed)[0]["now"]["status"] == "rejected"


def test_another_users_private_rows_are_never_returned(db, instance):
    text = "Ada's salary review for Nord is in April."
    private = assertion(db, instance, text, audience=Audience("private", "ada"), owner="ada")
    team = assertion(db, instance, "The Nord salary reviews happen in spring.")
    at = clock(db)
    ada = assertions_as_of(db, AccessContext(instance, user_id="ada"), at, query="salary")
    bob = assertions_as_of(db, AccessContext(instance, user_id="bob"), at, query="salary")
    nobody = assertions_as_of(db, AccessContext(instance), at, query="salary")
    other = assertions_as_of(db, AccessContext(f"{instance}-x", user_id="ada"), at)
    assert set(ids(ada)) == {str(private), str(team)}
    assert ids(bob) == [str(team)]
    assert nobody == [] and other == []


def test_a_private_chain_member_of_another_user_is_not_shown(db, instance):
    """Supersede keeps chains inside one audience; a link made otherwise stops the walk."""
    team = assertion(db, instance, "The Nord kickoff is on Monday.")
    private = assertion(db, instance, "My own note: Nord kickoff moved.",
                        audience=Audience("private", "ada"), owner="ada")
    db.execute("UPDATE agent_memory_assertions SET revision_of = %s WHERE id = %s",
               (private, team))
    [found] = assertions_as_of(db, AccessContext(instance, user_id="bob"), clock(db),
                               query="kickoff")
    assert found["id"] == str(team) and found["earlier"] == []


def test_input_is_validated(db, instance):
    ctx = AccessContext(instance, user_id="ada")
    with pytest.raises(InvalidInput):
        assertions_as_of(db, ctx, datetime(2024, 1, 1))              # no offset
    with pytest.raises(InvalidInput):
        assertions_as_of(db, ctx, clock(db), limit=51)
    assert assertions_as_of(db, ctx, clock(db), query="the and of") == []   # no content words
    assert assertions_as_of(db, ctx, clock(db), query="%s %(x)s ' \\") == []
    assertion(db, instance, "Three Nord facts.")
    assertion(db, instance, "Four Nord facts.")
    assert len(assertions_as_of(db, ctx, clock(db), limit=1)) == 1
    assert len(assertions_as_of(db, ctx, clock(db), scan_cap=1)) == 1
    assert uuid.UUID(assertions_as_of(db, ctx, clock(db))[0]["id"])
