-- Memory v2 ledger: immutable sources, canonical assertions, evidence, reviews, conflicts,
-- embedding generations, feedback and the projection outbox.
--
-- Cross-instance guard: every link is a composite foreign key that includes instance_key,
-- so a row can only point at rows of its own instance. Evidence additionally carries the
-- audience and links source and assertion by (instance, audience kind, audience key, id):
-- evidence can never cross an audience.
--
-- Full text: German and English are both indexed (english || german tsvector), because the
-- memories of one workspace mix both and a per-row language guess is wrong on short texts.

-- ---------------------------------------------------------------------------------------
-- Embedding generations: one row per (instance, provider, model, dimensions, preprocessing).
-- generation_key names the model identity; partial HNSW indexes are created per key when a
-- generation is registered (memory_platform/embeddings/generations.py), so instances on
-- the same model share one index and vectors of different keys are never compared.
CREATE TABLE agent_memory_embedding_generations (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_key    text NOT NULL,
    provider        text NOT NULL CHECK (provider IN ('openai', 'local', 'hash')),
    model           text NOT NULL CHECK (model <> ''),
    dimensions      integer NOT NULL CHECK (dimensions BETWEEN 1 AND 2000),
    preprocessing   text NOT NULL DEFAULT 'v1',
    generation_key  text NOT NULL CHECK (generation_key ~ '^[A-Za-z0-9._:/-]+$'),
    status          text NOT NULL DEFAULT 'active'
                    CHECK (status IN ('active', 'building', 'retired')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    activated_at    timestamptz,
    retired_at      timestamptz,
    UNIQUE (instance_key, generation_key),
    UNIQUE (instance_key, id),
    UNIQUE (instance_key, id, generation_key)
);
CREATE UNIQUE INDEX agent_memory_embedding_generations_one_active
    ON agent_memory_embedding_generations (instance_key) WHERE status = 'active';

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_memory_sources (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key    text NOT NULL,
    audience_kind   text NOT NULL CHECK (audience_kind IN ('private', 'team', 'workspace', 'channel')),
    audience_key    text NOT NULL CHECK (audience_key <> ''),
    owner_user_id   text,
    session_key     text,
    source_key      text NOT NULL,          -- idempotency identity, e.g. 'memory:<uuid>'
    source_kind     text NOT NULL CHECK (source_kind IN (
                        'memory', 'context_message', 'context_summary', 'prompt_file',
                        'workspace_file', 'legacy_transcript', 'dream', 'manual')),
    trust_class     text NOT NULL CHECK (trust_class IN (
                        'human_direct', 'human_channel', 'assistant_inference',
                        'automation', 'system', 'imported', 'dream_derived')),
    source_locator  jsonb NOT NULL DEFAULT '{}'::jsonb,
    memory_id       uuid,                   -- FK added with agent_memories (0004)
    content         text NOT NULL CHECK (content <> ''),
    content_hash    text NOT NULL,
    metadata        jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (audience_kind <> 'private' OR (owner_user_id IS NOT NULL AND audience_key = owner_user_id)),
    UNIQUE (instance_key, source_key),
    UNIQUE (instance_key, id),
    UNIQUE (instance_key, audience_kind, audience_key, id)
);
CREATE INDEX agent_memory_sources_audience_idx
    ON agent_memory_sources (instance_key, audience_kind, audience_key);
CREATE INDEX agent_memory_sources_memory_idx ON agent_memory_sources (instance_key, memory_id);

-- Sources are immutable envelopes: evidence excerpts are checked against their content.
-- Only the link to the memory row written from them (memory_id) may be set afterwards.
CREATE FUNCTION memory_sources_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.id, NEW.instance_key, NEW.audience_kind, NEW.audience_key, NEW.owner_user_id,
        NEW.session_key, NEW.source_key, NEW.source_kind, NEW.trust_class,
        NEW.source_locator, NEW.content, NEW.content_hash, NEW.metadata, NEW.created_at)
       IS DISTINCT FROM
       (OLD.id, OLD.instance_key, OLD.audience_kind, OLD.audience_key, OLD.owner_user_id,
        OLD.session_key, OLD.source_key, OLD.source_kind, OLD.trust_class,
        OLD.source_locator, OLD.content, OLD.content_hash, OLD.metadata, OLD.created_at) THEN
        RAISE EXCEPTION 'agent_memory_sources rows are immutable (source %)', OLD.id
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER agent_memory_sources_immutable BEFORE UPDATE ON agent_memory_sources
    FOR EACH ROW EXECUTE FUNCTION memory_sources_immutable();

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_memory_assertions (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key         text NOT NULL,
    audience_kind        text NOT NULL CHECK (audience_kind IN ('private', 'team', 'workspace', 'channel')),
    audience_key         text NOT NULL CHECK (audience_key <> ''),
    owner_user_id        text,
    identity_hash        text NOT NULL,     -- stable identity: normalised slot + text
    assertion_type       text NOT NULL CHECK (assertion_type IN (
                             'fact', 'preference', 'decision', 'constraint', 'procedure',
                             'correction', 'observation')),
    subject              text,              -- canonical slot (subject / predicate), optional
    predicate            text,
    assertion_text       text NOT NULL CHECK (assertion_text <> ''),
    assertion_tsv        tsvector GENERATED ALWAYS AS (
                             to_tsvector('english'::regconfig, assertion_text)
                             || to_tsvector('german'::regconfig, assertion_text)) STORED,
    status               text NOT NULL DEFAULT 'candidate' CHECK (status IN (
                             'candidate', 'active', 'conflicted', 'superseded', 'rejected',
                             'expired', 'tombstoned')),
    review_state         text NOT NULL DEFAULT 'pending' CHECK (review_state IN (
                             'pending', 'policy_approved', 'policy_rejected',
                             'human_approved', 'human_rejected')),
    origin               text NOT NULL CHECK (origin IN (
                             'shared_fact', 'explicit', 'flush', 'dream', 'import',
                             'consolidation', 'manual_review')),
    confidence           real NOT NULL DEFAULT 0.5 CHECK (confidence BETWEEN 0 AND 1),
    valid_from           timestamptz,
    valid_to             timestamptz,
    revision_of          uuid,
    superseded_by        uuid,
    dream_id             uuid,              -- FK added with agent_memory_dreams (0005)
    subject_refs         jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(subject_refs) = 'object'),
    metadata             jsonb NOT NULL DEFAULT '{}'::jsonb,
    injected_count       integer NOT NULL DEFAULT 0 CHECK (injected_count >= 0),
    cited_count          integer NOT NULL DEFAULT 0 CHECK (cited_count >= 0),
    corrected_count      integer NOT NULL DEFAULT 0 CHECK (corrected_count >= 0),
    last_injected_at     timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CHECK (audience_kind <> 'private' OR (owner_user_id IS NOT NULL AND audience_key = owner_user_id)),
    CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_to > valid_from),
    CHECK (revision_of <> id AND superseded_by <> id),
    UNIQUE (instance_key, audience_kind, audience_key, identity_hash),
    UNIQUE (instance_key, id),
    UNIQUE (instance_key, audience_kind, audience_key, id),
    FOREIGN KEY (instance_key, revision_of) REFERENCES agent_memory_assertions (instance_key, id),
    FOREIGN KEY (instance_key, superseded_by) REFERENCES agent_memory_assertions (instance_key, id)
);
CREATE INDEX agent_memory_assertions_recall_idx
    ON agent_memory_assertions (instance_key, audience_kind, status, review_state);
