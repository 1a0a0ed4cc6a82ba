-- Only people review or administer (issue 28, finding 4; memory_platform/apikeys.py
-- PERSON_SCOPES). An agent key (agent = true) or a runtime key (scope 'runtime') is
-- software: with memory:review it approved its own inference, recorded as a person's
-- decision. A live key of either kind may no longer hold memory:review or admin.
--
-- Existing keys (docs/upgrading.md "0028"): a live agent or runtime key loses those two
-- scopes and keeps the rest. An agent key that held nothing else is revoked instead (its
-- row, scopes included, stays as the record of what it was). A runtime key always keeps its
-- 'runtime' scope, which is what membership management needs (api/table.py MEMBERSHIP).
UPDATE api_keys
   SET revoked_at = now()
 WHERE revoked_at IS NULL
   AND agent
   AND scopes <@ ARRAY['memory:review', 'admin']::text[];

UPDATE api_keys
   SET scopes = ARRAY(SELECT s FROM unnest(scopes) WITH ORDINALITY AS u(s, n)
                       WHERE s NOT IN ('memory:review', 'admin') ORDER BY n)
 WHERE revoked_at IS NULL
   AND (agent OR 'runtime' = ANY(scopes))
   AND scopes && ARRAY['memory:review', 'admin']::text[];

ALTER TABLE api_keys ADD CONSTRAINT api_keys_person_scopes_check
    CHECK (revoked_at IS NOT NULL
           OR NOT ((agent OR 'runtime' = ANY(scopes))
                   AND scopes && ARRAY['memory:review', 'admin']::text[]));
