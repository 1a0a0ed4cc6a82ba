"""Property: no read path returns a row the visibility rules forbid.

Random memories are written through ``store_memory`` (so their audiences are derived by the
write path) by random writers across two instances (users, team/group rooms, channel
threads, system sessions), with random explicit visibility, explicit-private and
agent-personal flags and random share-with-team preferences. Random readers (always
including the empty context) then search and fetch. The rules are written out again here,
from the specification ("Memory scopes and retrieval boundaries", "Shared facts", "Shared user
memory"), without calling access.py:

* workspace rows: everyone in the instance;
* private rows: only the authenticated user who wrote them;
* team rows: any team-access context (user, group room, channel thread, channel type); the
  empty context none;
* channel rows: readers in the row's conversation (its thread, else its room), or the
  linked user;
* nothing crosses an instance; facts waiting for review (workspace-wide facts) are never
  recalled.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from hypothesis import event, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory_platform.access import AccessContext, AccessError
from memory_platform.errors import NotFound
from memory_platform.memories.sharing import set_share_with_team
from memory_platform.memories.store import MemoryWrite, store_memory
from memory_platform.retrieval.memories import get_memory
from memory_platform.retrieval.search import search_memories
from memory_platform.settings import Settings
from tests.support.settings import hash_embedding_settings

try:  # the broad read path, where the library has it
    from memory_platform.retrieval.context import context_get, context_search
except ImportError:  # pragma: no cover
    context_get = context_search = None

USERS = ("ada", "bob", "cy")
ROOMS = ("room-1", "room-2")
THREADS = ("slack:T1", "slack:T2", "telegram:T3")
VOCAB = (
    "invoice payroll falcon budget audit server deploy client contract meeting report "
    "backup license travel hiring vendor refund pricing roadmap rechnung steuer kunde "
    "vertrag urlaub lieferant angebot mahnung quartal bilanz harbor orchid granite"
).split()


@dataclass(frozen=True)
class Who:
    """A caller, before instance keys are assigned (instance is 0 or 1)."""

    instance: int
    user: str | None = None
    session: str | None = None
    room: str | None = None
    thread: str | None = None
    channel_type: str | None = None

    @property
    def team_access(self) -> bool:
        return bool(self.user or self.room or self.thread or self.channel_type)

    def context(self, instances: tuple[str, str]) -> AccessContext:
        return AccessContext(instances[self.instance], user_id=self.user,
                             session_key=self.session, group_room_id=self.room,
                             channel_thread_key=self.thread, channel_type=self.channel_type)


@dataclass(frozen=True)
class Write:
    who: Who
    words: tuple[str, ...]
    visibility: str | None
    explicit_private: bool
    agent_personal: bool
    source_type: str


@st.composite
def callers(draw, *, writer: bool) -> Who:
    instance = draw(st.sampled_from((0, 1)))
    user, room = draw(st.sampled_from(USERS)), draw(st.sampled_from(ROOMS))
    thread = draw(st.sampled_from(THREADS))
    kind = thread.split(":")[0]
    shapes = {
        "system": Who(instance, session="cron:nightly"),
        "direct": Who(instance, user=user, session=f"web:{user}"),
        "linked-channel": Who(instance, user=user, thread=thread, channel_type=kind),
        "unlinked-channel": Who(instance, thread=thread, channel_type=kind),
        "group-room": Who(instance, room=room),
        "user-in-room": Who(instance, user=user, room=room),
        "room-thread": Who(instance, user=draw(st.sampled_from((None, user))), room=room,
                           thread=thread, channel_type=kind),
    }
    if not writer:
        shapes |= {"empty": Who(instance), "channel-type-only": Who(instance, channel_type=kind)}
    return shapes[draw(st.sampled_from(sorted(shapes)))]


writes = st.builds(
    Write,
    who=callers(writer=True),
    words=st.lists(st.sampled_from(VOCAB), min_size=3, max_size=3, unique=True).map(tuple),
    visibility=st.sampled_from((None, None, None, "private", "team", "workspace", "channel")),
    explicit_private=st.sampled_from((False, False, False, True)),
    agent_personal=st.sampled_from((False, False, False, True)),
    source_type=st.sampled_from(("fact", "fact", "manual")),
)

preferences = st.dictionaries(
    st.tuples(st.sampled_from((0, 1)), st.sampled_from(USERS)), st.booleans(), max_size=6)


# --- the oracle --------------------------------------------------------------------------


def expected_kind(write: Write, prefs: dict[tuple[int, str], bool]) -> str | None:
    """The audience a write lands in under the spec's precedence; None: refused."""
    who = write.who
    if write.agent_personal or write.explicit_private or write.visibility == "private":
        return "private" if who.user else None
    if write.visibility == "team":
        return "team" if who.team_access else None
    if write.visibility == "channel":
        return "channel" if (who.thread or who.room) else None
    if write.visibility == "workspace":
        return "workspace"
    if who.room or (who.thread and who.user):
        return "team"  # team chat rooms and linked channel sessions
    if who.thread:
        return "channel"  # an unlinked channel session
    if not who.user:
        return "workspace"  # system/background
    # A direct session shares only on a readable, explicit opt-in row; no row fails closed.
    return "team" if prefs.get((who.instance, who.user)) is True else "private"


