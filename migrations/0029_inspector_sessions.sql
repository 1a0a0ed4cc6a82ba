-- Inspector sign-ins as server-side sessions (security review of 7c85f33, finding 13).
-- The inspector's cookie used to hold the API key itself: a leaked cookie was a permanent
-- credential for the REST API too, and signing out revoked nothing. Now the cookie holds a
-- random session secret; only its sha256 is stored here, with the key it acts for. A session
-- is live while it is neither revoked (sign-out) nor expired, and its key is live (checked
-- by a join with api_keys on every use: revoking the key ends its sessions at once).

-- The cross-instance guard: every foreign key carries instance_key.
ALTER TABLE api_keys ADD CONSTRAINT api_keys_instance_id_key UNIQUE (instance_key, id);

CREATE TABLE inspector_sessions (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_key  text NOT NULL,
    key_id        uuid NOT NULL,
    secret_hash   text NOT NULL UNIQUE CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz,
    CHECK (expires_at > created_at),
    -- Deleting a key (erasure deletes a person's keys) deletes its sessions.
    FOREIGN KEY (instance_key, key_id) REFERENCES api_keys (instance_key, id) ON DELETE CASCADE
);
CREATE INDEX inspector_sessions_key_idx ON inspector_sessions (instance_key, key_id);
