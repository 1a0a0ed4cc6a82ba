"""Who is asking, which audience a write lands in, and THE visibility rule.

Every read path builds its filter with :func:`visibility_predicate`, inside SQL. Nothing
filters rows in Python after fetching them: a row the predicate excludes never leaves the
database.

The rules (specification, "Memory scopes and retrieval boundaries"):

* ``workspace`` rows are visible to every caller of the instance;
* ``private`` rows only to the authenticated user who owns them, never because a group or
  channel context is present;
* ``team`` rows whenever a team-access context is established: an authenticated user, a group
  room, a channel thread or a channel type. An empty context sees none;
* ``channel`` rows to readers in the same conversation (the row's thread, or its room when
  it has no thread: the audience key) and to the linked user (memories and ledger: the
  writer; graph rows, which name no writer: a member of the channel). A room-level reader does not
  see thread-level rows: the strict reading, identical for memories, ledger and graph.

The instance boundary comes first: no predicate ever matches another instance's rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from psycopg import sql

from memory_platform.foundation.errors import AccessDenied

AudienceKind = Literal["private", "team", "workspace", "channel"]
AUDIENCE_KINDS: tuple[AudienceKind, ...] = ("private", "team", "workspace", "channel")

# Subject refs that identify the entity a memory is about; a match boosts retrieval.
SUBJECT_REF_KEYS = (
    "mandantId", "documentId", "taskId", "moduleSlug", "routePath", "groupRoomId",
    "channelThreadKey",
)


class AccessError(AccessDenied):
    """The request cannot be served for this access context (e.g. private without a user)."""


@dataclass(frozen=True)
class AccessContext:
    """The caller: an instance plus whatever identity and conversation context it has."""

    instance_key: str
    user_id: str | None = None
    session_key: str | None = None
    group_room_id: str | None = None
    channel_thread_key: str | None = None
    channel_type: str | None = None

    def __post_init__(self) -> None:
        if not self.instance_key:
            raise AccessError("an access context needs an instance_key")

    @property
    def has_team_access(self) -> bool:
        return any((self.user_id, self.group_room_id, self.channel_thread_key,
                    self.channel_type))

    @property
    def has_channel(self) -> bool:
        return bool(self.channel_thread_key or self.group_room_id)


@dataclass(frozen=True)
class Audience:
    """The audience envelope of a row: its kind and the key that partitions it.

    private -> the owner's user id; team and workspace -> the instance key (team facts of
    different users share one team audience); channel -> the channel thread (or group room)."""

    kind: AudienceKind
    key: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "key": self.key}


def audience_for(kind: AudienceKind, ctx: AccessContext) -> Audience:
    """The envelope a write of visibility ``kind`` gets in context ``ctx``."""
    if kind == "private":
        if not ctx.user_id:
            raise AccessError("a private memory needs an authenticated user")
        return Audience("private", ctx.user_id)
    if kind in ("team", "workspace"):
        return Audience(kind, ctx.instance_key)
    if kind == "channel":
        key = ctx.channel_thread_key or ctx.group_room_id
        if not key:
            raise AccessError("a channel memory needs a channel thread or group room")
        return Audience("channel", key)
    raise AccessError(f"unknown visibility {kind!r}; use one of {', '.join(AUDIENCE_KINDS)}")


# How a predicate embeds the caller's values: ``bind(role, value)`` answers the SQL for one
# value. :func:`literal` quotes it in place (the default); :func:`placeholder` names it by its
# role (``%(user)s``), so the text depends only on the context's shape and the search hot
# path can compose it once and keep it prepared (the values go separately, by role:
# :func:`context_params`).
Binder = Callable[[str, Any], sql.Composable]


def literal(role: str, value: Any) -> sql.Composable:
    return sql.Literal(value)


def placeholder(role: str, value: Any) -> sql.Composable:
    return sql.Placeholder(role)


def channel_keys(ctx: AccessContext) -> list[str]:
    """The conversations the caller reads in: its thread and its room."""
    return [k for k in (ctx.channel_thread_key, ctx.group_room_id) if k]


def context_params(ctx: AccessContext) -> dict[str, Any]:
    """The values :func:`placeholder` names in a rule over ``ctx``, by role."""
    return {"instance": ctx.instance_key, "user": ctx.user_id, "channels": channel_keys(ctx)}


def _branches(ctx: AccessContext, alias: str, kind_col: str, key_col: str,
              owner_col: str | None, bind: Binder = literal) -> list[sql.Composed]:
    """THE visibility rule, over any row that carries an audience (kind, key) and optionally
    the user it belongs to, as disjuncts (private rows have the owner's user id as their
    audience key). Each disjunct alone is index-friendly; :func:`_rule` ORs them."""
    kind, key = sql.Identifier(alias, kind_col), sql.Identifier(alias, key_col)
    branches = [sql.SQL("{} = 'workspace'").format(kind)]
    if ctx.user_id:
        branches.append(sql.SQL("({} = 'private' AND {} = {})").format(
            kind, key, bind("user", ctx.user_id)))
    if ctx.has_team_access:
        branches.append(sql.SQL("{} = 'team'").format(kind))
    channels = channel_keys(ctx)
    if channels:
        branches.append(sql.SQL("({} = 'channel' AND {} = ANY({}))").format(
            kind, key, bind("channels", channels)))
    if ctx.user_id and owner_col:
        branches.append(sql.SQL("({} = 'channel' AND {} = {})").format(
            kind, sql.Identifier(alias, owner_col), bind("user", ctx.user_id)))
    return branches


def _rule(ctx: AccessContext, alias: str, kind_col: str, key_col: str,
          owner_col: str | None, bind: Binder = literal) -> sql.Composed:
    """The instance boundary AND any branch of the rule."""
    return sql.SQL("({} = {} AND ({}))").format(
        sql.Identifier(alias, "instance_key"), bind("instance", ctx.instance_key),
        sql.SQL(" OR ").join(_branches(ctx, alias, kind_col, key_col, owner_col, bind)))


def visibility_predicate(ctx: AccessContext, alias: str = "m",
                         bind: Binder = literal) -> sql.Composed:
    """SQL condition, true exactly for the ``agent_memories`` rows ``ctx`` may see (the
    linked user of a channel row is its ``user_id``). Values are quoted by psycopg."""
    return _rule(ctx, alias, "visibility_scope", "audience_key", "user_id", bind)


def audience_predicate(ctx: AccessContext, alias: str = "a") -> sql.Composed:
    """The same rule over ledger rows (assertions, sources, dreams, wiki proposals), which
    carry ``audience_kind``/``audience_key`` and ``owner_user_id``."""
    return _rule(ctx, alias, "audience_kind", "audience_key", "owner_user_id")


def audience_branches(ctx: AccessContext, alias: str = "a") -> list[sql.Composed]:
    """The disjuncts of :func:`audience_predicate` without the instance boundary (callers
    add it): assertion search counts the visible assertions one index-only scan per branch."""
    return _branches(ctx, alias, "audience_kind", "audience_key", "owner_user_id")


def chunk_predicate(ctx: AccessContext, alias: str = "c",
                    bind: Binder = literal) -> sql.Composed:
    """The same rule over the audience copy a chunk carries (``visibility_scope``,
    ``audience_key``, ``owner_user_id``; migration 0008): lets the search arms filter chunk
    rows without a join. A pre-filter: the final statement applies the memory rule too."""
    return _rule(ctx, alias, "visibility_scope", "audience_key", "owner_user_id", bind)


def chunk_branches(ctx: AccessContext, alias: str = "c",
                   bind: Binder = literal) -> list[sql.Composed]:
    """The disjuncts of :func:`chunk_predicate` without the instance boundary (callers add
    it): search counts the visible chunks one index-only scan per branch."""
    return _branches(ctx, alias, "visibility_scope", "audience_key", "owner_user_id", bind)


def graph_branches(ctx: AccessContext, alias: str = "k",
                   bind: Binder = literal) -> list[sql.Composed]:
    """The disjuncts of :func:`graph_predicate` without the instance boundary (callers add
    it): graph search counts the visible rows one index scan per branch.

    Graph rows name no owner: a private row's audience key is its owner's user id, and a
    channel row opens to the readers of its conversation and to the members of its channel
    (``agent_channel_members``, checked here in SQL: a linked user reads a channel's graph
    without claiming the channel)."""
    branches = _branches(ctx, alias, "visibility_scope", "audience_key", None, bind)
    if ctx.user_id:
        branches.append(sql.SQL(
            "({kind} = 'channel' AND EXISTS (SELECT 1 FROM agent_channel_members member"
            " WHERE member.instance_key = {instance} AND member.channel_key = {key}"
            " AND member.user_id = {user}))").format(
            kind=sql.Identifier(alias, "visibility_scope"),
            instance=sql.Identifier(alias, "instance_key"),
            key=sql.Identifier(alias, "audience_key"), user=bind("user", ctx.user_id)))
    return branches


def graph_predicate(ctx: AccessContext, alias: str = "k",
                    bind: Binder = literal) -> sql.Composed:
    """The same rule over knowledge-graph rows (entities, claims, edges: ``visibility_scope``,
    ``audience_key``): workspace rows instance-wide, team rows with a team context, private
    rows for the user whose id is their audience key, channel rows for the same thread or
    room and for the channel's members (:func:`graph_branches`)."""
    return sql.SQL("({} = {} AND ({}))").format(
        sql.Identifier(alias, "instance_key"), bind("instance", ctx.instance_key),
        sql.SQL(" OR ").join(graph_branches(ctx, alias, bind)))


