"""What the graph is extracted from, and how it is cut into provider requests.

:func:`load_sources` reads the approved assertions an agent may be told (``ledger.recall.TOLD``)
that have an active recall row, in one statement: the graph never learns from candidates,
rejected, revoked, superseded or expired assertions, nor from an assertion whose recall row
is gone. The cited id (``memory_id``) is the assertion's projection row (``source_id IS
NULL``) when it has one, else the oldest active fact memory written with it.

:func:`plan_batches` groups the sources by (instance, audience kind, audience key): Personal,
Team and Channel evidence never share a request, and neither do two instances. Each group is
split in its order so that a batch holds at most ``graph_batch_max_sources`` sources and its
rendered block at most ``graph_batch_max_chars`` characters. A single source whose section
alone is larger than the cap gets a batch of its own: texts are never cut.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.graph.render import block_chars, render_source
from memory_platform.features.graph.types import GraphBatch, GraphSource
from memory_platform.foundation.settings import Settings
from memory_platform.shared.ledger.recall import TOLD

_LOAD = sql.SQL("""
    SELECT a.instance_key, a.id, m.id, a.assertion_text, a.assertion_type, a.confidence,
           a.audience_kind, a.audience_key, a.owner_user_id, a.subject_refs,
           a.valid_from, a.valid_to, a.dream_id
      FROM agent_memory_assertions a
      JOIN LATERAL (
            SELECT m.id
              FROM agent_memories m
             WHERE m.instance_key = a.instance_key
               AND m.assertion_id = a.id
               AND m.visibility_scope = a.audience_kind
               AND m.audience_key = a.audience_key
               AND m.memory_state = 'active'
             ORDER BY (m.source_id IS NULL) DESC, m.created_at, m.id
             LIMIT 1) m ON true
     WHERE a.instance_key = %(instance)s
       AND a.id = ANY(%(ids)s)
       AND {told}
     ORDER BY a.audience_kind, a.audience_key, a.created_at, a.id
""").format(told=TOLD)


def _refs(value: Any) -> dict[str, str]:
    """Subject refs as flat strings (the write path stores strings; anything else is
    skipped rather than guessed at)."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items()
            if isinstance(v, str | int | float) and not isinstance(v, bool)}


def load_sources(conn: psycopg.Connection, instance_key: str, assertion_ids: Iterable[UUID],
                 dream_ids: Mapping[UUID, Iterable[UUID]] | None = None) -> list[GraphSource]:
    """The told assertions among ``assertion_ids`` (of ``instance_key``) with an active
    recall row, ordered by audience, creation time, id. ``dream_ids`` maps an assertion id
    to the Dreams that support it in this build; the assertion's own ``dream_id`` is added."""
    ids = sorted(set(assertion_ids))
    if not ids:
        return []
    rows = conn.execute(_LOAD, {"instance": instance_key, "ids": ids}).fetchall()
    supporting = dream_ids or {}
    out = []
    for (instance, assertion_id, memory_id, text, kind, confidence, audience_kind,
         audience_key, owner, refs, valid_from, valid_to, own_dream) in rows:
        dreams = set(supporting.get(assertion_id, ()))
        if own_dream is not None:
            dreams.add(own_dream)
        out.append(GraphSource(
            instance_key=instance, assertion_id=assertion_id, memory_id=memory_id, text=text,
            assertion_type=kind, confidence=float(confidence), audience_kind=audience_kind,
            audience_key=audience_key, owner_user_id=owner, subject_refs=_refs(refs),
            valid_from=valid_from, valid_to=valid_to,
            dream_ids=tuple(sorted(dreams, key=str))))
    return out


def _group_key(source: GraphSource) -> tuple[str, str, str]:
    return (source.instance_key, source.audience_kind, source.audience_key)


def plan_batches(sources: Sequence[GraphSource], settings: Settings) -> list[GraphBatch]:
    """One or more batches per (instance, audience kind, audience key), in key order; the
    sources of a group keep their order (see the module docstring for the caps)."""
    groups: dict[tuple[str, str, str], list[GraphSource]] = {}
    for source in sources:
        groups.setdefault(_group_key(source), []).append(source)
    batches: list[GraphBatch] = []
    for key in sorted(groups):
        instance, kind, audience = key
        current: list[GraphSource] = []
        sections: list[str] = []
        for source in groups[key]:
            section = render_source(source)
            fits = (len(current) < settings.graph_batch_max_sources
                    and block_chars(kind, [*sections, section]) <= settings.graph_batch_max_chars)
            if current and not fits:
                batches.append(GraphBatch(instance, kind, audience, tuple(current)))
                current, sections = [], []
            current.append(source)
            sections.append(section)
        if current:
            batches.append(GraphBatch(instance, kind, audience, tuple(current)))
    return batches
