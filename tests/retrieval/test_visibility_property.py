"""Property: no read path returns a row the visibility rules forbid, and no key may claim a
conversation context it may not act in.

Every context is built the way a request's is: through ``trust.resolve_context`` from a key
and the conversation context the request claims. Keys are user keys of several users and
runtime keys acting for random users (or for nobody: a system context). Claims name member
and non-member channels and rooms, the user's own sessions, other users' sessions and
sessions nobody uses yet, over random channel memberships and random session history
(messages and summaries of users, and user-less system or channel transcripts).

Random memories are written through ``store_memory`` (so their audiences are derived by the
write path) by runtime-key writers across two instances (users, team/group rooms, channel
threads, system sessions), with random explicit visibility, explicit-private and
agent-personal flags and random share-with-team preferences. Random requests then resolve
their context, search and fetch. The rules are written out again here, from the
specification ("Memory scopes and retrieval boundaries", "Shared facts", "Shared user
memory", the lossless context's "Cross-session visibility") and the trust model
(docs/security.md), without calling access.py, trust.py or membership.py:

* a user key acts as its user; it may name a channel thread or room only where the user is a
  member, and a session only where the user takes part or one nobody uses yet (no
  participant, no history of anyone else); anything else is refused; naming a session
  records nothing (only an append does, which no request here makes);
* a runtime key's claims are taken as given;
* workspace rows: everyone in the instance;
* private rows: only the authenticated user who wrote them;
* team rows: any team-access context (user, group room, channel thread, channel type); the
  empty context none;
* channel rows: readers in the row's conversation (its thread, else its room), or the
  linked user;
* session history: the reader's own items; every item of the reader's current session when
  the reader takes part in it; user-less items outside any channel the reader is not in;
* nothing crosses an instance; facts waiting for review (workspace-wide facts) are never
  recalled.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import event, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory_platform.features.context import context_get, context_search
from memory_platform.features.memories.sharing import set_share_with_team
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.memories import get_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.errors import AccessDenied, InvalidInput, NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext, AccessError
from memory_platform.shared.membership import add_channel_member
from memory_platform.shared.trust import Caller, ContextClaims, resolve_context
from tests.support.settings import hash_embedding_settings

USERS = ("ada", "bob", "cy")
ROOMS = ("room-1", "room-2")
THREADS = ("slack:T1", "slack:T2", "telegram:T3")
SESSIONS = ("web:ada", "web:bob", "web:cy", "room:standup", "slack:T1:chat", "cron:nightly")
FRESH = "fresh"  # a session key nobody has used: web:fresh-<request number>
VOCAB = (
    "invoice payroll falcon budget audit server deploy client contract meeting report "
    "backup license travel hiring vendor refund pricing roadmap rechnung steuer kunde "
    "vertrag urlaub lieferant angebot mahnung quartal bilanz harbor orchid granite"
).split()


@dataclass(frozen=True)
class Who:
    """A resolved caller, before instance keys are assigned (instance is 0 or 1)."""

    instance: int
    user: str | None = None
    session: str | None = None
    room: str | None = None
    thread: str | None = None
    channel_type: str | None = None

    @property
    def team_access(self) -> bool:
        return bool(self.user or self.room or self.thread or self.channel_type)

    @property
    def channels(self) -> set[str]:
        return {key for key in (self.thread, self.room) if key}

    def context(self, instances: tuple[str, str]) -> AccessContext:
        return AccessContext(instances[self.instance], user_id=self.user,
                             session_key=self.session, group_room_id=self.room,
                             channel_thread_key=self.thread, channel_type=self.channel_type)


@dataclass(frozen=True)
class Request:
    """A key (a user key of ``key_user``, or the runtime key when it is None) and the
    context the request claims; ``user`` is the acting user a runtime key names, or the
    user a user key claims to be (None: not claimed)."""

    instance: int
    key_user: str | None
    user: str | None = None
    session: str | None = None
    room: str | None = None
    thread: str | None = None
    channel_type: str | None = None

    @property
    def runtime(self) -> bool:
        return self.key_user is None

    def caller(self, instances: tuple[str, str]) -> Caller:
        return Caller(instances[self.instance], self.key_user, runtime=self.runtime)

    def claims(self, number: int) -> ContextClaims:
        return ContextClaims(user_id=self.user, session_key=session_key(self.session, number),
                             group_room_id=self.room, channel_thread_key=self.thread,
                             channel_type=self.channel_type)


def session_key(session: str | None, number: int) -> str | None:
    return f"web:{FRESH}-{number}" if session == FRESH else session


@dataclass(frozen=True)
class Write:
    who: Who
    words: tuple[str, ...]
    visibility: str | None
    explicit_private: bool
    agent_personal: bool
    source_type: str


@dataclass(frozen=True)
class Item:
    """A history row: a message (with its channel, if any) or a summary."""

    kind: str
    instance: int
    session: str
    user: str | None
    channel: str | None
    words: tuple[str, ...]


@st.composite
def writers(draw) -> Who:
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
    return shapes[draw(st.sampled_from(sorted(shapes)))]


@st.composite
def requests(draw) -> Request:
    instance = draw(st.sampled_from((0, 1)))
    key_user = draw(st.sampled_from((None, *USERS)))  # None: the runtime key
    if key_user is None:
        user = draw(st.sampled_from((None, *USERS)))
    else:  # a user key mostly claims no user; sometimes its own, rarely somebody else
        user = draw(st.sampled_from((None, None, None, key_user, *USERS)))
    return Request(instance, key_user, user,
                   session=draw(st.sampled_from((None, None, FRESH, *SESSIONS))),
                   room=draw(st.sampled_from((None, None, *ROOMS))),
                   thread=draw(st.sampled_from((None, None, *THREADS))),
                   channel_type=draw(st.sampled_from((None, None, "slack"))))


writes = st.builds(
    Write,
    who=writers(),
    words=st.lists(st.sampled_from(VOCAB), min_size=3, max_size=3, unique=True).map(tuple),
    visibility=st.sampled_from((None, None, None, "private", "team", "workspace", "channel")),
    explicit_private=st.sampled_from((False, False, False, True)),
    agent_personal=st.sampled_from((False, False, False, True)),
    source_type=st.sampled_from(("fact", "fact", "manual")),
)

history = st.builds(
    Item,
    kind=st.sampled_from(("message", "message", "summary")),
    instance=st.sampled_from((0, 1)),
    session=st.sampled_from(SESSIONS),
    user=st.sampled_from((None, *USERS)),
    channel=st.sampled_from((None, None, *THREADS, *ROOMS)),
    words=st.lists(st.sampled_from(VOCAB), min_size=3, max_size=3, unique=True).map(tuple),
)

preferences = st.dictionaries(
    st.tuples(st.sampled_from((0, 1)), st.sampled_from(USERS)), st.booleans(), max_size=6)

memberships = st.sets(
    st.tuples(st.sampled_from((0, 1)), st.sampled_from((*ROOMS, *THREADS)),
              st.sampled_from(USERS)), max_size=10)


# --- the oracle --------------------------------------------------------------------------


@dataclass
class World:
    """What the oracle knows: memberships, session participants, history rows."""

    members: set[tuple[int, str, str]]
    items: list[Item]
    participants: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)

    def used_by_others(self, instance: int, session: str, user: str) -> bool:
        return bool(self.participants.get((instance, session))) or any(
            i.instance == instance and i.session == session and i.user != user
            for i in self.items)

    def may_name(self, instance: int, session: str, user: str, *, trusted: bool) -> bool:
        """Whether a request may name the session; naming it records nothing."""
        return (trusted or user in self.participants.get((instance, session), {})
                or not self.used_by_others(instance, session, user))

    def resolve(self, request: Request, number: int) -> Who | type[Exception]:
        """The context a request gets, or the error it must raise."""
        if request.runtime:
            user = request.user
        else:
            if request.user not in (None, request.key_user):
                return InvalidInput
            user = request.key_user
            for channel in (request.thread, request.room):
                if channel and (request.instance, channel, user) not in self.members:
                    return AccessDenied
        session = session_key(request.session, number)
        if session and user and not self.may_name(request.instance, session, user,
                                                  trusted=request.runtime):
            return AccessDenied
        return Who(request.instance, user, session, request.room, request.thread,
                   request.channel_type)

    def may_read(self, reader: Who, item: Item) -> bool:
        if reader.instance != item.instance:
            return False
        if item.user is not None and item.user == reader.user:
            return True
        if (reader.user and reader.session == item.session
                and reader.user in self.participants.get((item.instance, item.session), {})):
            return True
        if item.user is not None:
            return False
        if item.kind == "message":
            return item.channel is None or item.channel in reader.channels
        return all(m.channel is None or m.channel in reader.channels for m in self.items
                   if m.kind == "message" and m.instance == item.instance
                   and m.session == item.session)


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
    if who.user and (who.room or who.thread):
        # A linked channel session shares with the team, unless the user opted out.
        return "channel" if prefs.get((who.instance, who.user)) is False else "team"
    if who.room:
        return "team"  # a user-less team chat room
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


_seq = itertools.count()


def _seed(db, instances, world: World, prefs) -> dict[str, Item]:
    """Memberships, preferences and history rows; answers the history by item id."""
    for instance, channel, user in world.members:
        add_channel_member(db, instances[instance], channel, user)
    for (instance, user), share in prefs.items():
        set_share_with_team(db, instances[instance], user, share)
    seeded = {}
    for item in world.items:
        text = f"{item.kind} {' '.join(item.words)} said {next(_seq)}."
        if item.kind == "message":
            row = db.execute(
                "INSERT INTO agent_context_messages (instance_key, session_key, user_id,"
                " channel_thread_key, seq, role, content) VALUES (%s, %s, %s, %s, %s, 'user', %s)"
                " RETURNING id", (instances[item.instance], item.session, item.user,
                                  item.channel, next(_seq), text)).fetchone()
        else:
            row = db.execute(
                "INSERT INTO agent_context_summaries (instance_key, session_key, user_id, kind,"
                " content) VALUES (%s, %s, %s, 'leaf', %s) RETURNING id",
                (instances[item.instance], item.session, item.user, text)).fetchone()
        seeded[f"{item.kind}:{row[0]}"] = item
    return seeded


def _store_all(db, config, instances, world: World, prefs, planned) -> list[Stored]:
    stored = []
    for index, write in enumerate(planned):
        text = f"Note {index}: {' '.join(write.words)} entry{index}."
        kind = expected_kind(write, prefs)
        memory = MemoryWrite(text, source_type=write.source_type, visibility=write.visibility,
                             explicit_private=write.explicit_private,
                             agent_personal=write.agent_personal)
        who = write.who
        runtime = Request(who.instance, None, who.user, who.session, who.room, who.thread,
                          who.channel_type)
        assert world.resolve(runtime, index) == who
        ctx = resolve_context(db, runtime.caller(instances), runtime.claims(index))
        assert ctx == who.context(instances)
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


def _fetchable(fetch, *args) -> bool:
    try:
        fetch(*args)
    except NotFound:
        return False
    return True


def _check_memories(db, config, ctx, reader: Who, stored: list[Stored], target: int) -> str:
    """Every memory path against the oracle; answers the query used."""
    for row in stored:
        allowed = may_see(reader, row.write, row.kind)
        assert _fetchable(get_memory, db, ctx, row.memory_id) == allowed, (reader, row)
    visible = [row for row in stored if may_see(reader, row.write, row.kind)]
    pool = visible or stored  # ask about a row the reader may see, when there is one
    wanted = pool[target % len(pool)]
    query = " ".join(wanted.write.words)
    hits = search_memories(db, config, ctx, query, stamp=False)
    returned = {h.memory_id for h in hits}
    by_memory = {s.memory_id: s for s in stored}
    assert _leaks(reader, returned, by_memory) == []
    if may_see(reader, wanted.write, wanted.kind):
        assert wanted.memory_id in returned
    event("search returned hits" if hits else "search returned nothing")
    if not reader.team_access:
        assert {h.visibility_scope for h in hits} <= {"workspace"}
    assert {h.audience_key for h in hits if h.visibility_scope == "private"} <= {reader.user}
    for row in stored:
        for item_id in (f"memory:{row.memory_id}", f"assertion:{row.assertion_id}"):
            if not item_id.endswith("None") and _fetchable(context_get, db, ctx, item_id):
                assert may_see(reader, row.write, row.kind), (item_id, reader, row.kind)
    return query


def _check_history(db, ctx, reader: Who, world: World, seeded: dict[str, Item]) -> None:
    for item_id, item in seeded.items():
        allowed = world.may_read(reader, item)
        assert _fetchable(context_get, db, ctx, item_id) == allowed, (reader, item)
        event(f"history {item.kind} {'readable' if allowed else 'hidden'}")


def _check_context_search(db, config, ctx, reader: Who, world: World, seeded: dict[str, Item],
                          stored: list[Stored], queries: list[str]) -> None:
    by_id = {f"memory:{s.memory_id}": s for s in stored} | {
        f"assertion:{s.assertion_id}": s for s in stored if s.assertion_id}
    for query in queries:
        for found in context_search(db, config, ctx, query):
            if found.kind in ("message", "summary"):
                assert world.may_read(reader, seeded[found.id]), (reader, seeded[found.id])
            else:
                assert found.kind in ("memory", "assertion"), found.id
                row = by_id[found.id]  # a row of another instance would be a KeyError
                assert may_see(reader, row.write, row.kind), (found.id, reader, row.kind)


@hypothesis_settings(max_examples=60, deadline=None)
@given(planned=st.lists(writes, min_size=3, max_size=8), prefs=preferences,
       members=memberships, items=st.lists(history, max_size=6),
       asked=st.lists(requests(), min_size=2, max_size=5),
       targets=st.lists(st.integers(0, 7), min_size=6, max_size=6))
def test_no_read_path_returns_a_row_the_rules_forbid(db, config, planned, prefs, members,
                                                     items, asked, targets):
    instances = (f"vis-{uuid.uuid4().hex[:10]}", f"vis-{uuid.uuid4().hex[:10]}")
    world = World(set(members), list(items))
    seeded = _seed(db, instances, world, prefs)
    stored = _store_all(db, config, instances, world, prefs, planned)
    history_queries = [" ".join(item.words) for item in items[:2]]

    # The empty context (a runtime key claiming nothing) first, then the random requests.
    for number, (request, target) in enumerate(
            zip([Request(0, None), *asked], targets, strict=False), start=len(planned)):
        expected = world.resolve(request, number)
        if not isinstance(expected, Who):
            with pytest.raises(expected):
                resolve_context(db, request.caller(instances), request.claims(number))
            event(f"refused: {expected.__name__}")
            continue
        ctx = resolve_context(db, request.caller(instances), request.claims(number))
        assert ctx == expected.context(instances), request
        event(f"resolved {'runtime' if request.runtime else 'user'} key"
              f"{' in a session' if ctx.session_key else ''}")
        queries = history_queries
        if stored:
            queries = [_check_memories(db, config, ctx, expected, stored, target), *queries]
        _check_history(db, ctx, expected, world, seeded)
        _check_context_search(db, config, ctx, expected, world, seeded, stored, queries)
