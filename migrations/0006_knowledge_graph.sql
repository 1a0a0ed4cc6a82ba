-- Source-backed knowledge graph: entities (nodes), claims (entity -> entity or literal),
-- edges (entity -> entity), evidence (provenance), and generation-versioned embeddings.
-- Graph rows are cumulative; every row repeats its instance_key and composite foreign keys
-- reject links across instances.

CREATE TABLE agent_knowledge_entities (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key        text NOT NULL,
    entity_type         text NOT NULL CHECK (entity_type IN (
                            'user', 'mandant', 'document', 'task', 'module', 'route', 'channel',
                            'preference', 'workflow', 'concept', 'person', 'organization',
                            'project', 'tool', 'place', 'event', 'other')),
    label               text NOT NULL CHECK (label <> ''),
    normalized_label    text NOT NULL,
    aliases             text[] NOT NULL DEFAULT '{}',
    visibility_scope    text NOT NULL CHECK (visibility_scope IN ('private', 'team', 'workspace', 'channel')),
    audience_key        text NOT NULL CHECK (audience_key <> ''),
    linked_record_type  text,
    linked_record_id    text,
    subject_refs        jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(subject_refs) = 'object'),
    status              text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'quarantined', 'merged')),
    content_hash        text NOT NULL DEFAULT '',
    metadata            jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CHECK ((linked_record_type IS NULL) = (linked_record_id IS NULL)),
    UNIQUE (instance_key, id),
    UNIQUE (instance_key, visibility_scope, audience_key, id)
);
CREATE INDEX agent_knowledge_entities_lookup_idx
    ON agent_knowledge_entities (instance_key, visibility_scope, audience_key, entity_type, normalized_label);
CREATE UNIQUE INDEX agent_knowledge_entities_linked_record
    ON agent_knowledge_entities (instance_key, visibility_scope, audience_key, entity_type,
                                 linked_record_type, linked_record_id)
    WHERE linked_record_id IS NOT NULL AND status = 'active';
CREATE TRIGGER agent_knowledge_entities_touch BEFORE UPDATE ON agent_knowledge_entities
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_knowledge_claims (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key       text NOT NULL,
    subject_entity_id  uuid NOT NULL,
    predicate          text NOT NULL CHECK (predicate <> ''),
    object_entity_id   uuid,
    object_value       text,
    assertion_text     text NOT NULL CHECK (assertion_text <> ''),
    claim_tsv          tsvector GENERATED ALWAYS AS (
                           to_tsvector('english'::regconfig, assertion_text)
                           || to_tsvector('german'::regconfig, assertion_text)) STORED,
    confidence         real NOT NULL DEFAULT 0.5 CHECK (confidence BETWEEN 0 AND 1),
    visibility_scope   text NOT NULL CHECK (visibility_scope IN ('private', 'team', 'workspace', 'channel')),
    audience_key       text NOT NULL CHECK (audience_key <> ''),
    status             text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded', 'rejected')),
    subject_refs       jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(subject_refs) = 'object'),
    source_refs        jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(source_refs) = 'array'),
    content_hash       text NOT NULL DEFAULT '',
    valid_from         timestamptz,
    valid_to           timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CHECK (object_entity_id IS NOT NULL OR object_value IS NOT NULL),
    UNIQUE (instance_key, id),
    -- A claim lives in the audience partition of the entities it connects.
    FOREIGN KEY (instance_key, visibility_scope, audience_key, subject_entity_id)
        REFERENCES agent_knowledge_entities (instance_key, visibility_scope, audience_key, id),
    FOREIGN KEY (instance_key, visibility_scope, audience_key, object_entity_id)
        REFERENCES agent_knowledge_entities (instance_key, visibility_scope, audience_key, id)
);
CREATE INDEX agent_knowledge_claims_subject_idx
    ON agent_knowledge_claims (instance_key, subject_entity_id) WHERE status = 'active';
CREATE INDEX agent_knowledge_claims_tsv_idx ON agent_knowledge_claims USING gin (claim_tsv);
CREATE TRIGGER agent_knowledge_claims_touch BEFORE UPDATE ON agent_knowledge_claims
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_knowledge_edges (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key      text NOT NULL,
    source_entity_id  uuid NOT NULL,
    target_entity_id  uuid NOT NULL,
    relation_type     text NOT NULL CHECK (relation_type ~ '^[a-z][a-z0-9_]*$'),
    confidence        real NOT NULL DEFAULT 0.5 CHECK (confidence BETWEEN 0 AND 1),
    visibility_scope  text NOT NULL CHECK (visibility_scope IN ('private', 'team', 'workspace', 'channel')),
    audience_key      text NOT NULL CHECK (audience_key <> ''),
    status            text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded', 'rejected')),
    subject_refs      jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(subject_refs) = 'object'),
    source_refs       jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(source_refs) = 'array'),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (instance_key, id),
    FOREIGN KEY (instance_key, visibility_scope, audience_key, source_entity_id)
        REFERENCES agent_knowledge_entities (instance_key, visibility_scope, audience_key, id),
    FOREIGN KEY (instance_key, visibility_scope, audience_key, target_entity_id)
        REFERENCES agent_knowledge_entities (instance_key, visibility_scope, audience_key, id)
);
CREATE UNIQUE INDEX agent_knowledge_edges_active_unique
    ON agent_knowledge_edges (instance_key, source_entity_id, target_entity_id, relation_type)
    WHERE status = 'active';
