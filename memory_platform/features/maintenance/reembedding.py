"""Re-embedding after a model switch: chunks, assertions, graph entities and claims converted
to the active generation batch by batch, while writes and searches go on.

The pieces have their homes below: the switch itself (new generation, indexes, active) in
``projection/switch.py``, the chunk and assertion backlog in ``projection/reembed.py``, the
graph's backlog and its content-hash rules in ``graph/embed.py``. This module (above both
``projection`` and ``graph``) drives them as one backlog with per-kind counts:

* :func:`convert` works the backlog off, graph items first (few, and each is recallable),
  then assertions, then chunks; every batch is its own committed unit (``db/units.py``), so
  nothing is held between batches and a write never waits for more than one batch's rows;
* :func:`reembed_step` is the bounded run a Dagster asset materialises after each Dream
  (numeric counts for the asset's metadata);
* :func:`backlog_by_kind` is the sensor's question: how much is left.

A provider failure ends the run with its error and leaves the failing batch untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg

from memory_platform.features.graph.embed import embed_graph_items, embedding_backlog
from memory_platform.features.projection.reembed import (
    BACKLOG_COUNT_CAP,
    ReembedResult,
    backlog,
    reembed_backfill,
)
from memory_platform.features.projection.switch import switch_generation
from memory_platform.foundation.db.units import commit_if_idle, committed_unit, require_idle
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider, key_of
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import Generation, active_generation

KINDS = ("chunks", "assertions", "entities", "claims")
# Graph items are counted by listing their ids: an estimate above this many.
GRAPH_COUNT_CAP = 100_000


def _zero() -> dict[str, int]:
    return dict.fromkeys(KINDS, 0)


@dataclass
class Conversion:
    """What a conversion run did: rows converted and the backlog left, per kind."""
    instance_key: str
    generation_key: str
    converted: dict[str, int] = field(default_factory=_zero)
    remaining: dict[str, int] = field(default_factory=_zero)
    batches: int = 0
    error: str | None = None

    @property
    def total_converted(self) -> int:
        return sum(self.converted.values())

    @property
    def total_remaining(self) -> int:
        return sum(self.remaining.values())

    def metadata(self) -> dict[str, int]:
        """Numeric counts only (a Dagster asset's metadata, plotted over time)."""
        return {**{f"converted_{k}": v for k, v in self.converted.items()},
                **{f"remaining_{k}": v for k, v in self.remaining.items()},
                "converted": self.total_converted, "remaining": self.total_remaining,
                "batches": self.batches, "provider_failed": int(self.error is not None)}


def backlog_by_kind(conn: psycopg.Connection, generation: Generation) -> dict[str, int]:
    """Rows of ``generation``'s instance still without a vector of it, per kind (chunks and
    assertions counted to ``BACKLOG_COUNT_CAP``, graph items to ``GRAPH_COUNT_CAP``)."""
    chunks, assertions = backlog(conn, generation, BACKLOG_COUNT_CAP)
    entities, claims = embedding_backlog(conn, generation.instance_key,
                                         generation.generation_key, GRAPH_COUNT_CAP)
    commit_if_idle(conn)
    return {"chunks": chunks, "assertions": assertions, "entities": len(entities),
            "claims": len(claims)}


def has_backlog(conn: psycopg.Connection, generation: Generation) -> bool:
    """Whether any row of ``generation``'s instance still lacks a vector of it (each count
    stops at one row: cheap enough for a sensor tick)."""
    chunks, assertions = backlog(conn, generation, 1)
    entities, claims = embedding_backlog(conn, generation.instance_key,
                                         generation.generation_key, 1)
    commit_if_idle(conn)
    return bool(chunks or assertions or entities or claims)


def target_generation(conn: psycopg.Connection, settings: Settings, instance_key: str,
                      provider: EmbeddingProvider) -> Generation:
    """The instance's generation of ``provider``: the active one, or switched to (indexes
    built concurrently) when another generation is active."""
    active = active_generation(conn, instance_key)
    commit_if_idle(conn)
    if active is not None and active.generation_key == key_of(provider):
        return active
    return switch_generation(conn, settings, provider, instance_key=instance_key)


def _graph_batch(conn: psycopg.Connection, settings: Settings, provider: EmbeddingProvider,
                 result: Conversion) -> bool:
    """One batch of graph items (entities first, then claims). False when there was nothing
    to do or the provider failed (``result.error``)."""
    with committed_unit(conn):
        entity_ids, claim_ids = embedding_backlog(conn, result.instance_key,
                                                  result.generation_key,
                                                  settings.graph_embed_batch)
    if not entity_ids and not claim_ids:
        return False
    done = embed_graph_items(conn, settings, result.instance_key, entity_ids, claim_ids,
                             embedder=provider)
    if done["deferred"]:
        result.error = (f"the embedding provider failed; {done['deferred']} graph items "
                        "are left for the next run")
    # Items are embedded in their listed order, entities first.
    handled = done["embedded"] + done["skipped"]
    entities = min(handled, len(entity_ids))
    result.converted["entities"] += entities
    result.converted["claims"] += handled - entities
    result.batches += 1
    return handled > 0 and not done["deferred"]


def convert(conn: psycopg.Connection, settings: Settings, instance_key: str | None = None, *,
            embedder: EmbeddingProvider | None = None, batches: int | None = None,
            progress: Callable[[Conversion], None] | None = None) -> Conversion:
    """Convert the instance's backlog to ``embedder``'s generation (default the configured
    provider; switched to first when another generation is active), at most ``batches``
    batches (None: until the backlog is empty, a batch converts nothing because other workers
    hold the rest, or the provider fails). Batches hold ``reembed_batch_size`` assertions or
    chunks, or ``graph_embed_batch`` graph items, and each commits on its own; ``progress``
    sees the totals after every batch (the moment between two batches). Needs an idle
    connection. Answers the totals and the backlog left per kind."""
    require_idle(conn, "convert")
    provider = embedder or get_provider(settings)
    instance = instance_key or settings.instance_key
    generation = target_generation(conn, settings, instance, provider)
    result = Conversion(instance, generation.generation_key)

    def room() -> int | None:
        return None if batches is None else batches - result.batches

    while room() is None or room() > 0:
        if not _graph_batch(conn, settings, provider, result):
            break
        if progress:
            progress(result)
    size = settings.reembed_batch_size
    while result.error is None and (room() is None or room() > 0):
        base = dict(result.converted), result.batches
        # Bounded: one batch's rows per run; a run may spend them on the last assertions
        # and the first chunks (two committed units), so the rows, not the units, are bounded.
        left = room()

        def seen(run: ReembedResult, base=base) -> None:
            result.converted["assertions"] = base[0]["assertions"] + run.assertions_embedded
            result.converted["chunks"] = base[0]["chunks"] + run.chunks_converted
            result.batches = base[1] + run.batches
            if progress:
                progress(result)

        run = reembed_backfill(conn, settings, embedder=provider, instance_key=instance,
                               batch_size=size, progress=seen,
                               limit=settings.reembed_run_limit if left is None else size)
        result.error = run.error
        if run.error or not run.converted or not run.remaining:
            break
    result.remaining = backlog_by_kind(conn, generation)
    return result


def reembed_step(conn: psycopg.Connection, settings: Settings, instance_key: str, *,
                 batches: int = 5, embedder: EmbeddingProvider | None = None
                 ) -> dict[str, int]:
    """The bounded re-embedding run of a Dagster asset (after each Dream, or a backlog
    sensor): at most ``batches`` batches' worth of the instance's backlog (``batches`` x
    ``graph_embed_batch`` graph items or x ``reembed_batch_size`` rows). Numeric counts:
    ``converted_<kind>`` and ``remaining_<kind>`` for chunks, assertions, entities and
    claims, their totals, ``batches`` and ``provider_failed`` (0 or 1)."""
    return convert(conn, settings, instance_key, embedder=embedder,
                   batches=max(1, batches)).metadata()
