"""membership: channel members and session participants in PostgreSQL, and who joins a
session: only an append records anyone (naming a session records nothing); a user key's
first append to an unused session makes its user the owner, another user's is refused, of
two concurrent first appends exactly one owns it; the runtime records everyone it names, and
refuses (409) to record anyone new in a session another user started with their own key."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest

from memory_platform.foundation.errors import AccessDenied, Conflict, InvalidInput
from memory_platform.shared.membership import (
    add_channel_member,
    add_session_participant,
    channel_members,
    join_session,
    may_name_session,
    non_member_channels,
    remove_channel_member,
    session_participants,
)


def _roles(db, instance, session) -> dict[str, str]:
    return {p.user_id: p.role for p in session_participants(db, instance, session)}


def _message(db, instance, session, user, channel=None) -> None:
    db.execute("INSERT INTO agent_context_messages (instance_key, session_key, user_id,"
               " channel_thread_key, seq, role, content)"
               " VALUES (%s, %s, %s, %s, (SELECT count(*) FROM agent_context_messages), 'user',"
               " 'hello')", (instance, session, user, channel))


# --- channels ------------------------------------------------------------------------------


def test_a_channel_membership_is_added_once_listed_and_removed(db, instance):
    assert add_channel_member(db, instance, "slack:C1", "ada", added_by="ops")
    assert not add_channel_member(db, instance, "slack:C1", "ada")
    [member] = channel_members(db, instance, channel_key="slack:C1")
    assert (member.user_id, member.added_by) == ("ada", "ops")
    assert channel_members(db, instance, user_id="bob") == []
    assert remove_channel_member(db, instance, "slack:C1", "ada")
    assert not remove_channel_member(db, instance, "slack:C1", "ada")
    assert channel_members(db, instance) == []


def test_non_member_channels_names_every_key_the_user_is_not_a_member_of(db, instance):
    add_channel_member(db, instance, "slack:C1", "ada")
    add_channel_member(db, instance, "room-1", "bob")
    add_channel_member(db, "another-instance", "slack:C2", "ada")
    assert non_member_channels(db, instance, "ada", ["slack:C1", "room-1", "slack:C2"]) == [
        "room-1", "slack:C2"]
    assert non_member_channels(db, instance, "ada", []) == []


@pytest.mark.parametrize(("channel", "user"), [("", "ada"), ("slack:C1", " "), (None, "ada")])
def test_a_membership_needs_a_channel_and_a_user(db, instance, channel, user):
    with pytest.raises(InvalidInput):
        add_channel_member(db, instance, channel, user)
    assert channel_members(db, instance) == []


# --- sessions ------------------------------------------------------------------------------


def _join(db, instance, session, user, *authors, runtime=False) -> None:
    join_session(db, instance, session, user, authors, runtime=runtime)


def _vias(db, instance, session) -> dict[str, str]:
    return dict(db.execute("SELECT user_id, via FROM agent_session_participants"
                           " WHERE instance_key = %s AND session_key = %s",
                           (instance, session)).fetchall())


def test_naming_an_unused_session_records_nothing(db, instance):
    """The first reader of an unused key does not own it (review finding 1)."""
    assert may_name_session(db, instance, "web:s1", "mallory")
    assert session_participants(db, instance, "web:s1") == []
    _join(db, instance, "web:s1", "ada")
    assert _roles(db, instance, "web:s1") == {"ada": "owner"}
    assert not may_name_session(db, instance, "web:s1", "mallory")


def test_a_user_keys_first_append_makes_its_user_the_owner(db, instance):
    _join(db, instance, "web:s1", "ada")
    _join(db, instance, "web:s1", "ada")  # taking part already
    assert _roles(db, instance, "web:s1") == {"ada": "owner"}
    assert _vias(db, instance, "web:s1") == {"ada": "user_key"}


def test_another_users_session_is_refused_and_nothing_is_recorded(db, instance):
    _join(db, instance, "web:s1", "ada")
    with pytest.raises(AccessDenied) as refused:
        _join(db, instance, "web:s1", "bob")
    assert refused.value.code == "foreign_session"
    assert _roles(db, instance, "web:s1") == {"ada": "owner"}


def test_a_session_known_only_by_another_users_messages_is_refused(db, instance):
    _message(db, instance, "web:bob", "bob")
    assert not may_name_session(db, instance, "web:bob", "eve")
    with pytest.raises(AccessDenied):
        _join(db, instance, "web:bob", "eve")
    assert session_participants(db, instance, "web:bob") == []


@pytest.mark.parametrize("table", ["agent_context_summaries", "agent_session_state"])
def test_a_session_known_only_by_another_users_summary_or_state_is_refused(db, instance,
                                                                          table):
    if table == "agent_context_summaries":
        db.execute("INSERT INTO agent_context_summaries (instance_key, session_key, user_id,"
                   " kind, content) VALUES (%s, 'web:bob', 'bob', 'leaf', 'a summary')",
                   (instance,))
    else:
        db.execute("INSERT INTO agent_session_state (instance_key, session_key, user_id)"
                   " VALUES (%s, 'web:bob', 'bob')", (instance,))
    assert not may_name_session(db, instance, "web:bob", "eve")
    with pytest.raises(AccessDenied):
        _join(db, instance, "web:bob", "eve")


def test_a_session_with_a_user_less_transcript_is_not_unused(db, instance):
    """A channel transcript the runtime recorded without a user is somebody's session: a user
    key cannot start it (and with it read the transcript as 'its' session); the runtime
    records the people it names as participants."""
    _message(db, instance, "slack:C1:1700", None, channel="slack:C1")
    with pytest.raises(AccessDenied):
        _join(db, instance, "slack:C1:1700", "eve")
    _join(db, instance, "slack:C1:1700", "ada", runtime=True)
    assert _roles(db, instance, "slack:C1:1700") == {"ada": "participant"}


def test_a_session_with_only_the_users_own_history_is_theirs(db, instance):
    _message(db, instance, "web:ada", "ada")
    assert may_name_session(db, instance, "web:ada", "ada")
    _join(db, instance, "web:ada", "ada")
    assert _roles(db, instance, "web:ada") == {"ada": "owner"}


def test_the_runtime_starts_a_session_for_its_user_and_adds_everyone_it_records(db, instance):
    _join(db, instance, "room:r1", "ada", "bob", None, runtime=True)
    assert _roles(db, instance, "room:r1") == {"ada": "owner", "bob": "participant"}
    assert _vias(db, instance, "room:r1") == {"ada": "runtime", "bob": "runtime"}
    _join(db, instance, "room:r1", "cy", runtime=True)  # a runtime-started session is shared
    assert _roles(db, instance, "room:r1")["cy"] == "participant"
    _join(db, instance, "room:r1", "bob")  # bob's own key: taking part


def test_the_runtime_refuses_to_record_anyone_new_in_a_session_a_user_key_started(db,
                                                                                 instance):
    """Finding 1: mallory's key appends first; the runtime then records alice's turns there:
    409, nothing recorded. The owner's own turns and people an admin added are recorded."""
    _join(db, instance, "web:alice:42", "mallory")
    for acting, authors in (("alice", ()), ("mallory", ("alice",)), (None, ("alice",))):
        with pytest.raises(Conflict) as refused:
            _join(db, instance, "web:alice:42", acting, *authors, runtime=True)
        assert refused.value.code == "session_owned_by_other_user"
        assert refused.value.details["users"] == ["alice"]
    assert _roles(db, instance, "web:alice:42") == {"mallory": "owner"}
    _join(db, instance, "web:alice:42", "mallory", None, runtime=True)
    add_session_participant(db, instance, "web:alice:42", "alice")  # an admin, on purpose
    _join(db, instance, "web:alice:42", "alice", runtime=True)
    assert _vias(db, instance, "web:alice:42") == {"mallory": "user_key", "alice": "admin"}


