-- Open conflicts act (issue 32.5, deviation D9): opening a conflict marks its active
-- assertions 'conflicted' (out of recall, as the specification says) and resolving it makes
-- the survivors 'active' again, each change audited with its before-image. The resolution's
-- audit rows need their own operation.
ALTER TABLE agent_memory_v2_cleanup_audit
    DROP CONSTRAINT IF EXISTS agent_memory_v2_cleanup_audit_operation_check;
ALTER TABLE agent_memory_v2_cleanup_audit ADD CONSTRAINT agent_memory_v2_cleanup_audit_operation_check
    CHECK (operation IN (
        'assertion_supersede', 'assertion_duplicate', 'conflict_open', 'conflict_resolve',
        'relation_write', 'entity_merge', 'claim_repoint', 'edge_repoint',
        'evidence_repoint', 'claim_stale', 'edge_stale', 'entity_quarantine',
        'retention_delete'));
