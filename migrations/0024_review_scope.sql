-- The review queues (memory_platform/review/, /api/v1/review/...) have their own route scope,
-- memory:review: deciding what the platform tells agents is not the same right as reading or
-- writing memories. NOT VALID then VALIDATE: the new check only widens the allowed set, so
-- existing rows satisfy it; validating takes no exclusive lock on a large key table.
ALTER TABLE api_keys DROP CONSTRAINT api_keys_scopes_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_scopes_check
    CHECK (cardinality(scopes) > 0
           AND scopes <@ ARRAY['memory:read', 'memory:write', 'memory:review', 'admin',
                               'runtime']::text[]) NOT VALID;
ALTER TABLE api_keys VALIDATE CONSTRAINT api_keys_scopes_check;
