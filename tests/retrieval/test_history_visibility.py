"""Session history and evidence through context_search / context_get (F1, F26, F28).

History (specification): items of the caller's current session are readable (to everyone
taking part in it), items recorded for another user's session are private to that user,
only user-less system/channel items are instance-visible, and a user-less item bound to a
channel only inside that channel. Evidence listed with an assertion follows the audience
rule of its source.
"""

from __future__ import annotations

import itertools
import uuid

import pytest

from memory_platform.features.context import context_get, context_search
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.foundation.errors import NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.membership import add_session_participant, join_session
from tests.support.settings import hash_embedding_settings

_seq = itertools.count()


@pytest.fixture(scope="module")
def config(module_database_url: str) -> Settings:
    return hash_embedding_settings(module_database_url)


def _message(db, instance, session, user, content, channel=None) -> str:
    row = db.execute(
        "INSERT INTO agent_context_messages (instance_key, session_key, user_id,"
        " channel_thread_key, seq, role, content) VALUES (%s, %s, %s, %s, %s, 'user', %s)"
        " RETURNING id", (instance, session, user, channel, next(_seq), content)).fetchone()
    return f"message:{row[0]}"


def _summary(db, instance, session, user, content) -> str:
    row = db.execute(
        "INSERT INTO agent_context_summaries (instance_key, session_key, user_id, kind,"
        " content) VALUES (%s, %s, %s, 'leaf', %s) RETURNING id",
        (instance, session, user, content)).fetchone()
    return f"summary:{row[0]}"


def _found(db, config, ctx, query) -> set[str]:
    return {item.id for item in context_search(db, config, ctx, query)
            if item.kind in ("message", "summary")}


def _gettable(db, ctx, item_id) -> bool:
    try:
        context_get(db, ctx, item_id)
    except NotFound:
        return False
    return True


def _visible(db, config, ctx, item_id, query) -> bool:
    found = item_id in _found(db, config, ctx, query)
    assert found == _gettable(db, ctx, item_id), (ctx, item_id)
    return found


QUERY = "salary negotiation target"


def test_f1_another_users_session_stays_private_even_when_its_key_is_named(db, config,
                                                                          instance):
    join_session(db, instance, "web:bob", "bob", runtime=False)
    message = _message(db, instance, "web:bob", "bob", "Bob private: salary negotiation target")
    summary = _summary(db, instance, "web:bob", "bob", "Bob discussed his salary negotiation")
    eve = AccessContext(instance, user_id="eve", session_key="web:bob")
    assert not _visible(db, config, eve, message, QUERY)
    assert not _visible(db, config, eve, summary, QUERY)
    bob = AccessContext(instance, user_id="bob")
    assert _visible(db, config, bob, message, QUERY)
    assert _visible(db, config, bob, summary, QUERY)


def test_f1_a_system_context_naming_a_users_session_reads_none_of_it(db, config, instance):
    message = _message(db, instance, "web:bob", "bob", "Bob private: salary negotiation target")
    system = AccessContext(instance, session_key="web:bob")
    assert not _visible(db, config, system, message, QUERY)


def test_the_callers_own_items_of_another_session_are_readable(db, config, instance):
    message = _message(db, instance, "web:ada-1", "ada", "Ada: salary negotiation target 90k")
    ada = AccessContext(instance, user_id="ada", session_key="web:ada-2")
    assert _visible(db, config, ada, message, QUERY)


def test_every_participant_of_a_shared_session_reads_all_of_its_items(db, config, instance):
    session = "room:standup"
    add_session_participant(db, instance, session, "ada", role="owner")
    add_session_participant(db, instance, session, "bob")
    by_ada = _message(db, instance, session, "ada", "Ada: the salary negotiation target")
    elsewhere = _message(db, instance, "web:ada", "ada", "Ada alone: salary negotiation target")
    bob_here = AccessContext(instance, user_id="bob", session_key=session)
    assert _visible(db, config, bob_here, by_ada, QUERY)
    assert not _visible(db, config, bob_here, elsewhere, QUERY)
    # Without the session in the context, ada's item is hers alone.
    assert not _visible(db, config, AccessContext(instance, user_id="bob"), by_ada, QUERY)
    # Somebody not taking part sees nothing of it, session named or not.
    cy = AccessContext(instance, user_id="cy", session_key=session)
    assert not _visible(db, config, cy, by_ada, QUERY)


def test_user_less_items_without_a_channel_are_instance_visible(db, config, instance):
    message = _message(db, instance, "cron:nightly", None, "System: salary negotiation target")
    summary = _summary(db, instance, "cron:nightly", None, "System salary negotiation notes")
    for ctx in (AccessContext(instance), AccessContext(instance, user_id="eve")):
        assert _visible(db, config, ctx, message, QUERY)
        assert _visible(db, config, ctx, summary, QUERY)
    assert not _visible(db, config, AccessContext("another-instance"), message, QUERY)


def test_f26_a_user_less_channel_transcript_is_visible_only_in_its_channel(db, config,
                                                                          instance):
    session = f"slack:C1:{uuid.uuid4().hex[:6]}"
    message = _message(db, instance, session, None, "Channel: salary negotiation target",
                       channel="slack:C1")
    summary = _summary(db, instance, session, None, "Channel salary negotiation summary")
    inside = [AccessContext(instance, channel_thread_key="slack:C1"),
              AccessContext(instance, user_id="ada", group_room_id="slack:C1")]
    outside = [AccessContext(instance), AccessContext(instance, user_id="eve"),
               AccessContext(instance, user_id="eve", channel_thread_key="slack:C2",
                             channel_type="slack")]
    for ctx in inside:
        assert _visible(db, config, ctx, message, QUERY), ctx
        assert _visible(db, config, ctx, summary, QUERY), ctx
    for ctx in outside:
        assert not _visible(db, config, ctx, message, QUERY), ctx
        assert not _visible(db, config, ctx, summary, QUERY), ctx


def test_f28_evidence_lists_only_sources_the_caller_may_see(db, config, instance):
    """A channel assertion read through the linked-user branch (no channel context) lists
    the caller's own evidence, not the excerpts another writer of the channel added."""
    text = "The incident bridge for customer Nordwind is room 4711."
    ada_in = AccessContext(instance, user_id="ada", channel_thread_key="slack:C0SECRET")
    bob_in = AccessContext(instance, user_id="bob", channel_thread_key="slack:C0SECRET")
    first = store_memory(db, config, ada_in, MemoryWrite(text, visibility="channel"))
    second = store_memory(db, config, bob_in, MemoryWrite(text, visibility="channel",
                                                          subject_refs={"taskId": "t1"}))
    assert first.assertion_id == second.assertion_id and not second.deduplicated

    def evidence_of(ctx, item_id):
        return {e["memoryId"] for e in context_get(db, ctx, item_id).details["evidence"]}

    both = {str(first.id), str(second.id)}
    assertion = f"assertion:{first.assertion_id}"
    assert evidence_of(ada_in, assertion) == both
    assert evidence_of(AccessContext(instance, user_id="ada"), assertion) == {str(first.id)}
    assert evidence_of(AccessContext(instance, user_id="ada"), f"memory:{first.id}") == {
        str(first.id)}
    assert evidence_of(AccessContext(instance, user_id="bob"), f"memory:{second.id}") == {
        str(second.id)}
