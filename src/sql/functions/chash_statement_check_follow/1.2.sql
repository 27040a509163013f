-- After a join or a leave: chash in this database's session_preload_libraries
-- while it is a shard of any directory; the leave of the last directory
-- removes the entry "chash" (one the DBA spelled otherwise stays).  A superuser joins and leaves;
-- anybody else (a restore of chash_shard_member) gets a warning.
CREATE FUNCTION @extschema@.chash_statement_check_follow() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    joined boolean := EXISTS (SELECT FROM @extschema@.chash_shard_member);
    current text := @extschema@.chash_database_preload();
    entries text[] := @extschema@.chash_library_list(current);
    wanted text[];
BEGIN
    IF joined AND NOT @extschema@.chash_library_listed(current) THEN
        wanted := entries || 'chash'::text;
    ELSIF NOT joined AND TG_OP = 'DELETE' AND 'chash' = ANY (entries) THEN
        wanted := array_remove(entries, 'chash');
    ELSE
        RETURN NULL;
    END IF;
    BEGIN
        IF cardinality(wanted) = 0 THEN
            EXECUTE format('ALTER DATABASE %I RESET session_preload_libraries', current_database());
        ELSE
            -- one literal per entry: a single one would be one library
            EXECUTE format('ALTER DATABASE %I SET session_preload_libraries = %s', current_database(),
                           (SELECT string_agg(quote_literal(e), ', ' ORDER BY n) FROM unnest(wanted) WITH ORDINALITY x(e, n)));
        END IF;
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE WARNING 'could not set session_preload_libraries of database "%": %', current_database(), SQLERRM
            USING HINT = 'A superuser sets it with ALTER DATABASE ... SET session_preload_libraries; without it, only sessions that load chash check statements that name a tenant.';
    END;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_statement_check_follow() IS
    'trigger: names chash in this database''s session_preload_libraries while it is a shard, and removes that entry when it leaves the last directory';
