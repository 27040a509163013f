CREATE FUNCTION @extschema@.chash_directory_reconcile()
        RETURNS TABLE (directory text, version_before bigint, version_after bigint,
                       source_shard text, reapplied bigint)
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    schema constant text := (SELECT n.nspname::text FROM pg_extension e
                             JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'chash');
    srv record;
    best record;
    d record;
    dirs text[];
    base bigint;
    blocked text;
    tab text;
    n bigint;
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE EXCEPTION 'permission denied to reconcile a directory'
            USING ERRCODE = '42501', DETAIL = 'Only a superuser may reconcile the directory database.';
    END IF;
    IF @extschema@.chash_shard_subscription() IS NOT NULL THEN
        RAISE EXCEPTION 'this database is not a directory database'
            USING ERRCODE = '55000', DETAIL = 'Its directory tables are a replica; run this on the directory database.';
    END IF;
    LOCK TABLE @extschema@.chash_directory, @extschema@.chash_shard, @extschema@.chash_slot,
               @extschema@.chash_override, @extschema@.chash_migration, @extschema@.chash_migration_step,
               @extschema@.chash_table, @extschema@.chash_directory_change IN EXCLUSIVE MODE;

    -- Every shard server's replica (one per server: it replicates them all).
    CREATE TEMP TABLE chash_reconcile_replica (server text, shards text, data jsonb) ON COMMIT DROP;
    FOR srv IN SELECT s.server, string_agg(format('"%s" of "%s"', s.shard, s.directory), ', '
                                           ORDER BY s.directory, s.shard) AS shards
                 FROM @extschema@.chash_shard s WHERE s.server IS NOT NULL GROUP BY s.server LOOP
        INSERT INTO chash_reconcile_replica
        VALUES (srv.server, srv.shards, @extschema@.chash_directory_read_replica(srv.server, schema));
    END LOOP;
    DELETE FROM chash_reconcile_replica r WHERE r.data -> 'tables' ->> 'diverged' IS NOT NULL
        OR jsonb_array_length(r.data -> 'tables' -> 'chash_directory') = 0;

    -- The newest replica: no directory older there than in another replica.
    CREATE TEMP TABLE chash_reconcile_version ON COMMIT DROP AS
        SELECT r.server, x ->> 'name' AS name, (x ->> 'version')::bigint AS version
          FROM chash_reconcile_replica r, jsonb_array_elements(r.data -> 'tables' -> 'chash_directory') x;
    SELECT r.* INTO best FROM chash_reconcile_replica r
     WHERE NOT EXISTS (SELECT FROM chash_reconcile_version a JOIN chash_reconcile_version b ON b.name = a.name
                        WHERE a.server = r.server AND b.version > a.version)
     ORDER BY r.server LIMIT 1;
    IF NOT FOUND THEN
        IF EXISTS (SELECT FROM chash_reconcile_replica) THEN
            RAISE EXCEPTION 'the shards'' replicas of the directory do not agree'
                USING ERRCODE = '55000',
                      DETAIL = 'No replica is at least as new as every other one in every directory: a shard applied changes of another history.',
                      HINT = 'See chash_shard_status on each shard; re-point the one that diverged and run this again.';
        END IF;
        RETURN;
    END IF;

    -- The directories whose history in the replica has versions this
    -- database lacks.
    SELECT array_agg(v.name ORDER BY v.name) INTO dirs FROM chash_reconcile_version v
      LEFT JOIN @extschema@.chash_directory l ON l.name = v.name
     WHERE v.server = best.server AND (l.name IS NULL OR EXISTS (
            SELECT FROM jsonb_array_elements(best.data -> 'tables' -> 'chash_directory_change') x
             WHERE x ->> 'directory' = v.name AND x ->> 'kind' IN ('version', 'origin')
               AND NOT EXISTS (SELECT FROM @extschema@.chash_directory_change c
                                WHERE c.directory = v.name AND c.version = (x ->> 'version')::bigint
                                  AND c.kind = x ->> 'kind' AND c.key = x ->> 'key')));
    IF dirs IS NULL THEN
        RETURN;
    END IF;

    -- What this database changed itself after its last version the replica
    -- shares: applied again afterwards (a slot's owner, a pin, a shard).
    -- Steps and migrations are the mover's: those cannot be merged.
    CREATE TEMP TABLE chash_reconcile_own (directory text, base bigint, kind text, key text) ON COMMIT DROP;
    FOR d IN SELECT l.name, l.version FROM @extschema@.chash_directory l WHERE l.name = ANY (dirs) LOOP
        -- the last version made by the same server here and there
        SELECT max(c.version) INTO base FROM @extschema@.chash_directory_change c
         WHERE c.directory = d.name AND c.kind = 'version'
           AND NOT EXISTS (SELECT FROM @extschema@.chash_directory_change c2
                            WHERE c2.directory = d.name AND c2.version = c.version
                              AND c2.kind IN ('version', 'origin')
                              AND NOT EXISTS (SELECT FROM jsonb_array_elements(best.data -> 'tables' -> 'chash_directory_change') x
                                               WHERE x ->> 'directory' = c2.directory AND (x ->> 'version')::bigint = c2.version
                                                 AND x ->> 'kind' = c2.kind AND x ->> 'key' = c2.key));
        IF base IS NULL OR base = d.version THEN
            CONTINUE;
        END IF;
        -- a batch's 'slots' key is its slots, one 'slot' each
        INSERT INTO chash_reconcile_own
        SELECT DISTINCT d.name, base, CASE c.kind WHEN 'slots' THEN 'slot' ELSE c.kind END, k.key
          FROM @extschema@.chash_directory_change c
         CROSS JOIN LATERAL unnest(CASE c.kind WHEN 'slots' THEN string_to_array(c.key, ',')
                                               ELSE ARRAY[c.key] END) k(key)
         WHERE c.directory = d.name AND c.version > base AND c.kind NOT IN ('version', 'origin');
        SELECT string_agg(DISTINCT o.kind, ', ') INTO blocked FROM chash_reconcile_own o
         WHERE o.directory = d.name AND o.kind NOT IN ('slot', 'override', 'shard');
        IF blocked IS NOT NULL THEN
            RAISE EXCEPTION 'directory "%" changed here after version % in a way that cannot be merged with the shards'' versions',
                    @extschema@.chash_message_text(d.name), base
                USING ERRCODE = '55000',
                      DETAIL = format('This database is at version %s, the newest replica (on %s) at version %s; changes here since version %s are of kind %s.',
                                      d.version, best.shards,
                                      (SELECT v.version FROM chash_reconcile_version v WHERE v.server = best.server AND v.name = d.name),
                                      base, blocked),
                      HINT = 'Cancel the migrations started here since the failover, or revert those changes, and run this again.';
        END IF;
    END LOOP;
    CREATE TEMP TABLE chash_reconcile_slot ON COMMIT DROP AS
        SELECT s.* FROM @extschema@.chash_slot s JOIN chash_reconcile_own o
            ON o.directory = s.directory AND o.kind = 'slot' AND o.key = s.slot::text;
    CREATE TEMP TABLE chash_reconcile_override ON COMMIT DROP AS
        SELECT o.directory, o.key AS tenant, x.shard, x.note FROM chash_reconcile_own o
          LEFT JOIN @extschema@.chash_override x ON x.directory = o.directory AND x.tenant = o.key
         WHERE o.kind = 'override';
    CREATE TEMP TABLE chash_reconcile_shard ON COMMIT DROP AS
        SELECT s.* FROM @extschema@.chash_shard s JOIN chash_reconcile_own o
            ON o.directory = s.directory AND o.kind = 'shard' AND o.key = s.shard;

    CREATE TEMP TABLE chash_reconcile_report ON COMMIT DROP AS
        SELECT v.name AS directory, l.version AS version_before, v.version AS version_after,
               best.shards AS source_shard, 0::bigint AS reapplied
          FROM chash_reconcile_version v LEFT JOIN @extschema@.chash_directory l ON l.name = v.name
         WHERE v.server = best.server AND v.name = ANY (dirs);

    -- Roll forward: the replica's rows of those directories, as they are
    -- (they were checked when they were made); the shards that follow this
    -- database get them through the publication.
    SET LOCAL session_replication_role = replica;
    FOREACH tab IN ARRAY ARRAY['chash_directory', 'chash_shard', 'chash_slot', 'chash_override',
                               'chash_migration', 'chash_table', 'chash_directory_change'] LOOP
        PERFORM @extschema@.chash_replica_replace(format('%I.%I', schema, tab)::regclass,
            (SELECT coalesce(jsonb_agg(x), '[]') FROM jsonb_array_elements(best.data -> 'tables' -> tab) x
              WHERE x ->> CASE WHEN tab = 'chash_directory' THEN 'name' ELSE 'directory' END = ANY (dirs)),
            format('t.%I = ANY (%L)', CASE WHEN tab = 'chash_directory' THEN 'name' ELSE 'directory' END, dirs));
    END LOOP;
    PERFORM @extschema@.chash_replica_replace(format('%I.chash_migration_step', schema)::regclass,
        (SELECT coalesce(jsonb_agg(x), '[]') FROM jsonb_array_elements(best.data -> 'tables' -> 'chash_migration_step') x
          WHERE (x ->> 'migration')::bigint IN (SELECT (m ->> 'id')::bigint
                                                 FROM jsonb_array_elements(best.data -> 'tables' -> 'chash_migration') m
                                                WHERE m ->> 'directory' = ANY (dirs))),
        format('t.migration IN (SELECT m.id FROM %I.chash_migration m WHERE m.directory = ANY (%L))', schema, dirs));
    PERFORM pg_catalog.setval(pg_catalog.pg_get_serial_sequence(format('%I.chash_migration', schema), 'id'),
                              greatest(max(m.id), 1)) FROM @extschema@.chash_migration m;
    SET LOCAL session_replication_role = origin;

    -- This database's own changes since the common version, again, through
    -- the triggers: checked, under a new version of each directory above
    -- every version it had here and there (raised here: the bump triggers
    -- leave a row this transaction wrote alone).
    UPDATE @extschema@.chash_directory l SET version = greatest(l.version, r.version_before) + 1
      FROM chash_reconcile_report r
     WHERE r.directory = l.name AND l.name IN (SELECT o.directory FROM chash_reconcile_own o);
    UPDATE @extschema@.chash_shard s SET weight = x.weight, state = x.state, zone = x.zone, server = x.server
      FROM chash_reconcile_shard x WHERE s.directory = x.directory AND s.shard = x.shard;
    INSERT INTO @extschema@.chash_shard SELECT x.* FROM chash_reconcile_shard x
     WHERE NOT EXISTS (SELECT FROM @extschema@.chash_shard s WHERE s.directory = x.directory AND s.shard = x.shard);
    UPDATE @extschema@.chash_slot s SET shard = x.shard
      FROM chash_reconcile_slot x WHERE s.directory = x.directory AND s.slot = x.slot AND s.shard <> x.shard;
    DELETE FROM @extschema@.chash_override o USING chash_reconcile_override x
     WHERE x.shard IS NULL AND o.directory = x.directory AND o.tenant = x.tenant;
    INSERT INTO @extschema@.chash_override AS o (directory, tenant, shard, note)
    SELECT x.directory, x.tenant, x.shard, x.note FROM chash_reconcile_override x WHERE x.shard IS NOT NULL
    ON CONFLICT ON CONSTRAINT chash_override_pkey DO UPDATE SET shard = excluded.shard, note = excluded.note;
    UPDATE chash_reconcile_report r
       SET reapplied = (SELECT count(*) FROM chash_reconcile_own o WHERE o.directory = r.directory),
           version_after = (SELECT l.version FROM @extschema@.chash_directory l WHERE l.name = r.directory);
    RETURN QUERY SELECT r.directory, r.version_before, r.version_after, r.source_shard, r.reapplied
                   FROM chash_reconcile_report r ORDER BY r.directory;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_reconcile() IS
    'on a promoted directory database: takes the versions it missed from the newest shard replica, applies its own changes since again on top, and reports what it did';
