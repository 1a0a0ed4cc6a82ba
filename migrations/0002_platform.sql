-- Platform tables: API keys, user preferences, persisted runtime settings.

CREATE TABLE api_keys (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key  text NOT NULL,
    user_id       text NOT NULL CHECK (user_id <> ''),
    name          text NOT NULL DEFAULT '',
    token_prefix  text NOT NULL UNIQUE,          -- public id: finds the row, shown in lists
    token_hash    text NOT NULL UNIQUE,          -- sha256 of the token; the token is never stored
    scopes        text[] NOT NULL
                  CHECK (cardinality(scopes) > 0
                         AND scopes <@ ARRAY['memory:read', 'memory:write', 'admin']::text[]),
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    expires_at    timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX api_keys_user_idx ON api_keys (instance_key, user_id);

-- The "share my memories with the team" preference (opt-out). A missing row means the
-- preference is unreadable, which fails closed to private (see memories/sharing).
CREATE TABLE agent_user_preferences (
    instance_key              text NOT NULL,
    user_id                   text NOT NULL CHECK (user_id <> ''),
    share_memories_with_team  boolean NOT NULL DEFAULT true,
    display_name              text,
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_key, user_id)
);
CREATE TRIGGER agent_user_preferences_touch BEFORE UPDATE ON agent_user_preferences
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();

-- Runtime settings changed without a restart (e.g. memory_dreaming_model; empty = automatic).
CREATE TABLE app_settings (
    instance_key  text NOT NULL,
    key           text NOT NULL CHECK (key ~ '^[a-z][a-z0-9_]*$'),
    value         text NOT NULL DEFAULT '',
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_key, key)
);
CREATE TRIGGER app_settings_touch BEFORE UPDATE ON app_settings
    FOR EACH ROW EXECUTE FUNCTION memory_touch_updated_at();
