"""The ledger and projection tables as external assets.

They are written by the API and by the maintenance assets; declaring them lets the asset
graph show what each Dream run reads and writes."""

from dagster import AssetSpec

LEDGER_GROUP = "memory_ledger"

_TABLES = {
    "agent_memories": "Retrieval projections: one row per document, fact, flush, summary or "
    "approved assertion projection.",
    "agent_memory_chunks": "Chunked retrieval rows with embeddings and full text.",
    "agent_memory_sources": "Immutable source envelopes (audience, trust class, content hash).",
    "agent_memory_assertions": "Canonical atomic facts with lifecycle, audience and lineage.",
    "agent_memory_assertion_evidence": "Verbatim evidence excerpts linking sources to assertions.",
    "agent_memory_assertion_reviews": "Append-only review decisions (human, policy, curator).",
    "agent_memory_ingestion_outbox": "Idempotent projection work keyed by instance.",
    "wiki_change_proposals": "Draft Wiki proposals awaiting human review.",
    "agent_knowledge_entities": "Knowledge graph nodes.",
    "agent_knowledge_claims": "Knowledge graph claims (subject, predicate, object).",
}

ledger_tables = [
    AssetSpec(key=table, description=text, group_name=LEDGER_GROUP, kinds={"postgres"})
    for table, text in _TABLES.items()
]
