"""Every route through the sync client against the real API on loopback: answers parsed into
their models, refusals raised as the typed exception with the API's code, another user's key
getting nothing, and a body the client's model refuses never sent.

``test_every_operation_is_called_here`` holds this file to the client's operation table.
"""

from __future__ import annotations

import inspect
import re
import sys
import uuid
from collections.abc import Iterator

import pydantic
import pytest

from memory_platform.client import (
    BadRequest,
    Forbidden,
    MemoryClient,
    NotFound,
    Unauthorized,
    Unavailable,
)
from memory_platform.client.operations import OPERATIONS
from tests.client.conftest import ADMIN, READ, REVIEW, WRITE

FACT = "Ada keeps the VAT filing calendar for Mandant Nord in the shared drive."


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def connect(live_api, keys) -> Iterator:
    """``connect(user, scopes, **key)`` -> a MemoryClient with a new key of that user."""
    opened: list[MemoryClient] = []

    def make(user: str | None, scopes=(READ, WRITE), **key) -> MemoryClient:
        client = MemoryClient(live_api.url, keys(user, tuple(scopes), **key), timeout=20)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()


def test_a_memory_is_stored_found_read_corrected_and_forgotten(connect):
    ada = connect(unique("ada"))
    stored = ada.store(FACT, visibility="private", subject_refs={"mandantId": "nord"})
    assert stored.audience.kind == "private" and not stored.deduplicated
    again = ada.store(FACT, visibility="private", subject_refs={"mandantId": "nord"})
    assert again.deduplicated and again.id == stored.id       # a repeat is stored once

    hits = ada.search("who keeps the VAT filing calendar", limit=5,
                      subject_refs={"mandantId": "nord"}).results
    assert hits[0].id == stored.id and hits[0].trust == "untrusted-data"
    assert ada.get_memory(stored.id).content == FACT

    corrected = ada.correct(stored.id, FACT.replace("Ada", "Bea"))
    assert corrected.status == "corrected" and corrected.corrected_id == stored.id
    found = [h.content for h in ada.search("who keeps the VAT filing calendar").results]
    assert FACT.replace("Ada", "Bea") in found and FACT not in found

    kept = ada.store("Ada's VAT binder is blue.", visibility="private",
                     metadata={"shelf": "A2"})
    moved = ada.correct(kept.id, "Ada's VAT binder is green.", metadata={"shelf": "B1"})
    listed = ada.list_memories(filter={"metadata.shelf": {"exists": True}}, limit=10)
    assert [(m.id, m.metadata) for m in listed.memories] == [(moved.id, {"shelf": "B1"})]
    assert listed.next_cursor is None
    newest_first = [m.id for m in ada.iter_memories(page_size=1)]
    assert newest_first[:2] == [moved.id, corrected.id]

    forgotten = ada.forget(corrected.id)
    assert forgotten.memory_id == corrected.id and forgotten.total_removed > 0
    with pytest.raises(NotFound) as missing:
        ada.get_memory(corrected.id)
    assert missing.value.code == "not_found" and missing.value.status == 404


def test_an_agents_correction_waits_for_a_persons_review(connect):
    user = unique("cleo")
    stored = connect(user).store("Cleo's standup moved to 9:30.", visibility="private")
    agent = connect(user, agent=True)
    assert agent.correct(stored.id, "Cleo's standup moved to 10:00.").status == "proposed"


def test_another_users_key_gets_nothing_of_a_private_memory(connect):
    ada, bob = connect(unique("ada")), connect(unique("bob"))
    secret = ada.store("Ada's door code is 4417.", visibility="private")
    assert bob.search("door code", min_score=0).results == []
    for call in (lambda: bob.get_memory(secret.id), lambda: bob.forget(secret.id),
                 lambda: bob.correct(secret.id, "Ada's door code is 0000.")):
        with pytest.raises(NotFound):
            call()
    assert ada.get_memory(secret.id).content == "Ada's door code is 4417."


def test_errors_are_typed_with_the_apis_code_and_a_refused_body_is_never_sent(
        connect, live_api):
    reader = connect(unique("rita"), (READ,))
    with pytest.raises(Forbidden) as forbidden:
        reader.store("Rita likes rye bread.")
    assert forbidden.value.code == "missing_scope"
    with MemoryClient(live_api.url, "mp_not_a_key") as stranger, \
            pytest.raises(Unauthorized):
        stranger.search("anything")
    writer = connect(unique("walt"))
    with pytest.raises(BadRequest) as bad:        # the API's own rule: a predicate needs a subject
        writer.store("Walt's car is blue.", predicate="colour")
    assert bad.value.code == "invalid_input" and "subject" in bad.value.message
    with pytest.raises(pydantic.ValidationError):  # the client's model: nothing is sent
        writer.store("Walt's bike is red.", colour="red")
    assert writer.search("Walt's bike", min_score=0).results == []


