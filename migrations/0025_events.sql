-- Events: every change of memory state, recorded once, from the ledger's own writes.
--
-- agent_memory_events holds one row per change (memory/events/store.py reads them, GET
-- /api/v1/events serves them, docs/events.md describes them). The rows are written by
-- triggers on the tables that change, in the transaction of the change: nothing can forget
-- one, a rolled-back change leaves none, and a change is recorded exactly once.
--
--   memory.written          INSERT into agent_memories (statement level, bulk loads too)
--   memory.deduplicated     a dedup hit: the write path and the bulk importer touch the
--                           repeated row with an explicit "SET updated_at = now()" (no other
--                           statement lists updated_at: the touch trigger sets it itself,
--                           and a column-list trigger fires only on the statement's own SET
--                           list)
--   assertion.activated     an assertion created active, or its status becomes 'active'
--   assertion.<status>      its status becomes superseded, rejected, expired, tombstoned,
--                           conflicted ('assertion.reopened' when it returns to candidate)
--   user.erased             INSERT into agent_memory_erasures (the erasure's report)
--   dream.completed         a Dream's status becomes 'completed'
--   dream.rolled_back       a Dream's status becomes 'rolled_back'
--
-- Content-free: an event names ids, states and the audience of the changed row, never its
-- text, so an erasure only has to remove the events that name the person or a removed row
-- (memory_platform/maintenance/erasure.py does, under memory.erasure like the other
-- append-only tables). The audience columns (audience_kind, audience_key, owner_user_id) are
-- those of the changed row, so THE visibility rule (access.audience_predicate) applies to an
-- event as to the row itself. No enumerated CHECKs: every value is copied from a row whose
-- own CHECKs admitted it (like the assertion history, 0021).
--
-- The cursor: seq orders the events of one transaction, txid (the writing transaction)
-- orders transactions. A reader only sees events whose transaction is older than every
-- transaction still running (txid < pg_snapshot_xmin), ordered by (txid, seq): an event
-- committed later can never sort before one already served, which a plain sequence cannot
-- promise (sequence values are taken before commit, in any order).

CREATE TABLE agent_memory_events (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              uuid NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    instance_key    text NOT NULL,
    kind            text NOT NULL CHECK (kind ~ '^[a-z]+\.[a-z_]+$'),
    audience_kind   text NOT NULL,
    audience_key    text NOT NULL,
    owner_user_id   text,
    memory_id       uuid,
    assertion_id    uuid,
    dream_id        uuid,
    erasure_id      uuid,
    payload         jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(payload) = 'object'),
    txid            xid8 NOT NULL DEFAULT pg_current_xact_id(),
    created_at      timestamptz NOT NULL DEFAULT now()
);
-- The feed: one instance in (txid, seq) order.
CREATE INDEX agent_memory_events_feed_idx ON agent_memory_events (instance_key, txid, seq);
-- Erasure finds the events naming a person or a removed row.
CREATE INDEX agent_memory_events_owner_idx
    ON agent_memory_events (instance_key, owner_user_id) WHERE owner_user_id IS NOT NULL;
CREATE INDEX agent_memory_events_memory_idx
    ON agent_memory_events (memory_id) WHERE memory_id IS NOT NULL;
CREATE INDEX agent_memory_events_assertion_idx
    ON agent_memory_events (assertion_id) WHERE assertion_id IS NOT NULL;
CREATE INDEX agent_memory_events_dream_idx
    ON agent_memory_events (dream_id) WHERE dream_id IS NOT NULL;

-- Append-only like the ledger: DELETE only inside an erasure (memory.erasure, 0022).
CREATE TRIGGER agent_memory_events_append_only
    BEFORE UPDATE OR DELETE ON agent_memory_events
    FOR EACH ROW EXECUTE FUNCTION memory_reject_mutation();
CREATE TRIGGER agent_memory_events_no_truncate
    BEFORE TRUNCATE ON agent_memory_events
    FOR EACH STATEMENT EXECUTE FUNCTION memory_reject_mutation();

