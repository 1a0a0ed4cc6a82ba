-- Storage quota (security review of 7c85f33, finding 12): how many bytes of text each user
-- of an instance has stored, counted as the rows are written and deleted.
--
-- agent_storage_usage holds one row per (instance, user); user_id '' stands for rows that
-- name no user (runtime system writes). What is counted is the text a write stores in the
-- two tables every write path fills: the memory rows (agent_memories: content + title; API
-- writes, the bulk import, what maintenance stores for a user) and the session turns
-- (agent_context_messages: content). Derived rows (chunks, vectors, assertions, sources)
-- are bounded multiples of these and are not counted twice.
--
-- Statement-level triggers with transition tables keep the counters on INSERT and DELETE:
-- one upsert per (instance, user) per statement, whatever the number of rows (a COPY of a
-- bulk batch included), in the writing transaction, so a rolled-back write counts nothing and a
-- deletion (erasure, retention, workspace sync) gives its bytes back. The upsert locks the
-- user's row until the transaction ends: two writes of the same user are counted one after
-- the other, never lost (memory_platform/memories/quota.py checks the counter after the
-- write's rows are in, in the same transaction). Upserts run in (instance, user) order so two
-- multi-user statements cannot deadlock on the counters.
--
-- The instance's usage is the sum of its users' rows (one index range: as many rows as the
-- instance has users, never a scan of the stored text).

CREATE TABLE agent_storage_usage (
    instance_key text NOT NULL,
    user_id      text NOT NULL,   -- '' for rows without a user
    bytes        bigint NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_key, user_id)
);

CREATE FUNCTION storage_usage_add(deltas jsonb) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO agent_storage_usage AS u (instance_key, user_id, bytes)
    SELECT d.instance_key, d.user_id, sum(d.bytes)
      FROM jsonb_to_recordset(deltas) AS d(instance_key text, user_id text, bytes bigint)
     GROUP BY d.instance_key, d.user_id
    HAVING sum(d.bytes) <> 0
     ORDER BY d.instance_key, d.user_id
    ON CONFLICT (instance_key, user_id)
    DO UPDATE SET bytes = greatest(u.bytes + EXCLUDED.bytes, 0), updated_at = now();
$$;

-- agent_memories: content and title
CREATE FUNCTION storage_usage_memories() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM storage_usage_add(coalesce(jsonb_agg(g), '[]'::jsonb)) FROM (
            SELECT instance_key, coalesce(user_id, '') AS user_id,
                   sum(octet_length(content) + coalesce(octet_length(title), 0)) AS bytes
              FROM new_rows GROUP BY 1, 2) g;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM storage_usage_add(coalesce(jsonb_agg(g), '[]'::jsonb)) FROM (
            SELECT instance_key, coalesce(user_id, '') AS user_id,
                   -sum(octet_length(content) + coalesce(octet_length(title), 0)) AS bytes
              FROM old_rows GROUP BY 1, 2) g;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER agent_memories_usage_insert AFTER INSERT ON agent_memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storage_usage_memories();
-- An update of the counted columns (rare: a redaction, a reassignment) is counted row by
-- row; the frequent updates (retrieval counts, touches) fire nothing.
CREATE FUNCTION storage_usage_memory_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM storage_usage_add(jsonb_build_array(
        jsonb_build_object('instance_key', OLD.instance_key,
                           'user_id', coalesce(OLD.user_id, ''),
                           'bytes', -(octet_length(OLD.content)
                                      + coalesce(octet_length(OLD.title), 0))),
        jsonb_build_object('instance_key', NEW.instance_key,
                           'user_id', coalesce(NEW.user_id, ''),
                           'bytes', octet_length(NEW.content)
                                    + coalesce(octet_length(NEW.title), 0))));
    RETURN NULL;
END;
$$;
CREATE TRIGGER agent_memories_usage_update
    AFTER UPDATE OF instance_key, user_id, content, title ON agent_memories
    FOR EACH ROW
    WHEN ((OLD.instance_key, OLD.user_id, OLD.content, OLD.title)
          IS DISTINCT FROM (NEW.instance_key, NEW.user_id, NEW.content, NEW.title))
    EXECUTE FUNCTION storage_usage_memory_update();
CREATE TRIGGER agent_memories_usage_delete AFTER DELETE ON agent_memories
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storage_usage_memories();

-- agent_context_messages: content
CREATE FUNCTION storage_usage_messages() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM storage_usage_add(coalesce(jsonb_agg(g), '[]'::jsonb)) FROM (
            SELECT instance_key, coalesce(user_id, '') AS user_id,
                   sum(octet_length(content)) AS bytes
              FROM new_rows GROUP BY 1, 2) g;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM storage_usage_add(coalesce(jsonb_agg(g), '[]'::jsonb)) FROM (
            SELECT instance_key, coalesce(user_id, '') AS user_id,
                   -sum(octet_length(content)) AS bytes
              FROM old_rows GROUP BY 1, 2) g;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER agent_context_messages_usage_insert AFTER INSERT ON agent_context_messages
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storage_usage_messages();
CREATE FUNCTION storage_usage_message_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM storage_usage_add(jsonb_build_array(
        jsonb_build_object('instance_key', OLD.instance_key,
                           'user_id', coalesce(OLD.user_id, ''),
                           'bytes', -octet_length(OLD.content)),
        jsonb_build_object('instance_key', NEW.instance_key,
                           'user_id', coalesce(NEW.user_id, ''),
                           'bytes', octet_length(NEW.content))));
    RETURN NULL;
END;
$$;
CREATE TRIGGER agent_context_messages_usage_update
    AFTER UPDATE OF instance_key, user_id, content ON agent_context_messages
    FOR EACH ROW
    WHEN ((OLD.instance_key, OLD.user_id, OLD.content)
          IS DISTINCT FROM (NEW.instance_key, NEW.user_id, NEW.content))
    EXECUTE FUNCTION storage_usage_message_update();
CREATE TRIGGER agent_context_messages_usage_delete AFTER DELETE ON agent_context_messages
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION storage_usage_messages();

-- TRUNCATE has no transition table: count both tables again (operators' and tests' resets).
CREATE FUNCTION storage_usage_recount() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM agent_storage_usage;
    INSERT INTO agent_storage_usage (instance_key, user_id, bytes)
    SELECT instance_key, user_id, sum(bytes) FROM (
        SELECT instance_key, coalesce(user_id, '') AS user_id,
               octet_length(content) + coalesce(octet_length(title), 0) AS bytes
          FROM agent_memories
        UNION ALL
        SELECT instance_key, coalesce(user_id, ''), octet_length(content)
          FROM agent_context_messages) rows
     GROUP BY 1, 2;
    RETURN NULL;
END;
$$;

CREATE TRIGGER agent_memories_usage_truncate AFTER TRUNCATE ON agent_memories
    FOR EACH STATEMENT EXECUTE FUNCTION storage_usage_recount();
CREATE TRIGGER agent_context_messages_usage_truncate AFTER TRUNCATE ON agent_context_messages
    FOR EACH STATEMENT EXECUTE FUNCTION storage_usage_recount();

-- The rows stored before this migration.
INSERT INTO agent_storage_usage (instance_key, user_id, bytes)
SELECT instance_key, user_id, sum(bytes) FROM (
    SELECT instance_key, coalesce(user_id, '') AS user_id,
           octet_length(content) + coalesce(octet_length(title), 0) AS bytes
      FROM agent_memories
    UNION ALL
    SELECT instance_key, coalesce(user_id, ''), octet_length(content)
      FROM agent_context_messages) rows
 GROUP BY 1, 2;
