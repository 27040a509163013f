-- A table and its inheritance descendants (not partitions: they carry
-- clones of the partitioned table's row triggers).
CREATE FUNCTION @extschema@.chash_guard_tree(rel regclass) RETURNS SETOF regclass
    LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
    WITH RECURSIVE tree(oid) AS (
        SELECT rel::oid
        UNION
        SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.oid
          JOIN pg_class c ON c.oid = i.inhrelid
         WHERE NOT c.relispartition
    )
    SELECT oid::regclass FROM tree
$$;
COMMENT ON FUNCTION @extschema@.chash_guard_tree(regclass) IS
    'internal: a table and its inheritance children, grandchildren and so on (not its partitions), which its guard covers';
