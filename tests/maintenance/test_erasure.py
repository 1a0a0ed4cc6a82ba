"""Erasure of a person (memory_platform/features/maintenance/erasure.py) against the real database:
after ``erase_user`` nothing of the user is found by any read path (memory search, context
search, get, knowledge search, session grep, asOf) from any context (their own, a
teammate's, the workspace's); no row of the instance holds their id or words except graph
history left superseded/quarantined by retraction; the report's counts equal the rows that
went; an assertion another person still supports stays with only their evidence; another
user's rows and another instance are untouched; append-only tables stay append-only."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.cli.users import users
from memory_platform.features.consolidation.history import assertions_as_of
from memory_platform.features.context import context_search
from memory_platform.features.dreaming.lock import dream_lock
from memory_platform.features.graph.search import knowledge_search
from memory_platform.features.maintenance.erasure import erase_user, subject_hash
from memory_platform.features.projection.outbox import process_outbox_until_idle
from memory_platform.features.retrieval.feedback.events import record_injection
from memory_platform.features.retrieval.memories import get_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.sessions.items import TurnItem, append_items
from memory_platform.features.sessions.reads import grep
from memory_platform.foundation.errors import DreamLocked, InvalidInput, NotFound
from memory_platform.foundation.settings import get_settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.membership import add_channel_member, add_session_participant
from tests.db import rows
from tests.graph.support import apply, batch, claim, entity, extraction, fact

ADA = "ada-erase-7f3e"
BOB = "bob-keeps-2c9a"
MARK = "quokkaberry"          # only Ada's words contain it
BOB_MARK = "wombatfig"        # only Bob's
SHARED = "The Nord office closes at six on Fridays."


def tables(conn: psycopg.Connection) -> list[str]:
    """Every table of the schema with an instance_key column."""
    return [r[0] for r in conn.execute(
        "SELECT table_name FROM information_schema.columns WHERE table_schema = 'public'"
        " AND column_name = 'instance_key' ORDER BY table_name").fetchall()]


def counts(conn: psycopg.Connection, instance: str) -> dict[str, int]:
    q = sql.SQL("SELECT count(*) FROM {} WHERE instance_key = %s")
    return {t: conn.execute(q.format(sql.Identifier(t)), (instance,)).fetchone()[0]
            for t in tables(conn)}


def fingerprint(conn: psycopg.Connection, instance: str) -> dict[str, str]:
    """Every row of the instance, per table, as one digest."""
    q = sql.SQL("SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '')"
                " FROM {} t WHERE instance_key = %s")
    return {t: conn.execute(q.format(sql.Identifier(t)), (instance,)).fetchone()[0]
            for t in tables(conn)}


def mentions(conn: psycopg.Connection, instance: str, needle: str) -> dict[str, int]:
    """Rows of the instance whose text contains ``needle``, per table (quarantined entities
    apart: an entity another statement named too stays, unlinked, out of every read)."""
    found = {}
    for t in tables(conn):
        where = sql.SQL("instance_key = %s AND strpos(lower(x::text), lower(%s)) > 0")
        if t == "agent_knowledge_entities":
            where = sql.SQL("{} AND status = 'active'").format(where)
        n = conn.execute(sql.SQL("SELECT count(*) FROM {} x WHERE {}").format(
            sql.Identifier(t), where), (instance, needle)).fetchone()[0]
        if n:
            found[t] = n
    return found


def say(db, settings, ctx: AccessContext, *contents: str) -> list[uuid.UUID]:
    return [i.id for i in append_items(db, settings, ctx,
                                       [TurnItem(role="user", content=c) for c in contents]).items]


def populate(db, settings, instance: str) -> dict:
    """Ada and Bob in one instance: facts (private, team, one both state), a knowledge
    graph, sessions (hers, his with her in it), summaries, feedback, a key, a membership,
    a profile, an audit row."""
    ada_private = fact(db, settings, instance, f"Ada's {MARK} allergy is severe.", user=ADA)
    ada_team = fact(db, settings, instance, f"The {MARK} rollout starts in March.",
                    user=ADA, visibility="team")
    shared_ada = fact(db, settings, instance, SHARED, user=ADA, visibility="team")
    # Bob says it too (in his session: a context-message source): his own evidence
    bob_source = rows.source(db, instance, audience_kind="team", audience_key=instance,
                             owner_user_id=BOB, session_key="s-bob",
                             source_kind="context_message", content=f"Bob: {SHARED}")
    rows.evidence(db, instance, audience_kind="team", audience_key=instance,
                  assertion_id=shared_ada.assertion_id, source_id=bob_source, excerpt=SHARED)
    shared_bob = shared_ada
    bob_private = fact(db, settings, instance, f"Bob drinks {BOB_MARK} tea.", user=BOB)
    # the graph: Ada's private partition, and the team partition citing both people
    apply(db, batch(ada_private), extraction(
        [entity("a", f"{MARK} allergy", ada_private)],
        [claim("a", "severity", ada_private, value="severe")]))
    shared = shared_ada
    apply(db, batch(ada_team, shared), extraction(
        [entity("r", f"{MARK} rollout", ada_team), entity("n", "Nord office", shared)],
        [claim("r", "starts", ada_team, value="March"),
         claim("n", "closes_at", shared, value="six on Fridays")]))
    # sessions
    add_session_participant(db, instance, "s-ada", ADA, role="owner")
    ada_ctx = AccessContext(instance, user_id=ADA, session_key="s-ada")
    ada_msgs = say(db, settings, ada_ctx, f"My {MARK} appointment is on Monday.",
                   "Please remind me the day before.")
    add_session_participant(db, instance, "s-bob", BOB, role="owner")
    add_session_participant(db, instance, "s-bob", ADA)
    bob_ctx = AccessContext(instance, user_id=BOB, session_key="s-bob")
    say(db, settings, bob_ctx, f"The {BOB_MARK} agenda is ready.")
    ada_in_bob = say(db, settings, AccessContext(instance, user_id=ADA, session_key="s-bob"),
                     f"I bring the {MARK} slides.")
    for session, user, covered, text in (("s-ada", ADA, ada_msgs, f"Ada: {MARK} appointment."),
                                         ("s-bob", BOB, ada_in_bob, f"Slides on {MARK}.")):
        leaf = rows.context_summary(db, instance, session_key=session, user_id=user,
                                    content=text)
        for m in covered:
            rows.summary_message(db, instance, session_key=session, summary_id=leaf,
                                 message_id=m)
    # the rest of what names her
    record_injection(db, instance, [ada_team.assertion_id], run_id="run-ada", user_id=ADA,
                     session_key="s-ada")
    rows.feedback_run(db, instance, run_id="run-ada", user_id=ADA, session_key="s-ada")
    rows.api_key(db, instance, user_id=ADA)
    rows.api_key(db, instance, user_id=BOB)
    add_channel_member(db, instance, "chan-ops", ADA, added_by="test")
    db.execute("INSERT INTO agent_user_profiles (instance_key, user_id, profile_text)"
               " VALUES (%s, %s, %s)", (instance, ADA, f"Ada, {MARK} allergy"))
    rows.cleanup_audit(db, instance, operation="assertion_supersede",
                       target_table="agent_memory_assertions",
                       target_id=str(ada_private.assertion_id),
                       before_image=Jsonb({"assertion_text": f"{MARK} allergy"}))
    return {"ada_private": ada_private, "ada_team": ada_team, "shared_ada": shared_ada,
            "shared_bob": shared_bob, "bob_private": bob_private}


def contexts(instance: str) -> list[AccessContext]:
    return [AccessContext(instance, user_id=ADA, session_key="s-ada"),
            AccessContext(instance, user_id=BOB, session_key="s-bob"),
            AccessContext(instance, user_id="carol", session_key="s-carol"),
            AccessContext(instance)]


def found_anywhere(db, settings, instance: str, needle: str) -> list[str]:
    """What each read path returns for ``needle``, from each context (descriptions)."""
    hits = []
    for ctx in contexts(instance):
        who = ctx.user_id or "workspace"
        for h in search_memories(db, settings, ctx, needle, stamp=False):
            if needle in h.content.lower():
                hits.append(f"search_memories/{who}")
        for item in context_search(db, settings, ctx, needle, depth="deep"):
            if needle in item.content.lower():
                hits.append(f"context_search/{who}/{item.kind}")
        result = knowledge_search(db, settings, ctx, needle)
        text = str(result.as_json()).lower()
        if needle in text:
            hits.append(f"knowledge_search/{who}")
        if ctx.user_id and ctx.session_key:
            if grep(db, ctx, needle, all_sessions=True).hits:
                hits.append(f"grep/{who}")
        now = db.execute("SELECT clock_timestamp()").fetchone()[0]
        if assertions_as_of(db, ctx, now, query=needle):
            hits.append(f"as_of/{who}")
    return hits


def test_erasure_removes_every_trace_and_counts_what_it_removed(db, settings, instance):
    other = f"{instance}-other"
    made = populate(db, settings, instance)
    elsewhere = fact(db, settings, other, f"Ada's {MARK} note in another instance.", user=ADA)
    assert found_anywhere(db, settings, instance, MARK)            # the setup is visible
    before, other_before = counts(db, instance), fingerprint(db, other)

    report = erase_user(db, settings, instance, ADA, requested_by="test")

    after = counts(db, instance)
    for table, n in report.removed.items():
        expected = before[table] - after[table]
        if table in ("agent_memory_erasures", "agent_memory_events"):
            expected += 1                       # the report, and its user.erased event
        if table == "agent_memory_ingestion_outbox":
            expected += report.updated["agent_memory_ingestion_outbox.enqueued"]
        assert n == expected, table
    for table in set(before) - set(report.removed):
        assert after[table] - before[table] == (table == "agent_memory_erasures"), table
    assert report.removed["agent_memory_assertions"] == 2        # private + her team fact
    assert report.removed["agent_context_messages"] == 3         # hers, in both sessions
    assert report.removed["agent_context_summaries"] == 2
    assert report.removed["api_keys"] == 1
    assert report.updated["agent_knowledge_claims.superseded"] == 1
    assert report.updated["agent_knowledge_entities.quarantined"] == 1

    # nothing of her by any read path, from any context; no row names her or her words
    assert found_anywhere(db, settings, instance, MARK) == []
    assert mentions(db, instance, MARK) == {}
    assert mentions(db, instance, ADA) == {}
    for key in ("ada_private", "ada_team"):
        for ctx in contexts(instance):
            with pytest.raises(NotFound):
                get_memory(db, ctx, made[key].memory_id)
    # the shared fact stays, supported by Bob's evidence only; Bob's rows are untouched
    shared = made["shared_bob"].assertion_id
    assert db.execute("SELECT status, owner_user_id FROM agent_memory_assertions WHERE id = %s",
                      (shared,)).fetchone() == ("active", None)
    assert db.execute("SELECT count(*) FROM agent_memory_assertion_evidence"
                      " WHERE assertion_id = %s", (shared,)).fetchone()[0] == 1
    bob = AccessContext(instance, user_id=BOB, session_key="s-bob")
    assert any(BOB_MARK in h.content for h in search_memories(db, settings, bob, BOB_MARK,
                                                              stamp=False))
    assert grep(db, bob, BOB_MARK).hits
    assert [c.as_json()["predicate"] for c in knowledge_search(db, settings, bob,
                                                               "Nord office").claims] \
        == ["closes_at"]
    # the kept fact's projection was Ada's memory row: it is projected again, for Bob too
    assert report.updated["agent_memory_ingestion_outbox.enqueued"] == 1
    process_outbox_until_idle(db, settings)
    assert any(h.content == SHARED for h in search_memories(db, settings, bob, "Nord office",
                                                            stamp=False))
    assert mentions(db, instance, ADA) == {}
    assert fingerprint(db, other) == other_before                 # another instance
    assert get_memory(db, AccessContext(other, user_id=ADA), elsewhere.memory_id)

    # the report is kept, without content
    stored = db.execute("SELECT to_jsonb(e) FROM agent_memory_erasures e WHERE id = %s",
                        (report.id,)).fetchone()[0]
    assert stored["subject_hash"] == subject_hash(instance, ADA) == report.subject_hash
    assert stored["removed"] == report.removed and stored["total_removed"] == report.total_removed
    assert MARK not in str(stored) and ADA not in str(stored)


def test_append_only_tables_still_refuse_deletes_outside_an_erasure(db, settings, instance):
    made = populate(db, settings, instance)
    report = erase_user(db, settings, instance, "nobody-here")
    assert report.total_removed == 0
    with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
        db.execute("DELETE FROM agent_memory_assertion_reviews WHERE assertion_id = %s",
                   (made["ada_team"].assertion_id,))
    with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
        db.execute("DELETE FROM agent_memory_v2_cleanup_audit WHERE instance_key = %s",
                   (instance,))
    assert db.execute("SELECT total_removed FROM agent_memory_erasures WHERE id = %s",
                      (report.id,)).fetchone() == (0,)
    assert found_anywhere(db, settings, instance, MARK)           # nothing of Ada went


def test_bad_input_and_an_open_transaction_are_refused(db, settings, instance):
    for user in ("", " ", "a\nb", "x" * 201):
        with pytest.raises(InvalidInput):
            erase_user(db, settings, instance, user)
    with db.transaction(), pytest.raises(RuntimeError, match="outside a transaction"):
        erase_user(db, settings, instance, ADA)



def test_an_erasure_waits_for_no_dream_and_changes_nothing_while_one_runs(
        db, settings, instance, module_database_url):
    """A Dream that read the person's memories could write their words into its row after the
    erasure committed: while the Dreaming lock is held the erasure is refused whole."""
    populate(db, settings, instance)
    before = fingerprint(db, instance)
    with psycopg.connect(module_database_url, autocommit=True) as dreaming, \
            dream_lock(dreaming):
        with pytest.raises(DreamLocked, match="nothing was erased"):
            erase_user(db, settings, instance, ADA)
        assert fingerprint(db, instance) == before
    assert erase_user(db, settings, instance, ADA).total_removed > 0

def test_the_cli_erases_and_prints_the_report(db, settings, instance, module_database_url,
                                              monkeypatch):
    populate(db, settings, instance)
    monkeypatch.setenv("MEMORY_DATABASE_URL", module_database_url)
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        refused = runner.invoke(users, ["erase", ADA, "--instance", instance], input="n\n")
        assert refused.exit_code != 0 and found_anywhere(db, settings, instance, MARK)
        result = runner.invoke(users, ["erase", ADA, "--instance", instance, "--json", "--yes",
                                       "--direct"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        assert report["removed"]["agent_memory_assertions"] == 2
        assert report["subjectHash"] == subject_hash(instance, ADA)
        assert MARK not in result.output and ADA not in result.output
        assert found_anywhere(db, settings, instance, MARK) == []
        bad = runner.invoke(users, ["erase", " ", "--instance", instance, "--yes", "--direct"])
        assert bad.exit_code != 0 and "user is required" in bad.output
    finally:
        get_settings.cache_clear()



def test_erasure_reports_are_append_only(db, settings, instance):
    populate(db, settings, instance)
    report = erase_user(db, settings, instance, ADA)
    for statement in ("UPDATE agent_memory_erasures SET requested_by = 'x' WHERE id = %s",
                      "DELETE FROM agent_memory_erasures WHERE id = %s"):
        with pytest.raises(psycopg.errors.RestrictViolation):
            db.execute(statement, (report.id,))
