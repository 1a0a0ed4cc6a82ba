-- Room on every memory page for the recall stamps' updates.
--
-- Every search stamps the memories it returns (retrieval_count, last_retrieved_at; batched
-- once a second by retrieval/stamping.py: about 1,300 rows per second at 200 searches/s).
-- No index covers those columns, so the update can be HOT (heap-only: no index entries)
-- when the new row version fits on its page. The bulk import and steady writes fill pages
-- completely, so nearly every stamp became a full update: a new entry in each of the
-- twelve indexes, ~7 WAL records per row, 50 us of PostgreSQL CPU per stamped row and a
-- 60-80 ms burst each second at 200 searches/s. At fillfactor 80 a page keeps about two
-- row versions free (rows are ~850 bytes). Existing pages get the room when the table is
-- rewritten (`VACUUM FULL agent_memories`, then a plain `VACUUM`).

ALTER TABLE agent_memories SET (fillfactor = 80);
