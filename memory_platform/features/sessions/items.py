"""Appending a session's turn items, and completing its runs.

A runtime (or a user) hands the platform normalised turn items; they are kept verbatim in
``agent_context_messages`` (the raw layer of the lossless context graph) and listed in the
session's ordered assembly, ``agent_context_items``, so they are searchable at once (the
history arm of ``context_search``, ``memory_grep``) before any background work.

Why it is built this way:

* **One batch, one transaction, one lock.** Every append takes the session's transaction
  advisory lock (:func:`lock_session_items`), so ``seq``, assembly positions and run numbers
  are assigned as ``max + 1 ...`` without gaps or races between concurrent appends (other
  writers of the assembly, compaction, take the same lock). A refused item refuses the whole
  batch before anything is written.
* **Idempotent by the client's item id.** An item whose ``client_item_id`` the session
  already holds is answered with the stored message (``duplicate=True``) and adds nothing;
  a retried request after a timeout is safe. A batch of only duplicates changes nothing (no
  run, no maintenance request).
* **Runs are the turns maintenance counts.** Items with a ``run_id`` join that run (opened
  on first use, numbered per session) until :func:`complete_run`; an append without one is
  a run of its own (``append:<first new message id>``), completed at once. A completed run
  asks for a background pass (``state.request_maintenance``); of the rest only the turns'
  recall (below) runs on the request path.
* **Who wrote it, and who takes part.** A message's ``user_id`` is its author: the acting
  user by default. A user key may only name itself; the trusted runtime
  (``author_may_differ``) may name any user. The append is the one request that records
  who takes part in a session (``membership.join_session``, before anything is written): a
  user key's first append to an unused session makes its user the owner; the runtime
  records the acting user and every author, and is refused (409
  ``session_owned_by_other_user``) in a session another user started with their own key.
  User-less items said in a channel or room are bound to it (``channel_thread_key``), so
  only its members read them (``access.history_visibility``).
* **The client's own form, kept exactly.** An item may carry ``raw``: the item as the
  client's framework has it (an agent SDK's message with content parts, a function call,
  its output, a reasoning item), a JSON object stored as written (a ``json`` column) and
  answered by ``transcript.read_items``; ``content`` stays the text the platform searches,
  summarises and remembers. Its strings are checked like the content (characters,
  credentials) and its size by ``session_item_raw_max_bytes``.
* **Recalled as turns.** Once the append has committed, each new user or assistant item
  also becomes a conversation turn of its author (``turn_recall.recall_turns``: embedded with
  the turn before it, linked, dated), so search ranks a conversation appended here like one
  stored through ``POST /api/v1/memory``.
* **Written by an agent.** An append from an agent key or marked ``X-Memory-Writer: agent``
  (``written_by_agent``) marks its run ``agent_written``, and a run once marked stays so:
  its turns are the agent's account, not a person's own statements, so every fact drawn from
  it is ``assistant_inference`` and waits for review (``facts``).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from memory_platform.features.memories.quota import check_quota
from memory_platform.features.memories.validation import (
    clean_occurred_at,
    refuse_secrets,
    refused_text_character,
)
from memory_platform.features.sessions import state
from memory_platform.features.sessions.runs import SessionRun, get_run
from memory_platform.features.sessions.tokens import estimate_tokens
from memory_platform.features.sessions.turn_recall import recall_turns
from memory_platform.foundation.errors import AccessDenied, Conflict, InvalidInput, NotFound
from memory_platform.foundation.secrets import assignment_text, refuse_secret
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.membership import join_session

ROLES = ("user", "assistant", "system", "tool")
IDENTIFIER_MAX_CHARS = 200          # client item ids, run ids, user ids (as every key)
METADATA_MAX_DEPTH = 8
RAW_MAX_DEPTH = 24                  # below the body's own bound (api.input.MAX_DEPTH)

# Text may hold tab and line breaks; identifiers no control character at all. Unpaired
# surrogates and NUL cannot be stored by PostgreSQL.
_IDENTIFIER_REFUSED = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True)
class TurnItem:
    """One normalised turn item as a runtime hands it over."""

    role: str
    content: str
    author_user_id: str | None = None
    occurred_at: datetime | None = None
    client_item_id: str | None = None
    metadata: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] | None = None    # the item in the client's own form, kept exactly


@dataclass(frozen=True)
class AppendedItem:
    id: UUID
    client_item_id: str | None
    seq: int
    duplicate: bool


@dataclass(frozen=True)
class AppendResult:
    session_key: str
    run_id: str | None          # None: only duplicates, none of which names a run
    run_index: int | None
    run_status: str | None
    appended: int
    duplicates: int
    items: list[AppendedItem]


@dataclass(frozen=True)
class RunCompletion:
    session_key: str
    run_id: str
    run_index: int
    status: str
    completed_at: datetime
    already_completed: bool


def lock_session_items(conn: psycopg.Connection, instance_key: str, session_key: str) -> None:
    """The session's transaction advisory lock over its messages, assembly and runs: every
    writer that assigns a ``seq``, an assembly position or a run number holds it until its
    transaction ends."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                 (f"session-items:{instance_key}:{session_key}",))


