"""trust.resolve_context: which conversation context a key may claim (F1, F2).

User keys act as their one user: a channel thread or group room only where that user is a
member, a session only where the user takes part or that nobody uses yet. Runtime keys are
trusted: claims taken as given. Resolving a context records nothing: naming a session never
creates, claims or joins it (review of 7c85f33, finding 1); only an append does.
"""

from __future__ import annotations

import pytest

from memory_platform.foundation.errors import AccessDenied, InvalidInput
from memory_platform.shared.access import AccessContext
from memory_platform.shared.membership import add_channel_member, join_session, session_participants
from memory_platform.shared.trust import (
    Caller,
    ContextClaims,
    acting_user,
    resolve_context,
    write_trust_class,
    written_by_agent,
)


def _user(instance: str, user: str) -> Caller:
    return Caller(instance, user)


def _runtime(instance: str) -> Caller:
    return Caller(instance, None, runtime=True)


def _roles(db, instance, session) -> dict[str, str]:
    return {p.user_id: p.role for p in session_participants(db, instance, session)}


def test_a_user_key_without_claims_is_its_user(db, instance):
    assert resolve_context(db, _user(instance, "ada")) == AccessContext(instance, user_id="ada")


def test_a_user_key_cannot_act_as_another_user(db, instance):
    with pytest.raises(InvalidInput):
        resolve_context(db, _user(instance, "eve"), ContextClaims(user_id="bob"))
    assert acting_user(_user(instance, "ada"), ContextClaims(user_id="ada")) == "ada"


@pytest.mark.parametrize("claim", [{"channel_thread_key": "slack:C1"},
                                   {"group_room_id": "room-1"}])
def test_f2_a_user_key_names_a_channel_only_where_its_user_is_a_member(db, instance, claim):
    with pytest.raises(AccessDenied) as refused:
        resolve_context(db, _user(instance, "eve"), ContextClaims(**claim))
    assert refused.value.code == "not_a_member"
    key = next(iter(claim.values()))
    add_channel_member(db, instance, key, "eve")
    ctx = resolve_context(db, _user(instance, "eve"), ContextClaims(**claim))
    assert (ctx.channel_thread_key or ctx.group_room_id) == key and ctx.user_id == "eve"


def test_f2_membership_is_needed_for_every_channel_key_named(db, instance):
    add_channel_member(db, instance, "room-1", "eve")
    claims = ContextClaims(group_room_id="room-1", channel_thread_key="slack:C1")
    with pytest.raises(AccessDenied) as refused:
        resolve_context(db, _user(instance, "eve"), claims)
    assert refused.value.details == {"channels": ["slack:C1"]}
    add_channel_member(db, instance, "slack:C1", "eve")
    assert resolve_context(db, _user(instance, "eve"), claims).channel_thread_key == "slack:C1"


def test_f2_a_membership_in_another_instance_does_not_count(db, instance):
    add_channel_member(db, "another-instance", "slack:C1", "eve")
    with pytest.raises(AccessDenied):
        resolve_context(db, _user(instance, "eve"), ContextClaims(channel_thread_key="slack:C1"))


def test_a_channel_type_alone_needs_no_membership(db, instance):
    ctx = resolve_context(db, _user(instance, "eve"), ContextClaims(channel_type="slack"))
    assert ctx.channel_type == "slack"


def test_naming_an_unused_session_claims_nothing(db, instance):
    """Finding 1: the first reader of an unused key does not own it; anyone may still name
    it, and whoever appends first starts it."""
    ctx = resolve_context(db, _user(instance, "mallory"), ContextClaims(session_key="web:new"))
    assert ctx.session_key == "web:new"
    assert session_participants(db, instance, "web:new") == []
    resolve_context(db, _user(instance, "ada"), ContextClaims(session_key="web:new"))
    assert session_participants(db, instance, "web:new") == []


def test_f1_another_users_session_is_refused(db, instance):
    join_session(db, instance, "web:bob", "bob", runtime=False)
    with pytest.raises(AccessDenied) as refused:
        resolve_context(db, _user(instance, "eve"), ContextClaims(session_key="web:bob"))
    assert refused.value.code == "foreign_session"
    assert _roles(db, instance, "web:bob") == {"bob": "owner"}


def test_f1_a_session_known_only_by_another_users_messages_is_refused(db, instance):
    db.execute("INSERT INTO agent_context_messages (instance_key, session_key, user_id, seq,"
               " role, content) VALUES (%s, 'web:bob', 'bob', 0, 'user', 'Bob private')",
               (instance,))
    with pytest.raises(AccessDenied):
        resolve_context(db, _user(instance, "eve"), ContextClaims(session_key="web:bob"))
    assert session_participants(db, instance, "web:bob") == []


def test_a_refused_channel_claims_no_session(db, instance):
    claims = ContextClaims(session_key="web:s", channel_thread_key="slack:C1")
    with pytest.raises(AccessDenied):
        resolve_context(db, _user(instance, "eve"), claims)
    assert session_participants(db, instance, "web:s") == []


def test_a_runtime_key_is_trusted_and_its_reads_join_nothing(db, instance):
    join_session(db, instance, "room:r1", "bob", runtime=False)
    claims = ContextClaims(user_id="ada", session_key="room:r1", channel_thread_key="slack:C9",
                           group_room_id="room-9", channel_type="slack")
    ctx = resolve_context(db, _runtime(instance), claims)
    assert ctx == AccessContext(instance, user_id="ada", session_key="room:r1",
                                group_room_id="room-9", channel_thread_key="slack:C9",
                                channel_type="slack")
    assert _roles(db, instance, "room:r1") == {"bob": "owner"}


def test_a_runtime_key_naming_an_unused_session_claims_nothing(db, instance):
    resolve_context(db, _runtime(instance), ContextClaims(user_id="ada", session_key="web:a"))
    assert session_participants(db, instance, "web:a") == []


def test_a_runtime_key_without_a_user_is_a_system_context(db, instance):
    ctx = resolve_context(db, _runtime(instance), ContextClaims(session_key="cron:nightly"))
    assert ctx == AccessContext(instance, session_key="cron:nightly")
    assert session_participants(db, instance, "cron:nightly") == []


def test_a_runtime_key_cannot_name_a_blank_user(db, instance):
    with pytest.raises(InvalidInput):
        resolve_context(db, _runtime(instance), ContextClaims(user_id=" "))


# --- the trust class of a write (trust.write_trust_class) ---------------------------------

@pytest.mark.parametrize(("caller", "acting", "declared", "expected"), [
    (Caller("i", "ada"), "ada", False, "human_direct"),
    (Caller("i", "ada"), "ada", True, "assistant_inference"),
    (Caller("i", "ada", agent=True), "ada", False, "assistant_inference"),
    (Caller("i", None, runtime=True), "ada", False, "human_direct"),
    (Caller("i", None, runtime=True), "ada", True, "assistant_inference"),
    (Caller("i", None, runtime=True), None, False, "automation"),
    (Caller("i", None, runtime=True), None, True, "assistant_inference"),
])
def test_the_trust_class_of_a_write_follows_the_writer(caller, acting, declared, expected):
    ctx = AccessContext("i", user_id=acting)
    assert write_trust_class(caller, ctx, declared_agent=declared) == expected
    assert written_by_agent(caller, declared=declared) is (expected == "assistant_inference")
