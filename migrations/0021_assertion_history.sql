-- The assertion ledger becomes bitemporal: valid time (valid_from / valid_to, what the world
-- was like) was kept from the start; this adds recorded time (what the ledger believed, and
-- when), so retrieval can ask what was believed true at a past moment (asOf,
-- memory_platform/consolidation/history.py) with the revision chain.
--
-- agent_memory_assertion_history holds one row per recorded state of an assertion: written by
-- triggers on agent_memory_assertions, in the transaction of the change (nothing can forget
-- it), on INSERT and whenever status, review state, validity window, revision links or text
-- change. recorded_at is the transaction's time (now(), like the assertion's updated_at);
-- several changes of one row in one transaction are ordered by id.
--
-- No foreign key to the assertion: the history is a derived log that only these triggers
-- write, and its rows go with their assertion through the delete trigger below (an
-- assertion's text must not outlive it). No enumerated CHECKs either: every value is copied
-- from a row the assertion table's own CHECKs admitted.

CREATE TABLE agent_memory_assertion_history (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_key    text NOT NULL,
    assertion_id    uuid NOT NULL,
    status          text NOT NULL,
    review_state    text NOT NULL,
    valid_from      timestamptz,
    valid_to        timestamptz,
    superseded_by   uuid,
    revision_of     uuid,
    assertion_text  text NOT NULL,
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    backfilled      boolean NOT NULL DEFAULT false
);
-- The asOf look-up: the latest recorded state of an assertion at or before a time.
CREATE INDEX agent_memory_assertion_history_asof_idx
    ON agent_memory_assertion_history (assertion_id, recorded_at DESC, id DESC);

-- Recorded history is never edited (rows leave only with their assertion).
CREATE TRIGGER agent_memory_assertion_history_append_only
    BEFORE UPDATE ON agent_memory_assertion_history
    FOR EACH ROW EXECUTE FUNCTION memory_reject_mutation();

CREATE FUNCTION memory_record_assertion_history() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- Statement level, over the transition table: one set-based INSERT for a bulk load.
        INSERT INTO agent_memory_assertion_history
               (instance_key, assertion_id, status, review_state, valid_from, valid_to,
                superseded_by, revision_of, assertion_text, recorded_at)
        SELECT n.instance_key, n.id, n.status, n.review_state, n.valid_from, n.valid_to,
               n.superseded_by, n.revision_of, n.assertion_text, now()
          FROM new_assertions n;
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        DELETE FROM agent_memory_assertion_history h
         WHERE h.assertion_id = OLD.id AND h.instance_key = OLD.instance_key;
        RETURN NULL;
    END IF;
    INSERT INTO agent_memory_assertion_history
           (instance_key, assertion_id, status, review_state, valid_from, valid_to,
            superseded_by, revision_of, assertion_text, recorded_at)
    VALUES (NEW.instance_key, NEW.id, NEW.status, NEW.review_state, NEW.valid_from,
            NEW.valid_to, NEW.superseded_by, NEW.revision_of, NEW.assertion_text, now());
    RETURN NULL;
END $$;

CREATE TRIGGER agent_memory_assertions_history_insert
    AFTER INSERT ON agent_memory_assertions
    REFERENCING NEW TABLE AS new_assertions
    FOR EACH STATEMENT EXECUTE FUNCTION memory_record_assertion_history();

-- Row level with a column list and a WHEN clause: feedback counters and recall stamps update
-- assertions on the hot path and never fire it.
CREATE TRIGGER agent_memory_assertions_history_update
    AFTER UPDATE OF status, review_state, valid_from, valid_to, superseded_by, revision_of,
                    assertion_text
    ON agent_memory_assertions
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          OR OLD.review_state IS DISTINCT FROM NEW.review_state
          OR OLD.valid_from IS DISTINCT FROM NEW.valid_from
          OR OLD.valid_to IS DISTINCT FROM NEW.valid_to
          OR OLD.superseded_by IS DISTINCT FROM NEW.superseded_by
          OR OLD.revision_of IS DISTINCT FROM NEW.revision_of
          OR OLD.assertion_text IS DISTINCT FROM NEW.assertion_text)
    EXECUTE FUNCTION memory_record_assertion_history();

CREATE TRIGGER agent_memory_assertions_history_delete
    AFTER DELETE ON agent_memory_assertions
    FOR EACH ROW EXECUTE FUNCTION memory_record_assertion_history();

-- Backfill: one row per existing assertion, its CURRENT state recorded at its created_at.
-- Older changes are unknown (nothing recorded them before this migration): an assertion
-- rejected or revoked before today appears in that state since its creation. Marked
-- backfilled, so a reader can tell.
INSERT INTO agent_memory_assertion_history
       (instance_key, assertion_id, status, review_state, valid_from, valid_to,
        superseded_by, revision_of, assertion_text, recorded_at, backfilled)
SELECT a.instance_key, a.id, a.status, a.review_state, a.valid_from, a.valid_to,
       a.superseded_by, a.revision_of, a.assertion_text, a.created_at, true
  FROM agent_memory_assertions a;

-- The revision chain is walked both ways (consolidation/history.py): who revised this one,
-- whom this one superseded. Partial indexes: only linked rows are in them.
CREATE INDEX agent_memory_assertions_revision_of_idx
    ON agent_memory_assertions (instance_key, revision_of) WHERE revision_of IS NOT NULL;
CREATE INDEX agent_memory_assertions_superseded_by_idx
    ON agent_memory_assertions (instance_key, superseded_by) WHERE superseded_by IS NOT NULL;

-- The expiry sweep (consolidation/lifecycle.py expire_due): active rows with a validity end.
CREATE INDEX agent_memory_assertions_expiry_idx
    ON agent_memory_assertions (valid_to) WHERE status = 'active' AND valid_to IS NOT NULL;

-- The sweep's review decision: 'expire'. The CHECK is replaced NOT VALID and validated
-- afterwards: a widened list admits every existing row, and validation scans without the
-- ACCESS EXCLUSIVE lock a plain ADD CONSTRAINT holds for the scan (no table rewrite).
ALTER TABLE agent_memory_assertion_reviews
    DROP CONSTRAINT agent_memory_assertion_reviews_decision_check;
ALTER TABLE agent_memory_assertion_reviews
    ADD CONSTRAINT agent_memory_assertion_reviews_decision_check CHECK (decision IN (
        'approve', 'reject', 'activate', 'defer', 'revoke', 'supersede', 'rollback',
        'expire')) NOT VALID;
ALTER TABLE agent_memory_assertion_reviews
    VALIDATE CONSTRAINT agent_memory_assertion_reviews_decision_check;