def may_see(reader: Who, write: Write, kind: str) -> bool:
    if reader.instance != write.who.instance:
        return False
    if write.source_type == "fact" and kind == "workspace":
        return False  # a workspace-wide fact waits for review
    writer = write.who
    if kind == "workspace":
        return True
    if kind == "private":
        return reader.user is not None and reader.user == writer.user
    if kind == "team":
        return reader.team_access
    # A channel row belongs to one conversation: its thread, or its room when there is no
    # thread. Readers in that thread or room see it, and so does the linked user.
    conversation = writer.thread or writer.room
    return bool((conversation and conversation in (reader.thread, reader.room))
                or (writer.user and reader.user == writer.user))


# --- the property ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def config(module_database_url: str) -> Settings:
    return hash_embedding_settings(module_database_url)


@dataclass(frozen=True)
class Stored:
    write: Write
    kind: str
    memory_id: uuid.UUID
    assertion_id: uuid.UUID | None
    text: str


def _store_all(db, config, instances, prefs, planned) -> list[Stored]:
    for (instance, user), share in prefs.items():
        set_share_with_team(db, instances[instance], user, share)
    stored = []
    for index, write in enumerate(planned):
        text = f"Note {index}: {' '.join(write.words)} entry{index}."
        kind = expected_kind(write, prefs)
        memory = MemoryWrite(text, source_type=write.source_type, visibility=write.visibility,
                             explicit_private=write.explicit_private,
                             agent_personal=write.agent_personal)
        ctx = write.who.context(instances)
        if kind is None:
            with pytest.raises(AccessError):
                store_memory(db, config, ctx, memory)
            continue
        result = store_memory(db, config, ctx, memory)
        assert result.audience.kind == kind, (write, result)
        stored.append(Stored(write, kind, result.id, result.assertion_id, text))
        event(f"stored {kind}")
    return stored


def _leaks(reader: Who, returned: set[uuid.UUID], by_id: dict[uuid.UUID, Stored]) -> list:
    return [(by_id[i].kind, by_id[i].write.who) if i in by_id else ("foreign row", i)
            for i in returned if i not in by_id or not may_see(reader, by_id[i].write,
                                                               by_id[i].kind)]


@hypothesis_settings(max_examples=60, deadline=None)
@given(planned=st.lists(writes, min_size=3, max_size=8), prefs=preferences,
       readers=st.lists(callers(writer=False), min_size=2, max_size=4),
       targets=st.lists(st.integers(0, 7), min_size=5, max_size=5))
def test_no_read_path_returns_a_row_the_rules_forbid(db, config, planned, prefs, readers,
                                                     targets):
    instances = (f"vis-{uuid.uuid4().hex[:10]}", f"vis-{uuid.uuid4().hex[:10]}")
    stored = _store_all(db, config, instances, prefs, planned)
    if not stored:
        return
    by_memory = {s.memory_id: s for s in stored}
    by_assertion = {s.assertion_id: s for s in stored if s.assertion_id}
    readers = [Who(0), *readers]

    for reader, target in zip(readers, targets, strict=False):
        ctx = reader.context(instances)
        for row in stored:
            allowed = may_see(reader, row.write, row.kind)
            try:
                get_memory(db, ctx, row.memory_id)
                fetched = True
            except NotFound:
                fetched = False
            assert fetched == allowed, (reader, row.kind, row.write.who)

        visible = [row for row in stored if may_see(reader, row.write, row.kind)]
        pool = visible or stored  # ask about a row the reader may see, when there is one
        wanted = pool[target % len(pool)]
        query = " ".join(wanted.write.words)
        hits = search_memories(db, config, ctx, query, stamp=False)
        returned = {h.memory_id for h in hits}
        assert _leaks(reader, returned, by_memory) == []
        if may_see(reader, wanted.write, wanted.kind):
            assert wanted.memory_id in returned
        event("search returned hits" if hits else "search returned nothing")
        if reader == Who(reader.instance):
            assert {h.visibility_scope for h in hits} <= {"workspace"}
        assert {h.audience_key for h in hits if h.visibility_scope == "private"} <= {
            reader.user}

        if context_search is None:
            continue
        items = context_search(db, config, ctx, query)
        seen = set()
        for item in items:
            kind, _, raw = item.id.partition(":")
            ident = uuid.UUID(raw)
            assert kind in ("memory", "assertion"), item.id
            row = (by_memory if kind == "memory" else by_assertion).get(ident)
            seen.add(row.memory_id if row else ident)
        assert _leaks(reader, seen, by_memory) == []
        for row in stored:
            for item_id in (f"memory:{row.memory_id}", f"assertion:{row.assertion_id}"):
                if item_id.endswith("None"):
                    continue
                try:
                    context_get(db, ctx, item_id)
                except NotFound:
                    continue
                assert may_see(reader, row.write, row.kind), (item_id, reader, row.kind)