CREATE INDEX agent_memory_assertions_tsv_idx ON agent_memory_assertions USING gin (assertion_tsv);
CREATE INDEX agent_memory_assertions_slot_idx
    ON agent_memory_assertions (instance_key, audience_kind, audience_key, subject, predicate);
CREATE INDEX agent_memory_assertions_dream_idx ON agent_memory_assertions (dream_id);
-- updated_at means "the assertion changed": feedback counters do not touch it.
CREATE TRIGGER agent_memory_assertions_touch
    BEFORE UPDATE OF audience_kind, audience_key, owner_user_id, assertion_type, subject,
                     predicate, assertion_text, status, review_state, confidence, valid_from,
                     valid_to, revision_of, superseded_by, subject_refs, metadata
    ON agent_memory_assertions
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_memory_assertion_evidence (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key   text NOT NULL,
    audience_kind  text NOT NULL,
    audience_key   text NOT NULL,
    assertion_id   uuid NOT NULL,
    source_id      uuid NOT NULL,
    stance         text NOT NULL DEFAULT 'supports' CHECK (stance IN ('supports', 'contradicts')),
    excerpt        text NOT NULL CHECK (excerpt <> '' AND length(excerpt) <= 2000),
    dream_id       uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (instance_key, id),
    FOREIGN KEY (instance_key, audience_kind, audience_key, assertion_id)
        REFERENCES agent_memory_assertions (instance_key, audience_kind, audience_key, id)
        ON DELETE CASCADE,
    FOREIGN KEY (instance_key, audience_kind, audience_key, source_id)
        REFERENCES agent_memory_sources (instance_key, audience_kind, audience_key, id)
);
CREATE UNIQUE INDEX agent_memory_assertion_evidence_unique
    ON agent_memory_assertion_evidence (assertion_id, source_id, stance, md5(excerpt));
