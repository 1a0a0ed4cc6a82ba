"""Which exact model extracts the graph, and one extraction of one batch with it.

Resolution (first non-empty wins; the source is kept with the name for logs and run stats):

1. ``settings_graph``: ``MEMORY_GRAPH_MODEL``, the operator's explicit model for the graph
   and the consolidation judge (docs/policy.md: kept on purpose beside the specification);
2. ``dream``: the exact model of the Dream the work follows, when there is one: the chain
   after a Dream "receives that exact same model reference", as the specification says
   (issue 32.9), instead of resolving one of its own;
3. ``app_settings``: the instance's persisted Dreaming model (``memory_dreaming_model``);
4. ``settings``: ``MEMORY_MAINTENANCE_MODEL``;
5. ``prior_dream``: the exact model of the instance's last successful (completed or partial),
   non-dry-run Dream;
6. ``default``: ``MEMORY_MAINTENANCE_DEFAULT_MODEL``.

The name is used exactly (specification: "always with provider fallback disabled"):
``extractive`` is the offline extractor (``offline.py``; no client), anything else an
OpenAI-compatible client of exactly that model. A model that cannot be reached, answers as
another model, or fails, keeps the work retryable (:class:`GraphWorkRetryable`); no other
model or provider is ever tried instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from memory_platform.features.graph import contract, offline
from memory_platform.features.graph.render import missing_sources, render_block
from memory_platform.features.graph.types import Extraction, GraphBatch, GraphWorkRetryable
from memory_platform.features.graph.validate import check_batch, validate_extraction
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import JsonRequest, MaintenanceModel, ModelError
from memory_platform.shared.llm.selection import (
    OFFLINE_MODEL,
    http_model_client,
    normalise_model_name,
    read_dreaming_model,
)

SOURCES = ("settings_graph", "dream", "app_settings", "settings", "prior_dream", "default")
# Deadline of one extraction request (retries included) unless the tests' override is set.
# ModelError codes that mean "the answer is not the contract"; every other code means the
# model could not be used (unreachable, refused, timed out, another model answered).
_MALFORMED_CODES = frozenset({"malformed_output", "truncated", "length", "empty"})

_THE_DREAM = """
    SELECT model FROM agent_memory_dreams
     WHERE id = %s AND model IS NOT NULL AND btrim(model) <> ''
"""

_PRIOR_DREAM = """
    SELECT model FROM agent_memory_dreams
     WHERE instance_key = %s AND status IN ('completed', 'partial') AND NOT dry_run
       AND model IS NOT NULL AND btrim(model) <> ''
     ORDER BY finished_at DESC NULLS LAST, started_at DESC, id
     LIMIT 1
"""


@dataclass(frozen=True)
class GraphModel:
    """The resolved model: its exact name, where the name came from, and its client
    (None: the offline extractor)."""

    name: str
    source: str
    client: MaintenanceModel | None

    @property
    def offline(self) -> bool:
        return self.client is None


def _unavailable(message: str, **detail: Any) -> GraphWorkRetryable:
    return GraphWorkRetryable("model_unavailable", message, [detail] if detail else [])


def resolve_model_name(conn: psycopg.Connection, settings: Settings,
                       instance_key: str, dream_id: Any = None) -> tuple[str, str]:
    """(model, source) by the order in the module docstring (``dream_id``: the Dream the
    work follows)."""
    try:
        name = normalise_model_name(settings.graph_model)
        if name:
            return name, "settings_graph"
        row = conn.execute(_THE_DREAM, (dream_id,)).fetchone() if dream_id else None
        name = normalise_model_name(row[0]) if row else ""
        if name:
            return name, "dream"
        name = normalise_model_name(read_dreaming_model(conn, settings, instance_key))
        if name:
            return name, "app_settings"
        name = normalise_model_name(settings.maintenance_model)
        if name:
            return name, "settings"
        row = conn.execute(_PRIOR_DREAM, (instance_key,)).fetchone()
        name = normalise_model_name(row[0]) if row else ""
        if name:
            return name, "prior_dream"
        return normalise_model_name(settings.maintenance_default_model), "default"
    except ValueError as exc:
        raise _unavailable(f"the configured graph model is not a model reference: {exc}") \
            from None


def resolve_graph_model(conn: psycopg.Connection, settings: Settings,
                        instance_key: str, dream_id: Any = None) -> GraphModel:
    """The exact graph model of ``instance_key`` (of the Dream ``dream_id`` when it has one)
    and its client, or ``model_unavailable`` (nothing named, no credentials, an invalid
    name)."""
    name, source = resolve_model_name(conn, settings, instance_key, dream_id)
    if not name:
        raise _unavailable("no graph model is configured")
    if name == OFFLINE_MODEL:
        return GraphModel(name, source, None)
    try:   # the Dreaming phase deadline (dream_phase_timeout_minutes), as every Dream phase
        client = http_model_client(settings, name, offline_name=OFFLINE_MODEL)
    except ModelError as exc:
        raise _unavailable(exc.reason, model=name, source=source) from None
    return GraphModel(name, source, client)


def _request(batch: GraphBatch, block: str, settings: Settings) -> JsonRequest:
    return JsonRequest(system=contract.system_prompt(settings), user=block,
                       schema=contract.graph_schema(settings), schema_name=contract.SCHEMA_NAME,
                       max_completion_tokens=settings.dream_completion_tokens,
                       topic=batch.partition_key)


def extract(batch: GraphBatch, model: GraphModel, settings: Settings) -> Extraction:
    """One validated extraction of ``batch`` with exactly ``model`` (module docstring);
    raises :class:`GraphWorkRetryable` whenever the batch cannot be applied now."""
    check_batch(batch)
    if not batch.sources:
        return Extraction([], [], [], model=model.name)
    block = render_block(batch, settings)
    missing = missing_sources(block, batch)
    if missing:
        raise GraphWorkRetryable("incomplete_block", "the rendered block lost grouped sources",
                                 [{"memoryId": str(m)} for m in missing[:20]])
    if model.client is None:
        extraction = validate_extraction(offline.extract(batch, settings), batch, settings)
        extraction.model = model.name
        extraction.usage = {"sources": len(batch.sources), "blockChars": len(block)}
        return extraction
    try:
        completion = model.client.complete_json(_request(batch, block, settings))
    except ModelError as exc:
        code = "malformed_output" if exc.code in _MALFORMED_CODES else "model_unavailable"
        raise GraphWorkRetryable(code, f"model {model.name}: {exc.reason}",
                                 [{"modelError": exc.code, "model": model.name}]) from None
    if completion.model != model.name:
        raise _unavailable("the answer names another model than the one requested",
                           requested=model.name, answered=completion.model)
    extraction = validate_extraction(completion.data, batch, settings)
    extraction.model = model.name
    extraction.usage = {**completion.usage, "sources": len(batch.sources),
                        "blockChars": len(block), "attempts": completion.attempts,
                        "effectiveModel": completion.effective_model}
    return extraction
