-- Exact rarity statistics, the same for every process (issue 29, deliverable 6;
-- memory_platform/retrieval/lexicon.py).
--
-- How common a question word is decides whether it generates keyword candidates and how much
-- it weighs in the keyword score. That used to come from the planner statistics
-- (pg_stats.most_common_elems): a sample that every ANALYZE draws anew, of the whole table
-- (every instance's words), cached per process for five minutes. Two API processes ranked the
-- same question over the same rows differently, and one tenant's vocabulary moved another
-- tenant's scores.
--
-- agent_memory_lexemes counts, per instance and corpus ('chunks': agent_memory_chunks.content_tsv;
-- 'claims': agent_knowledge_claims.claim_tsv, what graph search matches), how many rows hold
-- each lexeme, and under the lexeme '' (no real lexeme is empty) how many rows there are.
-- Statement-level triggers with transition tables keep the counts exact in the writing
-- transaction: one grouped upsert per statement whatever its number of rows (a COPY of a bulk
-- batch included), nothing counted for a write that rolls back, the same committed numbers for
-- every reader. A question reads one index probe per lexeme. A count that reaches 0 is deleted
-- with its lexeme: a deletion or an erasure leaves none of the removed words behind.
--
-- Concurrency: the writers of one instance's counts take turns. Each statement first takes a
-- transaction-level advisory lock per instance it touches (in instance order), then upserts in
-- (instance, lexeme) order, so two transactions never wait for each other's counter rows in
-- opposite orders, whatever the corpus or the number of statements. A transaction holds its turn
-- from its first chunk or claim statement until it ends; the write paths write chunks last.

CREATE TABLE agent_memory_lexemes (
    instance_key text NOT NULL,
    corpus       text NOT NULL,      -- 'chunks' or 'claims' (only the triggers write here)
    lexeme       text NOT NULL,      -- '' : the corpus' row count in the instance
    documents    bigint NOT NULL,    -- rows holding the lexeme (> 0: zeros are deleted)
    PRIMARY KEY (instance_key, corpus, lexeme)
) WITH (fillfactor = 80);           -- room for HOT updates of the counts

-- The turn of one instance's counts: whoever holds it is the only writer of them until its
-- transaction ends (the triggers below; an erasure takes it to report what went).
CREATE FUNCTION memory_lexemes_lock(instance text) RETURNS void
LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('memory-lexemes:' || instance, 0));
$$;

-- Count the rows ``docs`` (of instance ``keys``, position by position) in or out (``direction``
-- 1 or -1) of ``of_corpus``.
CREATE FUNCTION memory_lexemes_add(of_corpus text, keys text[], docs tsvector[], direction integer)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    ks text[];
    xs text[];
    ns bigint[];
BEGIN
    IF keys IS NULL THEN
        RETURN;
    END IF;
    SELECT array_agg(g.k ORDER BY g.k, g.x), array_agg(g.x ORDER BY g.k, g.x),
           array_agg(g.n ORDER BY g.k, g.x)
      INTO ks, xs, ns
      FROM (SELECT d.k, x, direction * count(*) AS n
              FROM unnest(keys, docs) AS d(k, doc),
                   unnest(array_append(tsvector_to_array(d.doc), '')) AS x
             GROUP BY d.k, x) g;
    PERFORM memory_lexemes_lock(i.k) FROM (SELECT DISTINCT k FROM unnest(ks) AS k ORDER BY k) i;
    INSERT INTO agent_memory_lexemes AS l (instance_key, corpus, lexeme, documents)
    SELECT d.k, of_corpus, d.x, d.n
      FROM unnest(ks, xs, ns) WITH ORDINALITY AS d(k, x, n, ord)
     ORDER BY d.ord
    ON CONFLICT (instance_key, corpus, lexeme)
    DO UPDATE SET documents = l.documents + EXCLUDED.documents;
    IF direction < 0 THEN
        DELETE FROM agent_memory_lexemes l
         USING unnest(ks, xs) AS d(k, x)
         WHERE l.instance_key = d.k AND l.corpus = of_corpus AND l.lexeme = d.x
           AND l.documents <= 0;
    END IF;
