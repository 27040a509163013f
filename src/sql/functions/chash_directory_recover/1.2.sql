-- A procedure, not a function: the reconcile must commit before any shard
-- is re-pointed (a re-point reads the directory in its new slot's
-- snapshot, and making that slot waits for every transaction with an xid
-- on this server, this one included).  No SET clause (a procedure with
-- one cannot commit): the search_path is set in each transaction.
CREATE PROCEDURE @extschema@.chash_directory_recover(directory_conninfo text)
    LANGUAGE plpgsql AS $$
DECLARE
    schema text;
    me text;
    r record;
    srv record;
    res text[];
    reconciled boolean := true;
    all_follow boolean := true;
    v bigint;
    servers text[] := '{}';
    shards text[] := '{}';
    actions text[] := '{}';
    details text[] := '{}';
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE EXCEPTION 'permission denied to recover a directory'
            USING ERRCODE = '42501', DETAIL = 'Only a superuser may reconcile the directory database and re-point its shards.';
    END IF;
    IF directory_conninfo IS NULL THEN
        RAISE EXCEPTION 'directory_conninfo must not be null' USING ERRCODE = '22004';
    END IF;
    IF @extschema@.chash_shard_subscription() IS NOT NULL THEN
        RAISE EXCEPTION 'this database is not a directory database'
            USING ERRCODE = '55000', DETAIL = 'Its directory tables are a replica; run this on the directory database.';
    END IF;
    IF pg_catalog.to_regclass('pg_temp.chash_directory_recovery') IS NOT NULL THEN
        DROP TABLE pg_temp.chash_directory_recovery;
    END IF;
    CREATE TEMP TABLE chash_directory_recovery (server text, shards text, action text, detail text);

    -- 1. The versions this server missed, from the newest shard replica.
    --    A shard it cannot read stops it (that replica might be the
    --    newest); the shards that can be brought are brought anyway (a
    --    re-point checks that this server holds the replica's history).
    BEGIN
        FOR r IN SELECT * FROM @extschema@.chash_directory_reconcile() LOOP
            INSERT INTO pg_temp.chash_directory_recovery
            VALUES (NULL, format('directory "%s"', r.directory), 'reconciled',
                    format('Version %s to %s: the versions it lacked from the replica of %s, %s changes of its own applied again.',
                           r.version_before, r.version_after, r.source_shard, r.reapplied));
        END LOOP;
    EXCEPTION WHEN OTHERS THEN
        DECLARE
            msg text;
            msg_detail text;
            code text;
        BEGIN
            GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, msg_detail = PG_EXCEPTION_DETAIL, code = RETURNED_SQLSTATE;
            reconciled := false;
            INSERT INTO pg_temp.chash_directory_recovery
            VALUES (NULL, NULL, 'not reconciled',
                    format('chash_directory_reconcile failed: %s: %s%s', code, msg,
                           CASE WHEN coalesce(msg_detail, '') <> '' THEN ' / ' || msg_detail ELSE '' END));
        END;
    END;
    COMMIT;

    -- 2. Every shard server (one subscription serves all the directories
    --    it joined from this server): follows, or re-pointed here.  Nothing
    --    in this transaction takes an xid before the re-points.
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    schema := (SELECT n.nspname::text FROM pg_extension e
                 JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'chash');
    me := @extschema@.chash_server_identity();
    FOR srv IN SELECT s.server,
                      string_agg(format('"%s" of "%s"', s.shard, s.directory), ', ' ORDER BY s.directory, s.shard) AS names,
                      array_agg(DISTINCT s.directory ORDER BY s.directory)::text AS dirs
                 FROM @extschema@.chash_shard s
                WHERE s.server IS NOT NULL AND s.state <> 'retired'
                GROUP BY s.server ORDER BY min(s.directory), min(s.shard) LOOP
        BEGIN
            res := @extschema@.chash_directory_shard_follow(srv.server, schema, me, srv.dirs, directory_conninfo);
        EXCEPTION WHEN OTHERS THEN
            res := ARRAY['failed', SQLERRM];
        END;
        servers := servers || @extschema@.chash_conninfo_display(srv.server);
        shards := shards || srv.names;
        actions := actions || res[1];
        details := details || res[2];
        IF res[1] NOT IN ('follows', 'repointed', 'not joined') THEN
            all_follow := false;
        END IF;
    END LOOP;
    INSERT INTO pg_temp.chash_directory_recovery
    SELECT * FROM unnest(servers, shards, actions, details);
    INSERT INTO pg_temp.chash_directory_recovery
    SELECT NULL, string_agg(format('"%s" of "%s"', s.shard, s.directory), ', ' ORDER BY s.directory, s.shard),
           'not checked', 'No server is recorded for them (chash_shard.server): they cannot be asked.'
      FROM @extschema@.chash_shard s WHERE s.server IS NULL AND s.state <> 'retired'
    HAVING count(*) > 0;

    -- 3. Once every shard server follows: a version of each directory made
    --    here admits ownership changes again (chash_directory_gate).  A
    --    directory whose newest version is this server's is left alone, so
    --    a second run changes nothing.
    IF reconciled AND all_follow THEN
        FOR r IN SELECT d.name FROM @extschema@.chash_directory d
                  WHERE (SELECT c.key FROM @extschema@.chash_directory_change c
                          WHERE c.directory = d.name AND c.kind = 'origin'
                          ORDER BY c.version DESC, c.key = me DESC LIMIT 1) <> me
                  ORDER BY d.name FOR NO KEY UPDATE LOOP
            UPDATE @extschema@.chash_directory d SET version = d.version WHERE d.name = r.name RETURNING d.version INTO v;
            INSERT INTO pg_temp.chash_directory_recovery
            VALUES (NULL, format('directory "%s"', r.name), 'unlocked',
                    format('Version %s was made by this server (%s): ownership changes are admitted again.', v, me));
        END LOOP;
    ELSE
        INSERT INTO pg_temp.chash_directory_recovery
        VALUES (NULL, NULL, 'locked',
                CASE WHEN NOT reconciled THEN 'The directories could not be reconciled: ownership changes stay refused; run this again once every shard can be reached.'
                     ELSE 'Not every shard server follows this server: ownership changes stay refused; run this again once they can be reached.' END);
    END IF;
    FOR r IN SELECT * FROM pg_temp.chash_directory_recovery LOOP
        RAISE NOTICE '%: %', concat_ws(' ', coalesce(r.shards, 'the directory database'), '(' || r.server || ')'), r.action
            USING DETAIL = coalesce(r.detail, '');
    END LOOP;
    COMMIT;
END
$$;
COMMENT ON PROCEDURE @extschema@.chash_directory_recover(text) IS
    'on a promoted directory database, as a superuser: reconciles the directories, re-points every shard server here (directory_conninfo: how the shards reach this database) and, once every one follows, admits ownership changes again; the report is in the temporary table chash_directory_recovery';
