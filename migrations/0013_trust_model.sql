-- Who may act where (docs/security.md).
--
-- Key kinds: a user key (user_id set) acts as its one user; a runtime key (scope 'runtime',
-- no user) is the instance's trusted agent runtime: it names the acting user per request and
-- may register memberships and sessions. An agent key (agent = true) is a user key whose
-- writes are the agent's inference, not the user's own statement.
ALTER TABLE api_keys ALTER COLUMN user_id DROP NOT NULL;
ALTER TABLE api_keys ADD COLUMN agent boolean NOT NULL DEFAULT false;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
    CHECK (cardinality(scopes) > 0
           AND scopes <@ ARRAY['memory:read', 'memory:write', 'admin', 'runtime']::text[]);
ALTER TABLE api_keys ADD CONSTRAINT api_keys_kind_check
    CHECK (('runtime' = ANY(scopes)) = (user_id IS NULL)
           AND NOT ('runtime' = ANY(scopes) AND agent));

-- Channel and room membership: a user may name a channelThreadKey or groupRoomId only where
-- a row here makes them a member.
CREATE TABLE agent_channel_members (
    instance_key  text NOT NULL,
    channel_key   text NOT NULL CHECK (channel_key <> ''),
    user_id       text NOT NULL CHECK (user_id <> ''),
    added_by      text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_key, channel_key, user_id)
);
CREATE INDEX agent_channel_members_user_idx ON agent_channel_members (instance_key, user_id);

-- Who takes part in a session: the first user key to name an unused session key owns it;
-- a runtime key may add participants. Another user's session is refused.
CREATE TABLE agent_session_participants (
    instance_key  text NOT NULL,
    session_key   text NOT NULL CHECK (session_key <> ''),
    user_id       text NOT NULL CHECK (user_id <> ''),
    role          text NOT NULL DEFAULT 'participant' CHECK (role IN ('owner', 'participant')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_key, session_key, user_id)
);
CREATE UNIQUE INDEX agent_session_participants_one_owner
    ON agent_session_participants (instance_key, session_key) WHERE role = 'owner';
CREATE INDEX agent_session_participants_user_idx
    ON agent_session_participants (instance_key, user_id);

-- A feedback run belongs to the user who reported it first: only that user may report on it.
CREATE TABLE agent_feedback_runs (
    instance_key  text NOT NULL,
    run_id        text NOT NULL CHECK (run_id <> ''),
    user_id       text,
    session_key   text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_key, run_id)
);

-- Runs reported before this migration belong to the user of their first injection.
INSERT INTO agent_feedback_runs (instance_key, run_id, user_id, session_key)
SELECT DISTINCT ON (instance_key, run_id) instance_key, run_id, user_id, session_key
  FROM agent_memory_retrieval_feedback
 WHERE event_type = 'injected' AND run_id IS NOT NULL AND run_id <> ''
 ORDER BY instance_key, run_id, id
ON CONFLICT DO NOTHING;
