-- Deletion really deletes a turn's words from the contexts that copied them (memories/turns.py).
-- A turn's context copies the turns before it *by event time*, found when it is written, but
-- the trigger of 0017/0032 follows the `previous_memory_id` links; a turn written late (it
-- happened before turns already stored) is copied into the context of a later turn that links
-- to another turn, and deleting it left that copy. So such a context names the turns it copies:
-- `context_memory_ids` (filled by every path that writes a context, only where the links do
-- not lead from each copied turn to the turn: turns.off_the_links), and deleting a turn clears
-- every context that names it. Where the links do lead there, the link trigger clears it.
--
-- No table rewrite: a nullable column without a default only touches the catalog.
ALTER TABLE agent_memory_chunks ADD COLUMN context_memory_ids uuid[];
CREATE INDEX agent_memory_chunks_context_sources_idx ON agent_memory_chunks
    USING gin (context_memory_ids) WHERE context_memory_ids IS NOT NULL;

CREATE OR REPLACE FUNCTION memory_forget_turn_context() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agent_memory_chunks c
       SET context = NULL, context_tsv = ''::tsvector, context_embedding = NULL,
           context_memory_ids = NULL
     WHERE c.instance_key = NEW.instance_key AND c.context IS NOT NULL
       AND c.memory_id IN (SELECT NEW.id
                           UNION ALL
                           SELECT m.id FROM agent_memories m
                            WHERE m.instance_key = NEW.instance_key
                              AND m.previous_memory_id = NEW.id);
    RETURN NULL;
END $$;

CREATE FUNCTION memory_forget_copied_turn() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agent_memory_chunks c
       SET context = NULL, context_tsv = ''::tsvector, context_embedding = NULL,
           context_memory_ids = NULL
     WHERE c.context_memory_ids @> ARRAY[OLD.id] AND c.instance_key = OLD.instance_key;
    RETURN NULL;
END $$;
CREATE TRIGGER agent_memories_forget_copied_turn
    AFTER DELETE ON agent_memories
    FOR EACH ROW WHEN (OLD.session_key IS NOT NULL AND OLD.occurred_at IS NOT NULL)
    EXECUTE FUNCTION memory_forget_copied_turn();
