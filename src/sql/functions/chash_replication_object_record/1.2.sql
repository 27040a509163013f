CREATE FUNCTION @extschema@.chash_replication_object_record(migration bigint, step int, holder text,
                                                            source text, target text, name text)
    RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step', 'holder', 'source', 'target', 'name'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL, $5 IS NULL, $6 IS NULL]);
    PERFORM @extschema@.chash_steps_lease_check($1, ARRAY[$2], $3);
    INSERT INTO @extschema@.chash_replication_object AS o (migration, step, kind, shard, name, recorded_by)
    VALUES ($1, $2, 'publication', $4, $6, $3), ($1, $2, 'slot', $4, $6, $3), ($1, $2, 'subscription', $5, $6, $3)
    ON CONFLICT ON CONSTRAINT chash_replication_object_pkey DO UPDATE
       SET shard = excluded.shard, name = excluded.name, recorded_by = excluded.recorded_by,
           recorded_at = pg_catalog.now();
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replication_object_record(bigint, int, text, text, text, text) IS
    'internal: records, for the holder of the step''s lease, the publication and slot about to be created on source and the subscription on target';
