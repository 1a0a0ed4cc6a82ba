-- The triggers that push a memory's or an assertion's audience and recall state to its chunks
-- (0008) run one UPDATE ... FROM per fired row. PL/pgSQL caches that statement's plan per
-- connection and switches to a generic plan after five calls; a generic plan made while the
-- tables were nearly empty (a young instance, a long-lived pooled connection) kept a nested
-- loop over every chunk of the instance, so each assertion decision cost time in proportion to
-- the instance's memories (30-36 ms per fact at 250 memories, growing; docs/benchmarks.md,
-- "Sessions"). Planning these statements per call costs well under a millisecond and always
-- uses the indexes that fit the current table sizes.
ALTER FUNCTION memory_push_assertion_to_chunks() SET plan_cache_mode = force_custom_plan;
ALTER FUNCTION memory_push_audience_to_chunks() SET plan_cache_mode = force_custom_plan;
