-- ---------------------------------------------------------------------------
-- NULL arguments of management functions (the conventions in README.md, docs/directory.md)
--
-- One rule for every function that changes state (every VOLATILE function
-- of the extension that is not a trigger): a NULL in a required argument
-- is 22004 naming the argument, checked before anything else.  Required
-- means every argument whose default is not NULL; a NULL default means
-- "not given".  Reads (routing, snapshots, the planner's dry run) keep
-- the conventions in README.md's NULL in, NULL out.  sql/management_nulls.sql walks pg_proc, so
-- a new function cannot miss the rule.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_require(names text[], nulls boolean[]) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF names IS NULL OR nulls IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN names IS NULL THEN 'names' ELSE 'nulls' END
            USING ERRCODE = '22004';
    END IF;
    FOR i IN 1 .. cardinality(names) LOOP
        IF nulls[i] IS DISTINCT FROM false THEN
            RAISE EXCEPTION '% must not be null', names[i] USING ERRCODE = '22004';
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_require(text[], boolean[]) IS
    'internal: raises 22004 naming the first argument whose entry in nulls is true';
