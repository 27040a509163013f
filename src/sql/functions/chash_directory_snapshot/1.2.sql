CREATE OR REPLACE FUNCTION @extschema@.chash_directory_snapshot(directory text) RETURNS jsonb
    LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d @extschema@.chash_directory;
BEGIN
    SELECT * INTO d FROM @extschema@.chash_directory x WHERE x.name = directory;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', directory USING ERRCODE = '42704';
    END IF;
    RETURN jsonb_build_object(
        'name', d.name,
        'version', d.version,
        'slot_count', d.slot_count,
        'slot_method', d.slot_method,
        'key_type', d.key_type,
        'shards', coalesce((
            SELECT jsonb_agg(jsonb_build_object('shard', s.shard, 'weight', s.weight, 'state', s.state,
                                                'zone', s.zone, 'server', s.server) ORDER BY s.shard)
            FROM @extschema@.chash_shard s WHERE s.directory = d.name), '[]'),
        -- runs of consecutive slots with one owner, as [first, last, shard]
        'slots', @extschema@.chash_slot_runs(d.name),
        'overrides', coalesce((
            SELECT jsonb_object_agg(o.tenant, o.shard)
            FROM @extschema@.chash_override o WHERE o.directory = d.name), '{}'),
        'steps', coalesce((
            SELECT jsonb_agg(jsonb_build_object('migration', m.id, 'step', s.step, 'slot', s.slot,
                                                'tenant', s.tenant, 'from_shard', s.from_shard,
                                                'to_shard', s.to_shard, 'state', s.state)
                             ORDER BY m.id, s.step)
            FROM @extschema@.chash_migration m
            JOIN @extschema@.chash_migration_step s ON s.migration = m.id
            WHERE m.directory = d.name AND m.status = 'running'
              AND s.state IN ('copying', 'fenced')), '[]'));
END
$$;
