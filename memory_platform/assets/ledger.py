"""The ledger and projection tables as external assets.

They are written by the API and by the maintenance assets; declaring them lets the asset
graph show what each Dream run reads and writes. A table a Dream reads is drawn upstream of
``dream_inputs``; a table only Dreams (and the API) write is drawn downstream of the Dream
asset that writes it. Tables that are both read and written (``agent_memories``, sources,
assertions, evidence) can only be drawn upstream (a cycle otherwise); each Dream
materialisation names every table it writes in its ``writes`` metadata.
"""

from dagster import AssetSpec

from memory_platform.orchestration.feature_definitions import FeatureDefinitions
from memory_platform.orchestration.keys import (
    ASSERTION_PROJECTIONS,
    DREAM_ASSERTIONS,
    DREAM_INPUTS,
    DREAM_PROPOSALS,
    KNOWLEDGE_GRAPH,
    OUTBOX_TABLE,
    WIKI_PROPOSALS,
)

LEDGER_GROUP = "memory_ledger"

# table -> (description, the Dream assets that write it: drawn as its upstream)
_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "agent_memories": ("Retrieval projections: one row per document, fact, flush, summary or "
                       "approved assertion projection.", ()),
    "agent_memory_chunks": ("Chunked retrieval rows with embeddings and full text.",
                            (ASSERTION_PROJECTIONS,)),
    "agent_memory_sources": ("Immutable source envelopes (audience, trust class, content "
                             "hash).", ()),
    "agent_memory_assertions": ("Canonical atomic facts with lifecycle, audience and "
                                "lineage.", ()),
    "agent_memory_assertion_evidence": ("Verbatim evidence excerpts linking sources to "
                                        "assertions.", ()),
    "agent_memory_assertion_reviews": ("Append-only review decisions (human, policy, "
                                       "curator).", (DREAM_ASSERTIONS,)),
    "agent_memory_assertion_embeddings": ("Assertion vectors per embedding generation.",
                                          (ASSERTION_PROJECTIONS,)),
    "agent_memory_relations": ("Typed relations (derives, updates) between memories.",
                               (ASSERTION_PROJECTIONS,)),
    OUTBOX_TABLE: ("Idempotent projection work keyed by instance.",
                                      (DREAM_ASSERTIONS,)),
    "agent_memory_dreams": ("One row per Dream partition execution: status, exact model, "
                            "stats, diagnostics, Dagster run id.",
                            (DREAM_INPUTS, DREAM_PROPOSALS)),
    "wiki_change_proposals": ("Draft Wiki proposals awaiting human review.",
                              (WIKI_PROPOSALS,)),
    "agent_knowledge_entities": ("Knowledge graph nodes.", (KNOWLEDGE_GRAPH,)),
    "agent_knowledge_claims": ("Knowledge graph claims (subject, predicate, object or "
                               "literal) with cumulative source refs.", (KNOWLEDGE_GRAPH,)),
    "agent_knowledge_edges": ("Knowledge graph relations between entities.",
                              (KNOWLEDGE_GRAPH,)),
    "agent_knowledge_evidence": ("Provenance of graph items: assertions, source memories, "
                                 "Dreams.", (KNOWLEDGE_GRAPH,)),
}

ledger_tables = [
    AssetSpec(key=table, description=text, group_name=LEDGER_GROUP, kinds={"postgres"},
              deps=list(writers))
    for table, (text, writers) in _TABLES.items()
]


DEFINITIONS = FeatureDefinitions(assets=ledger_tables)
