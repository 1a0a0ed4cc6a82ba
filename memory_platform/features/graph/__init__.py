"""The knowledge graph: extraction from approved assertions, storage, retrieval (see types)."""
