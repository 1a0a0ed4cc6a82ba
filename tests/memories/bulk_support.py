"""Helpers of the bulk-import tests: an import with the test defaults, the rows a write left
(for comparing an import with one-by-one writes), and a batch that exercises dedup, the
ledger decisions and the loaders at once."""

from __future__ import annotations

from typing import Any

from psycopg.rows import dict_row

from memory_platform.features.memories.bulk import import_memories
from memory_platform.features.memories.bulk.reader import context_from_row
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

EMBEDDER = HashEmbeddingProvider(32)


def run(conn, settings, instance, rows, **kwargs):
    kwargs.setdefault("embedder", EMBEDDER)
    kwargs.setdefault("rebuild_index", False)
    return import_memories(conn, settings, context_from_row(instance), rows, **kwargs)


def memories(conn, instance) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        # (the audience too: concurrent loaders may store same-text rows in another order)
        return cur.execute("SELECT * FROM agent_memories WHERE instance_key = %s ORDER BY"
                           " content, subject_key, visibility_scope, audience_key",
                           (instance,)).fetchall()


def snapshot(conn, instance) -> list[dict[str, Any]]:
    """Every row a memory write produced, without ids, timestamps and the instance key."""
    def clean(row: dict[str, Any] | None) -> dict[str, Any] | None:
        if row is None:
            return None
        out = {}
        for key, value in row.items():
            if key in ("id", "created_at", "updated_at", "memory_id", "source_id",
                       "assertion_id", "generation_id", "instance_key", "source_key",
                       "activated_at", "content_tsv", "assertion_tsv"):
                continue
            if value == instance:
                value = "<instance>"
            if key == "source_locator":
                value = {k: v for k, v in value.items() if k != "memoryId"}
            if key == "embedding" and value is not None:
                value = [round(float(x), 6) for x in value.to_list()]
            out[key] = value
        return out

    found = []
    with conn.cursor(row_factory=dict_row) as cur:
        for memory in memories(conn, instance):
            source = cur.execute("SELECT * FROM agent_memory_sources WHERE id = %s",
                                 (memory["source_id"],)).fetchone()
            chunks = cur.execute("SELECT * FROM agent_memory_chunks WHERE memory_id = %s"
                                 " ORDER BY chunk_index", (memory["id"],)).fetchall()
            assertion = cur.execute("SELECT * FROM agent_memory_assertions WHERE id = %s",
                                    (memory["assertion_id"],)).fetchone()
            evidence = cur.execute("SELECT * FROM agent_memory_assertion_evidence"
                                   " WHERE assertion_id = %s", (memory["assertion_id"],)
                                   ).fetchall()
            reviews = cur.execute("SELECT decision, reviewer_kind, reason_code FROM"
                                  " agent_memory_assertion_reviews WHERE assertion_id = %s"
                                  " ORDER BY id", (memory["assertion_id"],)).fetchall()
            vectors = cur.execute("SELECT * FROM agent_memory_assertion_embeddings"
                                  " WHERE assertion_id = %s", (memory["assertion_id"],)
                                  ).fetchall()
            found.append({
                "memory": clean(memory), "source": clean(source),
                "chunks": [clean(c) for c in chunks], "assertion": clean(assertion),
                "evidence": sorted((clean(e) for e in evidence), key=repr), "reviews": reviews,
                "assertion_vectors": [clean(v) for v in vectors],
            })
    return found


LOADER_ROWS = [
    # an imported fact (pending), restated later by a person (activates it), repeated
    # exactly (dedup), and the same text with other subject refs (same assertion)
    {"content": "Nordlicht zahlt per Lastschrift.", "user_id": "anna", "visibility": "team",
     "source_type": "fact"},
    *[{"content": f"Notiz {i} zu Mandant M-{i % 7}.", "visibility": "workspace"}
      for i in range(10)],
    {"content": "Nordlicht zahlt per Lastschrift.", "user_id": "anna", "visibility": "team",
     "source_type": "fact", "trust_class": "human_direct", "subject_refs": {"mandantId": "M-1"}},
    {"content": "Notiz 3 zu Mandant M-3.", "visibility": "workspace"},
    {"content": "nordlicht  ZAHLT per Lastschrift.", "user_id": "anna", "visibility": "team",
     "source_type": "fact", "trust_class": "human_direct"},
    *[{"content": f"Fakt {i}: Ablage im Ordner {i}.", "user_id": f"u{i % 3}",
       "visibility": "team", "source_type": "fact", "trust_class": "human_direct"}
      for i in range(8)],
    {"content": "Fakt 2: Ablage im Ordner 2.", "user_id": "u2", "visibility": "team",
     "source_type": "fact"},
    {"content": "Notiz 9 zu Mandant M-2.", "visibility": "workspace",
     "subject_refs": {"mandantId": "M-9"}},
    {"content": "Notiz 9 zu Mandant M-2.", "visibility": "workspace"},
]
