-- Graph work enters the projection outbox from the ledger itself.
--
-- Approved assertions are created and decided on many paths (the write path's facts, shared
-- facts, the bulk import, the Dream safety pass, reviews, rollback, consolidation). The graph
-- must follow every one of them, so the outbox row is written by triggers on the assertion
-- table, in the transaction of the change: nothing can forget it, and nothing is written for
-- a change the graph does not care about.
--
-- A job ('graph_projection', subject = the assertion) is written when an assertion is created
-- approved and active, or when its status, review state, validity window or text changes.
-- The handler (memory_platform/graph/build.py) reads the assertion's state when it runs: a
-- told one is extracted, any other one is retracted from the graph. The idempotency key
-- carries updated_at, so a change gets one job and repeating the statement none.

CREATE FUNCTION memory_enqueue_graph_projection() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- Statement level, over the transition table: one set-based INSERT for a bulk load.
        INSERT INTO agent_memory_ingestion_outbox
               (instance_key, job_type, subject_id, idempotency_key, payload)
        SELECT n.instance_key, 'graph_projection', n.id,
               'graph_projection:' || n.id || ':' || n.updated_at,
               jsonb_build_object('audienceKind', n.audience_kind,
                                  'audienceKey', n.audience_key)
          FROM new_assertions n
         WHERE n.status = 'active' AND n.review_state IN ('policy_approved', 'human_approved')
        ON CONFLICT (instance_key, idempotency_key) DO NOTHING;
        RETURN NULL;
    END IF;
    INSERT INTO agent_memory_ingestion_outbox
           (instance_key, job_type, subject_id, idempotency_key, payload)
    VALUES (NEW.instance_key, 'graph_projection', NEW.id,
            'graph_projection:' || NEW.id || ':' || NEW.updated_at,
            jsonb_build_object('audienceKind', NEW.audience_kind,
                               'audienceKey', NEW.audience_key))
    ON CONFLICT (instance_key, idempotency_key) DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER agent_memory_assertions_graph_insert
    AFTER INSERT ON agent_memory_assertions
    REFERENCING NEW TABLE AS new_assertions
    FOR EACH STATEMENT EXECUTE FUNCTION memory_enqueue_graph_projection();

-- Row level with a column list and a WHEN clause: feedback counters and recall stamps update
-- assertions on the hot path and never fire it.
CREATE TRIGGER agent_memory_assertions_graph_update
    AFTER UPDATE OF status, review_state, valid_from, valid_to, assertion_text
    ON agent_memory_assertions
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          OR OLD.review_state IS DISTINCT FROM NEW.review_state
          OR OLD.valid_from IS DISTINCT FROM NEW.valid_from
          OR OLD.valid_to IS DISTINCT FROM NEW.valid_to
          OR OLD.assertion_text IS DISTINCT FROM NEW.assertion_text)
    EXECUTE FUNCTION memory_enqueue_graph_projection();

-- Due graph jobs of one audience partition (the knowledge_graph asset of a Dream): the
-- payload names the audience; pending and failed jobs only, like the due index.
CREATE INDEX agent_memory_ingestion_outbox_graph_due_idx
    ON agent_memory_ingestion_outbox (instance_key, (payload ->> 'audienceKind'),
                                      (payload ->> 'audienceKey'), available_at)
    WHERE job_type = 'graph_projection' AND status IN ('pending', 'failed');

-- A Dream's assertions (created or reused) are those its evidence rows name.
CREATE INDEX agent_memory_assertion_evidence_dream_idx
    ON agent_memory_assertion_evidence (instance_key, dream_id) WHERE dream_id IS NOT NULL;
