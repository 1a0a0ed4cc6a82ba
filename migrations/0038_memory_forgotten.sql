-- A user forgets one of their own memories (issue 32.4): the erasure engine runs with its
-- sets seeded by the memory (maintenance/erasure.forget_memory) and writes its report here
-- like a person's erasure. The report says which kind of subject it erased, and its event
-- is 'memory.forgotten' in the forgotten memory's audience (who could see the memory learns
-- that it went; the event names no row and no text), not 'user.erased'.
ALTER TABLE agent_memory_erasures
    ADD COLUMN subject_kind text NOT NULL DEFAULT 'user'
        CHECK (subject_kind IN ('user', 'memory')),
    ADD COLUMN audience_kind text,
    ADD COLUMN audience_key text,
    ADD CONSTRAINT agent_memory_erasures_memory_audience
        CHECK (subject_kind = 'user' OR (audience_kind IS NOT NULL AND audience_key IS NOT NULL));

CREATE OR REPLACE FUNCTION memory_event_from_erasure() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.subject_kind = 'memory' THEN
        INSERT INTO agent_memory_events
               (instance_key, kind, audience_kind, audience_key, erasure_id, payload)
        VALUES (NEW.instance_key, 'memory.forgotten', NEW.audience_kind, NEW.audience_key,
                NEW.id, jsonb_build_object('totalRemoved', NEW.total_removed));
    ELSE
        INSERT INTO agent_memory_events
               (instance_key, kind, audience_kind, audience_key, erasure_id, payload)
        VALUES (NEW.instance_key, 'user.erased', 'workspace', NEW.instance_key, NEW.id,
                jsonb_build_object('totalRemoved', NEW.total_removed));
    END IF;
    RETURN NULL;
END $$;