END;
$$;

CREATE FUNCTION memory_chunk_lexemes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM memory_lexemes_add('chunks', array_agg(instance_key), array_agg(content_tsv), 1)
           FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM memory_lexemes_add('chunks', array_agg(instance_key), array_agg(content_tsv),
                                   -1)
           FROM old_rows;
    ELSIF TG_OP = 'UPDATE' THEN      -- a chunk's text changed (row by row: it is rare)
        PERFORM memory_lexemes_add('chunks', ARRAY[OLD.instance_key], ARRAY[OLD.content_tsv],
                                   -1);
        PERFORM memory_lexemes_add('chunks', ARRAY[NEW.instance_key], ARRAY[NEW.content_tsv],
                                   1);
    ELSE                             -- TRUNCATE: nothing left to count
        DELETE FROM agent_memory_lexemes WHERE corpus = 'chunks';
    END IF;
    RETURN NULL;
END;
$$;

CREATE FUNCTION memory_claim_lexemes() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM memory_lexemes_add('claims', array_agg(instance_key), array_agg(claim_tsv), 1)
           FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM memory_lexemes_add('claims', array_agg(instance_key), array_agg(claim_tsv), -1)
           FROM old_rows;
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM memory_lexemes_add('claims', ARRAY[OLD.instance_key], ARRAY[OLD.claim_tsv], -1);
        PERFORM memory_lexemes_add('claims', ARRAY[NEW.instance_key], ARRAY[NEW.claim_tsv], 1);
    ELSE
        DELETE FROM agent_memory_lexemes WHERE corpus = 'claims';
    END IF;
    RETURN NULL;
END;
$$;

-- The triggers first: their lock keeps writers out until the counts of the rows already
-- stored (below) are in.
CREATE TRIGGER agent_memory_chunks_lexemes_insert AFTER INSERT ON agent_memory_chunks
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunk_lexemes();
CREATE TRIGGER agent_memory_chunks_lexemes_delete AFTER DELETE ON agent_memory_chunks
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunk_lexemes();
CREATE TRIGGER agent_memory_chunks_lexemes_update
    AFTER UPDATE OF instance_key, content ON agent_memory_chunks
    FOR EACH ROW
    WHEN ((OLD.instance_key, OLD.content) IS DISTINCT FROM (NEW.instance_key, NEW.content))
    EXECUTE FUNCTION memory_chunk_lexemes();
CREATE TRIGGER agent_memory_chunks_lexemes_truncate AFTER TRUNCATE ON agent_memory_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunk_lexemes();

CREATE TRIGGER agent_knowledge_claims_lexemes_insert AFTER INSERT ON agent_knowledge_claims
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_claim_lexemes();
CREATE TRIGGER agent_knowledge_claims_lexemes_delete AFTER DELETE ON agent_knowledge_claims
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_claim_lexemes();
CREATE TRIGGER agent_knowledge_claims_lexemes_update
    AFTER UPDATE OF instance_key, assertion_text ON agent_knowledge_claims
    FOR EACH ROW
    WHEN ((OLD.instance_key, OLD.assertion_text)
          IS DISTINCT FROM (NEW.instance_key, NEW.assertion_text))
    EXECUTE FUNCTION memory_claim_lexemes();
CREATE TRIGGER agent_knowledge_claims_lexemes_truncate AFTER TRUNCATE ON agent_knowledge_claims
    FOR EACH STATEMENT EXECUTE FUNCTION memory_claim_lexemes();

-- The rows stored before this migration.
INSERT INTO agent_memory_lexemes (instance_key, corpus, lexeme, documents)
SELECT c.instance_key, 'chunks', x, count(*)
  FROM agent_memory_chunks c, unnest(array_append(tsvector_to_array(c.content_tsv), '')) AS x
 GROUP BY c.instance_key, x;
INSERT INTO agent_memory_lexemes (instance_key, corpus, lexeme, documents)
SELECT c.instance_key, 'claims', x, count(*)
  FROM agent_knowledge_claims c, unnest(array_append(tsvector_to_array(c.claim_tsv), '')) AS x
 GROUP BY c.instance_key, x;
