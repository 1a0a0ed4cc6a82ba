"""/api/v1/knowledge: the knowledge graph, read-only (hybrid search, one entity, its
neighbours, one claim's provenance). Thin handlers over ``memory_platform.features.graph``; the
caller's context is resolved on the request's connection (``with_caller``), so every read
sees exactly what the visibility rule opens to that caller."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from api.auth import with_caller
from api.operation import API, READ, Operation, Section
from api.schemas.knowledge import (
    KnowledgeClaimOut,
    KnowledgeEdgeOut,
    KnowledgeEntityOut,
    KnowledgeEntityResponse,
    KnowledgeExplainResponse,
    KnowledgeNeighborsResponse,
    KnowledgeReadParams,
    KnowledgeSearch,
    KnowledgeSearchResponse,
    NeighborParams,
)
from memory_platform.features.graph.block import render_knowledge_block
from memory_platform.features.graph.reads import explain_claim, get_entity, neighbors
from memory_platform.features.graph.search import KnowledgeResult, knowledge_search
from memory_platform.features.retrieval.question import embed_question


def search_response(result: KnowledgeResult) -> KnowledgeSearchResponse:
    body = result.as_json()
    return KnowledgeSearchResponse(
        entities=[KnowledgeEntityOut.model_validate(_snake(e)) for e in body["entities"]],
        claims=[KnowledgeClaimOut.model_validate(_snake(c)) for c in body["claims"]],
        edges=[KnowledgeEdgeOut.model_validate(_snake(e)) for e in body["edges"]],
        lexical_only=result.lexical_only, block=render_knowledge_block(result))


def _snake(item: dict) -> dict:
    """camelCase keys of graph/search.py's JSON -> the models' field names."""
    return {"".join(f"_{ch.lower()}" if ch.isupper() else ch for ch in key): value
            for key, value in item.items()}


async def search(request: Request, body: KnowledgeSearch) -> KnowledgeSearchResponse:
    state = request.state
    # The question is embedded before a connection is taken (retrieval/question.py).
    question = await run_in_threadpool(embed_question, state.embedder, body.query)
    result = await with_caller(
        request, body.context,
        lambda conn, ctx: knowledge_search(conn, state.settings, ctx, body.query,
                                           limit=body.limit, question=question))
    return search_response(result)


async def entity(request: Request, params: KnowledgeReadParams) -> KnowledgeEntityResponse:
    found = await with_caller(request, params, get_entity, request.path_params["entity_id"])
    return KnowledgeEntityResponse.model_validate(_snake(found))


async def entity_neighbors(request: Request,
                           params: NeighborParams) -> KnowledgeNeighborsResponse:
    found = await with_caller(request, params, neighbors, request.path_params["entity_id"],
                              depth=params.depth, limit=params.limit)
    return KnowledgeNeighborsResponse.model_validate(found)


async def explain(request: Request, params: KnowledgeReadParams) -> KnowledgeExplainResponse:
    found = await with_caller(request, params, explain_claim, request.path_params["claim_id"])
    return KnowledgeExplainResponse.model_validate(_snake(found))


ROUTES = (Section(API, (
    Operation("POST", "/knowledge/search", search,
              "Hybrid knowledge-graph search: entities, claims, expanded edges", READ,
              body=KnowledgeSearch, response=KnowledgeSearchResponse),
    Operation("GET", "/knowledge/entities/{entity_id}", entity,
              "One graph entity with its current claims and edges (404: unknown or not "
              "visible)", READ, query=KnowledgeReadParams,
              response=KnowledgeEntityResponse),
    Operation("GET", "/knowledge/entities/{entity_id}/neighbors",
              entity_neighbors,
              "The entities within one or two edges of an entity", READ,
              query=NeighborParams, response=KnowledgeNeighborsResponse),
    Operation("GET", "/knowledge/claims/{claim_id}/explain", explain,
              "One claim's source refs (currently supported or not) and evidence", READ,
              query=KnowledgeReadParams,
              response=KnowledgeExplainResponse),
)),)
