-- Sessions: conversations in, memory out (docs/sessions.md).
--
-- A session's turn items are appended to agent_context_messages (idempotent by the client's
-- item id), grouped into runs (the unit a "turn" is counted in by flush and compaction), and
-- maintained in the background: shared facts after a completed run, a flush of durable facts,
-- and compaction of older items into leaf and condensed summaries. Nothing is deleted: every
-- raw item stays reachable from every summary above it.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- When it happened (event time), distinct from created_at (when it was written).
ALTER TABLE agent_memories ADD COLUMN occurred_at timestamptz;

-- Runs of a session, numbered in the order they started. The conversation context of the run
-- (acting user, room, channel) is kept so background work writes where the run was said.
CREATE TABLE agent_session_runs (
    instance_key           text NOT NULL,
    session_key            text NOT NULL CHECK (session_key <> ''),
    run_id                 text NOT NULL CHECK (run_id <> ''),
    run_index              integer NOT NULL CHECK (run_index >= 0),
    user_id                text,
    group_room_id          text,
    channel_thread_key     text,
    channel_type           text,
    status                 text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'completed')),
    item_count             integer NOT NULL DEFAULT 0 CHECK (item_count >= 0),
    transcript_bytes       bigint NOT NULL DEFAULT 0 CHECK (transcript_bytes >= 0),
    prompt_tokens          integer CHECK (prompt_tokens >= 0),
    context_budget_tokens  integer CHECK (context_budget_tokens > 0),
    -- Shared-fact extraction of a completed run: pending until the background pass did it.
    shared_facts           text NOT NULL DEFAULT 'pending'
                               CHECK (shared_facts IN ('pending', 'done', 'skipped')),
    -- Items of the run were written by an agent (an agent key, or X-Memory-Writer: agent):
    -- its turns are not a person's own statements, so nothing from it is human_direct. Once
    -- set it stays set.
    agent_written          boolean NOT NULL DEFAULT false,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    completed_at           timestamptz,
    CHECK ((status = 'completed') = (completed_at IS NOT NULL)),
    PRIMARY KEY (instance_key, session_key, run_id),
    UNIQUE (instance_key, session_key, run_index)
);
CREATE INDEX agent_session_runs_facts_due_idx ON agent_session_runs (instance_key, session_key)
    WHERE status = 'completed' AND shared_facts = 'pending';
CREATE TRIGGER agent_session_runs_touch BEFORE UPDATE ON agent_session_runs
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();

-- Raw items: the client's id makes a repeated append a no-op; occurred_at is the event time.
ALTER TABLE agent_context_messages
    ADD COLUMN client_item_id text CHECK (client_item_id <> ''),
    ADD COLUMN occurred_at timestamptz,
    ADD CONSTRAINT agent_context_messages_client_item_key
        UNIQUE (instance_key, session_key, client_item_id);
CREATE INDEX agent_context_messages_run_idx
    ON agent_context_messages (instance_key, session_key, run_id);
-- memory_grep: exact (substring) search, case-insensitive, through trigrams.
CREATE INDEX agent_context_messages_trgm_idx
    ON agent_context_messages USING gin (content gin_trgm_ops);

-- Summaries cover a contiguous range of raw items (by seq). One summary per start of a
-- range and depth: a compaction that is resumed after a crash cannot write a second one.
ALTER TABLE agent_context_summaries
    ADD COLUMN first_seq integer CHECK (first_seq >= 0),
    ADD COLUMN last_seq integer,
    ADD COLUMN channel_thread_key text,
    ADD COLUMN produced_by text CHECK (produced_by IN ('model', 'extractive', 'fallback')),
    ADD COLUMN model text,
    ADD COLUMN memory_id uuid,
    ADD CONSTRAINT agent_context_summaries_range_check
        CHECK (last_seq IS NULL OR (first_seq IS NOT NULL AND last_seq >= first_seq)),
    ADD CONSTRAINT agent_context_summaries_range_key
        UNIQUE (instance_key, session_key, depth, first_seq);
CREATE INDEX agent_context_summaries_trgm_idx
    ON agent_context_summaries USING gin (content gin_trgm_ops);
CREATE INDEX agent_context_summary_messages_message_idx
    ON agent_context_summary_messages (message_id);
CREATE INDEX agent_context_summary_parents_child_idx
    ON agent_context_summary_parents (child_summary_id);

-- Background maintenance of a session is requested by writing maintenance_requested_at; a
-- pass records the time it started as maintenance_done_at, so a request that arrives during
-- a pass leaves the session due: exactly one trailing pass, however many requests piled up.
ALTER TABLE agent_session_state
    ADD COLUMN maintenance_requested_at timestamptz,
    ADD COLUMN maintenance_done_at timestamptz;
CREATE INDEX agent_session_state_due_idx
    ON agent_session_state (maintenance_requested_at)
    WHERE maintenance_requested_at IS NOT NULL
      AND (maintenance_done_at IS NULL OR maintenance_requested_at > maintenance_done_at);

-- One row per maintenance operation of a session: the audit trail and the source of the
-- memory_flush / history_compaction / shared_facts metrics.
CREATE TABLE agent_session_maintenance_events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    instance_key  text NOT NULL,
    session_key   text NOT NULL,
    operation     text NOT NULL
                      CHECK (operation IN ('memory_flush', 'history_compaction', 'shared_facts')),
    outcome       text NOT NULL CHECK (outcome IN ('completed', 'failed', 'skipped')),
    event_type    text GENERATED ALWAYS AS
                      ('session.maintenance.' || operation || '.' || outcome) STORED,
    retries       integer NOT NULL DEFAULT 0 CHECK (retries >= 0),
    fallbacks     integer NOT NULL DEFAULT 0 CHECK (fallbacks >= 0),
    duration_ms   double precision NOT NULL DEFAULT 0 CHECK (duration_ms >= 0),
    details       jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(details) = 'object'),
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_session_maintenance_events_session_idx
    ON agent_session_maintenance_events (instance_key, session_key, created_at);
CREATE INDEX agent_session_maintenance_events_operation_idx
    ON agent_session_maintenance_events (operation, outcome);