# --- validation (no database) ------------------------------------------------------------
def _refuse_characters(value: str, field: str, *, text: bool) -> None:
    if text:
        found = refused_text_character(value)
    else:
        match = _IDENTIFIER_REFUSED.search(value)
        found = match.group() if match else None
    if found is not None:
        kind = "text fields take only tab and line breaks" if text \
            else "identifiers take no control characters"
        raise InvalidInput(f"{field} contains the character U+{ord(found):04X}; {kind}",
                           code="invalid_characters",
                           details={"field": field, "character": f"U+{ord(found):04X}"})


def check_identifier(value: object, field: str, *, code: str) -> str:
    """A key the platform stores (client item id, run id, user id): 1-200 characters, not
    blank, no control character, no credential."""
    if not isinstance(value, str) or not value.strip() or len(value) > IDENTIFIER_MAX_CHARS:
        raise InvalidInput(f"{field} must be a non-blank string of at most "
                           f"{IDENTIFIER_MAX_CHARS} characters", code=code,
                           details={"field": field})
    _refuse_characters(value, field, text=False)
    refuse_secret(value, field=field)
    return value


def _check_occurred_at(value: object, field: str, now: datetime) -> None:
    """The write path's event-time rule (``memories.validation.clean_occurred_at``: an
    offset, at most a day ahead), with the missing offset named by its own code."""
    if isinstance(value, datetime) and (value.tzinfo is None or value.utcoffset() is None):
        raise InvalidInput(f"{field} has no time zone: send an offset (e.g. "
                           "2026-11-30T09:12:00+01:00 or ...Z); a local time is ambiguous",
                           code="naive_occurred_at", details={"field": field})
    clean_occurred_at(value, now=now, field=field)


def _walk_metadata(value: object, field: str, depth: int) -> None:
    """Every key and string of an item's metadata: no control character, no credential."""
    if depth > METADATA_MAX_DEPTH:
        raise InvalidInput(f"{field} is nested deeper than {METADATA_MAX_DEPTH} levels",
                           code="invalid_metadata", details={"field": field})
    if isinstance(value, str):
        _refuse_characters(value, field, text=False)
        refuse_secret(value, field=field)
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            _refuse_characters(key, field, text=False)
            refuse_secret(key, field=field)
            _walk_metadata(inner, f"{field}.{key}", depth + 1)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _walk_metadata(inner, f"{field}[{index}]", depth + 1)


def _check_metadata(settings: Settings, metadata: object, field: str) -> dict[str, Any]:
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"{field} must be a JSON object", code="invalid_metadata",
                           details={"field": field})
    try:
        canonical = json.dumps(metadata, sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{field} is not JSON: {exc}", code="invalid_metadata",
                           details={"field": field}) from exc
    size = len(canonical.encode("utf-8", "surrogatepass"))
    if size > settings.session_item_metadata_max_bytes:
        raise InvalidInput(f"{field} is {size} bytes as JSON; at most "
                           f"{settings.session_item_metadata_max_bytes} are kept per item",
                           code="metadata_too_large",
                           details={"field": field,
                                    "limit": settings.session_item_metadata_max_bytes})
    _walk_metadata(metadata, field, 0)
    return dict(metadata)


