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
        SELECT DISTINCT k.slot::int FROM @extschema@.chash_directory_change c
         CROSS JOIN LATERAL unnest(string_to_array(c.key, ',')) k(slot)
         WHERE c.directory = d.name AND c.version > since_version AND c.kind IN ('slot', 'slots'))));
    result := result || jsonb_build_object('overrides', coalesce((
        SELECT jsonb_object_agg(k.tenant, o.shard)
          FROM (SELECT DISTINCT c.key AS tenant FROM @extschema@.chash_directory_change c
                 WHERE c.directory = d.name AND c.version > since_version AND c.kind = 'override') k
          LEFT JOIN @extschema@.chash_override o ON o.directory = d.name AND o.tenant = k.tenant), '{}'));
    RETURN result;
END
$$;
