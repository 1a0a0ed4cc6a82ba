-- Knowledge-graph storage (memory_platform/graph/store.py, retract.py, checks.py): the rule
-- "a claim or edge is backed by an assertion that may be told now", the guards that keep a
-- second build (or a concurrent one) from adding duplicates, and the indexes the store and
-- the retraction look rows up by.
--
-- No release wrote graph rows before this migration (0006 created the tables, nothing filled
-- them), so the unique indexes are built over empty tables: nothing is rewritten, and a
-- duplicate in a hand-filled table fails the upgrade loudly instead of being merged silently.

-- Whether some element {"assertionId": ...} of a claim's or edge's source_refs names an
-- assertion of the instance that is told now. It restates ledger/recall.py TOLD (the one
-- home of the rule; keep them in step) so SQL readers (checks, stale pruning, retrieval)
-- share one definition. The id is cast only when it has the shape of a uuid, so a
-- hand-written ref can never make a reader fail. Dream refs ({"dreamId"}) never support.
CREATE FUNCTION memory_v2_graph_refs_have_current_support(p_instance text, p_refs jsonb)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT EXISTS (
        SELECT 1
          FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_refs) = 'array'
                                         THEN p_refs ELSE '[]'::jsonb END) AS r(ref)
          JOIN agent_memory_assertions a
            ON a.instance_key = p_instance
           AND a.id = CASE WHEN r.ref ->> 'assertionId'
                                ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                           THEN (r.ref ->> 'assertionId')::uuid END
         WHERE a.status = 'active'
           AND a.review_state IN ('policy_approved', 'human_approved')
           AND (a.valid_from IS NULL OR a.valid_from <= now())
           AND (a.valid_to IS NULL OR a.valid_to > now())
    )
$$;

-- One evidence row per (item, kind, assertion, dream): re-applying an extraction inserts
-- nothing (the store writes ON CONFLICT DO NOTHING). NULLS NOT DISTINCT because each row
-- leaves two of the three item columns and usually the assertion or the dream NULL. A
-- 'memory' row is told apart by its memory; for the other kinds the recall row is a detail
-- of the assertion (it may move from the fact memory to a projection) and not identity.
CREATE UNIQUE INDEX agent_knowledge_evidence_unique
    ON agent_knowledge_evidence (instance_key, entity_id, claim_id, edge_id, evidence_kind,
                                 assertion_id, dream_id,
                                 (CASE WHEN evidence_kind = 'memory' THEN source_memory_id END))
    NULLS NOT DISTINCT;

-- Retraction deletes the evidence of an assertion, and deleting an assertion cascades to
-- its evidence rows: both look rows up by assertion.
CREATE INDEX agent_knowledge_evidence_assertion_idx
    ON agent_knowledge_evidence (instance_key, assertion_id) WHERE assertion_id IS NOT NULL;

-- One active claim per identity: its subject entity plus content_hash, the hash of
-- (predicate, object entity or literal, assertion text) the store computes. Rows without a
-- hash ('' is 0006's default) are left out, so the guard never blocks a legacy row.
CREATE UNIQUE INDEX agent_knowledge_claims_active_identity
    ON agent_knowledge_claims (instance_key, subject_entity_id, content_hash)
    WHERE status = 'active' AND content_hash <> '';

-- One active unlinked entity per (audience, type, normalised label); linked entities are
-- already unique per linked record (0006, agent_knowledge_entities_linked_record), and two
-- records may share a name.
CREATE UNIQUE INDEX agent_knowledge_entities_active_label
    ON agent_knowledge_entities (instance_key, visibility_scope, audience_key, entity_type,
                                 normalized_label)
    WHERE status = 'active' AND linked_record_id IS NULL;

-- "Which claims and edges cite assertion X / Dream Y": source_refs @> '[{"assertionId": X}]'
-- (retraction, per-Dream cleanup). jsonb_path_ops keeps the index small and serves @>.
CREATE INDEX agent_knowledge_claims_refs_idx
    ON agent_knowledge_claims USING gin (source_refs jsonb_path_ops);
CREATE INDEX agent_knowledge_edges_refs_idx
    ON agent_knowledge_edges USING gin (source_refs jsonb_path_ops);

-- The orphan check asks whether an entity is still the object of an active claim (0006 only
-- indexes subjects); the composite foreign key on the object uses it too.
CREATE INDEX agent_knowledge_claims_object_idx
    ON agent_knowledge_claims (instance_key, object_entity_id)
    WHERE status = 'active' AND object_entity_id IS NOT NULL;
