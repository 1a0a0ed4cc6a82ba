-- Lossless per-session context graph and per-session runtime state. Every link includes
-- (instance_key, session_key), so a summary can only cover messages of its own session.

CREATE TABLE agent_context_messages (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key        text NOT NULL,
    session_key         text NOT NULL CHECK (session_key <> ''),
    user_id             text,
    channel_thread_key  text,
    seq                 integer NOT NULL CHECK (seq >= 0),
    role                text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content             text NOT NULL,
    content_tsv         tsvector GENERATED ALWAYS AS (
                            to_tsvector('english'::regconfig, content)
                            || to_tsvector('german'::regconfig, content)) STORED,
    token_count         integer NOT NULL DEFAULT 0 CHECK (token_count >= 0),
    run_id              text,
    metadata            jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (instance_key, session_key, seq),
    UNIQUE (instance_key, session_key, id)
);
CREATE INDEX agent_context_messages_tsv_idx ON agent_context_messages USING gin (content_tsv);
CREATE INDEX agent_context_messages_user_idx ON agent_context_messages (instance_key, user_id);

CREATE TABLE agent_context_summaries (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key  text NOT NULL,
    session_key   text NOT NULL CHECK (session_key <> ''),
    user_id       text,
    kind          text NOT NULL CHECK (kind IN ('leaf', 'condensed')),
    depth         integer NOT NULL DEFAULT 0 CHECK (depth >= 0),
    content       text NOT NULL CHECK (content <> ''),
    content_tsv   tsvector GENERATED ALWAYS AS (
                      to_tsvector('english'::regconfig, content)
                      || to_tsvector('german'::regconfig, content)) STORED,
    token_count   integer NOT NULL DEFAULT 0 CHECK (token_count >= 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'leaf') = (depth = 0)),
    UNIQUE (instance_key, session_key, id)
);
CREATE INDEX agent_context_summaries_tsv_idx ON agent_context_summaries USING gin (content_tsv);

CREATE TABLE agent_context_summary_messages (
    instance_key  text NOT NULL,
    session_key   text NOT NULL,
    summary_id    uuid NOT NULL,
    message_id    uuid NOT NULL,
    PRIMARY KEY (summary_id, message_id),
    FOREIGN KEY (instance_key, session_key, summary_id)
        REFERENCES agent_context_summaries (instance_key, session_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, session_key, message_id)
        REFERENCES agent_context_messages (instance_key, session_key, id) ON DELETE CASCADE
);

CREATE TABLE agent_context_summary_parents (
    instance_key       text NOT NULL,
    session_key        text NOT NULL,
    parent_summary_id  uuid NOT NULL,
    child_summary_id   uuid NOT NULL,
    PRIMARY KEY (parent_summary_id, child_summary_id),
    CHECK (parent_summary_id <> child_summary_id),
    FOREIGN KEY (instance_key, session_key, parent_summary_id)
        REFERENCES agent_context_summaries (instance_key, session_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, session_key, child_summary_id)
        REFERENCES agent_context_summaries (instance_key, session_key, id) ON DELETE CASCADE
);

-- The ordered assembly list of the session's current context.
CREATE TABLE agent_context_items (
    instance_key  text NOT NULL,
    session_key   text NOT NULL,
    position      integer NOT NULL CHECK (position >= 0),
    item_kind     text NOT NULL CHECK (item_kind IN ('message', 'summary')),
    message_id    uuid,
    summary_id    uuid,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_key, session_key, position),
    CHECK ((item_kind = 'message') = (message_id IS NOT NULL)),
    CHECK ((item_kind = 'summary') = (summary_id IS NOT NULL)),
    CHECK (num_nonnulls(message_id, summary_id) = 1),
    FOREIGN KEY (instance_key, session_key, message_id)
        REFERENCES agent_context_messages (instance_key, session_key, id) ON DELETE CASCADE,
    FOREIGN KEY (instance_key, session_key, summary_id)
        REFERENCES agent_context_summaries (instance_key, session_key, id) ON DELETE CASCADE
);

CREATE TABLE agent_session_state (
    instance_key  text NOT NULL,
    session_key   text NOT NULL CHECK (session_key <> ''),
    user_id       text,
    state_json    jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(state_json) = 'object'),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_key, session_key)
);
CREATE TRIGGER agent_session_state_touch BEFORE UPDATE ON agent_session_state
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();
