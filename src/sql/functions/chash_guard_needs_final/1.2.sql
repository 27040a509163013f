-- Whether anything may change a new row's tenant after the BEFORE guard
-- g in the table or any table under it (children, partitions): a stored
-- generated tenant column, or a BEFORE ROW INSERT or UPDATE trigger that
-- sorts after g (they fire in name order).  src/shard_guard.c checks the
-- same as it fires, and refuses (55000) where this guard is missing.
CREATE FUNCTION @extschema@.chash_guard_needs_final(rel regclass, tenant_column text, g name) RETURNS boolean
    LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
    WITH RECURSIVE tree(oid) AS (
        SELECT rel::oid
        UNION
        SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.oid
    )
    SELECT EXISTS (SELECT FROM pg_attribute a JOIN tree ON a.attrelid = tree.oid
                    WHERE a.attname = tenant_column AND a.attgenerated = 's')
        OR EXISTS (SELECT FROM pg_trigger t JOIN tree ON t.tgrelid = tree.oid
                    WHERE t.tgname COLLATE "C" > g COLLATE "C" AND t.tgenabled <> 'D'
                      AND t.tgfoid <> '@extschema@.chash_shard_row_guard()'::regprocedure
                      -- ROW (1) and BEFORE (2), on INSERT (4) or UPDATE (16)
                      AND t.tgtype & 3 = 3 AND t.tgtype & 20 <> 0)
$$;
COMMENT ON FUNCTION @extschema@.chash_guard_needs_final(regclass, text, name) IS
    'internal: whether a trigger or a generated tenant column may change a new row after the guard g, which then also checks it after the row';
