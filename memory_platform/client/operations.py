"""Every operation of the API the client calls: its method, path and answer model, and
whether it is safe to send twice (:mod:`memory_platform.client.retrying`).

``OPERATIONS`` is keyed by the client's method name (``memory_platform.client.methods``);
``tests/client/test_in_step.py`` holds it against ``/openapi.json``: an operation of the
API without a method here, or one here the API does not have, fails the suite.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from memory_platform.client import models as m


@dataclass(frozen=True)
class Operation:
    method: str
    path: str                                  # with {placeholders} for path ids
    response: type[BaseModel]
    # Safe to send twice: True, False, or decided per body (a write with an idempotency key).
    safe: bool | Callable[[BaseModel | None], bool] = False


def _all_items_keyed(body: BaseModel | None) -> bool:
    """A session append repeats nothing when every item carries its ``clientItemId``."""
    return isinstance(body, m.SessionAppend) and all(i.client_item_id for i in body.items)


API, INTERNAL = "/api/v1", "/internal/memory"

OPERATIONS: dict[str, Operation] = {
    # Memories: a write is deduplicated by content per audience, so it may be sent twice.
    "store": Operation("POST", f"{API}/memory", m.StoreResponse, safe=True),
    "search": Operation("GET", f"{API}/memory", m.SearchResponse, safe=True),
    "list_memories": Operation("GET", f"{API}/memories", m.MemoryListResponse, safe=True),
    "get_memory": Operation("GET", f"{API}/memory/{{memory_id}}", m.MemoryOut, safe=True),
    "correct": Operation("POST", f"{API}/memory/{{memory_id}}/correction",
                         m.CorrectionResponse),
    "forget": Operation("DELETE", f"{API}/memory/{{memory_id}}", m.ForgetResponse),
    # The context facade (memories, assertions, session history in one ranking).
    "context_search": Operation("POST", f"{API}/context/search", m.ContextSearchResponse,
                                safe=True),
    "context_get": Operation("GET", f"{API}/context/{{item_id}}", m.ContextItemOut, safe=True),
    # Sessions: the lossless history.
    "append": Operation("POST", f"{API}/sessions/{{session_key}}/items",
                        m.SessionAppendResponse, safe=_all_items_keyed),
    "complete": Operation("POST", f"{API}/sessions/{{session_key}}/runs/{{run_id}}/complete",
                          m.RunCompletionResponse),
    "replay": Operation("GET", f"{API}/sessions/{{session_key}}/replay", m.ReplayResponse,
                        safe=True),
    "items": Operation("GET", f"{API}/sessions/{{session_key}}/items", m.SessionItemsResponse,
                       safe=True),
    # A second pop would remove the item before; a second clear finds nothing left.
    "pop_item": Operation("DELETE", f"{API}/sessions/{{session_key}}/items/last",
                          m.SessionItemPopped),
    "clear_items": Operation("DELETE", f"{API}/sessions/{{session_key}}/items",
                             m.SessionItemsCleared, safe=True),
    "grep": Operation("GET", f"{API}/sessions/grep", m.GrepResponse, safe=True),
    "describe": Operation("GET", f"{API}/sessions/nodes/{{node_id}}", m.SessionNodeOut,
                          safe=True),
    "expand": Operation("GET", f"{API}/sessions/nodes/{{node_id}}/expand", m.ExpandResponse,
                        safe=True),
    "participants": Operation("GET", f"{API}/sessions/participants",
                              m.SessionParticipantsResponse, safe=True),
    "add_participant": Operation("POST", f"{API}/sessions/participants",
                                 m.SessionParticipantAdded, safe=True),
    # Knowledge (the graph) and assertions.
    "knowledge_search": Operation("POST", f"{API}/knowledge/search",
                                  m.KnowledgeSearchResponse, safe=True),
    "entity": Operation("GET", f"{API}/knowledge/entities/{{entity_id}}",
                        m.KnowledgeEntityResponse, safe=True),
    "neighbors": Operation("GET", f"{API}/knowledge/entities/{{entity_id}}/neighbors",
                           m.KnowledgeNeighborsResponse, safe=True),
    "explain_claim": Operation("GET", f"{API}/knowledge/claims/{{claim_id}}/explain",
                               m.KnowledgeExplainResponse, safe=True),
    "as_of": Operation("GET", f"{API}/assertions/as-of", m.AssertionAsOfResponse, safe=True),
    # Feedback: counted once per run, kind and assertion, so it may be sent twice.
    "feedback_injected": Operation("POST", f"{API}/feedback/injected", m.InjectedResponse,
                                   safe=True),
    "feedback_explicit": Operation("POST", f"{API}/feedback/explicit", m.ExplicitResponse,
                                   safe=True),
    "feedback_cited": Operation("POST", f"{API}/feedback/cited", m.CitedResponse, safe=True),
    # Review queues and decisions (memory:review).
    "review_queue": Operation("GET", f"{API}/review/queue", m.ReviewQueueResponse, safe=True),
    "decide_assertion": Operation("POST", f"{API}/review/assertions/{{assertion_id}}/decision",
                                  m.DecisionResponse),
    "decide_bulk": Operation("POST", f"{API}/review/assertions/bulk", m.DecisionResponse),
    "resolve_conflict": Operation("POST", f"{API}/review/conflicts/{{conflict_id}}/resolution",
                                  m.DecisionResponse),
    "decide_wiki": Operation("POST", f"{API}/review/wiki/{{proposal_id}}/decision",
                             m.DecisionResponse),
    # Events (a cursor), the user's profile.
    "events": Operation("GET", f"{API}/events", m.EventListResponse, safe=True),
    "profile": Operation("GET", f"{API}/profile", m.ProfileResponse, safe=True),
    # Users and channels (admin; channels also the runtime).
    "users": Operation("GET", f"{API}/users", m.UsersResponse, safe=True),
    "set_sharing": Operation("PUT", f"{API}/users/sharing", m.UserOut, safe=True),
    "channel_members": Operation("GET", f"{API}/channels/members", m.ChannelMembersResponse,
                                 safe=True),
    "add_channel_member": Operation("POST", f"{API}/channels/members", m.ChannelMemberChange,
                                    safe=True),
    "remove_channel_member": Operation("DELETE", f"{API}/channels/members",
                                       m.ChannelMemberChange, safe=True),
    # Operations (admin).
    "status": Operation("GET", f"{INTERNAL}/status", m.StatusResponse, safe=True),
    "reembed": Operation("POST", f"{INTERNAL}/reembed", m.ReembedResponse),
    "retention": Operation("POST", f"{INTERNAL}/retention", m.RetentionResponse),
    "sync_workspace": Operation("POST", f"{INTERNAL}/workspace/sync", m.WorkspaceSyncResponse),
    "erase_user": Operation("POST", f"{INTERNAL}/users/erase", m.ErasureResponse),
    "user_profile": Operation("GET", f"{INTERNAL}/profile", m.ProfileResponse, safe=True),
    "dreams": Operation("GET", f"{INTERNAL}/dreams", m.DreamListResponse, safe=True),
    "launch_dream": Operation("POST", f"{INTERNAL}/dreams", m.DreamLaunchResponse),
    "dream": Operation("GET", f"{INTERNAL}/dreams/{{dream_id}}", m.DreamDetailResponse,
                       safe=True),
    "rollback_dream": Operation("POST", f"{INTERNAL}/dreams/{{dream_id}}/rollback",
                                m.DreamRollbackResponse),
    "webhooks": Operation("GET", f"{INTERNAL}/webhooks", m.WebhookListResponse, safe=True),
    "add_webhook": Operation("POST", f"{INTERNAL}/webhooks", m.WebhookOut),
    "remove_webhook": Operation("DELETE", f"{INTERNAL}/webhooks/{{webhook_id}}", m.WebhookOut),
    "webhook_deliveries": Operation("GET", f"{INTERNAL}/webhooks/{{webhook_id}}/deliveries",
                                    m.WebhookDeliveriesResponse, safe=True),
}

# The probes answer plain documents, not models: the client reads them as JSON.
PROBES = {"healthz": "/healthz", "readyz": "/readyz"}


def camel(name: str) -> str:
    """``min_score`` -> ``minScore``: a keyword argument's name in the query string."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, list | tuple | set | frozenset):
        return ",".join(str(v) for v in value)
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def context_of(context: m.CallerContext | dict[str, Any] | None) -> m.CallerContext | None:
    """A caller context given as the model or as a dict (snake_case or camelCase keys)."""
    if context is None or isinstance(context, m.CallerContext):
        return context
    return m.CallerContext.model_validate(context)


def query_of(context: m.CallerContext | dict[str, Any] | None = None,
             **values: Any) -> dict[str, str]:
    """The query string of a read: the caller context's fields and the named values, by
    their API names, without the ones left out (None)."""
    params = {camel(k): _query_value(v) for k, v in values.items() if v is not None}
    ctx = context_of(context)
    if ctx is not None:
        params.update({k: str(v) for k, v in
                       ctx.model_dump(by_alias=True, exclude_none=True).items()})
    return params


def body_of(model: BaseModel) -> Any:
    """A request model as the API reads it (its JSON names, the fields left out omitted)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def is_safe(op: Operation, body: BaseModel | None) -> bool:
    return op.safe(body) if callable(op.safe) else op.safe
