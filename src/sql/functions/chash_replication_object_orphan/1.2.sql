-- The steps whose objects the cleaner may drop: done or cancelled with no
-- lease left, or given back (pending) with none that is live.
CREATE FUNCTION @extschema@.chash_replication_object_orphan(migration bigint, step int) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
    SELECT EXISTS (
        SELECT FROM @extschema@.chash_migration_step s
         WHERE s.migration = $1 AND s.step = $2
           AND (s.state IN ('done', 'cancelled')
                AND NOT EXISTS (SELECT FROM @extschema@.chash_step_lease l
                                 WHERE l.migration = s.migration AND l.step = s.step)
                OR s.state = 'pending'
                AND NOT EXISTS (SELECT FROM @extschema@.chash_step_lease l
                                 WHERE l.migration = s.migration AND l.step = s.step
                                   AND l.lease_until >= pg_catalog.clock_timestamp())))
$$;
COMMENT ON FUNCTION @extschema@.chash_replication_object_orphan(bigint, int) IS
    'internal: whether the recorded replication objects of a step may be dropped (done or cancelled with no lease, or pending with no live lease)';
