-- The people of an instance (memory_platform/users.py) and who last set their sharing choice.
--
-- A user is *registered* once a row here names them: the trigger below adds the row when an
-- API key with a user is created (user, agent or admin key alike: the key acts for that
-- person), and memory_platform.users.register_user adds it for a person an admin or a runtime
-- names. A registered user shares their memories with the team by default (opt-out,
-- specification "Shared user memory"); a user id nobody registered keeps the old fail-closed
-- private default (memories/sharing.py). Runtime keys have no user and register nobody.
CREATE TABLE agent_users (
    instance_key  text NOT NULL,
    user_id       text NOT NULL CHECK (user_id <> ''),
    created_at    timestamptz NOT NULL DEFAULT now(),
    created_by    text NOT NULL DEFAULT '',
    PRIMARY KEY (instance_key, user_id)
);

CREATE OR REPLACE FUNCTION agent_users_register_key_user() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.user_id IS NOT NULL AND NEW.user_id <> '' THEN
        INSERT INTO agent_users (instance_key, user_id, created_by)
        VALUES (NEW.instance_key, NEW.user_id, 'api key ' || NEW.token_prefix)
        ON CONFLICT (instance_key, user_id) DO NOTHING;
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER api_keys_register_user AFTER INSERT ON api_keys
    FOR EACH ROW EXECUTE FUNCTION agent_users_register_key_user();

-- Users who already hold a key are registered now (their earliest key's time).
INSERT INTO agent_users (instance_key, user_id, created_at, created_by)
SELECT instance_key, user_id, min(created_at), 'migration 0023'
  FROM api_keys
 WHERE user_id IS NOT NULL AND user_id <> ''
 GROUP BY instance_key, user_id
ON CONFLICT (instance_key, user_id) DO NOTHING;

-- Who set the share-with-team choice last ('cli', 'admin key <prefix>', 'demo', ...): only a
-- person changes it, never an agent tool.
ALTER TABLE agent_user_preferences ADD COLUMN changed_by text NOT NULL DEFAULT '';