def history_visibility(ctx: AccessContext, alias: str,
                       table: str = "agent_context_messages", *,
                       all_sessions: bool = False) -> sql.Composed:
    """Owner-scoped session history (specification: "items of the caller's current session
    are readable, items recorded for another user's session are private to that user, only
    user-less system/channel items are instance-visible"). A message or summary is visible
    when it is

    * the caller's own (``user_id`` = the caller), in any of their sessions;
    * of the caller's current session while the caller takes part in it
      (``agent_session_participants``): every participant of a shared session reads all of
      its items, also those of the other participants; a session the caller does not take
      part in opens nothing beyond their own items (the check is here, in SQL, as well as
      in ``trust.resolve_context``);
    * user-less, and not bound to a channel the caller is not in: a user-less message with
      a ``channel_thread_key`` only for callers in that thread or room; a user-less summary
      only when its session has no such message (summaries name no channel themselves).

    ``all_sessions`` (``memory_grep`` across sessions) opens every session the caller takes
    part in, not only the current one: nothing a participant could not read by naming each
    session in turn.

    ``table`` is the table ``alias`` names (``agent_context_messages`` or
    ``agent_context_summaries``)."""
    col = lambda name: sql.Identifier(alias, name)  # noqa: E731
    channels = sql.Literal(channel_keys(ctx))
    if table == "agent_context_messages":
        unbound = sql.SQL("({} IS NULL OR {} = ANY({}))").format(
            col("channel_thread_key"), col("channel_thread_key"), channels)
    else:
        unbound = sql.SQL(
            "NOT EXISTS (SELECT 1 FROM agent_context_messages bound"
            " WHERE bound.instance_key = {} AND bound.session_key = {}"
            " AND bound.channel_thread_key IS NOT NULL"
            " AND NOT bound.channel_thread_key = ANY({}))").format(
            col("instance_key"), col("session_key"), channels)
    branches = [sql.SQL("({} IS NULL AND {})").format(col("user_id"), unbound)]
    if ctx.user_id:
        user = sql.Literal(ctx.user_id)
        branches.append(sql.SQL("{} = {}").format(col("user_id"), user))
        if all_sessions:
            branches.append(sql.SQL(
                "EXISTS (SELECT 1 FROM agent_session_participants p"
                " WHERE p.instance_key = {} AND p.session_key = {} AND p.user_id = {})"
            ).format(sql.Literal(ctx.instance_key), col("session_key"), user))
        elif ctx.session_key:
            session = sql.Literal(ctx.session_key)
            branches.append(sql.SQL(
                "({} = {} AND EXISTS (SELECT 1 FROM agent_session_participants p"
                " WHERE p.instance_key = {} AND p.session_key = {} AND p.user_id = {}))"
            ).format(col("session_key"), session, sql.Literal(ctx.instance_key), session,
                     user))
    return sql.SQL("({} = {} AND ({}))").format(
        col("instance_key"), sql.Literal(ctx.instance_key), sql.SQL(" OR ").join(branches))
