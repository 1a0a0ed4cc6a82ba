-- A Dream the audience-partition sensor starts (a partition's first Dream) says so: trigger
-- 'sensor' (issue 31.5), no longer 'scheduled' like the daily schedule's. Rows written before
-- keep 'scheduled' (which of them a sensor started is not recorded anywhere).
--
-- Swapping a CHECK constraint validates the table once (a scan, no rewrite); the table holds
-- one row per Dream.
ALTER TABLE agent_memory_dreams DROP CONSTRAINT IF EXISTS agent_memory_dreams_trigger_kind_check;
ALTER TABLE agent_memory_dreams ADD CONSTRAINT agent_memory_dreams_trigger_kind_check
    CHECK (trigger_kind IN ('scheduled', 'sensor', 'manual', 'backfill', 'system'));
