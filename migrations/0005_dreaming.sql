-- Dreaming: one agent_memory_dreams row per audience-partition execution, draft Wiki
-- proposals, and the before-image audit of every consolidation mutation.

CREATE TABLE agent_memory_dreams (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key    text NOT NULL,
    audience_kind   text NOT NULL CHECK (audience_kind IN ('private', 'team', 'workspace', 'channel')),
    audience_key    text NOT NULL CHECK (audience_key <> ''),
    partition_key   text NOT NULL,           -- Dagster partition: instance/kind/key (encoded)
    status          text NOT NULL DEFAULT 'running' CHECK (status IN (
                        'running', 'completed', 'partial', 'skipped', 'failed', 'rolled_back')),
    trigger_kind    text NOT NULL DEFAULT 'scheduled' CHECK (trigger_kind IN (
                        'scheduled', 'manual', 'backfill', 'system')),
    model           text,                    -- the exact model, written before generation
    dry_run         boolean NOT NULL DEFAULT false,
    stats_json      jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(stats_json) = 'object'),
    diagnostics     jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(diagnostics) = 'array'),
    proposals_json  jsonb,                   -- validated proposals (dry runs keep them here)
    dagster_run_id  text,
    error           text,
    started_at      timestamptz NOT NULL DEFAULT now(),
    heartbeat_at    timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    rolled_back_at  timestamptz,
    CHECK ((status = 'running') = (finished_at IS NULL)),
    UNIQUE (instance_key, id),
    UNIQUE (instance_key, audience_kind, audience_key, id)
);
CREATE INDEX agent_memory_dreams_partition_idx
    ON agent_memory_dreams (instance_key, audience_kind, audience_key, started_at DESC);
CREATE INDEX agent_memory_dreams_running_idx ON agent_memory_dreams (started_at) WHERE status = 'running';

-- What a Dream writes stays in the Dream's audience partition.
ALTER TABLE agent_memory_assertions
    ADD FOREIGN KEY (instance_key, audience_kind, audience_key, dream_id)
        REFERENCES agent_memory_dreams (instance_key, audience_kind, audience_key, id);
ALTER TABLE agent_memory_assertion_evidence
    ADD FOREIGN KEY (instance_key, audience_kind, audience_key, dream_id)
        REFERENCES agent_memory_dreams (instance_key, audience_kind, audience_key, id);
ALTER TABLE agent_memory_assertion_reviews
    ADD FOREIGN KEY (instance_key, dream_id) REFERENCES agent_memory_dreams (instance_key, id);
ALTER TABLE agent_memories
    ADD FOREIGN KEY (instance_key, visibility_scope, audience_key, dream_id)
        REFERENCES agent_memory_dreams (instance_key, audience_kind, audience_key, id);
ALTER TABLE agent_memory_relations
    ADD FOREIGN KEY (instance_key, dream_id) REFERENCES agent_memory_dreams (instance_key, id);

-- ---------------------------------------------------------------------------------------
-- Wiki output is always a review proposal; Dreaming never publishes.
CREATE TABLE wiki_change_proposals (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key    text NOT NULL,
    audience_kind   text NOT NULL CHECK (audience_kind IN ('private', 'team', 'workspace', 'channel')),
    audience_key    text NOT NULL CHECK (audience_key <> ''),
    dream_id        uuid,
    state           text NOT NULL DEFAULT 'draft' CHECK (state IN (
                        'draft', 'approved', 'rejected', 'published')),
    page_slug       text NOT NULL CHECK (page_slug ~ '^[a-z0-9][a-z0-9-]*(/[a-z0-9][a-z0-9-]*)*$'),
    title           text NOT NULL CHECK (title <> ''),
    body_markdown   text NOT NULL,
    rationale       text,
    assertion_refs  jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(assertion_refs) = 'array'),
    evidence_refs   jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(evidence_refs) = 'array'),
    decided_by      text,
    decided_at      timestamptz,
    decision_reason text,
    published_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (state <> 'published' OR published_at IS NOT NULL),
    UNIQUE (instance_key, id),
    FOREIGN KEY (instance_key, audience_kind, audience_key, dream_id)
        REFERENCES agent_memory_dreams (instance_key, audience_kind, audience_key, id)
);
CREATE INDEX wiki_change_proposals_dream_idx ON wiki_change_proposals (dream_id);
CREATE TRIGGER wiki_change_proposals_touch BEFORE UPDATE ON wiki_change_proposals
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();

-- ---------------------------------------------------------------------------------------
-- Before-images of every consolidation mutation, written in the same transaction.
CREATE TABLE agent_memory_v2_cleanup_audit (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_key  text NOT NULL,
    dream_id      uuid,
    operation     text NOT NULL CHECK (operation IN (
                      'assertion_supersede', 'assertion_duplicate', 'conflict_open',
                      'relation_write', 'entity_merge', 'claim_repoint', 'edge_repoint',
                      'evidence_repoint', 'claim_stale', 'edge_stale', 'entity_quarantine',
                      'retention_delete')),
    target_table  text NOT NULL,
    target_id     text NOT NULL,
    before_image  jsonb,
    after_image   jsonb,
    mapping       jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (instance_key, dream_id) REFERENCES agent_memory_dreams (instance_key, id)
);
CREATE INDEX agent_memory_v2_cleanup_audit_target_idx
    ON agent_memory_v2_cleanup_audit (target_table, target_id);
CREATE TRIGGER agent_memory_v2_cleanup_audit_append_only
    BEFORE UPDATE OR DELETE ON agent_memory_v2_cleanup_audit
    FOR EACH ROW EXECUTE FUNCTION memory_reject_mutation();
CREATE TRIGGER agent_memory_v2_cleanup_audit_no_truncate
    BEFORE TRUNCATE ON agent_memory_v2_cleanup_audit
    FOR EACH STATEMENT EXECUTE FUNCTION memory_reject_mutation();