CREATE INDEX agent_memory_assertion_evidence_source_idx
    ON agent_memory_assertion_evidence (instance_key, source_id);

-- Invariant: an excerpt occurs verbatim in the source it cites.
CREATE FUNCTION memory_evidence_excerpt_verbatim() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM agent_memory_sources s
         WHERE s.id = NEW.source_id AND strpos(s.content, NEW.excerpt) > 0
    ) THEN
        RAISE EXCEPTION 'evidence excerpt does not occur verbatim in source %', NEW.source_id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER agent_memory_assertion_evidence_verbatim
    BEFORE INSERT OR UPDATE ON agent_memory_assertion_evidence
    FOR EACH ROW EXECUTE FUNCTION memory_evidence_excerpt_verbatim();

-- ---------------------------------------------------------------------------------------
-- Append-only review decisions; the latest human decision always wins over automation.
CREATE TABLE agent_memory_assertion_reviews (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_key   text NOT NULL,
    assertion_id   uuid NOT NULL,
    decision       text NOT NULL CHECK (decision IN (
                       'approve', 'reject', 'activate', 'defer', 'revoke', 'supersede',
                       'rollback')),
    reviewer_kind  text NOT NULL CHECK (reviewer_kind IN ('human', 'policy', 'curator', 'system')),
    reviewer_id    text,
    reason_code    text NOT NULL CHECK (reason_code ~ '^[a-z][a-z0-9_]*$'),
    note           text,
    dream_id       uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (instance_key, assertion_id)
        REFERENCES agent_memory_assertions (instance_key, id)
);
CREATE INDEX agent_memory_assertion_reviews_assertion_idx
    ON agent_memory_assertion_reviews (assertion_id, created_at);
CREATE TRIGGER agent_memory_assertion_reviews_append_only
    BEFORE UPDATE OR DELETE ON agent_memory_assertion_reviews
    FOR EACH ROW EXECUTE FUNCTION memory_reject_mutation();
