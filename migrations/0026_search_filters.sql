-- Search filters (retrieval/criteria.py, docs/search-filters.md): metadata conditions compile
-- to `metadata @@ jsonpath` / `metadata @? jsonpath`, the operators a jsonb_path_ops GIN
-- index serves (subject_refs has one since 0004). The search probes a candidate chunk's
-- memory by primary key; this index lets a selective metadata filter be found from the
-- memory side (the bounded count that picks the exact vector scan, ad-hoc reads).
--
-- A plain CREATE INDEX: the migration runner applies each file in one transaction, where
-- CONCURRENTLY is not allowed. It blocks writes to agent_memories while it builds (about a
-- second per few hundred thousand rows of small metadata); on a very large table create
-- the same index CONCURRENTLY by hand before migrating, IF NOT EXISTS then skips it.
CREATE INDEX IF NOT EXISTS agent_memories_metadata_idx
    ON agent_memories USING gin (metadata jsonb_path_ops);
