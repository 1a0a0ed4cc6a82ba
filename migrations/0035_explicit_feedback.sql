-- Explicit feedback (issue 32.6, seed:75 "durable retrieved/injected/helpful/unhelpful
-- feedback events"): a runtime or its user says a recalled assertion helped or did not. The
-- events go to agent_memory_retrieval_feedback (its CHECK admits both since 0003); these
-- counters move with them, once per (assertion, kind, run), and the ranking reads them
-- (retrieval/feedback/ranking.py: helpful counts as a citation, unhelpful as a correction).
--
-- No table rewrite: a NOT NULL column with a constant default only touches the catalog.
ALTER TABLE agent_memory_assertions
    ADD COLUMN helpful_count integer NOT NULL DEFAULT 0 CHECK (helpful_count >= 0),
    ADD COLUMN unhelpful_count integer NOT NULL DEFAULT 0 CHECK (unhelpful_count >= 0);