-- ---------------------------------------------------------------------------------------
-- memory.written (statement level: one set-based INSERT for a bulk load) and
-- memory.deduplicated (row level, only a statement that sets updated_at itself).
CREATE FUNCTION memory_event_from_memory() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO agent_memory_events
               (instance_key, kind, audience_kind, audience_key, owner_user_id, memory_id,
                assertion_id, dream_id, payload)
        SELECT n.instance_key, 'memory.written', n.visibility_scope, n.audience_key,
               n.user_id, n.id, n.assertion_id, n.dream_id,
               jsonb_build_object('memoryState', n.memory_state, 'sourceType', n.source_type,
                                  'memoryScope', n.memory_scope)
          FROM new_memories n
         ORDER BY n.created_at, n.id;
        RETURN NULL;
    END IF;
    INSERT INTO agent_memory_events
           (instance_key, kind, audience_kind, audience_key, owner_user_id, memory_id,
            assertion_id, dream_id, payload)
    VALUES (NEW.instance_key, 'memory.deduplicated', NEW.visibility_scope, NEW.audience_key,
            NEW.user_id, NEW.id, NEW.assertion_id, NEW.dream_id,
            jsonb_build_object('memoryState', NEW.memory_state, 'sourceType', NEW.source_type,
                               'memoryScope', NEW.memory_scope));
    RETURN NULL;
END $$;

CREATE TRIGGER agent_memories_event_insert
    AFTER INSERT ON agent_memories
    REFERENCING NEW TABLE AS new_memories
    FOR EACH STATEMENT EXECUTE FUNCTION memory_event_from_memory();
CREATE TRIGGER agent_memories_event_dedup
    AFTER UPDATE OF updated_at ON agent_memories
    FOR EACH ROW EXECUTE FUNCTION memory_event_from_memory();

-- ---------------------------------------------------------------------------------------
-- assertion.<status>: created active, or a change of status.
CREATE FUNCTION memory_assertion_event_kind(status text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT 'assertion.' || CASE status WHEN 'active' THEN 'activated'
                                       WHEN 'candidate' THEN 'reopened'
                                       ELSE status END
$$;

CREATE FUNCTION memory_event_from_assertion() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO agent_memory_events
               (instance_key, kind, audience_kind, audience_key, owner_user_id, assertion_id,
                dream_id, payload)
        SELECT n.instance_key, 'assertion.activated', n.audience_kind, n.audience_key,
               n.owner_user_id, n.id, n.dream_id,
               jsonb_build_object('status', n.status, 'previousStatus', NULL,
                                  'reviewState', n.review_state,
                                  'assertionType', n.assertion_type, 'origin', n.origin)
          FROM new_assertions n
         WHERE n.status = 'active'
         ORDER BY n.created_at, n.id;
        RETURN NULL;
    END IF;
    INSERT INTO agent_memory_events
           (instance_key, kind, audience_kind, audience_key, owner_user_id, assertion_id,
            dream_id, payload)
    VALUES (NEW.instance_key, memory_assertion_event_kind(NEW.status), NEW.audience_kind,
            NEW.audience_key, NEW.owner_user_id, NEW.id, NEW.dream_id,
            jsonb_build_object('status', NEW.status, 'previousStatus', OLD.status,
                               'reviewState', NEW.review_state,
                               'assertionType', NEW.assertion_type, 'origin', NEW.origin)
            || CASE WHEN NEW.superseded_by IS NULL THEN '{}'::jsonb
                    ELSE jsonb_build_object('supersededBy', NEW.superseded_by) END);
    RETURN NULL;
END $$;

CREATE TRIGGER agent_memory_assertions_event_insert
    AFTER INSERT ON agent_memory_assertions
    REFERENCING NEW TABLE AS new_assertions
    FOR EACH STATEMENT EXECUTE FUNCTION memory_event_from_assertion();
CREATE TRIGGER agent_memory_assertions_event_status
    AFTER UPDATE OF status ON agent_memory_assertions
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION memory_event_from_assertion();

-- ---------------------------------------------------------------------------------------
-- dream.completed / dream.rolled_back. Dreams name no owner: a private Dream's audience key
-- is its owner's user id.
CREATE FUNCTION memory_event_from_dream() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO agent_memory_events
           (instance_key, kind, audience_kind, audience_key, dream_id, payload)
    VALUES (NEW.instance_key, 'dream.' || NEW.status, NEW.audience_kind, NEW.audience_key,
            NEW.id,
            jsonb_build_object('status', NEW.status, 'previousStatus', OLD.status,
                               'dryRun', NEW.dry_run, 'triggerKind', NEW.trigger_kind));
    RETURN NULL;
END $$;

CREATE TRIGGER agent_memory_dreams_event_status
    AFTER UPDATE OF status ON agent_memory_dreams
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          AND NEW.status IN ('completed', 'rolled_back'))
    EXECUTE FUNCTION memory_event_from_dream();

