-- Conversation turns (docs/architecture.md, "Conversational retrieval"). A memory written with
-- a session key and an event time is a turn of that session's conversation: it links to the
-- turn before it in the same session and audience, and its first chunk carries the text of the
-- two turns before (with the session's date) as `context`, indexed in a second tsvector.
-- Search uses the context to find a short reply ("Rex! After my grandpa's dog.") by the
-- question it answers, and the link to let neighbouring turns lend each other score. The
-- returned unit stays the single turn.

ALTER TABLE agent_memories ADD COLUMN previous_memory_id uuid;
ALTER TABLE agent_memories
    ADD CONSTRAINT agent_memories_previous_turn_fk
    FOREIGN KEY (instance_key, previous_memory_id) REFERENCES agent_memories (instance_key, id)
    ON DELETE SET NULL (previous_memory_id);
CREATE INDEX agent_memories_previous_turn_idx
    ON agent_memories (instance_key, previous_memory_id) WHERE previous_memory_id IS NOT NULL;
-- The write path's look-up of the turn before a new one.
CREATE INDEX agent_memories_conversation_idx
    ON agent_memories (instance_key, session_key, visibility_scope, audience_key,
                       occurred_at DESC, created_at DESC)
    WHERE session_key IS NOT NULL AND occurred_at IS NOT NULL;

-- Neither column rewrites the table (the largest one, vectors inline): a constant default is
-- stored once in the catalog. The writer fills context_tsv from context (chunk_rows.py), like
-- content_tsv's definition; a generated column would have rewritten every chunk on upgrade.
ALTER TABLE agent_memory_chunks ADD COLUMN context text
    CHECK (context IS NULL OR (context <> '' AND length(context) <= 2000));
ALTER TABLE agent_memory_chunks ADD COLUMN context_tsv tsvector NOT NULL DEFAULT ''::tsvector;
CREATE INDEX agent_memory_chunks_context_tsv_idx ON agent_memory_chunks USING gin (context_tsv)
    WHERE context IS NOT NULL;

-- Deletion really deletes: when a turn is deleted, the foreign key sets the link of the turn
-- after it NULL, and this trigger removes the copied text from that turn and from the turn
-- after that (a context holds the two turns before: memories/turns.py, CONTEXT_TURNS).
CREATE FUNCTION memory_forget_turn_context() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agent_memory_chunks c SET context = NULL, context_tsv = ''::tsvector
     WHERE c.instance_key = NEW.instance_key AND c.context IS NOT NULL
       AND c.memory_id IN (SELECT NEW.id
                           UNION ALL
                           SELECT m.id FROM agent_memories m
                            WHERE m.instance_key = NEW.instance_key
                              AND m.previous_memory_id = NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER agent_memories_forget_turn_context
    AFTER UPDATE OF previous_memory_id ON agent_memories
    FOR EACH ROW WHEN (OLD.previous_memory_id IS NOT NULL AND NEW.previous_memory_id IS NULL)
    EXECUTE FUNCTION memory_forget_turn_context();
