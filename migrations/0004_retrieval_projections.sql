-- Retrieval projections: one agent_memories row per source document, summary, flush, fact
-- or approved assertion projection; chunks with embeddings and full text; typed relations;
-- precomputed user profiles.

CREATE TABLE agent_memories (
    id                       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key             text NOT NULL,
    memory_scope             text NOT NULL CHECK (memory_scope IN ('workspace', 'user', 'session', 'channel')),
    visibility_scope         text NOT NULL CHECK (visibility_scope IN ('private', 'team', 'workspace', 'channel')),
    audience_key             text NOT NULL CHECK (audience_key <> ''),
    user_id                  text,
    session_key              text,
    group_room_id            text,
    channel_thread_key       text,
    channel_type             text,
    subject_refs             jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(subject_refs) = 'object'),
    source_type              text NOT NULL CHECK (source_type IN (
                                 'prompt_file', 'summary', 'fact', 'manual', 'dream', 'flush')),
    memory_state             text NOT NULL DEFAULT 'active' CHECK (memory_state IN ('active', 'archived', 'superseded')),
    title                    text,
    content                  text NOT NULL CHECK (content <> ''),
    content_hash             text NOT NULL,      -- of the normalised content (dedup)
    subject_key              text NOT NULL DEFAULT '',  -- normalised subject refs (dedup)
    metadata                 jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(metadata) = 'object'),
    assertion_id             uuid,
    source_id                uuid,
    dream_id                 uuid,               -- FK added with agent_memory_dreams (0005)
    superseded_by_memory_id  uuid,
    source_refs              jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(source_refs) = 'array'),
    retrieval_count          integer NOT NULL DEFAULT 0 CHECK (retrieval_count >= 0),
    last_retrieved_at        timestamptz,
    archived_at              timestamptz,
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now(),
    CHECK (visibility_scope <> 'private' OR (user_id IS NOT NULL AND audience_key = user_id)),
    CHECK (visibility_scope <> 'channel' OR channel_thread_key IS NOT NULL OR group_room_id IS NOT NULL),
    CHECK (memory_scope <> 'user' OR user_id IS NOT NULL),
    CHECK (memory_scope <> 'session' OR session_key IS NOT NULL),
    UNIQUE (instance_key, id),
    UNIQUE (instance_key, visibility_scope, audience_key, id),
    -- A projection lives in the audience of its assertion and of its source envelope.
    FOREIGN KEY (instance_key, visibility_scope, audience_key, assertion_id)
        REFERENCES agent_memory_assertions (instance_key, audience_kind, audience_key, id)
        ON DELETE SET NULL (assertion_id),
    FOREIGN KEY (instance_key, visibility_scope, audience_key, source_id)
        REFERENCES agent_memory_sources (instance_key, audience_kind, audience_key, id),
    FOREIGN KEY (instance_key, superseded_by_memory_id)
        REFERENCES agent_memories (instance_key, id) ON DELETE SET NULL (superseded_by_memory_id)
);
-- The hot-path filter: instance, audience, state.
CREATE INDEX agent_memories_visibility_idx
    ON agent_memories (instance_key, visibility_scope, memory_state);
CREATE INDEX agent_memories_audience_idx
    ON agent_memories (instance_key, visibility_scope, audience_key) WHERE memory_state = 'active';
CREATE INDEX agent_memories_user_idx ON agent_memories (instance_key, user_id) WHERE user_id IS NOT NULL;
CREATE INDEX agent_memories_session_idx ON agent_memories (instance_key, session_key) WHERE session_key IS NOT NULL;
CREATE INDEX agent_memories_dedup_idx
    ON agent_memories (instance_key, visibility_scope, audience_key, content_hash, subject_key);
-- Rows written from a source envelope (source_id set) may share an assertion (a repeated
-- fact cites several sources); a pure projection of an assertion exists once.
CREATE INDEX agent_memories_assertion_idx
    ON agent_memories (instance_key, assertion_id) WHERE assertion_id IS NOT NULL;
CREATE UNIQUE INDEX agent_memories_one_projection_per_assertion
    ON agent_memories (instance_key, assertion_id) WHERE assertion_id IS NOT NULL AND source_id IS NULL;
