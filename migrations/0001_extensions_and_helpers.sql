-- pgvector and the small trigger functions shared by the whole schema.
CREATE EXTENSION IF NOT EXISTS vector;

-- Keeps updated_at honest on every UPDATE.
CREATE FUNCTION memory_touch_updated_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END;
$$;

-- Append-only tables (review decisions, audit rows) reject UPDATE, DELETE and TRUNCATE.
CREATE FUNCTION memory_reject_mutation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;

-- Every embedding row must have exactly the dimensions of its generation.
CREATE FUNCTION memory_check_embedding_dims() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    expected integer;
    generation_status text;
BEGIN
    IF NEW.embedding IS NULL THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.embedding IS NOT DISTINCT FROM OLD.embedding
       AND NEW.generation_id IS NOT DISTINCT FROM OLD.generation_id THEN
        RETURN NEW;  -- the vector did not change; only new vectors are checked
    END IF;
    IF NEW.generation_id IS NULL THEN
        RAISE EXCEPTION '%: an embedding needs its generation_id', TG_TABLE_NAME
            USING ERRCODE = 'check_violation';
    END IF;
    SELECT dimensions, status INTO expected, generation_status
      FROM agent_memory_embedding_generations
     WHERE id = NEW.generation_id;
    IF generation_status = 'retired' THEN
        RAISE EXCEPTION '%: generation % is retired; embed with the active generation',
            TG_TABLE_NAME, NEW.generation_id
            USING ERRCODE = 'check_violation';
    END IF;
    IF vector_dims(NEW.embedding) <> expected THEN
        RAISE EXCEPTION '%: embedding has % dimensions, generation % has %',
            TG_TABLE_NAME, vector_dims(NEW.embedding), NEW.generation_id, expected
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$;
