-- Knowledge-graph retrieval (memory_platform/graph/search.py): what its lexical arm matches
-- and the indexes its visible counts walk (the claims-by-object index get_entity reads is
-- 0018's agent_knowledge_claims_object_idx).
--
-- The lexical arm matches entity labels, aliases and subject-ref values, and claim
-- predicates (with their literal values); claim_tsv (0006) already indexes the claim text.
-- Both documents are STORED generated columns over immutable functions, so the search
-- ranks by a stored tsvector (an expression index would match as well, but ranking would
-- recompute three to_tsvector calls per candidate row: measured, 23 of a search's 34 ms at
-- 5,000 claims) and no writer has to fill them. Adding a stored generated column rewrites
-- the table under an exclusive lock (the lesson of 0017): here that costs nothing, because
-- no release wrote graph rows before 0018 (its header), so the tables are empty on upgrade.
--
-- Configurations: `simple` keeps names and identifiers as written (lower-cased: "t4007",
-- "m-0042", "nordlicht"); English and German add the word forms ("invoices" ~ "invoice").
-- Labels and predicates are short, so three configurations cost little.

-- Separators of identifiers become spaces first: PostgreSQL's parser reads "M-0042" as the
-- word "m" and the signed number "-0042", so the question's "0042" (retrieval/terms.py
-- splits at every non-word character) would never match; "/billing/invoices", "slack:C1"
-- and "works_with" likewise split into their words.
CREATE FUNCTION memory_graph_document(doc text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN to_tsvector('simple'::regconfig, translate(doc, '-_/:', '    '))
        || to_tsvector('english'::regconfig, translate(doc, '-_/:', '    '))
        || to_tsvector('german'::regconfig, translate(doc, '-_/:', '    '));

-- array_to_string and jsonb_each_text are stable only because of element output functions
-- in general; over text[] and jsonb text values they are immutable, which the index needs.
CREATE FUNCTION memory_graph_entity_tsv(label text, aliases text[], subject_refs jsonb)
    RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN memory_graph_document(concat_ws(' ', label, array_to_string(aliases, ' '),
        (SELECT string_agg(r.value, ' ') FROM jsonb_each_text(subject_refs) AS r)));

-- Predicates are snake_case ("pays_invoices_late": its words, through the document).
CREATE FUNCTION memory_graph_claim_tsv(predicate text, object_value text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN memory_graph_document(concat_ws(' ', predicate, object_value));

ALTER TABLE agent_knowledge_entities ADD COLUMN search_tsv tsvector
    GENERATED ALWAYS AS (memory_graph_entity_tsv(label, aliases, subject_refs)) STORED;
ALTER TABLE agent_knowledge_claims ADD COLUMN terms_tsv tsvector
    GENERATED ALWAYS AS (memory_graph_claim_tsv(predicate, object_value)) STORED;
CREATE INDEX agent_knowledge_entities_search_idx ON agent_knowledge_entities
    USING gin (search_tsv);
CREATE INDEX agent_knowledge_claims_terms_idx ON agent_knowledge_claims USING gin (terms_tsv);

-- The visible counts that gate the vector arms (exact scan of a small audience or the HNSW
-- index), one short scan per branch of the visibility rule, active rows only.
CREATE INDEX agent_knowledge_entities_audience_idx
    ON agent_knowledge_entities (instance_key, visibility_scope, audience_key)
    WHERE status = 'active';
CREATE INDEX agent_knowledge_claims_audience_idx
    ON agent_knowledge_claims (instance_key, visibility_scope, audience_key)
    WHERE status = 'active';

