CREATE FUNCTION @extschema@.chash_shard_repoint(directory text, directory_conninfo text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    schema constant text := (SELECT n.nspname::text FROM pg_extension e
                             JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'chash');
    slot constant text := @extschema@.chash_shard_slot_name();
    sub name;
    me text;
    old_conninfo text;
    snap jsonb;
    bad record;
    tab text;
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE EXCEPTION 'permission denied to re-point a shard'
            USING ERRCODE = '42501', DETAIL = 'Only a superuser may join a directory, re-point or leave it.';
    END IF;
    IF directory IS NULL OR directory_conninfo IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN directory IS NULL THEN 'directory' ELSE 'directory_conninfo' END
            USING ERRCODE = '22004';
    END IF;
    LOCK TABLE @extschema@.chash_shard_member IN SHARE ROW EXCLUSIVE MODE;
    SELECT m.subscription, m.shard INTO sub, me FROM @extschema@.chash_shard_member m
     WHERE m.directory = chash_shard_repoint.directory;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'this database is not a shard of directory "%"', @extschema@.chash_message_text(directory)
            USING ERRCODE = '42704';
    END IF;
    IF sub IS NULL THEN
        RAISE EXCEPTION 'this database is the directory database of directory "%"', @extschema@.chash_message_text(directory)
            USING ERRCODE = '55000', DETAIL = 'It replicates nothing: there is nothing to re-point.';
    END IF;
    SELECT s.subconninfo INTO old_conninfo FROM pg_subscription s
     WHERE s.subname = sub AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database());

    IF @extschema@.chash_shard_remote_check(directory_conninfo, directory, me, schema, slot) THEN
        RAISE EXCEPTION 'replication slot "%" already exists on the directory database "%"',
                slot, @extschema@.chash_conninfo_display(directory_conninfo)
            USING ERRCODE = '42710',
                  DETAIL = 'It was made there by hand, or this database already replicates from that server.',
                  HINT = format('If nothing uses it, drop it there with SELECT pg_drop_replication_slot(%L) and re-point again.', slot);
    END IF;
    snap := @extschema@.chash_shard_slot_snapshot(directory_conninfo, slot, schema);

    -- Versions this replica holds that the new server lacks would be lost:
    -- reconcile there first.  (A replica that has met another history
    -- already compares by version only: its history entries are mixed.)
    SELECT l.name, l.version AS here, (r ->> 'version')::bigint AS there INTO bad
      FROM @extschema@.chash_directory l
      LEFT JOIN jsonb_array_elements(snap -> 'tables' -> 'chash_directory') r ON r ->> 'name' = l.name
     WHERE r IS NULL OR (r ->> 'version')::bigint < l.version
        OR (NOT EXISTS (SELECT FROM @extschema@.chash_shard_origin o WHERE o.subscription = sub AND o.diverged IS NOT NULL)
            AND EXISTS (SELECT FROM @extschema@.chash_directory_change c
                         WHERE c.directory = l.name AND c.version = l.version AND c.kind IN ('version', 'origin')
                           AND NOT EXISTS (SELECT FROM jsonb_array_elements(snap -> 'tables' -> 'chash_directory_change') x
                                            WHERE x ->> 'directory' = c.directory AND (x ->> 'version')::bigint = c.version
                                              AND x ->> 'kind' = c.kind AND x ->> 'key' = c.key)))
     ORDER BY l.name LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'the directory database "%" does not hold the history of this shard''s replica',
                @extschema@.chash_conninfo_display(directory_conninfo)
            USING ERRCODE = '55000',
                  DETAIL = CASE WHEN bad.there IS NULL
                                THEN format('Directory "%s" is at version %s here and does not exist there.', bad.name, bad.here)
                                WHEN bad.there < bad.here
                                THEN format('Directory "%s" is at version %s here and at version %s there.', bad.name, bad.here, bad.there)
                                ELSE format('Version %s of directory "%s" differs here and there.', bad.here, bad.name) END,
                  HINT = 'Run SELECT chash_directory_reconcile() on that directory database first: it takes the versions it missed from the shards.';
    END IF;

    -- The replica becomes the snapshot.  As the apply worker does it: the
    -- read-only and integrity triggers do not fire, the invalidations and
    -- the registrations' guards follow.
    SET LOCAL session_replication_role = replica;
    FOREACH tab IN ARRAY ARRAY['chash_directory', 'chash_shard', 'chash_slot', 'chash_override', 'chash_migration',
                               'chash_migration_step', 'chash_table', 'chash_directory_change'] LOOP
        PERFORM @extschema@.chash_replica_replace(format('%I.%I', schema, tab)::regclass,
                                                  coalesce(snap -> 'tables' -> tab, '[]'));
    END LOOP;
    SET LOCAL session_replication_role = origin;

    -- The subscription again, on the new slot, without an initial copy
    -- (a new subscription, so its origin starts at the slot, not at a
    -- position of the old server's WAL).
    EXECUTE format('ALTER SUBSCRIPTION %I DISABLE', sub);
    EXECUTE format('ALTER SUBSCRIPTION %I SET (slot_name = NONE)', sub);
    EXECUTE format('DROP SUBSCRIPTION %I', sub);
    PERFORM @extschema@.chash_shard_create_subscription(sub, directory_conninfo, slot, false);
    INSERT INTO @extschema@.chash_shard_origin AS o (subscription, system_identifier, timeline)
         VALUES (sub, (snap ->> 'system_identifier')::numeric, (snap ->> 'timeline')::int)
    ON CONFLICT (subscription) DO UPDATE
        SET system_identifier = excluded.system_identifier, timeline = excluded.timeline,
            recorded_at = excluded.recorded_at, diverged = NULL, diverged_at = NULL;
    IF old_conninfo IS DISTINCT FROM directory_conninfo THEN
        RAISE NOTICE 'replication slot "%" on the former directory database "%" was not dropped',
                slot, @extschema@.chash_conninfo_display(old_conninfo)
            USING HINT = format('If that server comes back, drop it there with SELECT pg_drop_replication_slot(%L).', slot);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_repoint(text, text) IS
    'on a shard: replicates the directory tables from another directory server (a promoted standby) without a gap and without unguarding, after checking it holds the replica''s history';
