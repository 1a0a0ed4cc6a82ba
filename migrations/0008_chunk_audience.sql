-- Chunks carry their memory's audience and a recallable flag, so both search arms filter
-- the chunk rows they scan (HNSW, GIN) without joining agent_memories before the LIMIT.
--
-- These columns are a pre-filter only: the final statement of every search still joins
-- the memory and its assertion and applies the full recall rule (access.py, filters.py),
-- so a stale copy could lose a row from one search but never reveal one.
--
-- recallable = the memory is active and, if assertion-backed, its assertion is active and
-- approved (the validity window depends on now() and is checked at query time).
-- Kept by triggers: a chunk copies its memory on insert; changes of a memory's audience,
-- state or assertion, and of an assertion's status or review, are pushed to the chunks.

ALTER TABLE agent_memory_chunks
    ADD COLUMN visibility_scope text,  -- checked where it comes from (agent_memories)
    ADD COLUMN audience_key text,
    ADD COLUMN owner_user_id text,
    ADD COLUMN recallable boolean NOT NULL DEFAULT false;

CREATE FUNCTION memory_is_recallable(memory_state text, assertion_id uuid,
                                     assertion_status text, assertion_review text)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT memory_state = 'active'
       AND (assertion_id IS NULL
            OR (coalesce(assertion_status = 'active', false)
                AND coalesce(assertion_review IN ('policy_approved', 'human_approved'), false)))
$$;

-- A new (or re-parented) chunk takes its memory's audience; supplied values are ignored.
CREATE FUNCTION memory_chunk_copy_audience() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT m.visibility_scope, m.audience_key, m.user_id,
           memory_is_recallable(m.memory_state, m.assertion_id, a.status, a.review_state)
      INTO NEW.visibility_scope, NEW.audience_key, NEW.owner_user_id, NEW.recallable
      FROM agent_memories m
      LEFT JOIN agent_memory_assertions a
             ON a.instance_key = m.instance_key AND a.id = m.assertion_id
     WHERE m.instance_key = NEW.instance_key AND m.id = NEW.memory_id;
    -- No memory: the columns stay empty and the foreign key rejects the row.
    NEW.recallable := coalesce(NEW.recallable, false);
    RETURN NEW;
END;
$$;
CREATE TRIGGER agent_memory_chunks_audience
    BEFORE INSERT OR UPDATE OF instance_key, memory_id ON agent_memory_chunks
    FOR EACH ROW EXECUTE FUNCTION memory_chunk_copy_audience();

CREATE FUNCTION memory_push_audience_to_chunks() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    a_status text;
    a_review text;
BEGIN
    SELECT status, review_state INTO a_status, a_review
      FROM agent_memory_assertions
     WHERE instance_key = NEW.instance_key AND id = NEW.assertion_id;
    UPDATE agent_memory_chunks c
       SET visibility_scope = NEW.visibility_scope,
           audience_key = NEW.audience_key,
           owner_user_id = NEW.user_id,
           recallable = memory_is_recallable(NEW.memory_state, NEW.assertion_id,
                                             a_status, a_review)
     WHERE c.instance_key = NEW.instance_key AND c.memory_id = NEW.id;
    RETURN NULL;
END;
$$;
CREATE TRIGGER agent_memories_push_audience
    AFTER UPDATE OF visibility_scope, audience_key, user_id, memory_state, assertion_id
    ON agent_memories
    FOR EACH ROW
    WHEN ((OLD.visibility_scope, OLD.audience_key, OLD.user_id, OLD.memory_state,
           OLD.assertion_id)
          IS DISTINCT FROM
          (NEW.visibility_scope, NEW.audience_key, NEW.user_id, NEW.memory_state,
           NEW.assertion_id))
    EXECUTE FUNCTION memory_push_audience_to_chunks();

CREATE FUNCTION memory_push_assertion_to_chunks() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agent_memory_chunks c
       SET recallable = memory_is_recallable(m.memory_state, m.assertion_id,
                                             NEW.status, NEW.review_state)
      FROM agent_memories m
     WHERE m.instance_key = NEW.instance_key AND m.assertion_id = NEW.id
       AND c.instance_key = m.instance_key AND c.memory_id = m.id;
    RETURN NULL;
END;
$$;
CREATE TRIGGER agent_memory_assertions_push_recall
    AFTER UPDATE OF status, review_state ON agent_memory_assertions
    FOR EACH ROW
    WHEN ((OLD.status, OLD.review_state) IS DISTINCT FROM (NEW.status, NEW.review_state))
    EXECUTE FUNCTION memory_push_assertion_to_chunks();

-- Existing chunks.
UPDATE agent_memory_chunks c
   SET visibility_scope = m.visibility_scope,
       audience_key = m.audience_key,
       owner_user_id = m.user_id,
       recallable = memory_is_recallable(m.memory_state, m.assertion_id, a.status,
                                         a.review_state)
  FROM agent_memories m
  LEFT JOIN agent_memory_assertions a
         ON a.instance_key = m.instance_key AND a.id = m.assertion_id
 WHERE m.instance_key = c.instance_key AND m.id = c.memory_id;

-- Exact scans within a small visible set, and the bounded count that decides for them.
CREATE INDEX agent_memory_chunks_audience_idx
    ON agent_memory_chunks (instance_key, visibility_scope, audience_key) WHERE recallable;
CREATE INDEX agent_memory_chunks_channel_owner_idx
    ON agent_memory_chunks (instance_key, owner_user_id)
    WHERE recallable AND visibility_scope = 'channel';
