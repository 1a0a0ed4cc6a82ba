"""Knowledge entity merging, the second consolidation pass (specification, "Consolidation").

Two passes over the active entities of one exact (instance, visibility scope, audience key)
partition, never across instance, type or partition:

1. deterministic: same ``entity_type`` and a shared name, a name being the normalised label
   or a normalised alias (``graph.store.normalized_label``: lower, trimmed, whitespace
   collapsed, diacritics removed), so "Müller" with alias "Mueller" meets "mueller";
2. vector: same type, entity vectors of the active generation at least
   ``consolidation_entity_similarity_threshold`` alike (at most
   ``consolidation_max_entity_pairs`` pairs), judged by the maintenance model in strict-JSON
   batches; the offline model (no client) says "same" only for equal normalised labels, so
   offline this pass finds nothing the first one missed.

Code decides, the model only proposes: a pair whose non-null linked records differ is
refused whatever anyone says (:func:`refusal_reason`), and an alias the model returns must
occur in the two entities' labels, aliases or claim texts (else it is dropped).

A merge is one transaction with a before-image audit row before every mutation, so an
operator can reverse it by hand (:mod:`.entity_merge` says how the survivor is chosen and what
moves).

A dry run makes the same queries, judgments and plans and returns them (``mapping`` of each
decision is the proposal) without writing; chained proposals are planned from the rows as
stored, so a later proposal does not see an earlier one's alias union.

This module is the step (both passes); the pieces are :mod:`.entity_rows` (the partition's
entities, the refusal and survivor rules), :mod:`.entity_merge` (one merge planned and
applied) and :mod:`.entity_judge` (the vector pass's candidates and the model's judgment).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg

from memory_platform.features.consolidation.entity_judge import (
    grounded_aliases,
    judge,
    vector_candidates,
)
from memory_platform.features.consolidation.entity_merge import merge_pair
from memory_platform.features.consolidation.entity_rows import (
    EntityRow,
    load_entities,
    next_name_pair,
    refusal_reason,
    survivor_of,
)
from memory_platform.features.consolidation.types import (
    ConsolidationRetryable,
    MergeDecision,
    Partition,
    StepResult,
)
from memory_platform.features.graph.model import GraphModel
from memory_platform.foundation.db.units import commit_if_idle, require_idle
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.generations import active_generation

__all__ = ["EntityRow", "grounded_aliases", "load_entities", "merge_entities", "refusal_reason"]


def _diagnostic(result: StepResult, code: str, message: str, **detail: Any) -> None:
    result.diagnostics.append({"step": "entities", "code": code, "message": message,
                               **detail})


def _deterministic_pass(conn, partition, entities, decided, result, *, dry_run, dream_id):
    while (pair := next_name_pair(entities, decided)) is not None:
        decided.add(frozenset((pair[0].id, pair[1].id)))
        result.pairs_considered += 1
        shared = sorted(pair[0].names() & pair[1].names())
        result.merges.append(merge_pair(
            conn, partition, pair, "deterministic",
            f"shared normalised name: {shared[0]}", (), result,
            dry_run=dry_run, dream_id=dream_id))


def _vector_pass(conn, settings, partition, model, entities, decided, result, *, dry_run,
                 dream_id):
    generation = active_generation(conn, partition.instance_key)
    if generation is None:
        commit_if_idle(conn)
        _diagnostic(result, "no_active_generation",
                    "the instance has no active embedding generation: no vector pass")
        return
    pairs = vector_candidates(conn, settings, partition, entities, generation.generation_key,
                              decided)
    commit_if_idle(conn)
    result.pairs_considered += len(pairs)
    for pair in [p for p in pairs if refusal_reason(p.left, p.right)]:
        decided.add(frozenset((pair.left.id, pair.right.id)))   # never shown to the model
        survivor, loser = survivor_of(pair.left, pair.right)
        result.merges.append(MergeDecision(
            survivor.id, loser.id, survivor.label, loser.label, "vector", False,
            f"refused: {refusal_reason(pair.left, pair.right)}"))
    pairs = [p for p in pairs if not refusal_reason(p.left, p.right)]
    size = settings.consolidation_max_pairs_per_batch
    for start in range(0, len(pairs), size):
        batch = pairs[start:start + size]
        try:
            judgments = judge(model, batch, settings, partition)
        except ConsolidationRetryable as exc:
            _diagnostic(result, exc.code, exc.message, problems=exc.problems,
                        model=model.name, pairs=[[str(p.left.id), str(p.right.id)]
                                                 for p in batch])
            continue
        for pair in batch:
            decided.add(frozenset((pair.left.id, pair.right.id)))
            verdict = judgments[pair.pair_id]
            if not verdict.same:
                survivor, loser = survivor_of(pair.left, pair.right)
                result.merges.append(MergeDecision(
                    survivor.id, loser.id, survivor.label, loser.label, "vector", False,
                    f"not the same ({model.name}): {verdict.reason}"))
                continue
            if not (pair.left.active and pair.right.active):
                continue       # merged into another entity earlier in this batch
            kept, dropped = grounded_aliases(verdict.aliases, pair.texts())
            if dropped:
                _diagnostic(result, "alias_dropped", "aliases that occur nowhere were dropped",
                            aliases=dropped, pair=[str(pair.left.id), str(pair.right.id)])
            result.merges.append(merge_pair(
                conn, partition, (pair.left, pair.right), "vector",
                f"{model.name} (similarity {pair.similarity:.3f}): {verdict.reason}", kept,
                result, dry_run=dry_run, dream_id=dream_id))


def merge_entities(conn: psycopg.Connection, settings: Settings, partition: Partition,
                   model: GraphModel | None, *, dry_run: bool = False,
                   dream_id: UUID | None = None) -> StepResult:
    """Both merge passes over ``partition`` (module docstring). Commits one unit per merge,
    so call it outside a transaction; the model is called with none open. ``model`` None
    skips the vector pass (a diagnostic says so). ``changed_entity_ids`` are the survivors
    the caller re-embeds (``graph.embed.embed_graph_items``)."""
    require_idle(conn, "merge_entities")
    result = StepResult()
    entities = load_entities(conn, partition)
    commit_if_idle(conn)
    decided: set[frozenset[UUID]] = set()
    _deterministic_pass(conn, partition, entities, decided, result, dry_run=dry_run,
                        dream_id=dream_id)
    if model is None:
        _diagnostic(result, "no_model", "no maintenance model: no vector pass")
    else:
        _vector_pass(conn, settings, partition, model, entities, decided, result,
                     dry_run=dry_run, dream_id=dream_id)
    return result
