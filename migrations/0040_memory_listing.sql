-- The listing of memories (GET /api/v1/memories, retrieval/memories.list_memories): newest
-- first, keyset-paged on (created_at, id), among the caller's recallable memories. Without an
-- index in that order every page sorted every visible row (about 80 ms a page at 100,000
-- memories, bench/memory_listing.py); with it a page walks the index from the cursor and stops
-- after limit + 1 visible rows. Active memories only, the listing's rule (recallable_memory).
--
-- A plain CREATE INDEX, as in 0026: it blocks writes to agent_memories while it builds; on a
-- very large table create it CONCURRENTLY by hand first, IF NOT EXISTS then skips it.
CREATE INDEX IF NOT EXISTS agent_memories_listing_idx
    ON agent_memories (instance_key, created_at DESC, id DESC)
    WHERE memory_state = 'active';
