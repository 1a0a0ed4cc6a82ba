-- Turn context vectors (issue 29; memories/turns.py, docs/retrieval-locomo.md). A conversation
-- turn's first chunk gets a second vector: the turn embedded together with the turn before it.
-- Search mixes its similarity into the turn's own (a short reply is found by the question it
-- answers), and a second vector arm finds turns by it. It shares the chunk's embedding_key: it
-- is made by the same generation as `embedding`, written and re-embedded with it.
--
-- No table rewrite: a nullable column without a default only touches the catalog.
ALTER TABLE agent_memory_chunks ADD COLUMN context_embedding vector;

-- Deletion really deletes: the vector embeds the turn before, so it goes with the copied text
-- when that turn is deleted (migration 0017's trigger, now clearing the vector too).
CREATE OR REPLACE FUNCTION memory_forget_turn_context() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agent_memory_chunks c
       SET context = NULL, context_tsv = ''::tsvector, context_embedding = NULL
     WHERE c.instance_key = NEW.instance_key AND c.context IS NOT NULL
       AND c.memory_id IN (SELECT NEW.id
                           UNION ALL
                           SELECT m.id FROM agent_memories m
                            WHERE m.instance_key = NEW.instance_key
                              AND m.previous_memory_id = NEW.id);
    RETURN NULL;
END $$;

-- The partial HNSW index of the context vectors of each generation already registered (new
-- generations get theirs from embeddings/generations.py, ensure_vector_indexes; the name is
-- made the same way: table, "_ctx_hnsw_", the first 12 hex digits of the key's SHA-256).
DO $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT DISTINCT generation_key, dimensions FROM agent_memory_embedding_generations
    LOOP
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS %I ON agent_memory_chunks USING hnsw '
            '((context_embedding::halfvec(%s)) halfvec_cosine_ops) '
            'WHERE embedding_key = %L AND context_embedding IS NOT NULL',
            'agent_memory_chunks_ctx_hnsw_'
                || substr(encode(sha256(convert_to(g.generation_key, 'UTF8')), 'hex'), 1, 12),
            g.dimensions, g.generation_key);
    END LOOP;
END $$;