def test_a_runtime_append_without_anyone_records_nobody(db, instance):
    _join(db, instance, "cron:nightly", None, None, runtime=True)
    _join(db, instance, "cron:nightly", None)
    assert session_participants(db, instance, "cron:nightly") == []


def test_a_session_has_at_most_one_owner(db, instance):
    add_session_participant(db, instance, "web:s1", "ada", role="owner")
    with pytest.raises(psycopg.errors.UniqueViolation):
        db.execute("INSERT INTO agent_session_participants (instance_key, session_key, user_id,"
                   " role) VALUES (%s, 'web:s1', 'bob', 'owner')", (instance,))
    assert not add_session_participant(db, instance, "web:s1", "bob", role="owner")
    with pytest.raises(InvalidInput):
        add_session_participant(db, instance, "web:s1", "bob", role="admin")
    with pytest.raises(InvalidInput):
        add_session_participant(db, instance, "web:s1", "bob", via="read")
    assert _roles(db, instance, "web:s1") == {"ada": "owner"}


def test_sessions_of_another_instance_do_not_count(db, instance):
    _join(db, "another-instance", "web:s1", "bob")
    _join(db, instance, "web:s1", "ada")
    assert _roles(db, instance, "web:s1") == {"ada": "owner"}


def _refused(conn, instance, session, user) -> bool:
    try:
        join_session(conn, instance, session, user, runtime=False)
    except AccessDenied:
        return True
    return False


def test_a_join_waiting_for_another_joins_commit_sees_it(module_database_url, instance):
    """Two users start one new session; the second waits for the first's transaction and
    is then refused: the state is read after the lock, not before it."""
    session = f"web:{uuid.uuid4().hex[:8]}"
    with psycopg.connect(module_database_url) as first, \
            psycopg.connect(module_database_url) as second:
        first.execute("SELECT 1")  # an open transaction: the join is a savepoint in it
        assert not _refused(first, instance, session, "ada")
        answer: list[bool] = []
        waiter = threading.Thread(
            target=lambda: answer.append(_refused(second, instance, session, "bob")))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive()  # blocked on the session's lock
        first.commit()
        waiter.join(10)
        second.commit()
    assert answer == [True]


def test_concurrent_first_appends_of_one_new_session_make_exactly_one_owner(
        module_database_url, db, instance):
    users = ["ada", "bob", "cy", "dee"]
    for round_ in range(5):
        session = f"web:race-{round_}"
        barrier = threading.Barrier(len(users))
        answers: dict[str, bool] = {}

        def claim(user: str, session: str = session, barrier=barrier,
                  answers=answers) -> None:
            with psycopg.connect(module_database_url, autocommit=True) as conn:
                barrier.wait()
                answers[user] = not _refused(conn, instance, session, user)

        threads = [threading.Thread(target=claim, args=(u,)) for u in users]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        winners = [u for u, ok in answers.items() if ok]
        assert len(answers) == len(users) and len(winners) == 1
        assert _roles(db, instance, session) == {winners[0]: "owner"}
