-- A session's items as the client wrote them, and removing them again (issue 33.3: an
-- agent framework's session over the sessions API, docs/sessions.md "Reading the items
-- back, removing them").
--
-- raw: the item in the client's own form (an agent framework's item: a message with content
-- parts, a function call and its output, a reasoning item), kept exactly and answered by
-- GET /api/v1/sessions/{key}/items; content stays the text the platform searches, summarises
-- and remembers. json, not jsonb: json keeps the text it was given (key order, numbers as
-- written), so what is read back is what was written. Adding a nullable column without a
-- default rewrites nothing.
ALTER TABLE agent_context_messages ADD COLUMN raw json
    CHECK (raw IS NULL OR json_typeof(raw) = 'object');

-- The storage quota (0030) counts an item's raw form with its content: both are text a
-- client stored. The update trigger compares raw as text (json has no equality).
CREATE OR REPLACE FUNCTION storage_usage_messages() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM storage_usage_add(coalesce(jsonb_agg(g), '[]'::jsonb)) FROM (
            SELECT instance_key, coalesce(user_id, '') AS user_id,
                   sum(octet_length(content) + coalesce(octet_length(raw::text), 0)) AS bytes
              FROM new_rows GROUP BY 1, 2) g;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM storage_usage_add(coalesce(jsonb_agg(g), '[]'::jsonb)) FROM (
            SELECT instance_key, coalesce(user_id, '') AS user_id,
                   -sum(octet_length(content) + coalesce(octet_length(raw::text), 0)) AS bytes
              FROM old_rows GROUP BY 1, 2) g;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION storage_usage_message_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM storage_usage_add(jsonb_build_array(
        jsonb_build_object('instance_key', OLD.instance_key,
                           'user_id', coalesce(OLD.user_id, ''),
                           'bytes', -(octet_length(OLD.content)
                                      + coalesce(octet_length(OLD.raw::text), 0))),
        jsonb_build_object('instance_key', NEW.instance_key,
                           'user_id', coalesce(NEW.user_id, ''),
                           'bytes', octet_length(NEW.content)
                                    + coalesce(octet_length(NEW.raw::text), 0))));
    RETURN NULL;
END;
$$;
DROP TRIGGER agent_context_messages_usage_update ON agent_context_messages;
CREATE TRIGGER agent_context_messages_usage_update
    AFTER UPDATE OF instance_key, user_id, content, raw ON agent_context_messages
    FOR EACH ROW
    WHEN ((OLD.instance_key, OLD.user_id, OLD.content, OLD.raw::text)
          IS DISTINCT FROM (NEW.instance_key, NEW.user_id, NEW.content, NEW.raw::text))
    EXECUTE FUNCTION storage_usage_message_update();

CREATE OR REPLACE FUNCTION storage_usage_recount() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM agent_storage_usage;
    INSERT INTO agent_storage_usage (instance_key, user_id, bytes)
    SELECT instance_key, user_id, sum(bytes) FROM (
        SELECT instance_key, coalesce(user_id, '') AS user_id,
               octet_length(content) + coalesce(octet_length(title), 0) AS bytes
          FROM agent_memories
        UNION ALL
        SELECT instance_key, coalesce(user_id, ''),
               octet_length(content) + coalesce(octet_length(raw::text), 0)
          FROM agent_context_messages) rows
     GROUP BY 1, 2;
    RETURN NULL;
END;
$$;

-- A user removing items of a session (the newest they added, or all of theirs) runs the
-- erasure engine seeded by those items (maintenance/erasure.forget_session_items): its
-- report says so. Like a forgotten memory's, it keeps no audience and writes no
-- 'user.erased' event (the trigger of 0038 writes that for subject_kind 'user' only).
ALTER TABLE agent_memory_erasures DROP CONSTRAINT agent_memory_erasures_subject_kind_check;
ALTER TABLE agent_memory_erasures ADD CONSTRAINT agent_memory_erasures_subject_kind_check
    CHECK (subject_kind IN ('user', 'memory', 'session_items'));
