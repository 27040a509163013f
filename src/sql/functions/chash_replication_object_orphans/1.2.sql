CREATE FUNCTION @extschema@.chash_replication_object_orphans(migration bigint)
    RETURNS TABLE (step int, from_shard text, to_shard text, name text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
    SELECT s.step, s.from_shard, s.to_shard, pg_catalog.min(o.name)
      FROM @extschema@.chash_replication_object o
      JOIN @extschema@.chash_migration_step s ON s.migration = o.migration AND s.step = o.step
     WHERE o.migration = $1 AND @extschema@.chash_replication_object_orphan(o.migration, o.step)
     GROUP BY s.step, s.from_shard, s.to_shard
     ORDER BY s.step
$$;
COMMENT ON FUNCTION @extschema@.chash_replication_object_orphans(bigint) IS
    'internal: the steps of a migration whose recorded replication objects the cleaner may drop, with their shards';