def test_a_session_is_appended_replayed_grepped_described_and_completed(connect):
    user, session = unique("sam"), unique("s")
    sam = connect(user)
    run = unique("run")
    appended = sam.append(session, [
        {"role": "user", "content": "Where is the kickoff deck?", "client_item_id": "t1"},
        {"role": "assistant", "content": "The kickoff deck is in Drive/Projects/Apollo.",
         "client_item_id": "t2"}], run_id=run)
    assert appended.appended == 2 and appended.run_id == run
    again = sam.append(session, [{"role": "user", "content": "Where is the kickoff deck?",
                                  "client_item_id": "t1"}], run_id=run)
    assert again.duplicates == 1 and again.appended == 0
    assert sam.complete(session, run).status == "completed"

    replay = sam.replay(session, budget_tokens=2000)
    assert [t.content for t in replay.turns][-1].endswith("Drive/Projects/Apollo.")
    hits = sam.grep("kickoff deck", context={"session_key": session}).results
    assert {h.session_key for h in hits} == {session} and len(hits) == 2
    assert len(list(sam.iter_grep("kickoff", page_size=1,
                                  context={"session_key": session}))) == 2
    node = sam.describe(appended.items[1].id, context={"session_key": session})
    assert node.content.startswith("The kickoff deck") and node.client_item_id == "t2"
    with pytest.raises(BadRequest) as not_a_summary:    # a message has nothing under it
        sam.expand(appended.items[1].id, context={"session_key": session})
    assert not_a_summary.value.code == "not_a_summary"

    outsider = connect(unique("olga"))
    with pytest.raises(Forbidden):
        outsider.replay(session)
    assert outsider.grep("kickoff deck", all_sessions=True).results == []


def test_a_sessions_items_are_read_back_exactly_popped_and_cleared(connect):
    user, session = unique("sam"), unique("s")
    sam = connect(user)
    raw = {"type": "message", "role": "user", "content": [{"type": "input_text",
                                                           "text": "Deck?\nPlease."}]}
    sam.append(session, [{"role": "user", "content": f"turn {n}", "raw": {**raw, "n": n}}
                         for n in range(3)])
    newest = sam.items(session, limit=2)
    assert [i.raw["n"] for i in newest.items] == [1, 2] and newest.next_before_seq == 1
    assert [i.raw for i in sam.iter_items(session, page_size=2)] == [
        {**raw, "n": n} for n in range(3)]
    popped = sam.pop_item(session)
    assert popped.item.content == "turn 2" and popped.removed["agent_context_messages"] == 1
    cleared = sam.clear_items(session)
    assert cleared.items_removed == 2 and cleared.session_removed
    with pytest.raises(NotFound):
        sam.pop_item(session)


def test_the_runtime_manages_participants_and_channel_members(connect):
    runtime = connect(None, (READ, WRITE), runtime=True)
    session, user, channel = unique("s"), unique("pia"), unique("c")
    assert runtime.add_participant(session, user).added
    assert [p.user_id for p in runtime.participants(session).participants] == [user]
    assert runtime.add_channel_member(channel, user).changed
    assert [m.user_id for m in runtime.channel_members(channel_key=channel).members] == [user]
    assert runtime.remove_channel_member(channel, user).changed
    assert runtime.channel_members(channel_key=channel).members == []
    assert runtime.profile(user_id=user).user_id == user


def test_context_knowledge_and_assertions_as_of(connect):
    kim = connect(unique("kim"))
    stored = kim.store("Kim's team ships the billing service on Thursdays.",
                       visibility="private")
    results = kim.context_search("when does the billing service ship", limit=5).results
    item = next(r for r in results if stored.id in r.id or r.content.startswith("Kim's"))
    assert kim.context_get(item.id).content == item.content
    answer = kim.knowledge_search("billing service")
    assert answer.trust == "untrusted-data" and isinstance(answer.entities, list)
    missing = str(uuid.uuid4())
    for call in (kim.entity, kim.neighbors, kim.explain_claim):
        with pytest.raises(NotFound):
            call(missing)
    as_of = kim.as_of("2999-01-01T00:00:00+00:00", query="billing service")
    assert stored.assertion_id in {r.id for r in as_of.results}


