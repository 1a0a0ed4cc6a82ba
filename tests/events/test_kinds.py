"""One event per change of memory state, written by the ledger's own triggers in the
transaction of the change, through the real code paths: the write path (written,
deduplicated, activated), a person's review decisions (activated, rejected, superseded),
Dreaming (completed, rolled back, tombstoned) and erasure (erased; the person's events go)."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.rollback import rollback_dream
from memory_platform.features.events.store import list_events
from memory_platform.features.maintenance.erasure import erase_user
from memory_platform.features.review import decisions
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext
from tests.dreaming.support import ScriptedModel, assertion, payload, remember
from tests.dreaming.test_rollback import LINES  # four team lines: enough to dream on
from tests.review.test_review import pending

FACT = "The staging database is refreshed from production every night at two."


def events(db, instance, **where):
    clause = sql.SQL("").join(
        sql.SQL(" AND {} = {}").format(sql.Identifier(column), sql.Placeholder(column))
        for column in where)
    return db.execute(sql.SQL(
        "SELECT kind, memory_id, assertion_id, dream_id, erasure_id, payload, audience_kind,"
        " audience_key, owner_user_id FROM agent_memory_events"
        " WHERE instance_key = %(instance)s{} ORDER BY seq").format(clause),
        {"instance": instance, **where}).fetchall()


def kinds(db, instance, prefix="", **where):
    return [row[0] for row in events(db, instance, **where) if row[0].startswith(prefix)]


def test_a_write_a_repeat_and_its_fact(db, settings, instance):
    ada = AccessContext(instance, user_id="ada")
    stored = remember(db, settings, ada, FACT, source_type="fact", visibility="team")
    assert stored.assertion_status == "active"
    assert kinds(db, instance, memory_id=stored.id) == ["memory.written"]
    assert kinds(db, instance, assertion_id=stored.assertion_id) == [
        "assertion.activated", "memory.written"]

    again = remember(db, settings, ada, FACT, source_type="fact", visibility="team")
    assert again.deduplicated and again.id == stored.id
    assert kinds(db, instance, memory_id=stored.id) == ["memory.written",
                                                        "memory.deduplicated"]
    written = events(db, instance, memory_id=stored.id)[0]
    assert written[5] == {"memoryState": "active", "sourceType": "fact",
                          "memoryScope": written[5]["memoryScope"]}
    assert written[6:] == ("team", instance, "ada")
    # No event carries the memory's text.
    assert not any(FACT in str(row) for row in events(db, instance))


def test_review_decisions(db, settings, instance):
    ada = AccessContext(instance, user_id="ada")
    kept = pending(db, settings, instance, "The release train leaves on Wednesdays.")
    old = pending(db, settings, instance, "The release train leaves on Mondays.")
    wrong = pending(db, settings, instance, "The release train never leaves.")
    assert kinds(db, instance) == []                 # candidates are no state change yet

    decisions.decide_assertion(db, settings, ada, kept, "approve", key_kind="user")
    decisions.decide_assertion(db, settings, ada, old, "approve", key_kind="user")
    decisions.decide_assertion(db, settings, ada, old, "supersede", successor_id=kept,
                               reason_code="schedule_changed", key_kind="user")
    decisions.decide_assertion(db, settings, ada, wrong, "reject", key_kind="user")

    # (an approved assertion is also projected: a memory.written of its projection row)
    assert kinds(db, instance, "assertion.", assertion_id=kept) == ["assertion.activated"]
    assert kinds(db, instance, "assertion.", assertion_id=old) == ["assertion.activated",
                                                                  "assertion.superseded"]
    superseded = events(db, instance, kind="assertion.superseded")[0][5]
    assert superseded["previousStatus"] == "active"
    assert superseded["supersededBy"] == str(kept)
    assert kinds(db, instance, "assertion.", assertion_id=wrong) == ["assertion.rejected"]


def test_a_dream_completed_and_rolled_back(db, settings, instance):
    ctx = AccessContext(instance, user_id="ada", session_key="teamchat:room-1")
    ids = [remember(db, settings, ctx, text, visibility="team").id for text in LINES]
    model = ScriptedModel(payload(*[assertion(t, m) for t, m in zip(LINES, ids, strict=True)]))
    result = run_dream_partition(db, settings, Partition(instance, "team", instance),
                                 model=model)
    assert result.status == "completed"
    assert kinds(db, instance, dream_id=result.dream_id)[-1] == "dream.completed"

    rollback_dream(db, result.dream_id, settings=settings)

    dream_events = events(db, instance, dream_id=result.dream_id)
    assert [row[0] for row in dream_events].count("dream.completed") == 1
    assert dream_events[-1][0] == "dream.rolled_back"
    assert dream_events[-1][5]["previousStatus"] == "completed"
    for created in result.assertion_ids:
        assert kinds(db, instance, "assertion.", assertion_id=created)[-1] == (
            "assertion.tombstoned")


def test_erasure_is_an_event_and_takes_the_persons_events(db, settings, instance):
    ada = AccessContext(instance, user_id="ada")
    private = remember(db, settings, ada, "Ada keeps her notes in a blue binder.",
                       visibility="private")
    team = remember(db, settings, AccessContext(instance, user_id="bob"),
                    "Bob keeps the release notes in the wiki.", visibility="team")
    assert kinds(db, instance, memory_id=private.id) == ["memory.written"]

    report = erase_user(db, settings, instance, "ada")

    erased = events(db, instance, kind="user.erased")
    assert len(erased) == 1
    assert erased[0][4] == report.id and erased[0][5] == {"totalRemoved": report.total_removed}
    assert erased[0][6:] == ("workspace", instance, None)
    assert report.removed["agent_memory_events"] >= 1
    assert events(db, instance, owner_user_id="ada") == []
    assert events(db, instance, memory_id=private.id) == []
    assert kinds(db, instance, memory_id=team.id) == ["memory.written"]


def test_the_feed_applies_the_visibility_rule_and_pages(db, settings, instance):
    ada, bob = AccessContext(instance, user_id="ada"), AccessContext(instance, user_id="bob")
    mine = remember(db, settings, ada, "Ada's private reminder about the dentist.",
                    visibility="private")
    shared = [remember(db, settings, bob, f"Team note number {n} about the build.",
                       visibility="team").id for n in range(3)]

    seen, cursor = list_events(db, bob)
    assert str(mine.id) not in {e.get("memoryId") for e in seen}
    assert [e["memoryId"] for e in seen] == [str(m) for m in shared]

    paged, after = [], None
    for _ in range(5):
        page, after = list_events(db, bob, after=after, limit=1)
        paged += page
    assert paged == seen and after == cursor
    assert list_events(db, bob, after=cursor) == ([], cursor)     # poll: nothing new
    assert [e["memoryId"] for e in list_events(db, ada, kinds=["memory.written"])[0]] == [
        str(mine.id), *map(str, shared)]


@pytest.mark.parametrize("cursor", ["not-base64!", "Zm9v", "LTE6Mw"])
def test_a_malformed_cursor_is_invalid_input(db, instance, cursor):
    with pytest.raises(InvalidInput):
        list_events(db, AccessContext(instance, user_id="ada"), after=cursor)


@pytest.mark.parametrize("statement", [
    "UPDATE agent_memory_events SET kind = 'memory.forged' WHERE instance_key = %s",
    "DELETE FROM agent_memory_events WHERE instance_key = %s",
])
def test_events_are_append_only(db, settings, instance, statement):
    remember(db, settings, AccessContext(instance, user_id="ada"), "A team note.",
             visibility="team")
    with pytest.raises(psycopg.errors.RestrictViolation):
        db.execute(statement, (instance,))
    with pytest.raises(psycopg.errors.RestrictViolation):
        db.execute("TRUNCATE agent_memory_events")
    assert kinds(db, instance) == ["memory.written"]