def _raw_strings(value: object, field: str, depth: int) -> Iterator[tuple[str, str]]:
    """Every key and string of an item's raw form, with where it is, as the credential scan
    reads them (a string value with its key: ``secrets.assignment_text``, as metadata); keys
    take no control character, strings only tab and line breaks (they hold the item's
    text)."""
    if depth > RAW_MAX_DEPTH:
        raise InvalidInput(f"{field} is nested deeper than {RAW_MAX_DEPTH} levels",
                           code="invalid_raw", details={"field": field})
    if isinstance(value, str):
        _refuse_characters(value, field, text=True)
        yield field, value
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"{field} has a key that is not text", code="invalid_raw",
                                   details={"field": field})
            _refuse_characters(key, field, text=False)
            yield field, key
            if isinstance(inner, str):
                _refuse_characters(inner, f"{field}.{key}", text=True)
                yield f"{field}.{key}", assignment_text(key, inner)
            else:
                yield from _raw_strings(inner, f"{field}.{key}", depth + 1)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _raw_strings(inner, f"{field}[{index}]", depth + 1)


def _check_raw(settings: Settings, raw: object, field: str) -> list[tuple[str, str]]:
    """An item's raw form: a JSON object of at most ``session_item_raw_max_bytes``; answers
    its strings for the batch's secret scan."""
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{field} must be a JSON object", code="invalid_raw",
                           details={"field": field})
    try:
        encoded = raw_json(raw)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{field} is not JSON: {exc}", code="invalid_raw",
                           details={"field": field}) from exc
    size = len(encoded.encode("utf-8", "surrogatepass"))
    if size > settings.session_item_raw_max_bytes:
        raise InvalidInput(f"{field} is {size} bytes as JSON; at most "
                           f"{settings.session_item_raw_max_bytes} are kept per item",
                           code="raw_too_large",
                           details={"field": field,
                                    "limit": settings.session_item_raw_max_bytes})
    return list(_raw_strings(raw, field, 0))


