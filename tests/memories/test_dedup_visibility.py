"""Dedup never reveals a row the writer may not see (F25).

A write repeating a row the writer can recall (no assertion, or a told one) or the writer's
own row is a dedup hit, as before. A repeat of another user's unrecallable row (pending,
rejected, conflicted) is written as a row of its own: the answer never says
``deduplicated`` nor that row's id or state. And only the author of an undecided fact
activates it by restating it: another user's restatement adds evidence, nothing more.
"""

from __future__ import annotations

import pytest

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.shared.access import AccessContext
from memory_platform.shared.ledger.assertions import record_decision

LAYOFFS = "Layoffs planned for Q3."


def _write(db, settings, ctx, content=LAYOFFS, **kwargs):
    return store_memory(db, settings, ctx, MemoryWrite(content, **kwargs))


def _state(db, assertion_id) -> tuple[str, str]:
    return db.execute("SELECT status, review_state FROM agent_memory_assertions WHERE id = %s",
                      (assertion_id,)).fetchone()


def _touched(db, memory_id):
    return db.execute("SELECT updated_at FROM agent_memories WHERE id = %s",
                      (memory_id,)).fetchone()[0]


def test_f25_a_repeat_of_another_users_pending_workspace_fact_is_not_a_dedup_hit(
        db, hash_settings, instance):
    alice = _write(db, hash_settings, AccessContext(instance, user_id="alice"),
                   visibility="workspace")
    assert alice.assertion_status == "candidate"
    before = _touched(db, alice.id)
    eve = _write(db, hash_settings, AccessContext(instance, user_id="eve"),
                 "layoffs planned for   q3.", visibility="workspace")
    assert not eve.deduplicated and eve.id != alice.id
    # What any first workspace write answers: waiting for review.
    assert eve.assertion_status == "candidate"
    assert _touched(db, alice.id) == before


def test_f25_a_repeat_of_another_users_rejected_fact_is_not_a_dedup_hit(db, hash_settings,
                                                                         instance):
    alice = _write(db, hash_settings, AccessContext(instance, user_id="alice"),
                   visibility="team")
    record_decision(db, instance_key=instance, assertion_id=alice.assertion_id,
                    decision="reject", reviewer_kind="human", reason_code="wrong")
    eve = _write(db, hash_settings, AccessContext(instance, user_id="eve"), visibility="team")
    assert not eve.deduplicated and eve.id != alice.id
    assert _state(db, alice.assertion_id) == ("rejected", "human_rejected")


@pytest.mark.parametrize("context", [{}, {"channel_thread_key": "slack:C1"}],
                         ids=["team", "channel"])
def test_f25_another_users_restatement_does_not_activate_a_pending_fact(db, hash_settings,
                                                                        instance, context):
    visibility = "channel" if context else "team"
    inferred = _write(db, hash_settings, AccessContext(instance, user_id="alice", **context),
                      visibility=visibility, trust_class="assistant_inference")
    assert _state(db, inferred.assertion_id) == ("candidate", "pending")
    eve_ctx = AccessContext(instance, user_id="eve", **context)
    repeated = _write(db, hash_settings, eve_ctx, visibility=visibility)
    restated = _write(db, hash_settings, eve_ctx, visibility=visibility,
                      subject_refs={"taskId": "t1"})
    assert not repeated.deduplicated and repeated.id != inferred.id
    assert restated.assertion_id == inferred.assertion_id
    assert _state(db, inferred.assertion_id) == ("candidate", "pending")
    assert repeated.assertion_status == restated.assertion_status == "candidate"


def test_the_author_restating_an_own_pending_fact_activates_it(db, hash_settings, instance):
    ctx = AccessContext(instance, user_id="alice")
    inferred = _write(db, hash_settings, ctx, visibility="team",
                      trust_class="assistant_inference")
    stated = _write(db, hash_settings, ctx, visibility="team")
    assert stated.deduplicated and stated.id == inferred.id  # her own row
    assert stated.assertion_status == "active"
    assert _state(db, inferred.assertion_id) == ("active", "policy_approved")


def test_the_author_repeating_an_own_pending_fact_learns_its_state(db, hash_settings,
                                                                   instance):
    ctx = AccessContext(instance, user_id="alice")
    first = _write(db, hash_settings, ctx, visibility="workspace")
    again = _write(db, hash_settings, ctx, visibility="workspace")
    assert again.deduplicated and again.id == first.id
    assert again.assertion_status == "candidate"


def test_a_repeat_of_a_recallable_fact_of_another_user_is_still_a_dedup_hit(
        db, hash_settings, instance):
    alice = _write(db, hash_settings, AccessContext(instance, user_id="alice"),
                   visibility="team")
    assert alice.assertion_status == "active"
    eve = _write(db, hash_settings, AccessContext(instance, user_id="eve"), visibility="team")
    assert eve.deduplicated and eve.id == alice.id and eve.assertion_status == "active"


def test_a_repeat_of_an_assertion_less_row_is_still_a_dedup_hit(db, hash_settings, instance):
    first = _write(db, hash_settings, AccessContext(instance, user_id="alice"),
                   visibility="team", source_type="manual")
    again = _write(db, hash_settings, AccessContext(instance, user_id="eve"),
                   visibility="team", source_type="manual")
    assert again.deduplicated and again.id == first.id
