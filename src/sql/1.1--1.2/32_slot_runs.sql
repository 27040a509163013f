-- ---------------------------------------------------------------------------
-- Slot runs, said once (docs/directory.md): runs of consecutive slots with
-- one owner as [first, last, shard], for chash_directory_snapshot (every
-- slot) and chash_directory_changes (the slots changed since a version).
-- Both are redefined here to call it (their comments stay); the rest of
-- their bodies is 1.0's and 1.1's.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_slot_runs(directory text, slots int[] DEFAULT NULL) RETURNS jsonb
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_array(r.first, r.last, r.shard) ORDER BY r.first), '[]')
      FROM (SELECT min(x.slot) AS first, max(x.slot) AS last, x.shard
              FROM (SELECT s.slot, s.shard,
                           s.slot - row_number() OVER (PARTITION BY s.shard ORDER BY s.slot) AS run
                      FROM @extschema@.chash_slot s
                     WHERE s.directory = $1 AND ($2 IS NULL OR s.slot = ANY ($2))) x
             GROUP BY x.shard, x.run) r
$$;
COMMENT ON FUNCTION @extschema@.chash_slot_runs(text, int[]) IS
    'runs of consecutive slots with one owner, [first, last, shard] in slot order: of every slot of the directory, or of the slots given';

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

CREATE OR REPLACE FUNCTION @extschema@.chash_directory_changes(directory text, since_version bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d @extschema@.chash_directory;
    snap jsonb;
    result jsonb;
BEGIN
    SELECT * INTO d FROM @extschema@.chash_directory x WHERE x.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', @extschema@.chash_message_text($1)
            USING ERRCODE = '42704';
    END IF;
    IF since_version = d.version THEN
        RETURN jsonb_build_object('full', false, 'version', d.version, 'slots', '[]'::jsonb,
                                  'overrides', '{}'::jsonb);
    END IF;
    -- complete only if the version after since_version is still recorded
    -- as following it, and nothing since is recorded as full
    IF since_version > d.version
       OR NOT EXISTS (SELECT FROM @extschema@.chash_directory_change c
                       WHERE c.directory = d.name AND c.version > since_version
                         AND c.kind = 'version' AND c.key = since_version::text)
       OR EXISTS (SELECT FROM @extschema@.chash_directory_change c
                   WHERE c.directory = d.name AND c.version > since_version AND c.kind = 'full') THEN
        RETURN jsonb_build_object('full', true, 'version', d.version);
    END IF;
    result := jsonb_build_object('full', false, 'version', d.version);
    IF EXISTS (SELECT FROM @extschema@.chash_directory_change c
                WHERE c.directory = d.name AND c.version > since_version AND c.kind = 'shard')
       OR EXISTS (SELECT FROM @extschema@.chash_directory_change c
                   WHERE c.directory = d.name AND c.version > since_version
                     AND c.kind IN ('migration', 'step')) THEN
        snap := @extschema@.chash_directory_snapshot(d.name);
        IF EXISTS (SELECT FROM @extschema@.chash_directory_change c
                    WHERE c.directory = d.name AND c.version > since_version AND c.kind = 'shard') THEN
            result := result || jsonb_build_object('shards', snap -> 'shards');
        END IF;
        IF EXISTS (SELECT FROM @extschema@.chash_directory_change c
                    WHERE c.directory = d.name AND c.version > since_version
                      AND c.kind IN ('migration', 'step')) THEN
            result := result || jsonb_build_object('steps', snap -> 'steps');
        END IF;
    END IF;
    result := result || jsonb_build_object('slots', @extschema@.chash_slot_runs(d.name, ARRAY(
        SELECT DISTINCT c.key::int FROM @extschema@.chash_directory_change c
         WHERE c.directory = d.name AND c.version > since_version AND c.kind = 'slot')));
    result := result || jsonb_build_object('overrides', coalesce((
        SELECT jsonb_object_agg(k.tenant, o.shard)
          FROM (SELECT DISTINCT c.key AS tenant FROM @extschema@.chash_directory_change c
                 WHERE c.directory = d.name AND c.version > since_version AND c.kind = 'override') k
          LEFT JOIN @extschema@.chash_override o ON o.directory = d.name AND o.tenant = k.tenant), '{}'));
    RETURN result;
END
$$;
