-- A user forgets one of their own memories (issue 32.4): the erasure engine runs with its
-- sets seeded by the memory (maintenance/erasure.forget_memory) and writes its report here
-- like a person's erasure. The report says which kind of subject it erased; a forgotten
-- memory's event is 'memory.forgotten' in the memory's audience, written by forget_memory
-- itself: the report keeps no audience (a private memory's audience key is its owner's user
-- id, which an append-only row would keep past that person's erasure), so this trigger
-- writes 'user.erased' for a person's erasure only.
ALTER TABLE agent_memory_erasures
    ADD COLUMN subject_kind text NOT NULL DEFAULT 'user'
        CHECK (subject_kind IN ('user', 'memory'));

CREATE OR REPLACE FUNCTION memory_event_from_erasure() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.subject_kind = 'user' THEN
        INSERT INTO agent_memory_events
               (instance_key, kind, audience_kind, audience_key, erasure_id, payload)
        VALUES (NEW.instance_key, 'user.erased', 'workspace', NEW.instance_key, NEW.id,
                jsonb_build_object('totalRemoved', NEW.total_removed));
    END IF;
    RETURN NULL;
END $$;
