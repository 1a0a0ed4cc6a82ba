-- Erasure of a person (memory_platform/maintenance/erasure.py): the one sanctioned delete of
-- append-only rows, and the content-free report of each erasure.
--
-- Review decisions, the consolidation audit and the assertion history are append-only: their
-- triggers reject UPDATE, DELETE and TRUNCATE. Erasing a person must remove the rows that
-- describe what they said (an audit before-image holds the assertion's text; a review names
-- an assertion that is deleted with its evidence). The trigger function now lets a DELETE
-- through when the transaction-local setting memory.erasure is 'on'; erase_user sets it with
-- set_config(..., true) for its own transaction only. UPDATE and TRUNCATE stay refused
-- always, and nothing else in the code base sets the flag.
CREATE OR REPLACE FUNCTION memory_reject_mutation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('memory.erasure', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

-- One row per erasure: per-table counts of removed (and re-derived) rows, never content.
-- The person is named by a hash only (sha256 of the instance key, a NUL and the user
-- id): an operator who knows the user id can confirm an erasure ran, the table alone names
-- nobody. Append-only like the audit: reports are neither changed nor deleted (an erasure
-- never deletes reports: they name nobody).
CREATE TABLE agent_memory_erasures (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key  text NOT NULL,
    subject_hash  text NOT NULL CHECK (subject_hash ~ '^[0-9a-f]{64}$'),
    requested_by  text NOT NULL DEFAULT '' CHECK (requested_by !~ '[[:cntrl:]]'),
    removed       jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(removed) = 'object'),
    updated       jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(updated) = 'object'),
    total_removed bigint NOT NULL DEFAULT 0 CHECK (total_removed >= 0),
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (instance_key, id)
);
CREATE INDEX agent_memory_erasures_subject_idx
    ON agent_memory_erasures (instance_key, subject_hash, finished_at DESC);
CREATE TRIGGER agent_memory_erasures_append_only
    BEFORE UPDATE OR DELETE ON agent_memory_erasures
    FOR EACH ROW EXECUTE FUNCTION memory_reject_mutation();
CREATE TRIGGER agent_memory_erasures_no_truncate
    BEFORE TRUNCATE ON agent_memory_erasures
    FOR EACH STATEMENT EXECUTE FUNCTION memory_reject_mutation();
