-- The recallable assertions of an audience, for assertion search (retrieval/assertions.py).
--
-- Its vector arm counts the assertions a caller may recall, no further than
-- retrieval_exact_scan_max + 1, one scan per branch of the visibility rule, and scans a
-- visible set that small exactly (else the generation's HNSW index). The indexes below serve
-- both: each branch is an index range (the owner index serves the linked user's channel
-- rows), and the validity window rides along (INCLUDE), so the count applies the whole
-- recall rule from the index alone, without a heap visit per assertion (0003's indexes
-- lack the audience key or the window: the count read the heap for each of its rows).

CREATE INDEX agent_memory_assertions_audience_idx
    ON agent_memory_assertions (instance_key, audience_kind, audience_key)
    INCLUDE (valid_from, valid_to)
    WHERE status = 'active' AND review_state IN ('policy_approved', 'human_approved');
CREATE INDEX agent_memory_assertions_channel_owner_idx
    ON agent_memory_assertions (instance_key, owner_user_id)
    INCLUDE (valid_from, valid_to)
    WHERE status = 'active' AND review_state IN ('policy_approved', 'human_approved')
      AND audience_kind = 'channel';
