-- A memory backed by an assertion is recallable only while that assertion is active and
-- approved (retrieval/filters.py: assertion_id IS NULL OR approved). With ON DELETE SET NULL,
-- deleting an assertion (a future retention job, a manual clean-up) would turn a memory that
-- was waiting for review, or rejected, into an ungated one that everyone in its audience
-- recalls. An assertion can no longer be deleted while a memory cites it: delete or archive
-- the memory first (the projection rows of an assertion, source_id IS NULL, included).
ALTER TABLE agent_memories
    DROP CONSTRAINT agent_memories_instance_key_visibility_scope_audience_key__fkey;
ALTER TABLE agent_memories
    ADD CONSTRAINT agent_memories_assertion_fkey
        FOREIGN KEY (instance_key, visibility_scope, audience_key, assertion_id)
        REFERENCES agent_memory_assertions (instance_key, audience_kind, audience_key, id)
        ON DELETE RESTRICT;
