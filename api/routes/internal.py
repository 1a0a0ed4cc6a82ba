"""/internal/memory: the operator's status report, one bounded re-embedding batch (chunks,
assertions, graph entities and claims), one
retention sweep and a forced workspace sync, all of the admin key's own instance."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from api.auth import api_key
from api.launching import erase_in_orchestrator
from api.operation import ADMIN, INTERNAL, Operation, Section
from api.schemas.internal import (
    ErasureRequest,
    ErasureResponse,
    ReembedRequest,
    ReembedResponse,
    RetentionRequest,
    RetentionResponse,
    StatusResponse,
    WorkspaceSyncResponse,
)
from api.threads import with_connection
from memory_platform.features.graph.embed import reembed_graph
from memory_platform.features.maintenance.erasure import erase_user
from memory_platform.features.maintenance.retention import retention_sweep
from memory_platform.features.maintenance.workspace import sync_workspace_cached
from memory_platform.features.operator_status import memory_status
from memory_platform.features.projection.reembed import reembed_backfill
from memory_platform.foundation.errors import InvalidInput


async def status(request: Request) -> StatusResponse:
    report = await with_connection(request, memory_status, api_key(request).instance_key)
    return StatusResponse.model_validate(report)


async def reembed(request: Request, body: ReembedRequest) -> ReembedResponse:
    state = request.state
    instance = api_key(request).instance_key
    result = await with_connection(request, reembed_backfill, state.settings,
                                   limit=body.limit, embedder=state.embedder,
                                   instance_key=instance)
    graph = {"embedded": 0, "deferred": 0}
    if not result.error:   # graph entities and claims of the same generation, bounded alike
        graph = await with_connection(request, reembed_graph, state.settings, instance,
                                      embedder=state.embedder,
                                      limit=body.limit or state.settings.reembed_run_limit)
    return ReembedResponse.model_validate({**result.as_dict(),
                                           "graph_embedded": graph["embedded"],
                                           "graph_deferred": graph["deferred"]})


async def retention(request: Request, body: RetentionRequest) -> RetentionResponse:
    """One retention sweep of the admin key's instance (or one audience partition of it)."""
    state = request.state
    audience = None
    if body.audience_kind or body.audience_key:
        if not (body.audience_kind and body.audience_key):
            raise InvalidInput("audienceKind and audienceKey go together",
                               details={"field": "audienceKey"})
        audience = (body.audience_kind, body.audience_key)
    result = await with_connection(request, retention_sweep, state.settings,
                                   instance_key=api_key(request).instance_key,
                                   audience=audience, dry_run=body.dry_run,
                                   prune_context=body.prune_context)
    return RetentionResponse.model_validate(result.as_json())


async def workspace_sync(request: Request) -> WorkspaceSyncResponse:
    """A forced sync of MEMORY_WORKSPACE_DIR into the admin key's instance."""
    state = request.state
    directory = state.settings.workspace_dir
    if directory is None:
        raise InvalidInput("no workspace is configured: set MEMORY_WORKSPACE_DIR",
                           details={"setting": "MEMORY_WORKSPACE_DIR"})
    result = await with_connection(request, sync_workspace_cached, state.settings,
                                   api_key(request).instance_key, directory, force=True,
                                   embedder=state.embedder)
    return WorkspaceSyncResponse.model_validate(result.as_dict())



async def erase(request: Request, body: ErasureRequest) -> ErasureResponse:
    """Erase one person from the admin key's instance; answers the erasure report (counts
    per table, no content). Keys of the person stop working within the key cache's
    lifetime (MEMORY_API_KEY_CACHE_SECONDS)."""
    key = api_key(request)
    report = await with_connection(request, erase_user, request.state.settings,
                                   key.instance_key, body.user_id,
                                   requested_by=f"api-key:{key.id}")
    dagster = await run_in_threadpool(erase_in_orchestrator, request.state.settings,
                                      key.instance_key, body.user_id)
    return ErasureResponse.model_validate({**report.as_dict(), "dagster": dagster})


ROUTES = (Section(INTERNAL, (
    Operation("GET", "/memory/status", status,
              "Memory, ledger, embedding, outbox status", ADMIN,
              response=StatusResponse),
    Operation("POST", "/memory/reembed", reembed, "One bounded re-embedding batch",
              ADMIN, body=ReembedRequest, response=ReembedResponse),
    Operation("POST", "/memory/retention", retention,
              "One retention sweep (superseded/archived rows past the window, evidence "
              "caps)", ADMIN, body=RetentionRequest,
              response=RetentionResponse),
    Operation("POST", "/memory/workspace/sync", workspace_sync,
              "Sync MEMORY_WORKSPACE_DIR now", ADMIN,
              response=WorkspaceSyncResponse),
    Operation("POST", "/memory/users/erase", erase,
              "Erase a person: every row of theirs, re-derived what others support",
              ADMIN, body=ErasureRequest, response=ErasureResponse),
)),)
