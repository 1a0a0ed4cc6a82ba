-- Vectors live in their row, not in TOAST.
--
-- A 1536-d vector is 6 KB; with the default toast_tuple_target (2 KB) every chunk row sent
-- its vector out of line, so each vector read (the exact arm of a search over a small
-- visible set, the final scores of every candidate, the re-embedding and Dreaming scans)
-- paid a TOAST index lookup and four chunk fetches: 771 private chunks scored exactly took
-- 7.0 ms, 4.5 ms of it detoasting (docs/benchmarks.md). With the target at its maximum a
-- row up to a page keeps its vector inline (pgvector's types are stored uncompressed); a
-- longer row still moves its largest values out, as before.
--
-- Existing rows stay as they are until rewritten: run `VACUUM FULL agent_memory_chunks`
-- (and the other three tables) in a maintenance window to move their vectors inline.

ALTER TABLE agent_memory_chunks SET (toast_tuple_target = 8160);
ALTER TABLE agent_memory_assertion_embeddings SET (toast_tuple_target = 8160);
ALTER TABLE agent_knowledge_entity_embeddings SET (toast_tuple_target = 8160);
ALTER TABLE agent_knowledge_claim_embeddings SET (toast_tuple_target = 8160);
