"""The HTTP API's one route table.

Each operation is declared once: method, path, handler, the API-key scope it needs, its
input model (a JSON body or the query string), its response model and success status. The
Starlette routes (one ``Mount`` per prefix), the scope check (:class:`api.auth.RequireScope`
on each route that declares a scope) and ``/openapi.json`` all derive from this table.

A handler is called as ``handler(request)``, or ``handler(request, input)`` when the operation
declares a body or query model (read strictly by ``api.input``). It answers its response
model (sent with the declared status), or a ready ``Response`` when it chooses the status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from api import openapi, schemas
from api.auth import RequireScope
from api.input import MAX_VALUES, read_json, read_query
from api.metrics import metrics_page
from api.responses import model_response
from api.routes import (
    assertions,
    context,
    dreams,
    events,
    feedback,
    health,
    internal,
    knowledge,
    members,
    memory,
    profiles,
    review,
    sessions,
    users,
)
from memory_platform.settings import Settings

READ, WRITE, ADMIN, RUNTIME = "memory:read", "memory:write", "admin", "runtime"
REVIEW = "memory:review"
# Membership is managed by operators and by the agent runtime.
MEMBERSHIP = (ADMIN, RUNTIME)


@dataclass(frozen=True)
class Operation:
    method: str
    path: str                                   # below its section's prefix
    handler: Callable[..., Awaitable[Any]]
    summary: str
    scope: str | tuple[str, ...] | None = None  # None: public; a tuple: any one of them
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    status: int = 200
    # The body's limits from the settings, where an operation needs its own (bytes: else
    # api_max_body_bytes; JSON values: else api.input.MAX_VALUES).
    body_bytes: Callable[[Settings], int] | None = None
    body_values: Callable[[Settings], int] | None = None
    # Error statuses this operation answers beyond the common ones of every protected route
    # (api.openapi._ERRORS): (status, when), listed in /openapi.json.
    errors: tuple[tuple[int, str], ...] = ()

    def route(self) -> Route:
        async def endpoint(request: Request) -> Response:
            inputs = []
            if self.body is not None:
                settings = request.state.settings
                inputs.append(await read_json(
                    request, self.body,
                    max_bytes=self.body_bytes(settings) if self.body_bytes else None,
                    max_values=self.body_values(settings) if self.body_values else MAX_VALUES))
            if self.query is not None:
                inputs.append(read_query(request, self.query))
            answer = await self.handler(request, *inputs)
            return answer if isinstance(answer, Response) else model_response(answer,
                                                                               self.status)

        guard = [Middleware(RequireScope, needs=self.scope)] if self.scope else None
        return Route(self.path, endpoint, methods=[self.method], middleware=guard,
                     name=f"{self.method} {self.path}")


@dataclass(frozen=True)
class Section:
    prefix: str                                 # '' for routes at the root
    operations: tuple[Operation, ...]

    def routes(self) -> list[BaseRoute]:
        routes: list[BaseRoute] = [op.route() for op in self.operations]
        return [Mount(self.prefix, routes=routes)] if self.prefix else routes


async def openapi_document(_: Request) -> JSONResponse:
    return JSONResponse(openapi.build_document(TABLE))


TABLE: tuple[Section, ...] = (
    Section("", (
        Operation("GET", "/healthz", health.healthz, "Liveness (database round trip)"),
        Operation("GET", "/readyz", health.readyz, "Readiness (database and migrations current)"),
        Operation("GET", "/metrics", metrics_page, "Prometheus metrics"),
    )),
    Section("/api/v1", (
        Operation("GET", "/memory", memory.search, "Semantic search over visible memories",
                  READ, query=schemas.SearchParams, response=schemas.SearchResponse),
        Operation("GET", "/events", events.list_route,
                  "Changes of memory state the caller may see (written, deduplicated, "
                  "activated, superseded, rejected, erased, Dream completed or rolled back), "
                  "oldest first, paged with an opaque cursor", READ,
                  query=schemas.EventListParams, response=schemas.EventListResponse),
        Operation("GET", "/users", users.list_users_route,
                  "Users of the key's instance with their share-with-team preference", ADMIN,
                  query=schemas.UserListParams, response=schemas.UsersResponse),
        Operation("PUT", "/users/sharing", users.set_sharing_route,
                  "Set a user's share-with-team preference (a person's admin key only)", ADMIN,
                  body=schemas.SharingIn, response=schemas.UserOut),
        Operation("GET", "/review/queue", review.queue_route,
                  "Pending assertions, open conflicts or wiki drafts the reviewer may see, "
                  "with their evidence", REVIEW, query=schemas.ReviewQueueParams,
                  response=schemas.ReviewQueueResponse),
        Operation("POST", "/review/assertions/{assertion_id}/decision",
                  review.assertion_decision_route, "Approve, reject or supersede one "
                  "assertion (a person's decision: it wins over automation)", REVIEW,
                  body=schemas.AssertionDecisionIn, response=schemas.DecisionResponse),
        Operation("POST", "/review/assertions/bulk", review.bulk_decision_route,
                  "Approve or reject a filtered list of pending assertions (at most 500)",
                  REVIEW, body=schemas.BulkDecisionIn, response=schemas.DecisionResponse),
        Operation("POST", "/review/conflicts/{conflict_id}/resolution",
                  review.conflict_resolution_route, "Resolve a conflict: keep one, keep both, "
                  "merge", REVIEW, body=schemas.ConflictResolutionIn,
                  response=schemas.DecisionResponse),
        Operation("POST", "/review/wiki/{proposal_id}/decision", review.wiki_decision_route,
                  "Approve or reject a wiki draft", REVIEW, body=schemas.WikiDecisionIn,
                  response=schemas.DecisionResponse),
        Operation("POST", "/memory", memory.create,
                  "Store a memory (201 created, 200 when deduplicated)", WRITE,
                  body=schemas.MemoryCreate, response=schemas.StoreResponse, status=201),
        Operation("GET", "/memory/{memory_id}", memory.get_one, "Exact retrieval of one memory",
                  READ, query=schemas.ActingUser, response=schemas.MemoryOut),
        Operation("POST", "/context/search", context.search,
                  "Unified search: assertions, memories, session history, graph", READ,
                  body=schemas.ContextSearch, response=schemas.ContextSearchResponse),
        Operation("GET", "/context/{item_id:path}", context.get_one,
                  "One context item with its provenance", READ, query=schemas.ActingUser,
                  response=schemas.ContextItemOut),
        Operation("POST", "/knowledge/search", knowledge.search,
                  "Hybrid knowledge-graph search: entities, claims, expanded edges", READ,
                  body=schemas.KnowledgeSearch, response=schemas.KnowledgeSearchResponse),
        Operation("GET", "/knowledge/entities/{entity_id}", knowledge.entity,
                  "One graph entity with its current claims and edges (404: unknown or not "
                  "visible)", READ, query=schemas.KnowledgeReadParams,
                  response=schemas.KnowledgeEntityResponse),
        Operation("GET", "/knowledge/entities/{entity_id}/neighbors",
                  knowledge.entity_neighbors,
                  "The entities within one or two edges of an entity", READ,
                  query=schemas.NeighborParams, response=schemas.KnowledgeNeighborsResponse),
        Operation("GET", "/knowledge/claims/{claim_id}/explain", knowledge.explain,
                  "One claim's source refs (currently supported or not) and evidence", READ,
                  query=schemas.KnowledgeReadParams,
                  response=schemas.KnowledgeExplainResponse),
        Operation("GET", "/assertions/as-of", assertions.as_of,
                  "The assertions believed true at a past moment (recorded and valid then), "
                  "each with its revision chain and its state now", READ,
                  query=schemas.AssertionAsOfParams, response=schemas.AssertionAsOfResponse),
        Operation("POST", "/feedback/injected", feedback.injected,
                  "Record the assertions a run injected", WRITE,
                  body=schemas.InjectedFeedback, response=schemas.InjectedResponse),
        Operation("POST", "/feedback/cited", feedback.cited,
                  "Run the cited sensor over a run's final answer", WRITE,
                  body=schemas.CitedFeedback, response=schemas.CitedResponse),
        Operation("GET", "/channels/members", members.list_members,
                  "Channel and room members of the key's instance", MEMBERSHIP,
                  query=schemas.ChannelMemberFilter, response=schemas.ChannelMembersResponse),
        Operation("POST", "/channels/members", members.add_member,
                  "Make a user a member of a channel or room (201; 200 when already one)",
                  MEMBERSHIP, body=schemas.ChannelMemberIn,
                  response=schemas.ChannelMemberChange, status=201),
        Operation("DELETE", "/channels/members", members.remove_member,
                  "End a user's membership of a channel or room (404 when there was none)",
                  MEMBERSHIP, query=schemas.ChannelMemberParams,
                  response=schemas.ChannelMemberChange),
        Operation("GET", "/sessions/participants", members.list_participants,
                  "Who takes part in a session of the key's instance", MEMBERSHIP,
                  query=schemas.SessionParticipantParams,
                  response=schemas.SessionParticipantsResponse),
        Operation("POST", "/sessions/participants", members.add_participant,
                  "Record that a user takes part in a session (201; 200 when already)",
                  MEMBERSHIP, body=schemas.SessionParticipantIn,
                  response=schemas.SessionParticipantAdded, status=201),
        Operation("GET", "/sessions/grep", sessions.grep_route,
                  "memory_grep: exact, case-insensitive text search over session history "
                  "(raw items and summaries) the caller may read", READ,
                  query=schemas.GrepParams, response=schemas.GrepResponse),
        Operation("GET", "/sessions/nodes/{node_id}/expand", sessions.expand_route,
                  "memory_expand: the raw items under a summary, in order, paged", READ,
                  query=schemas.ExpandParams, response=schemas.ExpandResponse),
        Operation("GET", "/sessions/nodes/{node_id}", sessions.describe_route,
                  "memory_describe: one message or summary of the context graph", READ,
                  query=schemas.NodeParams, response=schemas.SessionNodeOut),
        Operation("POST", "/sessions/{session_key:path}/runs/{run_id}/complete",
                  sessions.complete, "Complete a run of a session (idempotent)", WRITE,
                  body=schemas.RunComplete, response=schemas.RunCompletionResponse),
        Operation("POST", "/sessions/{session_key:path}/items", sessions.append,
                  "Append turn items to a session (201; 200 when every item was a duplicate)",
                  WRITE, body=schemas.SessionAppend, response=schemas.SessionAppendResponse,
                  status=201,
                  body_bytes=lambda s: s.session_append_max_body_bytes,
                  body_values=lambda s: schemas.append_value_limit(s.session_append_max_items),
                  errors=((409, "run_completed: the named run is completed (append to a new "
                                "run or without a runId); concurrent_append: another writer "
                                "stored the same client item ids meanwhile (retry)"),)),
    )),
    Section("/internal", (
        Operation("GET", "/memory/status", internal.status,
                  "Memory, ledger, embedding, outbox status", ADMIN,
                  response=schemas.StatusResponse),
        Operation("POST", "/memory/reembed", internal.reembed, "One bounded re-embedding batch",
                  ADMIN, body=schemas.ReembedRequest, response=schemas.ReembedResponse),
        Operation("POST", "/memory/retention", internal.retention,
                  "One retention sweep (superseded/archived rows past the window, evidence "
                  "caps)", ADMIN, body=schemas.RetentionRequest,
                  response=schemas.RetentionResponse),
        Operation("POST", "/memory/workspace/sync", internal.workspace_sync,
                  "Sync MEMORY_WORKSPACE_DIR now", ADMIN,
                  response=schemas.WorkspaceSyncResponse),
        Operation("POST", "/memory/users/erase", internal.erase,
                  "Erase a person: every row of theirs, re-derived what others support",
                  ADMIN, body=schemas.ErasureRequest, response=schemas.ErasureResponse),
        Operation("GET", "/memory/profile", profiles.profile,
                  "One user's precomputed profile (refresh=1 rebuilds it)", ADMIN,
                  query=schemas.ProfileParams, response=schemas.ProfileResponse),
        Operation("GET", "/memory/dreams", dreams.list_route,
                  "Dream rows of the key's instance, newest first", ADMIN,
                  query=schemas.DreamListParams, response=schemas.DreamListResponse),
        Operation("POST", "/memory/dreams", dreams.launch_route,
                  "Launch Dreaming for one partition or all eligible ones (202; 200 with "
                  "runId null when nothing is eligible; 503 when this process cannot launch)",
                  ADMIN, body=schemas.DreamLaunch, response=schemas.DreamLaunchResponse,
                  status=202),
        Operation("GET", "/memory/dreams/{dream_id}", dreams.detail_route,
                  "One Dream in full: proposals, accepted and rejected items with reason "
                  "codes, policy preview, effective model, rollback state", ADMIN,
                  response=schemas.DreamDetailResponse),
        Operation("POST", "/memory/dreams/{dream_id}/rollback", dreams.rollback_route,
                  "Roll back one Dream: compensate what no person decided, report what is "
                  "protected", ADMIN, response=schemas.DreamRollbackResponse),
        Operation("GET", "/memory/webhooks", events.list_webhooks_route,
                  "Webhooks of the key's instance with delivery counts (never a secret)",
                  ADMIN, response=schemas.WebhookListResponse),
        Operation("POST", "/memory/webhooks", events.register_route,
                  "Register a webhook: signed event deliveries through the outbox (201; "
                  "the secret is answered only when generated)", ADMIN,
                  body=schemas.WebhookIn, response=schemas.WebhookOut, status=201),
        Operation("DELETE", "/memory/webhooks/{webhook_id}", events.deactivate_route,
                  "Deactivate a webhook (no further deliveries)", ADMIN,
                  response=schemas.WebhookOut),
        Operation("GET", "/memory/webhooks/{webhook_id}/deliveries", events.deliveries_route,
                  "Delivery status of one webhook: state, attempts, last status and error",
                  ADMIN, query=schemas.WebhookDeliveryParams,
                  response=schemas.WebhookDeliveriesResponse),
    )),
)


def routes() -> list[BaseRoute]:
    """The app's Starlette routes, in table order, and ``/openapi.json`` (the document of
    the table, not listed in itself)."""
    return [*(route for section in TABLE for route in section.routes()),
            Route("/openapi.json", openapi_document, methods=["GET"])]