-- ---------------------------------------------------------------------------------------
-- user.erased: the report names nobody (a hash only), and neither does the event: it
-- carries the report's id and how many rows left, in the workspace audience of the instance.
CREATE FUNCTION memory_event_from_erasure() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO agent_memory_events
           (instance_key, kind, audience_kind, audience_key, erasure_id, payload)
    VALUES (NEW.instance_key, 'user.erased', 'workspace', NEW.instance_key, NEW.id,
            jsonb_build_object('totalRemoved', NEW.total_removed));
    RETURN NULL;
END $$;

CREATE TRIGGER agent_memory_erasures_event_insert
    AFTER INSERT ON agent_memory_erasures
    FOR EACH ROW EXECUTE FUNCTION memory_event_from_erasure();

-- ---------------------------------------------------------------------------------------
-- Webhooks: per instance, registered by an admin (memory_platform/events/webhooks.py). The
-- secret signs the payloads (HMAC-SHA256), so it is kept as given; it is never answered by
-- the API nor logged. kinds: the event kinds delivered (empty: all).
CREATE TABLE agent_memory_webhooks (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key    text NOT NULL,
    url             text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2000),
    secret          text NOT NULL CHECK (length(secret) >= 16),
    kinds           text[] NOT NULL DEFAULT '{}',
    active          boolean NOT NULL DEFAULT true,
    created_by      text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    deactivated_at  timestamptz,
    UNIQUE (instance_key, id)
);
CREATE INDEX agent_memory_webhooks_active_idx
    ON agent_memory_webhooks (instance_key) WHERE active;

-- Deliveries are outbox jobs: one per (event, active webhook whose kinds match), written in
-- the transaction of the event; retries with backoff are the outbox's.
ALTER TABLE agent_memory_ingestion_outbox
    DROP CONSTRAINT agent_memory_ingestion_outbox_job_type_check;
ALTER TABLE agent_memory_ingestion_outbox
    ADD CONSTRAINT agent_memory_ingestion_outbox_job_type_check CHECK (job_type IN (
        'assertion_projection', 'assertion_embedding', 'graph_projection',
        'memory_embedding', 'profile_refresh', 'webhook_delivery')) NOT VALID;
ALTER TABLE agent_memory_ingestion_outbox
    VALIDATE CONSTRAINT agent_memory_ingestion_outbox_job_type_check;

CREATE FUNCTION memory_enqueue_webhook_deliveries() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO agent_memory_ingestion_outbox
           (instance_key, job_type, subject_id, idempotency_key, payload)
    SELECT e.instance_key, 'webhook_delivery', e.id,
           'webhook_delivery:' || e.id || ':' || w.id,
           jsonb_build_object('webhookId', w.id, 'eventKind', e.kind)
      FROM new_events e
      JOIN agent_memory_webhooks w
        ON w.instance_key = e.instance_key AND w.active
       AND (cardinality(w.kinds) = 0 OR e.kind = ANY (w.kinds))
     ORDER BY e.seq, w.id
    ON CONFLICT (instance_key, idempotency_key) DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER agent_memory_events_webhooks
    AFTER INSERT ON agent_memory_events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION memory_enqueue_webhook_deliveries();

-- The delivery status of one webhook (GET /internal/memory/webhooks/{id}/deliveries).
CREATE INDEX agent_memory_ingestion_outbox_webhook_idx
    ON agent_memory_ingestion_outbox (instance_key, (payload ->> 'webhookId'), id DESC)
    WHERE job_type = 'webhook_delivery';