def test_feedback_events_and_the_profile(connect):
    fay = connect(unique("fay"))
    stored = fay.store("Fay reviews pull requests before lunch.", visibility="private")
    run = unique("run")
    assert fay.feedback_injected(run, [stored.assertion_id]).recorded == 1
    assert fay.feedback_explicit(run, [stored.assertion_id], "helpful").recorded == 1
    assert fay.feedback_explicit(run, [stored.assertion_id], "helpful").recorded == 0
    assert fay.feedback_cited(run, "Fay reviews pull requests before lunch.").run_id == run

    kinds = [e.kind for e in fay.iter_events(page_size=1, kinds=["memory.written"])]
    assert "memory.written" in kinds
    latest = fay.events(limit=50)
    assert fay.events(after=latest.next_cursor).events == []
    assert fay.profile().user_id


def test_a_reviewer_decides_what_waits_in_the_queue(connect):
    writer, reviewer = connect(unique("walt")), connect(unique("rhea"), (READ, WRITE, REVIEW))
    pending = [writer.store(f"The {room} meeting room seats {n} people.", visibility="workspace")
               for room, n in (("Elm", 8), ("Oak", 12), ("Ash", 4))]
    assert {p.assertion_status for p in pending} == {"candidate"}
    waiting = {i["id"] for i in reviewer.iter_review_queue(page_size=1, kind="assertion")}
    assert {p.assertion_id for p in pending} <= waiting
    assert reviewer.decide_assertion(pending[0].assertion_id, "approve").decided == \
        [pending[0].assertion_id]
    bulk = reviewer.decide_bulk("reject", ids=[pending[1].assertion_id], reason_code="wrong")
    assert bulk.decided == [pending[1].assertion_id]
    with pytest.raises(NotFound):
        reviewer.resolve_conflict(str(uuid.uuid4()), "keep_both")
    with pytest.raises(NotFound):
        reviewer.decide_wiki(str(uuid.uuid4()), "approve")
    assert pending[2].assertion_id in {i["id"] for i in reviewer.review_queue(limit=50).items}
    with pytest.raises(Forbidden):
        writer.review_queue()


def test_an_operator_runs_the_instance_through_the_client(connect):
    operator = unique("ops")
    ops = connect(operator, (READ, WRITE, REVIEW, ADMIN))
    user = unique("una")
    connect(user).store("Una prefers async standups.", visibility="private")
    assert user in {u.user_id for u in ops.users().users}
    assert ops.set_sharing(user, True).shares_with_team
    assert ops.status().memories
    assert ops.user_profile(operator, refresh=True).user_id == operator
    with pytest.raises(Forbidden) as foreign:      # a person's private memories are theirs
        ops.user_profile(user)
    assert foreign.value.code == "foreign_profile"
    assert ops.retention(dry_run=True).dry_run
    assert ops.reembed(limit=10).instance_key
    with pytest.raises(BadRequest) as no_workspace:
        ops.sync_workspace()
    assert "MEMORY_WORKSPACE_DIR" in no_workspace.value.message
    assert isinstance(ops.dreams(limit=5).dreams, list)
    for call in (ops.dream, ops.rollback_dream):
        with pytest.raises(NotFound):
            call(str(uuid.uuid4()))
    ops.store("The operator's on-call week starts on Monday.", visibility="private")
    with pytest.raises(Unavailable) as no_launcher:  # this API has no Dream launcher
        ops.launch_dream(partition=f"default/private/{operator}")
    assert no_launcher.value.code == "launch_unavailable"
    hook = ops.add_webhook("http://127.0.0.1:9/memory", kinds=["memory.written"])
    assert hook.id in {h.id for h in ops.webhooks().webhooks}
    assert ops.webhook_deliveries(hook.id, limit=5).deliveries == []
    assert not ops.remove_webhook(hook.id).active
    erased = ops.erase_user(user)
    assert connect(user).search("async standups", min_score=0).results == []
    assert erased.model_dump()                     # the report's counts (extra fields)
    assert ops.healthz() == {"status": "ok"} and ops.readyz()["status"] == "ready"


def test_every_operation_is_called_here():
    source = inspect.getsource(sys.modules[__name__])
    called = set(re.findall(r"\.(\w+)\b", source))     # called, or handed to a loop that calls
    missing = set(OPERATIONS) - called
    assert not missing, f"call these in tests/client/test_routes.py: {sorted(missing)}"
