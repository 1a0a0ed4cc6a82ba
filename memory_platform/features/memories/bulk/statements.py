"""The SQL of a bulk load besides its COPY statements: the session's staging tables and
the set-based statements that honour the ledger's uniqueness (``INSERT ... SELECT ... ON
CONFLICT``) and find the live memories a batch repeats."""

# Staging tables of one loader connection, emptied at every commit.
TEMP_TABLES = """
CREATE TEMP TABLE IF NOT EXISTS memory_import_assertions (
    ord int, instance_key text, audience_kind text, audience_key text, owner_user_id text,
    identity_hash text, assertion_type text, assertion_text text, origin text,
    confidence real, subject_refs jsonb, metadata jsonb, status text, review_state text,
    subject text, predicate text
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS memory_import_evidence (
    ord int, instance_key text, audience_kind text, audience_key text, assertion_id uuid,
    source_id uuid, excerpt text
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS memory_import_assertion_vectors (
    ord int, instance_key text, assertion_id uuid, generation_id bigint, embedding_key text,
    embedding vector, content_hash text
) ON COMMIT DELETE ROWS;
"""

EXISTING = """
SELECT DISTINCT ON (k.ord) k.ord, m.id, m.assertion_id, a.status, a.review_state
  FROM unnest(%(instances)b::text[], %(kinds)b::text[], %(keys)b::text[], %(digests)b::text[],
              %(subjects)b::text[], %(ords)b::int[])
       AS k(instance_key, kind, audience_key, digest, subject, ord)
  JOIN agent_memories m
    ON m.instance_key = k.instance_key
   AND m.visibility_scope = k.kind
   AND m.audience_key = k.audience_key
   AND m.content_hash = k.digest
   AND m.subject_key = k.subject
  LEFT JOIN agent_memory_assertions a
    ON a.instance_key = m.instance_key AND a.id = m.assertion_id
 WHERE m.memory_state = 'active'
   AND m.source_type <> 'message'   -- a session item recalled as a turn is nobody's repeat
   AND m.updated_at > now() - make_interval(hours => %(window)s)
 ORDER BY k.ord, m.updated_at DESC
"""

INSERT_ASSERTIONS = """
WITH created AS (
INSERT INTO agent_memory_assertions
       (instance_key, audience_kind, audience_key, owner_user_id, identity_hash,
        assertion_type, assertion_text, origin, confidence, subject_refs, metadata, status,
        review_state, subject, predicate)
SELECT DISTINCT ON (instance_key, audience_kind, audience_key, identity_hash)
       instance_key, audience_kind, audience_key, owner_user_id, identity_hash,
       assertion_type, assertion_text, origin, confidence, subject_refs, metadata, status,
       review_state, subject, predicate
  FROM memory_import_assertions
 ORDER BY instance_key, audience_kind, audience_key, identity_hash, ord
ON CONFLICT (instance_key, audience_kind, audience_key, identity_hash) DO NOTHING
RETURNING id, instance_key, audience_kind, audience_key, identity_hash, status, review_state
)
-- Every fact row's assertion: created just now (only visible through RETURNING within this
-- statement) or already there.
SELECT t.ord, coalesce(c.id, a.id), coalesce(c.status, a.status),
       coalesce(c.review_state, a.review_state), c.id IS NOT NULL
  FROM memory_import_assertions t
  LEFT JOIN created c
    ON c.instance_key = t.instance_key
   AND c.audience_kind = t.audience_kind
   AND c.audience_key = t.audience_key
   AND c.identity_hash = t.identity_hash
  LEFT JOIN agent_memory_assertions a
    ON a.instance_key = t.instance_key
   AND a.audience_kind = t.audience_kind
   AND a.audience_key = t.audience_key
   AND a.identity_hash = t.identity_hash
"""

# A conflict with an assertion committed after the statement above took its snapshot is
# invisible to its join: look again, in a new snapshot.
ASSERTION_REFS = """
SELECT t.ord, a.id, a.status, a.review_state, false
  FROM memory_import_assertions t
  JOIN agent_memory_assertions a
    ON a.instance_key = t.instance_key
   AND a.audience_kind = t.audience_kind
   AND a.audience_key = t.audience_key
   AND a.identity_hash = t.identity_hash
"""

INSERT_EVIDENCE = """
INSERT INTO agent_memory_assertion_evidence
       (instance_key, audience_kind, audience_key, assertion_id, source_id, excerpt)
SELECT instance_key, audience_kind, audience_key, assertion_id, source_id, excerpt
  FROM memory_import_evidence
 ORDER BY ord
ON CONFLICT (assertion_id, source_id, stance, md5(excerpt)) DO NOTHING
"""

INSERT_ASSERTION_VECTORS = """
INSERT INTO agent_memory_assertion_embeddings
       (instance_key, assertion_id, generation_id, embedding_key, embedding, content_hash)
SELECT DISTINCT ON (assertion_id)
       instance_key, assertion_id, generation_id, embedding_key, embedding, content_hash
  FROM memory_import_assertion_vectors
 ORDER BY assertion_id, ord
ON CONFLICT (assertion_id, generation_id) DO NOTHING
"""
