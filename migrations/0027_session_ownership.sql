-- Sessions belong to people, not to whoever names them first (docs/sessions.md, "Who owns a
-- session"; security review of 7c85f33, findings 1 and 7).
--
-- Until now every request naming a sessionKey claimed it: a user key that merely *read* with
-- an unused key became its owner, and the runtime later recorded another user's turns there
-- as a second participant. From now on only an append records who takes part, and the
-- runtime refuses (409 session_owned_by_other_user) to record anyone new in a session another
-- user started through their own key. `via` says how a participant was recorded.

ALTER TABLE agent_session_participants
    ADD COLUMN via text NOT NULL DEFAULT 'admin'
        CHECK (via IN ('user_key', 'runtime', 'admin'));

-- Ownership that a read claimed: an owner who never wrote anything in the session (no message,
-- no summary recorded for them) owned it only by naming it. They lose it; the key is free
-- again for whoever appends first. Participants are kept: they may have been added on purpose
-- (an admin, the runtime), which no row records.
DELETE FROM agent_session_participants p
 WHERE p.role = 'owner'
   AND NOT EXISTS (SELECT 1 FROM agent_context_messages m
                    WHERE m.instance_key = p.instance_key AND m.session_key = p.session_key
                      AND m.user_id = p.user_id)
   AND NOT EXISTS (SELECT 1 FROM agent_context_summaries s
                    WHERE s.instance_key = p.instance_key AND s.session_key = p.session_key
                      AND s.user_id = p.user_id);

-- How the remaining owners joined is not recorded. An owner alone in a session whose user
-- holds (or held) a user key may have started it with that key: treated as started through a
-- user key, so the runtime adds nobody else without an admin (the safe side: a wrong guess
-- costs a 409 and a fresh key, never a disclosure). A session that already has other
-- participants was shared by the runtime or an admin: its owner counts as the runtime's.
UPDATE agent_session_participants p
   SET via = CASE
       WHEN EXISTS (SELECT 1 FROM api_keys k
                     WHERE k.instance_key = p.instance_key AND k.user_id = p.user_id)
        AND NOT EXISTS (SELECT 1 FROM agent_session_participants o
                         WHERE o.instance_key = p.instance_key
                           AND o.session_key = p.session_key AND o.user_id <> p.user_id)
       THEN 'user_key' ELSE 'runtime' END
 WHERE p.role = 'owner';
UPDATE agent_session_participants SET via = 'runtime' WHERE role = 'participant';

-- Session grep resolves the sessions the caller may read first and searches only inside
-- them: the trigram indexes are led by (instance_key, session_key) (btree_gin), so no plan
-- reads another instance's or another session's rows to answer it. The global trigram
-- indexes of 0015 served nothing else and go.
CREATE EXTENSION IF NOT EXISTS btree_gin;
CREATE INDEX agent_context_messages_session_trgm_idx
    ON agent_context_messages USING gin (instance_key, session_key, content gin_trgm_ops);
CREATE INDEX agent_context_summaries_session_trgm_idx
    ON agent_context_summaries USING gin (instance_key, session_key, content gin_trgm_ops);
DROP INDEX agent_context_messages_trgm_idx;
DROP INDEX agent_context_summaries_trgm_idx;

-- The sessions a user wrote in, and those holding a channel's user-less transcript (grep's
-- other branches), found one probe per session without reading their messages.
CREATE INDEX agent_context_messages_user_session_idx
    ON agent_context_messages (instance_key, user_id, session_key);
CREATE INDEX agent_context_messages_channel_session_idx
    ON agent_context_messages (instance_key, channel_thread_key, session_key)
    WHERE user_id IS NULL AND channel_thread_key IS NOT NULL;
