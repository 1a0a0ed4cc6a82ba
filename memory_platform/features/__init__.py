"""The features: the write path, retrieval, events, the knowledge graph, context,
consolidation, maintenance, review, Dreaming, sessions, portability, keys, the operator's
status, the demo, the benchmarks."""
