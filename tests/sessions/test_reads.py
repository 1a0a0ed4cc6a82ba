"""memory_grep / memory_describe / memory_expand over the context graph
(memory_platform.features.sessions.reads), against the real database. Summaries and their links are
written with SQL here (compaction writes them in production), ranges set as compaction sets
them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memory_platform.features.sessions.items import TurnItem, append_items
from memory_platform.features.sessions.reads import (
    SNIPPET_CHARS,
    describe,
    expand,
    grep,
    grep_statement,
    like_pattern,
    snippet,
)
from memory_platform.foundation.errors import InvalidInput, NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.membership import add_session_participant
from tests.support.settings import hash_embedding_settings


@pytest.fixture(scope="module")
def settings(module_database_url: str) -> Settings:
    return hash_embedding_settings(module_database_url)


def ctx_of(instance: str, user: str | None = "alice", session: str | None = "s-alice",
           **fields: Any) -> AccessContext:
    return AccessContext(instance_key=instance, user_id=user, session_key=session, **fields)


def put(db, settings, ctx: AccessContext, *contents: str, role: str = "user",
        runtime: bool = False, **fields: Any) -> list[str]:
    """Append ``contents`` as one batch (as the user's own key, or as the runtime); their
    typed ids."""
    result = append_items(db, settings, ctx, [TurnItem(role=role, content=c, **fields)
                                              for c in contents], author_may_differ=runtime)
    return [f"message:{i.id}" for i in result.items]


def add_summary(db: psycopg.Connection, instance: str, session: str, content: str, *,
                messages: Sequence[str] = (), children: Sequence[str] = (),
                user_id: str | None = "alice", depth: int | None = None) -> str:
    """A leaf summary over ``messages`` or a condensed one over ``children`` (typed ids),
    with the range of what it covers; its typed id."""
    message_ids = [uuid.UUID(m.split(":")[1]) for m in messages]
    child_ids = [uuid.UUID(c.split(":")[1]) for c in children]
    if message_ids:
        first, last = db.execute("SELECT min(seq), max(seq) FROM agent_context_messages"
                                 " WHERE id = ANY(%s)", (message_ids,)).fetchone()
        depth = 0 if depth is None else depth
    else:
        first, last, below = db.execute(
            "SELECT min(first_seq), max(last_seq), max(depth) FROM agent_context_summaries"
            " WHERE id = ANY(%s)", (child_ids,)).fetchone()
        depth = below + 1 if depth is None else depth
    ident = db.execute(
        "INSERT INTO agent_context_summaries (instance_key, session_key, user_id, kind, depth,"
        " content, token_count, first_seq, last_seq, produced_by, model)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, 'extractive', 'extractive') RETURNING id",
        (instance, session, user_id, "leaf" if depth == 0 else "condensed", depth, content,
         len(content) // 4, first, last)).fetchone()[0]
    for message_id in message_ids:
        db.execute("INSERT INTO agent_context_summary_messages (instance_key, session_key,"
                   " summary_id, message_id) VALUES (%s, %s, %s, %s)",
                   (instance, session, ident, message_id))
    for child in child_ids:
        db.execute("INSERT INTO agent_context_summary_parents (instance_key, session_key,"
                   " parent_summary_id, child_summary_id) VALUES (%s, %s, %s, %s)",
                   (instance, session, ident, child))
    return f"summary:{ident}"


def grep_ids(db, ctx: AccessContext, pattern: str, **options: Any) -> list[str]:
    return [hit.id for hit in grep(db, ctx, pattern, **options).hits]


# --- grep ----------------------------------------------------------------------------------
def test_grep_finds_messages_and_summaries_case_insensitively_newest_first(db, settings,
                                                                           instance):
    ctx = ctx_of(instance)
    older = put(db, settings, ctx, "The Hamburg rollout starts in May.")
    newer = put(db, settings, ctx, "Reminder: hamburg ROLLOUT moved to June.", role="assistant")
    put(db, settings, ctx, "Nothing to see here.")
    summary = add_summary(db, instance, "s-alice", "Summary: the HAMBURG Rollout plan.",
                          messages=older + newer)
    page = grep(db, ctx, "hamburg rollout")
    assert [h.id for h in page.hits] == [summary, *newer, *older]
    assert page.next_before is None
    hit = page.hits[1]
    assert (hit.kind, hit.session_key, hit.first_seq, hit.last_seq, hit.role, hit.user_id) == \
        ("message", "s-alice", 1, 1, "assistant", "alice")
    assert hit.snippet == "Reminder: hamburg ROLLOUT moved to June."
    assert (page.hits[0].first_seq, page.hits[0].last_seq, page.hits[0].role) == (0, 1, None)


def test_grep_matches_percent_underscore_and_backslash_literally(db, settings, instance):
    ctx = ctx_of(instance)
    [percent] = put(db, settings, ctx, "Migration is 100% done")
    put(db, settings, ctx, "Migration is 1000 done")
    [underscore] = put(db, settings, ctx, "set max_conn to 50")
    put(db, settings, ctx, "set maxxconn to 50")
    [backslash] = put(db, settings, ctx, r"saved to C:\temp\new")
    put(db, settings, ctx, "saved to C:temp")
    assert grep_ids(db, ctx, "0% d") == [percent]
    assert grep_ids(db, ctx, "x_c") == [underscore]
    assert grep_ids(db, ctx, "%%%") == []
    assert grep_ids(db, ctx, ":\\te") == [backslash]
    assert like_pattern(r"a%b_c\d") == r"%a\%b\_c\\d%"


def test_grep_reads_the_current_session_unless_all_sessions(db, settings, instance):
    here, there = ctx_of(instance), ctx_of(instance, session="s-alice-2")
    [first] = put(db, settings, here, "budget for Q3 is fixed")
    [second] = put(db, settings, there, "budget for Q4 is open")
    assert grep_ids(db, here, "budget for") == [first]
    assert grep_ids(db, there, "budget for") == [second]
    assert set(grep_ids(db, ctx_of(instance, session=None), "budget for",
                        all_sessions=True)) == {first, second}


def test_grep_never_returns_another_users_raw_item(db, settings, instance):
    bob = ctx_of(instance, user="bob", session="s-bob")
    put(db, settings, bob, "bob's salary is confidential")
    add_summary(db, instance, "s-bob", "bob's salary talk", messages=[], children=[],
                user_id="bob", depth=0)
    for ctx in (ctx_of(instance), ctx_of(instance, session="s-bob"),
                ctx_of(instance, user=None, session="s-bob")):
        assert grep_ids(db, ctx, "salary", all_sessions=True) == []
        assert grep_ids(db, ctx, "salary") == []
    assert len(grep_ids(db, bob, "salary")) == 2


def test_a_shared_session_is_readable_by_its_participants(db, settings, instance):
    """The runtime records both people's turns in one room session: both take part."""
    room = ctx_of(instance, session="room-1")
    put(db, settings, room, "Alice: offsite in Lisbon", runtime=True)
    put(db, settings, ctx_of(instance, user="bob", session="room-1"), "Bob: Lisbon works",
        author_user_id=None, runtime=True)
    as_bob = ctx_of(instance, user="bob", session="room-1")
    assert len(grep_ids(db, as_bob, "lisbon")) == 2
    assert len(grep_ids(db, ctx_of(instance, user="bob", session=None), "lisbon",
                        all_sessions=True)) == 2
    assert len(grep_ids(db, ctx_of(instance, user="carol", session="room-1"), "lisbon")) == 0


def test_user_less_channel_items_only_for_its_members(db, settings, instance):
    """A grep across sessions searches the sessions the caller takes part in, wrote in, or
    whose user-less transcript belongs to the caller's channel; a user-less system session
    outside any channel is not one of them (finding 7: grep resolves its sessions first)."""
    channel = ctx_of(instance, user=None, session="slack:C9", channel_thread_key="C9/1")
    [item] = put(db, settings, channel, "incident 4711 is resolved", role="system",
                 runtime=True)
    put(db, settings, ctx_of(instance, user=None, session="system:cron"),
        "incident 4711 report mailed", role="system", runtime=True)
    member = ctx_of(instance, user="alice", session=None, channel_thread_key="C9/1")
    outsider = ctx_of(instance, user="alice", session=None)
    assert grep_ids(db, member, "incident 4711", all_sessions=True) == [item]
    assert grep_ids(db, outsider, "incident 4711", all_sessions=True) == []


def test_roles_keep_only_those_messages(db, settings, instance):
    ctx = ctx_of(instance)
    [user_item] = put(db, settings, ctx, "the codeword is pelican")
    [tool_item] = put(db, settings, ctx, "lookup: pelican found", role="tool")
    add_summary(db, instance, "s-alice", "pelican summary", messages=[user_item, tool_item])
    assert grep_ids(db, ctx, "pelican", roles=["tool"]) == [tool_item]
    assert grep_ids(db, ctx, "pelican", roles=["user", "tool"]) == [tool_item, user_item]
    assert len(grep_ids(db, ctx, "pelican")) == 3


def test_grep_pages_newest_first_through_every_match(db, settings, instance):
    ctx = ctx_of(instance)
    ids: list[str] = []
    for batch in range(5):
        ids += put(db, settings, ctx, *(f"ticket OPS-{batch}{n}" for n in range(5)))
    seen: list[str] = []
    before = None
    for _ in range(10):
        page = grep(db, ctx, "ticket ops", limit=7, before=before)
        seen += [h.id for h in page.hits]
        before = page.next_before
        if before is None:
            break
    assert seen == list(reversed(ids))


@pytest.mark.parametrize(("options", "code"), [
    ({"pattern": "ab"}, "pattern_too_short"),
    ({"pattern": "x" * 501}, "pattern_too_long"),
    ({"pattern": "abc", "limit": 101}, "invalid_limit"),
    ({"pattern": "abc", "limit": 0}, "invalid_limit"),
    ({"pattern": "abc", "roles": ["owner"]}, "invalid_role"),
    ({"pattern": "abc", "roles": []}, "invalid_role"),
    ({"pattern": "abc", "before": "not-a-cursor"}, "invalid_cursor"),
    ({"pattern": "abc", "before": "WzEsMiwzXQ"}, "invalid_cursor"),
])
def test_bad_grep_input_is_refused(db, instance, options, code):
    pattern = options.pop("pattern")
    with pytest.raises(InvalidInput) as refused:
        grep(db, ctx_of(instance), pattern, **options)
    assert refused.value.code == code
    if code == "pattern_too_short":
        assert "trigram" in refused.value.message


def test_grep_needs_a_session_or_all_sessions(db, instance):
    with pytest.raises(InvalidInput) as refused:
        grep(db, ctx_of(instance, session=None), "abc")
    assert refused.value.code == "session_required"


def test_the_snippet_is_the_text_around_the_first_match():
    text = "a" * 1000 + "NEEDLE" + "b" * 1000
    cut = snippet(text, "needle")
    assert "NEEDLE" in cut and cut.startswith("…") and cut.endswith("…")
    assert len(cut) == SNIPPET_CHARS + 2
    assert snippet("short NEEDLE text", "needle") == "short NEEDLE text"
    assert snippet("x" * 500, "zzz") == "x" * SNIPPET_CHARS + "…"
    assert snippet("İstanbul ships", "ships") == "İstanbul ships"  # lower() changes length


# --- describe / expand -----------------------------------------------------------------------
@pytest.fixture
def tree(db, settings, instance) -> dict[str, Any]:
    """12 raw items, 3 leaf summaries of 4, one condensed summary over the leaves."""
    ctx = ctx_of(instance)
    messages = put(db, settings, ctx, *(f"turn {n}" for n in range(12)))
    leaves = [add_summary(db, instance, "s-alice", f"leaf {k}",
                          messages=messages[4 * k:4 * k + 4]) for k in range(3)]
    root = add_summary(db, instance, "s-alice", "all of it", children=leaves)
    return {"ctx": ctx, "messages": messages, "leaves": leaves, "root": root}


def test_describe_a_message_lists_the_summaries_above_it_leaf_first(db, settings, instance,
                                                                    tree):
    [tagged] = put(db, settings, tree["ctx"], "with metadata", role="tool",
                   metadata={"tool": "search", "toolCallId": "call-1"},
                   client_item_id="tool-1")
    node = describe(db, tree["ctx"], tree["messages"][5])
    assert (node.kind, node.seq, node.role, node.content, node.user_id) == \
        ("message", 5, "user", "turn 5", "alice")
    assert node.run_id.startswith("append:")
    assert [s.id for s in node.summaries] == [tree["leaves"][1], tree["root"]]
    assert [(s.kind, s.depth, s.first_seq, s.last_seq) for s in node.summaries] == \
        [("leaf", 0, 4, 7), ("condensed", 1, 0, 11)]
    other = describe(db, tree["ctx"], tagged)
    assert other.metadata == {"tool": "search", "toolCallId": "call-1"}
    assert other.client_item_id == "tool-1" and other.summaries == []


def test_describe_a_summary_gives_its_range_children_and_parents(db, instance, tree):
    root = describe(db, tree["ctx"], tree["root"])
    assert (root.kind, root.summary_kind, root.depth, root.first_seq, root.last_seq) == \
        ("summary", "condensed", 1, 0, 11)
    assert (root.produced_by, root.model, root.child_count) == ("extractive", "extractive", 3)
    assert root.children == tree["leaves"] and root.parents == []
    leaf = describe(db, tree["ctx"], tree["leaves"][2])
    assert leaf.child_count == 4 and leaf.children == tree["messages"][8:12]
    assert leaf.parents == [tree["root"]]


def test_expand_pages_through_every_raw_item_under_a_summary(db, instance, tree):
    seen, after = [], None
    for _ in range(5):
        page = expand(db, tree["ctx"], tree["root"], limit=5, after_seq=after)
        assert [s.id for s in page.child_summaries] == tree["leaves"]
        seen += [m.id for m in page.messages]
        after = page.next_after_seq
        if after is None:
            break
    assert seen == tree["messages"]
    leaf = expand(db, tree["ctx"], tree["leaves"][1])
    assert [m.content for m in leaf.messages] == ["turn 4", "turn 5", "turn 6", "turn 7"]
    assert leaf.child_summaries == [] and leaf.next_after_seq is None


def test_invisible_and_unknown_nodes_are_the_same_not_found(db, settings, instance, tree):
    bob = ctx_of(instance, user="bob", session="s-bob")
    unknown = f"summary:{uuid.uuid4()}"
    for node_id in (tree["root"], tree["messages"][0], unknown, "summary:nope", "junk"):
        with pytest.raises(NotFound):
            describe(db, bob, node_id)
    for node_id in (tree["root"], unknown):
        with pytest.raises(NotFound):
            expand(db, bob, node_id)
    with pytest.raises(InvalidInput) as refused:
        expand(db, tree["ctx"], tree["messages"][0])
    assert refused.value.code == "not_a_summary"


def test_expand_lists_only_the_visible_raw_items(db, settings, instance):
    """A summary of a shared session, read by a participant without the session named: the
    items of other participants are theirs unless the caller takes part in the session."""
    room = ctx_of(instance, session="room-2")
    mine = put(db, settings, room, "Alice says hi", runtime=True)
    theirs = put(db, settings, ctx_of(instance, user="bob", session="room-2"), "Bob says hi",
                 runtime=True)
    # Her items stay hers when she no longer takes part (an appended item records her).
    db.execute("DELETE FROM agent_session_participants WHERE instance_key = %s"
               " AND user_id = 'alice'", (instance,))
    summary = add_summary(db, instance, "room-2", "greetings", messages=mine + theirs,
                          user_id=None)
    outsider_view = expand(db, ctx_of(instance, session=None), summary)
    assert [m.id for m in outsider_view.messages] == mine
    add_session_participant(db, instance, "room-2", "alice")
    assert [m.id for m in expand(db, ctx_of(instance, session=None), summary).messages] == \
        mine + theirs


# --- bounded grep (review of 7c85f33, finding 7) --------------------------------------------
def _plan_nodes(node: dict) -> list[dict]:
    return [node, *(n for child in node.get("Plans", []) for n in _plan_nodes(child))]


def test_f7_a_caller_with_no_visible_session_reads_no_other_tenants_rows(db, settings,
                                                                         instance):
    """Before, grep matched the pattern over every instance's trigram candidates and applied
    the history rule after: a caller who could read nothing rechecked thousands of foreign
    rows. Now the sessions are resolved first and the match runs only inside them."""
    db.execute(
        "INSERT INTO agent_context_messages (instance_key, session_key, user_id, seq, role,"
        " content)"
        " SELECT t.instance, 's-' || (g / 20), 'user-' || (g / 20), g, 'user',"
        "        'the class assessment passed ' || repeat('filler text ', 40) || g"
        "   FROM generate_series(1, 3000) g,"
        "        (VALUES (%s), ('another-instance')) AS t(instance)", (instance,))
    db.execute("ANALYZE agent_context_messages")
    mallory = ctx_of(instance, user="mallory", session="web:unused")
    statement, params = grep_statement(mallory, "assessment", ["web:unused"],
                                       all_sessions=False, roles=None, limit=20, cursor=None,
                                       scan_cap=2000)
    [[plan]] = db.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + statement,
                          params).fetchone()
    nodes = _plan_nodes(plan["Plan"])
    scans = [n for n in nodes if n.get("Relation Name") == "agent_context_messages"]
    assert scans and all(n["Actual Rows"] == 0 for n in scans)
    assert sum(n.get("Rows Removed by Index Recheck", 0) + n.get("Rows Removed by Filter", 0)
               for n in nodes) == 0
    assert plan["Plan"].get("Shared Hit Blocks", 0) + \
        plan["Plan"].get("Shared Read Blocks", 0) < 100  # 6,000 rows: ~1,000 heap pages
    # Across sessions, a caller with none reads nothing at all; its own session is searched.
    assert grep(db, ctx_of(instance, user="mallory", session=None), "assessment",
                all_sessions=True).hits == []
    [mine] = put(db, settings, ctx_of(instance, user="mallory", session="web:m"),
                 "my assessment notes")
    assert grep_ids(db, ctx_of(instance, user="mallory", session=None), "assessment",
                    all_sessions=True) == [mine]


def test_f7_a_pattern_matching_more_than_the_scan_cap_is_refused(db, settings, instance):
    ctx = ctx_of(instance)
    for n in range(12):
        put(db, settings, ctx, f"standup note {n}")
    assert len(grep_ids(db, ctx, "standup", scan_cap=12, limit=5)) == 5
    with pytest.raises(InvalidInput) as refused:
        grep(db, ctx, "standup", scan_cap=11)
    assert refused.value.code == "pattern_too_broad"
    assert grep_ids(db, ctx_of(instance, session=None), "standup", all_sessions=True,
                    max_sessions=1)
    put(db, settings, ctx_of(instance, session="s-alice-other"), "standup elsewhere")
    with pytest.raises(InvalidInput) as refused:
        grep(db, ctx_of(instance, session=None), "standup", all_sessions=True,
             max_sessions=1)
    assert refused.value.code == "too_many_sessions"
