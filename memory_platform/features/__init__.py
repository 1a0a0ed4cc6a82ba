"""The features: the write path, the projection (outbox, assertions, re-embedding),
retrieval, events, the knowledge graph, context, consolidation, maintenance, review, Dreaming,
sessions, portability, keys, the operator's status, the demo, the benchmarks."""
