-- Legacy transcripts stay private (issue 32.8, deviation D12). Imports before this migration
-- stored every transcript line in the workspace audience: recallable by every user of the
-- instance. Nothing recorded whose transcript it was, so no owner can be inferred here: those
-- lines become 'withheld' (kept, never recalled, never purged by retention) until an operator
-- names their owner by importing the same directory again with --user or --audience
-- (maintenance/legacy.py assigns withheld lines it meets again).
--
-- Swapping the CHECK validates the table once (a scan, no rewrite); the UPDATE fires the
-- chunk-audience trigger (0008), so the chunks stop being recallable with their memory.
ALTER TABLE agent_memories DROP CONSTRAINT IF EXISTS agent_memories_memory_state_check;
ALTER TABLE agent_memories ADD CONSTRAINT agent_memories_memory_state_check
    CHECK (memory_state IN ('active', 'archived', 'superseded', 'withheld'));

UPDATE agent_memories
   SET memory_state = 'withheld', updated_at = now()
 WHERE source_type = 'manual'
   AND metadata ->> 'importSource' = 'legacy_transcript'
   AND visibility_scope = 'workspace'
   AND memory_state = 'active';