def raw_json(raw: Mapping[str, Any]) -> str:
    """The text an item's raw form is stored as (``agent_context_messages.raw``, json: kept
    as written, so it reads back exactly)."""
    return json.dumps(raw, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def check_batch(settings: Settings, items: Sequence[TurnItem], *, acting_user: str | None,
                author_may_differ: bool) -> list[str | None]:
    """Refuse the whole batch at its first bad item (the error names ``items[i].field``);
    answer each item's author. Runs before anything is written."""
    if not items:
        raise InvalidInput("items must hold at least one turn item", code="no_items",
                           details={"field": "items"})
    if len(items) > settings.session_append_max_items:
        raise InvalidInput(f"{len(items)} items in one append; at most "
                           f"{settings.session_append_max_items} (send several batches)",
                           code="too_many_items",
                           details={"field": "items", "limit": settings.session_append_max_items})
    now = datetime.now(UTC)
    seen: dict[str, int] = {}
    authors: list[str | None] = []
    raw_strings: list[tuple[str, str]] = []
    for index, item in enumerate(items):
        at = f"items[{index}]"
        if item.role not in ROLES:
            raise InvalidInput(f"{at}.role must be one of {', '.join(ROLES)}",
                               code="invalid_role", details={"field": f"{at}.role"})
        if not isinstance(item.content, str):
            raise InvalidInput(f"{at}.content must be text", code="invalid_content",
                               details={"field": f"{at}.content"})
        if len(item.content) > settings.session_item_max_chars:
            raise InvalidInput(f"{at}.content has {len(item.content)} characters; at most "
                               f"{settings.session_item_max_chars} per item",
                               code="item_too_large",
                               details={"field": f"{at}.content",
                                        "limit": settings.session_item_max_chars})
        _refuse_characters(item.content, f"{at}.content", text=True)
        if item.client_item_id is not None:
            cid = check_identifier(item.client_item_id, f"{at}.clientItemId",
                                   code="invalid_client_item_id")
            if cid in seen:
                raise InvalidInput(f"{at}.clientItemId repeats items[{seen[cid]}].clientItemId "
                                   "in the same batch", code="duplicate_client_item_id",
                                   details={"field": f"{at}.clientItemId",
                                            "first": f"items[{seen[cid]}]"})
            seen[cid] = index
        author = acting_user
        if item.author_user_id is not None:
            author = check_identifier(item.author_user_id, f"{at}.authorUserId",
                                      code="invalid_author")
            if author != acting_user and not author_may_differ:
                raise AccessDenied(f"{at}.authorUserId names another user: a user key writes "
                                   "only its own items (the runtime may name any user)",
                                   code="foreign_author",
                                   details={"field": f"{at}.authorUserId"})
        authors.append(author)
        if item.occurred_at is not None:
            _check_occurred_at(item.occurred_at, f"{at}.occurredAt", now)
        if item.metadata is not None:
            _check_metadata(settings, item.metadata, f"{at}.metadata")
        if item.raw is not None:
            raw_strings += _check_raw(settings, item.raw, f"{at}.raw")
    # The costliest check last: a structural refusal answers before any text is scanned.
    refuse_secrets([(f"items[{index}].content", item.content)
                    for index, item in enumerate(items)] + raw_strings)
    return authors


def _session_of(ctx: AccessContext) -> str:
    if not ctx.session_key:
        raise InvalidInput("a session key is required", code="session_required",
                           details={"field": "sessionKey"})
    return ctx.session_key


# --- append ------------------------------------------------------------------------------
def _existing(conn: psycopg.Connection, instance_key: str, session_key: str,
              client_ids: list[str]) -> dict[str, tuple[UUID, int, str | None]]:
    if not client_ids:
        return {}
    rows = conn.execute(
        "SELECT client_item_id, id, seq, run_id FROM agent_context_messages"
        " WHERE instance_key = %s AND session_key = %s AND client_item_id = ANY(%s)",
        (instance_key, session_key, client_ids)).fetchall()
    return {cid: (ident, seq, run) for cid, ident, seq, run in rows}


def _next(conn: psycopg.Connection, instance_key: str, session_key: str) -> tuple[int, int]:
    """The next seq and the next assembly position of the session (under its lock)."""
    row = conn.execute(
        "SELECT (SELECT COALESCE(max(seq), -1) + 1 FROM agent_context_messages"
        "         WHERE instance_key = %(i)s AND session_key = %(s)s),"
        "       (SELECT COALESCE(max(position), -1) + 1 FROM agent_context_items"
        "         WHERE instance_key = %(i)s AND session_key = %(s)s)",
        {"i": instance_key, "s": session_key}).fetchone()
    return row[0], row[1]


def _insert_messages(conn: psycopg.Connection, ctx: AccessContext, session_key: str,
                     run_id: str, rows: list[tuple[UUID, int, TurnItem, str | None]],
                     first_position: int) -> None:
    channel = ctx.channel_thread_key or ctx.group_room_id
    inserted = conn.execute(
        "INSERT INTO agent_context_messages (id, instance_key, session_key, user_id,"
        "  channel_thread_key, seq, role, content, token_count, run_id, metadata,"
        "  client_item_id, occurred_at, raw)"
        " SELECT u.id, %s, %s, u.user_id, %s, u.seq, u.role, u.content, u.tokens, %s,"
        "        u.metadata, u.client_item_id, u.occurred_at, u.raw::json"
        "   FROM unnest(%s::uuid[], %s::text[], %s::int[], %s::text[], %s::text[], %s::int[],"
        "               %s::jsonb[], %s::text[], %s::timestamptz[], %s::text[])"
        "        AS u(id, user_id, seq, role, content, tokens, metadata, client_item_id,"
        "             occurred_at, raw)"
        " ON CONFLICT (instance_key, session_key, client_item_id) DO NOTHING"
        " RETURNING id",
        (ctx.instance_key, session_key, channel, run_id,
         [r[0] for r in rows], [r[3] for r in rows], [r[1] for r in rows],
         [r[2].role for r in rows], [r[2].content for r in rows],
         [estimate_tokens(r[2].content) for r in rows],
         [Jsonb(dict(r[2].metadata or {})) for r in rows],
         [r[2].client_item_id for r in rows], [r[2].occurred_at for r in rows],
         [raw_json(r[2].raw) if r[2].raw is not None else None for r in rows]),
    ).fetchall()
    if len(inserted) != len(rows):
        # Only a writer that skipped the session lock can get here; roll the batch back.
        raise Conflict("another writer appended the same client item ids meanwhile; retry",
                       code="concurrent_append")
    conn.execute(
        "INSERT INTO agent_context_items (instance_key, session_key, position, item_kind,"
        "  message_id)"
        " SELECT %s, %s, %s + u.n - 1, 'message', u.id"
        "   FROM unnest(%s::uuid[]) WITH ORDINALITY AS u(id, n)",
        (ctx.instance_key, session_key, first_position, [r[0] for r in rows]))


def _record_run(conn: psycopg.Connection, ctx: AccessContext, session_key: str, run_id: str,
                *, completed: bool, items: int, transcript_bytes: int,
                agent_written: bool) -> tuple[int, str]:
    """Open (or extend) the run, or write a completed one; its (run_index, status). An
    agent's append marks the run ``agent_written``; nothing unmarks it."""
    row = conn.execute(
        "INSERT INTO agent_session_runs (instance_key, session_key, run_id, run_index,"
        "  user_id, group_room_id, channel_thread_key, channel_type, status, item_count,"
        "  transcript_bytes, completed_at, agent_written)"
        " VALUES (%(i)s, %(s)s, %(run)s,"
        "  (SELECT COALESCE(max(run_index), -1) + 1 FROM agent_session_runs"
        "    WHERE instance_key = %(i)s AND session_key = %(s)s),"
        "  %(user)s, %(room)s, %(thread)s, %(type)s,"
        "  CASE WHEN %(done)s THEN 'completed' ELSE 'open' END, %(items)s, %(bytes)s,"
        "  CASE WHEN %(done)s THEN now() END, %(agent)s)"
        " ON CONFLICT (instance_key, session_key, run_id) DO UPDATE SET"
        "  item_count = agent_session_runs.item_count + EXCLUDED.item_count,"
        "  transcript_bytes = agent_session_runs.transcript_bytes + EXCLUDED.transcript_bytes,"
        "  agent_written = agent_session_runs.agent_written OR EXCLUDED.agent_written"
        " RETURNING run_index, status",
        {"i": ctx.instance_key, "s": session_key, "run": run_id, "user": ctx.user_id,
         "room": ctx.group_room_id, "thread": ctx.channel_thread_key,
         "type": ctx.channel_type, "done": completed, "items": items,
         "bytes": transcript_bytes, "agent": agent_written}).fetchone()
    return row[0], row[1]


def _duplicates_only(conn: psycopg.Connection, ctx: AccessContext, session_key: str,
                     items: Sequence[TurnItem], existing: dict[str, tuple[UUID, int, str | None]],
                     run_id: str | None) -> AppendResult:
    answered = [AppendedItem(existing[i.client_item_id][0], i.client_item_id,
                             existing[i.client_item_id][1], True)
                for i in items if i.client_item_id is not None]
    # The run named, if the session has it; else the run the first duplicate was said in.
    run = get_run(conn, ctx.instance_key, session_key, run_id) if run_id else None
    if run is None:
        first = next(existing[i.client_item_id][2] for i in items if i.client_item_id)
        run = get_run(conn, ctx.instance_key, session_key, first) if first else None
    return AppendResult(session_key=session_key, run_id=run.run_id if run else None,
                        run_index=run.run_index if run else None,
                        run_status=run.status if run else None,
                        appended=0, duplicates=len(answered), items=answered)


def append_items(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
                 items: Sequence[TurnItem], *, run_id: str | None = None,
                 author_may_differ: bool = False,
                 written_by_agent: bool = False) -> AppendResult:
    """Append ``items`` to the session of ``ctx`` (in one transaction, under the session's
    lock); see the module docstring. ``ctx`` is resolved already (``trust.resolve_context``:
    the acting user may name this session); who takes part is recorded here
    (``membership.join_session``): ``author_may_differ`` is the runtime's append.
    ``written_by_agent`` (an agent key, or a request marked ``X-Memory-Writer: agent``)
    marks the run ``agent_written``."""
    session_key = _session_of(ctx)
    if run_id is not None:
        check_identifier(run_id, "runId", code="invalid_run_id")
    authors = check_batch(settings, items, acting_user=ctx.user_id,
                          author_may_differ=author_may_differ)
    instance = ctx.instance_key
    with conn.transaction():
        lock_session_items(conn, instance, session_key)
        existing = _existing(conn, instance, session_key,
                             [i.client_item_id for i in items if i.client_item_id is not None])
        fresh = [index for index, item in enumerate(items)
                 if item.client_item_id is None or item.client_item_id not in existing]
        if not fresh:
            return _duplicates_only(conn, ctx, session_key, items, existing, run_id)
        run: SessionRun | None = get_run(conn, instance, session_key, run_id) if run_id else None
        if run is not None and run.status == "completed":
            raise Conflict(f"run {run_id!r} of this session is completed: append to a new run "
                           "(or without a runId)", code="run_completed",
                           details={"field": "runId"})
        # Who takes part is decided here, by the append, never by a read (membership).
        join_session(conn, instance, session_key, ctx.user_id,
                     [authors[index] for index in fresh], runtime=author_may_differ)
        seq, position = _next(conn, instance, session_key)
        ids = {index: uuid.uuid4() for index in fresh}
        effective_run = run_id or f"append:{ids[fresh[0]]}"
        rows = [(ids[index], seq + n, items[index], authors[index])
                for n, index in enumerate(fresh)]
        _insert_messages(conn, ctx, session_key, effective_run, rows, position)
        check_quota(conn, settings, instance, {authors[index] for index in fresh})
        run_index, status = _record_run(
            conn, ctx, session_key, effective_run, completed=run_id is None,
            items=len(fresh),
            transcript_bytes=sum(len(items[i].content.encode("utf-8")) for i in fresh),
            agent_written=written_by_agent)
        state.ensure_state(conn, instance, session_key, ctx.user_id)
        if status == "completed":
            state.request_maintenance(conn, instance, session_key, ctx.user_id)
    recall_turns(conn, settings, instance, session_key, [ids[index] for index in fresh])
    new_seq = {index: seq + n for n, index in enumerate(fresh)}
    answered = []
    for index, item in enumerate(items):
        if index in ids:
            answered.append(AppendedItem(ids[index], item.client_item_id, new_seq[index], False))
        else:
            ident, old_seq, _ = existing[item.client_item_id]  # type: ignore[index]
            answered.append(AppendedItem(ident, item.client_item_id, old_seq, True))
    return AppendResult(session_key=session_key, run_id=effective_run, run_index=run_index,
                        run_status=status, appended=len(fresh),
                        duplicates=len(items) - len(fresh), items=answered)


# --- completion --------------------------------------------------------------------------
def _token_figure(value: int | None, field: str, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not \
            minimum <= value <= 2_000_000_000:
        raise InvalidInput(f"{field} must be a whole number of at least {minimum}",
                           code="invalid_token_count", details={"field": field})
    return value


def complete_run(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
                 run_id: str, *, prompt_tokens: int | None = None,
                 context_budget_tokens: int | None = None) -> RunCompletion:
    """Complete a run of the session of ``ctx`` and ask for a background pass. Idempotent: a
    completed run answers ``already_completed=True`` and nothing changes. A run this session
    does not have is NotFound."""
    session_key = _session_of(ctx)
    check_identifier(run_id, "runId", code="invalid_run_id")
    prompt = _token_figure(prompt_tokens, "promptTokens", 0)
    budget = _token_figure(context_budget_tokens, "contextBudgetTokens", 1)
    instance = ctx.instance_key
    with conn.transaction():
        lock_session_items(conn, instance, session_key)
        run = get_run(conn, instance, session_key, run_id)
        if run is None:
            raise NotFound(f"no run {run_id!r} in session {session_key!r}",
                           details={"field": "runId"})
        if run.status == "completed":
            assert run.completed_at is not None
            return RunCompletion(session_key, run_id, run.run_index, run.status,
                                 run.completed_at, already_completed=True)
        completed_at = conn.execute(
            "UPDATE agent_session_runs SET status = 'completed', completed_at = now(),"
            "  prompt_tokens = COALESCE(%s, prompt_tokens),"
            "  context_budget_tokens = COALESCE(%s, context_budget_tokens)"
            " WHERE instance_key = %s AND session_key = %s AND run_id = %s"
            " RETURNING completed_at",
            (prompt, budget, instance, session_key, run_id)).fetchone()[0]
        state.request_maintenance(conn, instance, session_key, ctx.user_id)
    return RunCompletion(session_key, run_id, run.run_index, "completed", completed_at,
                         already_completed=False)
