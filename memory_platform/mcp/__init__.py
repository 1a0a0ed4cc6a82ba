"""``memory-platform mcp``: a stdio MCP server that exposes the memory API to coding agents.

Narrow tools call the HTTP API (``MEMORY_API_URL``, default ``http://127.0.0.1:8080``):

* ``context_search`` and ``context_get`` (the preferred read path: one search over every
  recall surface, then an exact read of an item), ``memory_search`` and ``memory_get``
  (durable memories), ``memory_grep``,
  ``memory_describe`` and ``memory_expand`` (session history: exact search, one node, from a
  summary back to the raw items), ``session_replay`` (a session as a runtime replays it),
  listed only when ``MEMORY_READ_TOKEN`` (or its read-only alias ``MEMORY_TOKEN``) is set
  (an API key with ``memory:read``);
* ``knowledge_search``, ``knowledge_get_entity``, ``knowledge_neighbors`` and
  ``knowledge_explain_claim`` (the knowledge graph: hybrid search, one entity, its
  neighbourhood, one claim's provenance), with the same read token;
* ``memory_store``, ``session_append``, ``memory_feedback``, ``memory_correct`` (a proposal,
  waiting for review) and ``memory_forget`` (delete one of the user's own memories:
  destructive), listed only when the separate
  ``MEMORY_WRITE_TOKEN`` is set (an API key with ``memory:write``); durable mutation is an
  explicit operator opt-in even when the adapter is installed globally. The writes mark
  every write as the agent's
  (``X-Memory-Writer: agent``): a ``memory_store`` memory waits for review, it is not active
  at once; ``session_append`` hands over turns of a conversation, verbatim, to the user's
  session, and the run it lands in is agent-written, so no fact drawn from it counts as the
  user's own statement. ``memory_store`` takes the event time (``occurredAt``) as the API
  does.

Each result is the API's JSON as text, every memory wrapped with ``"trust": "untrusted-data"``.
An API failure (4xx/5xx, unreachable server) becomes an MCP tool error carrying the API's error
message; tokens never appear in a message. stdout is the protocol: every diagnostic goes to
stderr.

Built on the official ``mcp`` SDK 2.x (``mcp.server.MCPServer``; 2.x removed ``FastMCP``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal
from urllib.parse import quote

import httpx
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from memory_platform.mcp.descriptions import (
    APPEND_DESCRIPTION,
    CONTEXT_GET_DESCRIPTION,
    CONTEXT_SEARCH_DESCRIPTION,
    CORRECT_DESCRIPTION,
    DESCRIBE_DESCRIPTION,
    EXPAND_DESCRIPTION,
    FEEDBACK_DESCRIPTION,
    FORGET_DESCRIPTION,
    GET_DESCRIPTION,
    GREP_DESCRIPTION,
    INSTRUCTIONS,
    KNOWLEDGE_ENTITY_DESCRIPTION,
    KNOWLEDGE_EXPLAIN_DESCRIPTION,
    KNOWLEDGE_NEIGHBORS_DESCRIPTION,
    KNOWLEDGE_SEARCH_DESCRIPTION,
    REPLAY_DESCRIPTION,
    SEARCH_DESCRIPTION,
    STORE_DESCRIPTION,
)

# An HTTP client of the API: it names the API's paths and values itself and imports nothing
# of the platform, so it runs wherever an agent runs, against any deployment of the API.
DEFAULT_API_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT_SECONDS = 30.0
MEMORY_PATH = "/api/v1/memory"
SESSIONS_PATH = "/api/v1/sessions"
KNOWLEDGE_PATH = "/api/v1/knowledge"
CONTEXT_PATH = "/api/v1/context"
FEEDBACK_PATH = "/api/v1/feedback/explicit"
# A limit the agent leaves out is left out of the request too: the API answers with its own
# default (MEMORY_RETRIEVAL_TOP_K, MEMORY_GRAPH_SEARCH_LIMIT, ...), never a copy kept here.
# Every write of this server is the agent's inference, not the user's own statement: the API
# then files it for review instead of activating it (the header can only lower trust).
AGENT_WRITER_HEADERS = {"X-Memory-Writer": "agent"}

log = logging.getLogger("memory_platform.mcp")

Visibility = Literal["private", "team", "workspace", "channel"]
# A memory's id, as memory_search or memory_get returned it (memory_get, _correct, _forget).
MemoryId = Annotated[str, Field(min_length=1, max_length=200,
                                description="The memory id, as memory_search returned it.")]
# What a stored memory may be (write_rules.STORED_SOURCE_TYPES): "message" is a session item
# recalled as a conversation turn.
SourceType = Literal["prompt_file", "summary", "fact", "manual", "dream", "flush", "message"]
Role = Literal["user", "assistant", "system", "tool"]



def _graph_id(description: str) -> Any:
    return Field(min_length=1, max_length=200, description=description)


class TurnItemArg(BaseModel):
    """One turn of a conversation, as session_append takes it."""

    model_config = ConfigDict(extra="forbid")
    role: Role
    content: str = Field(description="What was said, verbatim.")
    clientItemId: str | None = Field(None, min_length=1, max_length=200, description=(
        "Your id of this turn: appending it again adds nothing."))
    occurredAt: str | None = Field(None, description=(
        "When it was said: ISO-8601 with an offset, e.g. 2026-11-30T09:12:00+01:00."))
    tool: str | None = Field(None, min_length=1, max_length=200,
                             description="For a tool turn: the tool's name.")
    toolCallId: str | None = Field(None, min_length=1, max_length=200)

    def body(self) -> dict[str, Any]:
        item: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.clientItemId is not None:
            item["clientItemId"] = self.clientItemId
        if self.occurredAt is not None:
            item["occurredAt"] = self.occurredAt
        metadata = {k: v for k, v in (("tool", self.tool), ("toolCallId", self.toolCallId))
                    if v is not None}
        if metadata:
            item["metadata"] = metadata
        return item


def _given(**values: Any) -> dict[str, Any]:
    """The arguments the agent gave (None: left to the API's default)."""
    return {name: value for name, value in values.items() if value is not None}


def session_path(session_key: str, *rest: str) -> str:
    """``/api/v1/sessions/<key>/...`` with the key percent-encoded (keys hold ':' and '/')."""
    return "/".join([SESSIONS_PATH, quote(session_key, safe=""), *rest])


@dataclass
class MemoryApi:
    """The HTTP API as the tools see it: one shared client, tokens kept out of messages."""

    base_url: str
    read_token: str | None
    write_token: str | None
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    http: httpx.AsyncClient | None = field(default=None, repr=False)

    def _scrub(self, text: str) -> str:
        for token in (self.read_token, self.write_token):
            if token:
                text = text.replace(token, "[redacted]")
        return text

    async def call(self, method: str, path: str, token: str, *,
                   params: Mapping[str, Any] | None = None,
                   body: Mapping[str, Any] | None = None,
                   headers: Mapping[str, str] | None = None) -> str:
        """The response body (JSON text) of a successful call; a ToolError otherwise."""
        sent = {"Authorization": f"Bearer {token}", "Accept": "application/json",
                **(headers or {})}
        if self.http is None:  # outside the server's lifespan (tests calling tools directly)
            async with httpx.AsyncClient(base_url=self.base_url, timeout=self.timeout) as http:
                return await self._send(http, method, path, sent, params, body)
        return await self._send(self.http, method, path, sent, params, body)

    async def _send(self, http: httpx.AsyncClient, method: str, path: str,
                    headers: Mapping[str, str], params: Mapping[str, Any] | None,
                    body: Mapping[str, Any] | None) -> str:
        try:
            response = await http.request(method, path, params=params, json=body,
                                          headers=dict(headers))
        except httpx.HTTPError as exc:
            reason = self._scrub(str(exc)) or type(exc).__name__
            raise ToolError(f"memory API unreachable at {self.base_url}: {reason}") from None
        if response.is_success:
            return response.text
        raise ToolError(self._scrub(_error_message(response)))


def _error_message(response: httpx.Response) -> str:
    """``memory API error <status> <code>: <message>`` from the API's one error shape."""
    status = response.status_code
    try:
        error = response.json()["error"]
        code, message = str(error.get("code") or "error"), str(error.get("message") or "")
        details = error.get("details")
    except (ValueError, KeyError, TypeError, AttributeError):
        text = response.text.strip()[:300] or response.reason_phrase
        return f"memory API error {status}: {text}"
    text = f"memory API error {status} {code}: {message}"
    if details:
        text += f" (details: {json.dumps(details, ensure_ascii=False, default=str)[:1000]})"
    return text


def build_server(env: Mapping[str, str] | None = None) -> MCPServer:
    """The MCP server for this environment: tools only for the tokens that are present."""
    env = os.environ if env is None else env
    api = MemoryApi(
        base_url=(env.get("MEMORY_API_URL") or DEFAULT_API_URL).rstrip("/"),
        # MEMORY_TOKEN is a read-only alias: it never lists a write tool, whatever its key may
        # do (durable mutation needs MEMORY_WRITE_TOKEN, on purpose).
        read_token=(env.get("MEMORY_READ_TOKEN") or env.get("MEMORY_TOKEN") or "").strip()
        or None,
        write_token=(env.get("MEMORY_WRITE_TOKEN") or "").strip() or None,
        timeout=_timeout(env.get("MEMORY_API_TIMEOUT_SECONDS")),
    )

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        async with httpx.AsyncClient(base_url=api.base_url, timeout=api.timeout) as http:
            api.http = http
            try:
                yield None
            finally:
                api.http = None

    server = MCPServer("memory-platform", instructions=INSTRUCTIONS, version=_version(),
                       lifespan=lifespan, log_level="WARNING")
    # Request lines carry no token, but they are noise on the agent's stderr.
    logging.getLogger("httpx").setLevel(logging.WARNING)

    if api.read_token:
        read_token = api.read_token

        async def memory_search(
            query: Annotated[str, Field(min_length=1, max_length=2000,
                                        description="What to look for, in natural language.")],
            limit: Annotated[int | None, Field(ge=1, le=50, description=(
                "How many results (default: the server's MEMORY_RETRIEVAL_TOP_K)."))] = None,
            scope: Annotated[Visibility | None, Field(
                description="Only memories of this visibility scope.")] = None,
            filter: Annotated[dict[str, Any] | None, Field(
                description="Conditions on metadata.<key> / subjectRefs.<key>: {field: "
                "{eq: value} | {in: [values]} | {exists: bool}}, combined with {and: [...]}, "
                "{or: [...]}, {not: ...}.")] = None,
            occurredAfter: Annotated[str | None, Field(
                max_length=64, description="Event time at or after (ISO-8601 with offset).")]
            = None,
            occurredBefore: Annotated[str | None, Field(
                max_length=64, description="Event time before (ISO-8601 with offset).")]
            = None,
            createdAfter: Annotated[str | None, Field(
                max_length=64, description="Stored at or after (ISO-8601 with offset).")]
            = None,
            createdBefore: Annotated[str | None, Field(
                max_length=64, description="Stored before (ISO-8601 with offset).")] = None,
            sourceTypes: Annotated[list[SourceType] | None, Field(
                min_length=1, max_length=7, description="Only these source types.")] = None,
            subjectRefs: Annotated[dict[str, str] | None, Field(
                description="What the task is about, to prefer memories about it: any of "
                "mandantId, documentId, taskId, moduleSlug, routePath, groupRoomId, "
                "channelThreadKey (a string each); filters nothing.")] = None,
        ) -> str:
            params: dict[str, Any] = _given(query=query, limit=limit)
            if subjectRefs:
                params["subjectRefs"] = json.dumps(subjectRefs, separators=(",", ":"))
            if scope is not None:
                params["scope"] = scope
            if filter is not None:
                params["filter"] = json.dumps(filter, separators=(",", ":"))
            for name, value in (("occurredAfter", occurredAfter),
                                ("occurredBefore", occurredBefore),
                                ("createdAfter", createdAfter),
                                ("createdBefore", createdBefore)):
                if value is not None:
                    params[name] = value
            if sourceTypes:
                params["sourceTypes"] = ",".join(sourceTypes)
            return await api.call("GET", MEMORY_PATH, read_token, params=params)

        async def memory_get(id: MemoryId) -> str:
            return await api.call("GET", f"{MEMORY_PATH}/{quote(id, safe='')}", read_token)

        async def memory_grep(
            pattern: Annotated[str, Field(min_length=3, max_length=500, description=(
                "The exact text to find (case-insensitive, at least 3 characters)."))],
            sessionKey: Annotated[str | None, Field(min_length=1, max_length=200, description=(
                "Only this session; omitted: every session the user takes part in."))] = None,
            roles: Annotated[list[Role] | None, Field(min_length=1, max_length=4, description=(
                "Only messages of these roles (summaries have none)."))] = None,
            limit: Annotated[int | None, Field(ge=1, le=100, description=(
                "How many results (default: the server's)."))] = None,
            before: Annotated[str | None, Field(min_length=1, max_length=300, description=(
                "nextBefore of the previous answer: the next, older page."))] = None,
        ) -> str:
            params: dict[str, Any] = _given(pattern=pattern, limit=limit)
            if sessionKey is None:
                params["allSessions"] = "true"
            else:
                params["sessionKey"] = sessionKey
            if roles:
                params["roles"] = ",".join(roles)
            if before is not None:
                params["before"] = before
            return await api.call("GET", f"{SESSIONS_PATH}/grep", read_token, params=params)

        async def memory_describe(
            id: Annotated[str, Field(min_length=1, max_length=200, description=(
                "message:<uuid> or summary:<uuid>, as memory_grep returned it."))],
        ) -> str:
            return await api.call("GET", f"{SESSIONS_PATH}/nodes/{quote(id, safe='')}",
                                  read_token)

        async def session_replay(
            sessionKey: Annotated[str, Field(min_length=1, max_length=200, description=(
                "The session (one the user takes part in)."))],
            budgetTokens: Annotated[int | None, Field(ge=64, le=1_000_000, description=(
                "Most tokens the replay holds (default: the server's session budget)."))]
            = None,
        ) -> str:
            return await api.call(
                "GET", f"{SESSIONS_PATH}/{quote(sessionKey, safe=':')}/replay", read_token,
                params=_given(budgetTokens=budgetTokens))

        async def memory_expand(
            id: Annotated[str, Field(min_length=1, max_length=200,
                                     description="summary:<uuid>")],
            limit: Annotated[int | None, Field(ge=1, le=200, description=(
                "Raw items per page (default: the server's)."))] = None,
            afterSeq: Annotated[int | None, Field(ge=-1, description=(
                "nextAfterSeq of the previous answer: the next page."))] = None,
        ) -> str:
            params = _given(limit=limit, afterSeq=afterSeq)
            return await api.call("GET", f"{SESSIONS_PATH}/nodes/{quote(id, safe='')}/expand",
                                  read_token, params=params)

        async def context_search(
            query: Annotated[str, Field(min_length=1, max_length=2000,
                                        description="What to recall, in natural language.")],
            depth: Annotated[Literal["normal", "deep"], Field(
                description="'deep' searches wider when 'normal' finds too little.")]
            = "normal",
            intent: Annotated[Literal["answer", "wiki_synthesis"] | None, Field(
                description="'wiki_synthesis' gathers for a summary page (deep).")] = None,
            limit: Annotated[int | None, Field(ge=1, le=50, description=(
                "How many results (default: the server's MEMORY_RETRIEVAL_CONTEXT_LIMIT)."))]
            = None,
            sessionKey: Annotated[str | None, Field(min_length=1, max_length=200, description=(
                "The session the question comes from (one the user takes part in)."))] = None,
        ) -> str:
            body = _given(query=query, limit=limit, intent=intent)
            body["depth"] = depth
            if sessionKey is not None:
                body["context"] = {"sessionKey": sessionKey}
            return await api.call("POST", f"{CONTEXT_PATH}/search", read_token, body=body)

        async def context_get(
            id: Annotated[str, Field(min_length=1, max_length=300, description=(
                "The item id, as context_search returned it."))],
        ) -> str:
            return await api.call("GET", f"{CONTEXT_PATH}/{quote(id, safe=':')}", read_token)

        async def knowledge_search(
            query: Annotated[str, Field(min_length=1, max_length=2000,
                                        description="What to look for, in natural language.")],
            limit: Annotated[int | None, Field(ge=1, le=50, description=(
                "Most entities, claims and edges each (default: the server's "
                "MEMORY_GRAPH_SEARCH_LIMIT)."))] = None,
        ) -> str:
            return await api.call("POST", f"{KNOWLEDGE_PATH}/search", read_token,
                                  body=_given(query=query, limit=limit))

        async def knowledge_get_entity(
            id: Annotated[str, _graph_id("The entity id (a uuid).")],
        ) -> str:
            return await api.call("GET", f"{KNOWLEDGE_PATH}/entities/{quote(id, safe='')}",
                                  read_token)

        async def knowledge_neighbors(
            id: Annotated[str, _graph_id("The entity id (a uuid).")],
            depth: Annotated[int, Field(ge=1, le=2, description="Edges away (1 or 2).")] = 1,
            limit: Annotated[int | None, Field(ge=1, le=100, description=(
                "Most neighbours (default: the server's)."))] = None,
        ) -> str:
            return await api.call(
                "GET", f"{KNOWLEDGE_PATH}/entities/{quote(id, safe='')}/neighbors", read_token,
                params=_given(depth=depth, limit=limit))

        async def knowledge_explain_claim(
            id: Annotated[str, _graph_id("The claim id (a uuid; claim:<uuid> works too).")],
        ) -> str:
            claim = id.removeprefix("claim:")
            return await api.call(
                "GET", f"{KNOWLEDGE_PATH}/claims/{quote(claim, safe='')}/explain", read_token)

        read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
        for tool, name, title, description in (
                (context_search, "context_search", "Recall everything relevant",
                 CONTEXT_SEARCH_DESCRIPTION),
                (context_get, "context_get", "Read one recalled item exactly",
                 CONTEXT_GET_DESCRIPTION),
                (knowledge_search, "knowledge_search", "Search the knowledge graph",
                 KNOWLEDGE_SEARCH_DESCRIPTION),
                (knowledge_get_entity, "knowledge_get_entity", "Get one graph entity",
                 KNOWLEDGE_ENTITY_DESCRIPTION),
                (knowledge_neighbors, "knowledge_neighbors", "Neighbours of a graph entity",
                 KNOWLEDGE_NEIGHBORS_DESCRIPTION),
                (knowledge_explain_claim, "knowledge_explain_claim",
                 "Explain one graph claim", KNOWLEDGE_EXPLAIN_DESCRIPTION)):
            server.add_tool(tool, name=name, title=title, description=description,
                            annotations=read_only, structured_output=False)
        server.add_tool(memory_search, name="memory_search", title="Search memories",
                        description=SEARCH_DESCRIPTION, annotations=read_only,
                        structured_output=False)
        server.add_tool(memory_get, name="memory_get", title="Get one memory exactly",
                        description=GET_DESCRIPTION, annotations=read_only,
                        structured_output=False)
        server.add_tool(memory_grep, name="memory_grep", title="Search session history exactly",
                        description=GREP_DESCRIPTION, annotations=read_only,
                        structured_output=False)
        server.add_tool(memory_describe, name="memory_describe",
                        title="Describe one session history node",
                        description=DESCRIBE_DESCRIPTION, annotations=read_only,
                        structured_output=False)
        server.add_tool(session_replay, name="session_replay",
                        title="What a runtime sends the model for a session",
                        description=REPLAY_DESCRIPTION, annotations=read_only,
                        structured_output=False)
        server.add_tool(memory_expand, name="memory_expand",
                        title="Expand a summary to its raw items",
                        description=EXPAND_DESCRIPTION, annotations=read_only,
                        structured_output=False)

    if api.write_token:
        write_token = api.write_token

        async def memory_store(
            content: Annotated[str, Field(min_length=1, description=(
                "The memory: one durable, self-contained statement."))],
            visibility: Annotated[Visibility, Field(description=(
                "Who may recall it. Default private; widen only when the user asks."))]
            = "private",
            subjectRefs: Annotated[dict[str, str | int | float] | None, Field(
                description="Optional tags, e.g. {\"moduleSlug\": \"billing\"}.")] = None,
            explicitPrivate: Annotated[bool, Field(
                description="The user asked to keep this private.")] = False,
            occurredAt: Annotated[str | None, Field(min_length=1, max_length=64, description=(
                "When it happened, if not now: ISO-8601 with an offset, e.g. "
                "2026-11-30T09:12:00+01:00."))] = None,
            sessionKey: Annotated[str | None, Field(min_length=1, max_length=200, description=(
                "The conversation it was said in. A memory with a sessionKey and an "
                "occurredAt is a conversation turn: it is indexed with the two turns before it, "
                "so a short reply is found by the question it answers."))] = None,
            validUntil: Annotated[str | None, Field(min_length=1, max_length=64, description=(
                "When it stops being true, if it will (ISO-8601 with an offset): it is not "
                "recalled after that."))] = None,
            validFrom: Annotated[str | None, Field(min_length=1, max_length=64, description=(
                "When it starts being true, if later (ISO-8601 with an offset): it is not "
                "recalled before that."))] = None,
            subject: Annotated[str | None, Field(min_length=1, max_length=200, description=(
                "What it is about, e.g. \"VAT filing of Mandant Nord\": with predicate, the "
                "slot it fills, so it is only weighed against facts of the same slot."))]
            = None,
            predicate: Annotated[str | None, Field(min_length=1, max_length=200, description=(
                "Which property of the subject it states, e.g. \"due date\"."))] = None,
        ) -> str:
            body: dict[str, Any] = {"content": content, "visibility": visibility,
                                    "explicitPrivate": explicitPrivate}
            optional = {"validUntil": validUntil, "validFrom": validFrom, "subject": subject,
                        "predicate": predicate}
            body.update({name: value for name, value in optional.items() if value is not None})
            if subjectRefs:
                body["subjectRefs"] = subjectRefs
            if occurredAt is not None:
                body["occurredAt"] = occurredAt
            if sessionKey is not None:
                body["context"] = {"sessionKey": sessionKey}
            return await api.call("POST", MEMORY_PATH, write_token, body=body,
                                  headers=AGENT_WRITER_HEADERS)

        async def session_append(
            sessionKey: Annotated[str, Field(min_length=1, max_length=200, description=(
                "The session (conversation) the turns belong to, e.g. agent:main:<id>."))],
            items: Annotated[list[TurnItemArg], Field(min_length=1, max_length=500,
                                                      description="The turns, in order.")],
            runId: Annotated[str | None, Field(min_length=1, max_length=200, description=(
                "The run (turn) they belong to; omitted: they are a completed run of their "
                "own."))] = None,
        ) -> str:
            body: dict[str, Any] = {"items": [item.body() for item in items]}
            if runId is not None:
                body["runId"] = runId
            return await api.call("POST", session_path(sessionKey, "items"), write_token,
                                  body=body, headers=AGENT_WRITER_HEADERS)

        async def memory_feedback(
            assertionIds: Annotated[list[str], Field(min_length=1, max_length=100, description=(
                "The assertion ids of recalled items (assertionId of memory_search results, or "
                "assertion:<id> of context_search)."))],
            kind: Annotated[Literal["helpful", "unhelpful"], Field(description=(
                "Whether they helped answer."))],
            runId: Annotated[str, Field(min_length=1, max_length=200, description=(
                "Your run (turn) id: feedback counts once per assertion, kind and run."))],
            note: Annotated[str | None, Field(min_length=1, max_length=1000, description=(
                "Why, in a few words."))] = None,
        ) -> str:
            ids = [i.removeprefix("assertion:") for i in assertionIds]
            return await api.call("POST", FEEDBACK_PATH, write_token, body=_given(
                assertionIds=ids, kind=kind, runId=runId, note=note))

        async def memory_forget(id: MemoryId) -> str:
            return await api.call("DELETE", f"{MEMORY_PATH}/{quote(id, safe='')}",
                                  write_token)

        async def memory_correct(
            id: MemoryId,
            content: Annotated[str, Field(min_length=1, description=(
                "The whole corrected statement."))],
        ) -> str:
            return await api.call("POST", f"{MEMORY_PATH}/{quote(id, safe='')}/correction",
                                  write_token, body={"content": content},
                                  headers=AGENT_WRITER_HEADERS)

        def write(destructive: bool = False, idempotent: bool = True) -> ToolAnnotations:
            return ToolAnnotations(read_only_hint=False, destructive_hint=destructive,
                                   idempotent_hint=idempotent, open_world_hint=False)

        # Most writes change nothing when repeated (dedup, client item ids, once per run);
        # a correction writes a new proposal each time; forgetting cannot be undone.
        for tool, name, title, description, annotations in (
                (memory_feedback, "memory_feedback", "Say whether recalled memories helped",
                 FEEDBACK_DESCRIPTION, write()),
                (memory_store, "memory_store", "Store a memory", STORE_DESCRIPTION, write()),
                (session_append, "session_append", "Append conversation turns to a session",
                 APPEND_DESCRIPTION, write()),
                (memory_correct, "memory_correct",
                 "Propose a correction of one of the user's memories", CORRECT_DESCRIPTION,
                 write(idempotent=False)),
                (memory_forget, "memory_forget", "Delete one of the user's own memories",
                 FORGET_DESCRIPTION, write(destructive=True))):
            server.add_tool(tool, name=name, title=title, description=description,
                            annotations=annotations, structured_output=False)

    if not (api.read_token or api.write_token):
        _hint("no MEMORY_READ_TOKEN or MEMORY_WRITE_TOKEN set: serving no tools. Create keys "
              "with `memory-platform keys create --user USER --scopes memory:read` (and a "
              "separate one with memory:write to allow storing) and set them in the MCP "
              "server's environment.")
    return server


def _timeout(text: str | None) -> float:
    try:
        value = float(text) if text else DEFAULT_TIMEOUT_SECONDS
    except ValueError:
        value = -1.0
    if not 0 < value <= 600:
        _hint(f"MEMORY_API_TIMEOUT_SECONDS must be a number of seconds in (0, 600]; "
              f"using {DEFAULT_TIMEOUT_SECONDS:g}")
        return DEFAULT_TIMEOUT_SECONDS
    return value


def _hint(message: str) -> None:
    """One plain line on stderr (never stdout: that is the protocol stream)."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("memory-platform mcp: %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    log.warning(message)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memory-platform")
    except PackageNotFoundError:
        return "0"


def run(env: Mapping[str, str] | None = None) -> None:
    """Serve MCP over stdin/stdout until the client closes the stream."""
    build_server(env).run("stdio")