CREATE TRIGGER agent_memory_assertion_reviews_no_truncate
    BEFORE TRUNCATE ON agent_memory_assertion_reviews
    FOR EACH STATEMENT EXECUTE FUNCTION memory_reject_mutation();

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_memory_assertion_conflicts (
    id                        uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key              text NOT NULL,
    audience_kind             text NOT NULL,
    audience_key              text NOT NULL,
    assertion_id              uuid NOT NULL,
    conflicting_assertion_id  uuid NOT NULL,
    status                    text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    resolution                text CHECK (resolution IN (
                                  'superseded', 'kept_both', 'rejected', 'duplicate')),
    detected_by               text NOT NULL CHECK (detected_by IN (
                                  'consolidation', 'dream', 'write_path', 'human')),
    reason                    text,
    created_at                timestamptz NOT NULL DEFAULT now(),
    resolved_at               timestamptz,
    resolved_by               text,
    CHECK (assertion_id <> conflicting_assertion_id),
    CHECK ((status = 'resolved') = (resolution IS NOT NULL)),
    FOREIGN KEY (instance_key, audience_kind, audience_key, assertion_id)
        REFERENCES agent_memory_assertions (instance_key, audience_kind, audience_key, id)
        ON DELETE CASCADE,
    FOREIGN KEY (instance_key, audience_kind, audience_key, conflicting_assertion_id)
        REFERENCES agent_memory_assertions (instance_key, audience_kind, audience_key, id)
        ON DELETE CASCADE
);
CREATE UNIQUE INDEX agent_memory_assertion_conflicts_open_pair
    ON agent_memory_assertion_conflicts (
        LEAST(assertion_id, conflicting_assertion_id),
        GREATEST(assertion_id, conflicting_assertion_id))
    WHERE status = 'open';

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_memory_assertion_embeddings (
    instance_key    text NOT NULL,
    assertion_id    uuid NOT NULL,
    generation_id   bigint NOT NULL,
    embedding_key   text NOT NULL,
    embedding       vector NOT NULL,
    content_hash    text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (assertion_id, generation_id),
    FOREIGN KEY (instance_key, assertion_id)
        REFERENCES agent_memory_assertions (instance_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, generation_id, embedding_key)
        REFERENCES agent_memory_embedding_generations (instance_key, id, generation_key)
);
CREATE TRIGGER agent_memory_assertion_embeddings_dims
    BEFORE INSERT OR UPDATE ON agent_memory_assertion_embeddings
    FOR EACH ROW EXECUTE FUNCTION memory_check_embedding_dims();

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_memory_retrieval_feedback (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_key  text NOT NULL,
    assertion_id  uuid,
    memory_id     uuid,                     -- FK added with agent_memories (0004)
    event_type    text NOT NULL CHECK (event_type IN (
                      'retrieved', 'injected', 'cited', 'corrected', 'helpful', 'unhelpful')),
    user_id       text,
    session_key   text,
    run_id        text,
    details       jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (assertion_id IS NOT NULL OR memory_id IS NOT NULL),
    FOREIGN KEY (instance_key, assertion_id)
        REFERENCES agent_memory_assertions (instance_key, id) ON DELETE CASCADE
);
CREATE INDEX agent_memory_retrieval_feedback_assertion_idx
    ON agent_memory_retrieval_feedback (assertion_id, event_type, created_at);
CREATE INDEX agent_memory_retrieval_feedback_run_idx
    ON agent_memory_retrieval_feedback (instance_key, run_id) WHERE run_id IS NOT NULL;
CREATE UNIQUE INDEX agent_memory_retrieval_feedback_once_per_run
    ON agent_memory_retrieval_feedback (instance_key, assertion_id, event_type, run_id)
    WHERE run_id IS NOT NULL AND assertion_id IS NOT NULL;

-- ---------------------------------------------------------------------------------------
-- Idempotent projection work, keyed by the real instance_key.
CREATE TABLE agent_memory_ingestion_outbox (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_key     text NOT NULL,
    job_type         text NOT NULL CHECK (job_type IN (
                         'assertion_projection', 'assertion_embedding', 'graph_projection',
                         'memory_embedding', 'profile_refresh')),
    subject_id       uuid NOT NULL,
    idempotency_key  text NOT NULL,
    payload          jsonb NOT NULL DEFAULT '{}'::jsonb,
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN (
                         'pending', 'processing', 'done', 'failed')),
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    available_at     timestamptz NOT NULL DEFAULT now(),
    locked_at        timestamptz,
    locked_by        text,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    completed_at     timestamptz,
    UNIQUE (instance_key, idempotency_key)
);
CREATE INDEX agent_memory_ingestion_outbox_due_idx
    ON agent_memory_ingestion_outbox (available_at) WHERE status IN ('pending', 'failed');
CREATE TRIGGER agent_memory_ingestion_outbox_touch BEFORE UPDATE ON agent_memory_ingestion_outbox
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();
