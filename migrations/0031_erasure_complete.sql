-- Erasure that leaves nothing (security review of 7c85f33, finding 3;
-- memory_platform/maintenance/erasure.py, its rule table).
--
-- 1. A review decision about an assertion that stays (another person's fact the erased
--    person approved) must stay: it is the record of why the fact is active. Its reviewer id
--    and note are the person's, though: the erasure pseudonymises the id and drops the note.
--    The append-only trigger function therefore lets an UPDATE through as well when the
--    transaction-local setting memory.erasure is 'on' (only erase_user sets it, for its own
--    transaction). Without the flag UPDATE, DELETE and TRUNCATE stay refused.
CREATE OR REPLACE FUNCTION memory_reject_mutation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') AND current_setting('memory.erasure', true) = 'on' THEN
        RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

-- 2. What maintenance extracted from a turn names that turn (metadata.sourceMessageId:
--    shared facts and the flush). The erasure removes every memory drawn from a removed
--    turn, whoever's name the row carries (rows written before facts were attributed to
--    their author carry the session owner's): found by this index, not by a scan.
CREATE INDEX agent_memories_source_message_idx
    ON agent_memories (instance_key, (metadata ->> 'sourceMessageId'))
    WHERE metadata ? 'sourceMessageId';
