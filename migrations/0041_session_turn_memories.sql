-- Session items recalled as conversation turns (issue 29.3, sessions/turn_recall.py): an item
-- a user or an assistant said in a session is also an agent_memories row of source type
-- 'message', with the item's own id, in its author's private audience. It is linked to the turn
-- before it and carries the context text and context vector a turn written through
-- POST /api/v1/memory gets (memories/turns.py). So search ranks a conversation the same way
-- whichever way it came in. A 'message' row projects no assertion and is never written
-- through the memory API.
--
-- NOT VALID, then VALIDATE: the new CHECK only widens the old one, and validating it takes
-- a lighter lock than adding it validated.
ALTER TABLE agent_memories DROP CONSTRAINT agent_memories_source_type_check;
ALTER TABLE agent_memories ADD CONSTRAINT agent_memories_source_type_check
    CHECK (source_type IN ('prompt_file', 'summary', 'fact', 'manual', 'dream', 'flush',
                           'message')) NOT VALID;
ALTER TABLE agent_memories VALIDATE CONSTRAINT agent_memories_source_type_check;

-- A 'message' row copies a session item whose bytes the quota already counts (0030's trigger
-- on agent_context_messages): it is not counted a second time.
CREATE OR REPLACE FUNCTION storage_usage_memories() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM storage_usage_add(coalesce(jsonb_agg(g), '[]'::jsonb)) FROM (
            SELECT instance_key, coalesce(user_id, '') AS user_id,
                   sum(octet_length(content) + coalesce(octet_length(title), 0)) AS bytes
              FROM new_rows WHERE source_type <> 'message' GROUP BY 1, 2) g;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM storage_usage_add(coalesce(jsonb_agg(g), '[]'::jsonb)) FROM (
            SELECT instance_key, coalesce(user_id, '') AS user_id,
                   -sum(octet_length(content) + coalesce(octet_length(title), 0)) AS bytes
              FROM old_rows WHERE source_type <> 'message' GROUP BY 1, 2) g;
    END IF;
    RETURN NULL;
END;
$$;
CREATE OR REPLACE FUNCTION storage_usage_memory_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.source_type = 'message' AND NEW.source_type = 'message' THEN
        RETURN NULL;
    END IF;
    PERFORM storage_usage_add(jsonb_build_array(
        jsonb_build_object('instance_key', OLD.instance_key,
                           'user_id', coalesce(OLD.user_id, ''),
                           'bytes', CASE WHEN OLD.source_type = 'message' THEN 0
                                    ELSE -(octet_length(OLD.content)
                                           + coalesce(octet_length(OLD.title), 0)) END),
        jsonb_build_object('instance_key', NEW.instance_key,
                           'user_id', coalesce(NEW.user_id, ''),
                           'bytes', CASE WHEN NEW.source_type = 'message' THEN 0
                                    ELSE octet_length(NEW.content)
                                         + coalesce(octet_length(NEW.title), 0) END)));
    RETURN NULL;
END;
$$;
CREATE OR REPLACE FUNCTION storage_usage_recount() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM agent_storage_usage;
    INSERT INTO agent_storage_usage (instance_key, user_id, bytes)
    SELECT instance_key, user_id, sum(bytes) FROM (
        SELECT instance_key, coalesce(user_id, '') AS user_id,
               octet_length(content) + coalesce(octet_length(title), 0) AS bytes
          FROM agent_memories WHERE source_type <> 'message'
        UNION ALL
        SELECT instance_key, coalesce(user_id, ''),
               octet_length(content) + coalesce(octet_length(raw::text), 0)
          FROM agent_context_messages) rows
     GROUP BY 1, 2;
    RETURN NULL;
END;
$$;

-- A turn memory lives exactly as long as its item, whatever removes or changes the item
-- (the erasure engine, retention, an operator's redaction, TRUNCATE): the copy of a deleted
-- or rewritten item is deleted with it, in the same transaction.
CREATE FUNCTION session_turn_memory_follows_item() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM agent_memories m
     USING old_rows o
     WHERE m.instance_key = o.instance_key AND m.id = o.id AND m.source_type = 'message';
    RETURN NULL;
END;
$$;
CREATE TRIGGER agent_context_messages_turn_memory_delete AFTER DELETE ON agent_context_messages
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION session_turn_memory_follows_item();
CREATE FUNCTION session_turn_memory_follows_rewrite() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM agent_memories m
     WHERE m.instance_key = OLD.instance_key AND m.id = OLD.id AND m.source_type = 'message';
    RETURN NULL;
END;
$$;
CREATE TRIGGER agent_context_messages_turn_memory_rewrite
    AFTER UPDATE OF content, user_id ON agent_context_messages
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content
                       OR OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION session_turn_memory_follows_rewrite();
CREATE FUNCTION session_turn_memory_follows_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM agent_memories WHERE source_type = 'message';
    RETURN NULL;
END;
$$;
CREATE TRIGGER agent_context_messages_turn_memory_truncate
    AFTER TRUNCATE ON agent_context_messages
    FOR EACH STATEMENT EXECUTE FUNCTION session_turn_memory_follows_truncate();