CREATE INDEX agent_memories_subject_refs_idx ON agent_memories USING gin (subject_refs jsonb_path_ops);
CREATE INDEX agent_memories_dream_idx ON agent_memories (dream_id) WHERE dream_id IS NOT NULL;
-- updated_at means "the memory changed" (dedup windows, Dreaming recency): recall stamps
-- (retrieval_count, last_retrieved_at) do not touch it; a dedup hit sets it explicitly.
CREATE TRIGGER agent_memories_touch
    BEFORE UPDATE OF memory_scope, visibility_scope, audience_key, subject_refs, source_type,
                     memory_state, title, content, content_hash, subject_key, metadata,
                     assertion_id, superseded_by_memory_id, source_refs, archived_at
    ON agent_memories
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();

-- Deferred: the write path inserts a memory and its source envelope in one transaction,
-- each naming the other.
ALTER TABLE agent_memory_sources
    ADD FOREIGN KEY (instance_key, memory_id)
        REFERENCES agent_memories (instance_key, id) ON DELETE SET NULL (memory_id)
        DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE agent_memory_retrieval_feedback
    ADD FOREIGN KEY (instance_key, memory_id)
        REFERENCES agent_memories (instance_key, id) ON DELETE CASCADE;

-- ---------------------------------------------------------------------------------------
-- Chunks: about 1000 characters with overlap. `embedding` has no fixed dimension so models
-- of different sizes coexist; generation_id/embedding_key say which model made it and
-- metadata.embedding keeps the provenance (key, strategy, model). A NULL embedding is a
-- keyword-only row waiting for re-embedding.
CREATE TABLE agent_memory_chunks (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_key   text NOT NULL,
    memory_id      uuid NOT NULL,
    chunk_index    integer NOT NULL CHECK (chunk_index >= 0),
    content        text NOT NULL CHECK (content <> ''),
    content_tsv    tsvector GENERATED ALWAYS AS (
                       to_tsvector('english'::regconfig, content)
                       || to_tsvector('german'::regconfig, content)) STORED,
    start_offset   integer NOT NULL DEFAULT 0 CHECK (start_offset >= 0),
    end_offset     integer NOT NULL DEFAULT 0 CHECK (end_offset >= start_offset),
    embedding      vector,
    generation_id  bigint,
    embedding_key  text,
    metadata       jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(metadata) = 'object'),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CHECK ((generation_id IS NULL) = (embedding_key IS NULL)),
    UNIQUE (memory_id, chunk_index),
    FOREIGN KEY (instance_key, memory_id)
        REFERENCES agent_memories (instance_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, generation_id, embedding_key)
        REFERENCES agent_memory_embedding_generations (instance_key, id, generation_key)
);
CREATE INDEX agent_memory_chunks_tsv_idx ON agent_memory_chunks USING gin (content_tsv);
CREATE INDEX agent_memory_chunks_instance_idx ON agent_memory_chunks (instance_key, memory_id);
CREATE INDEX agent_memory_chunks_reembed_idx
    ON agent_memory_chunks (instance_key, embedding_key);
CREATE TRIGGER agent_memory_chunks_dims BEFORE INSERT OR UPDATE ON agent_memory_chunks
    FOR EACH ROW EXECUTE FUNCTION memory_check_embedding_dims();
CREATE TRIGGER agent_memory_chunks_touch BEFORE UPDATE ON agent_memory_chunks
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_memory_relations (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key    text NOT NULL,
    from_memory_id  uuid NOT NULL,
    to_memory_id    uuid NOT NULL,
    relation_type   text NOT NULL CHECK (relation_type IN ('updates', 'extends', 'derives')),
    dream_id        uuid,
    metadata        jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (from_memory_id <> to_memory_id),
    UNIQUE (from_memory_id, to_memory_id, relation_type),
    FOREIGN KEY (instance_key, from_memory_id)
        REFERENCES agent_memories (instance_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, to_memory_id)
        REFERENCES agent_memories (instance_key, id) ON DELETE CASCADE
);

-- ---------------------------------------------------------------------------------------
CREATE TABLE agent_user_profiles (
    instance_key     text NOT NULL,
    user_id          text NOT NULL CHECK (user_id <> ''),
    static_facts     jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(static_facts) = 'array'),
    dynamic_context  jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(dynamic_context) = 'array'),
    profile_text     text NOT NULL DEFAULT '',
    built_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_key, user_id)
);