CREATE INDEX agent_knowledge_edges_target_idx ON agent_knowledge_edges (instance_key, target_entity_id);
CREATE TRIGGER agent_knowledge_edges_touch BEFORE UPDATE ON agent_knowledge_edges
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();

-- ---------------------------------------------------------------------------------------
-- Provenance: each row backs exactly one entity, claim or edge with a dream run, a source
-- memory and/or a canonical assertion of the same instance.
CREATE TABLE agent_knowledge_evidence (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key      text NOT NULL,
    entity_id         uuid,
    claim_id          uuid,
    edge_id           uuid,
    evidence_kind     text NOT NULL CHECK (evidence_kind IN ('dream', 'memory', 'assertion')),
    dream_id          uuid,
    source_memory_id  uuid,
    assertion_id      uuid,
    excerpt           text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CHECK (num_nonnulls(entity_id, claim_id, edge_id) = 1),
    CHECK (num_nonnulls(dream_id, source_memory_id, assertion_id) >= 1),
    CHECK (evidence_kind <> 'dream' OR dream_id IS NOT NULL),
    CHECK (evidence_kind <> 'memory' OR source_memory_id IS NOT NULL),
    CHECK (evidence_kind <> 'assertion' OR assertion_id IS NOT NULL),
    FOREIGN KEY (instance_key, entity_id) REFERENCES agent_knowledge_entities (instance_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, claim_id) REFERENCES agent_knowledge_claims (instance_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, edge_id) REFERENCES agent_knowledge_edges (instance_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, dream_id) REFERENCES agent_memory_dreams (instance_key, id),
    FOREIGN KEY (instance_key, source_memory_id) REFERENCES agent_memories (instance_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, assertion_id) REFERENCES agent_memory_assertions (instance_key, id) ON DELETE CASCADE
);
CREATE INDEX agent_knowledge_evidence_entity_idx ON agent_knowledge_evidence (entity_id, created_at DESC) WHERE entity_id IS NOT NULL;
CREATE INDEX agent_knowledge_evidence_claim_idx ON agent_knowledge_evidence (claim_id, created_at DESC) WHERE claim_id IS NOT NULL;
CREATE INDEX agent_knowledge_evidence_edge_idx ON agent_knowledge_evidence (edge_id, created_at DESC) WHERE edge_id IS NOT NULL;
CREATE INDEX agent_knowledge_evidence_dream_idx ON agent_knowledge_evidence (dream_id) WHERE dream_id IS NOT NULL;

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_knowledge_entity_embeddings (
    instance_key   text NOT NULL,
    entity_id      uuid NOT NULL,
    generation_id  bigint NOT NULL,
    embedding_key  text NOT NULL,
    embedding      vector NOT NULL,
    content_hash   text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (entity_id, generation_id),
    FOREIGN KEY (instance_key, entity_id)
        REFERENCES agent_knowledge_entities (instance_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, generation_id, embedding_key)
        REFERENCES agent_memory_embedding_generations (instance_key, id, generation_key)
);
CREATE TRIGGER agent_knowledge_entity_embeddings_dims
    BEFORE INSERT OR UPDATE ON agent_knowledge_entity_embeddings
    FOR EACH ROW EXECUTE FUNCTION memory_check_embedding_dims();

CREATE TABLE agent_knowledge_claim_embeddings (
    instance_key   text NOT NULL,
    claim_id       uuid NOT NULL,
    generation_id  bigint NOT NULL,
    embedding_key  text NOT NULL,
    embedding      vector NOT NULL,
    content_hash   text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (claim_id, generation_id),
    FOREIGN KEY (instance_key, claim_id)
        REFERENCES agent_knowledge_claims (instance_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, generation_id, embedding_key)
        REFERENCES agent_memory_embedding_generations (instance_key, id, generation_key)
);
CREATE TRIGGER agent_knowledge_claim_embeddings_dims
    BEFORE INSERT OR UPDATE ON agent_knowledge_claim_embeddings
    FOR EACH ROW EXECUTE FUNCTION memory_check_embedding_dims();
