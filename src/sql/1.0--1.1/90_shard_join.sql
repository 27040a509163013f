-- ---------------------------------------------------------------------------
-- Joining a shard (docs/shards.md, "Joining a shard"; docs/shards.md)
--
-- A shard database gets the directory tables from the directory database
-- by logical replication: the publication chash_directory there (made once
-- by chash_directory_publish()), one subscription here for every directory
-- joined from it.  The replica holds every directory of the directory
-- database, is read-only here, and routing reads it like any copy of the
-- tables.  The replication slot is made and dropped through libpq
-- (src/shard_join.c): CREATE/DROP SUBSCRIPTION may only do that outside a
-- transaction block.
-- ---------------------------------------------------------------------------

-- Not replicated: which directories this database is a shard of.
CREATE TABLE @extschema@.chash_shard_member (
    directory text PRIMARY KEY,
    shard text NOT NULL,
    subscription name,
    joined_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE @extschema@.chash_shard_member IS
    'the directories this database is a shard of, and the subscription that replicates them here (NULL: this is the directory database)';
COMMENT ON COLUMN @extschema@.chash_shard_member.subscription IS
    'the subscription to the directory database; NULL when this database is the directory database itself';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_shard_member', '');

CREATE FUNCTION @extschema@.chash_shard_slot_name() RETURNS text
    AS 'MODULE_PATHNAME', 'chash_shard_slot_name'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION @extschema@.chash_shard_slot_name() IS
    'the name of this database''s replication slot and subscription: chash_<system identifier>_<database oid>';

CREATE FUNCTION @extschema@.chash_conninfo_display(conninfo text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_conninfo_display'
    LANGUAGE C IMMUTABLE STRICT;
COMMENT ON FUNCTION @extschema@.chash_conninfo_display(text) IS
    'a connection string as messages show it: host, hostaddr, port and dbname only (never the password)';

-- Internal: superusers only (each also checks).
CREATE FUNCTION @extschema@.chash_shard_remote_check(conninfo text, directory text, shard text,
        schema text, slot_name text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'chash_shard_remote_check'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_remote_check(text, text, text, text, text) IS
    'internal: checks on the directory database that it publishes the directory and has the shard; true when it already holds this database''s slot';
CREATE FUNCTION @extschema@.chash_shard_create_slot(conninfo text, slot_name text) RETURNS void
    AS 'MODULE_PATHNAME', 'chash_shard_create_slot'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_create_slot(text, text) IS
    'internal: creates a pgoutput slot on the directory database, dropped again if the transaction aborts';
CREATE FUNCTION @extschema@.chash_shard_drop_slot(conninfo text, slot_name text) RETURNS void
    AS 'MODULE_PATHNAME', 'chash_shard_drop_slot'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_drop_slot(text, text) IS
    'internal: drops a slot on the directory database when the transaction commits';
CREATE FUNCTION @extschema@.chash_shard_create_subscription(name text, conninfo text, slot_name text)
        RETURNS void
    AS 'MODULE_PATHNAME', 'chash_shard_create_subscription'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_create_subscription(text, text, text) IS
    'internal: subscribes to the directory tables on an existing slot, without quoting the connection string in errors';
REVOKE ALL ON FUNCTION @extschema@.chash_shard_remote_check(text, text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.chash_shard_create_slot(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.chash_shard_drop_slot(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.chash_shard_create_subscription(text, text, text) FROM PUBLIC;

-- On the directory database, once: what shards subscribe to.
CREATE FUNCTION @extschema@.chash_directory_publish() RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    tables constant text := '@extschema@.chash_directory, @extschema@.chash_shard, '
        '@extschema@.chash_slot, @extschema@.chash_override, @extschema@.chash_migration, '
        '@extschema@.chash_migration_step, @extschema@.chash_table, @extschema@.chash_directory_change';
BEGIN
    IF EXISTS (SELECT FROM pg_publication WHERE pubname = 'chash_directory') THEN
        EXECUTE 'ALTER PUBLICATION chash_directory SET TABLE ' || tables;
    ELSE
        EXECUTE 'CREATE PUBLICATION chash_directory FOR TABLE ' || tables;
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_publish() IS
    'on the directory database: creates (or completes) the publication chash_directory of the directory tables that shards subscribe to';

-- The subscription that makes the directory tables a replica here, if any.
CREATE FUNCTION @extschema@.chash_shard_subscription() RETURNS name
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT m.subscription FROM @extschema@.chash_shard_member m
    JOIN pg_subscription s ON s.subname = m.subscription
     AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())
    LIMIT 1
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_subscription() IS
    'the subscription that replicates the directory tables into this database, or NULL on a directory database';

-- Local writes to the replica are refused.  The apply worker runs with
-- session_replication_role = replica, where this trigger (like the
-- integrity triggers: the directory database checked) does not fire.
CREATE FUNCTION @extschema@.chash_replica_read_only() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sub name := @extschema@.chash_shard_subscription();
BEGIN
    IF sub IS NOT NULL THEN
        RAISE EXCEPTION 'cannot change % on a shard', TG_TABLE_NAME
            USING ERRCODE = '25006',
                  DETAIL = format('The directory tables are replicated here from the directory database by subscription "%s" and are read-only.', sub),
                  HINT = 'Change the directory on the directory database; the change is replicated here.';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replica_read_only() IS
    'trigger: refuses local writes to the directory tables of a shard that replicates them';
DO $$
DECLARE
    tab text;
BEGIN
    FOREACH tab IN ARRAY ARRAY['chash_directory', 'chash_shard', 'chash_slot', 'chash_override',
                               'chash_migration', 'chash_migration_step', 'chash_table'] LOOP
        EXECUTE format($t$
            CREATE TRIGGER chash_replica_read_only BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE
                ON @extschema@.%1$s
                FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_replica_read_only();
        $t$, tab);
    END LOOP;
END
$$;

-- The apply worker fires only row triggers enabled for replicas, so the
-- invalidation the statement triggers send elsewhere (chash_directory_invalidate)
-- is sent here by these: the guard trusts its cached latest state until
-- one arrives (src/directory_cache.c, directory_latest).
DO $$
DECLARE
    tab text;
BEGIN
    FOREACH tab IN ARRAY ARRAY['chash_directory', 'chash_shard', 'chash_slot', 'chash_override',
                               'chash_migration', 'chash_migration_step'] LOOP
        EXECUTE format($t$
            CREATE TRIGGER %1$s_replica_invalidate AFTER INSERT OR UPDATE OR DELETE
                ON @extschema@.%1$s
                FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_directory_invalidate();
            ALTER TABLE @extschema@.%1$s ENABLE REPLICA TRIGGER %1$s_replica_invalidate;
        $t$, tab);
    END LOOP;
END
$$;

CREATE FUNCTION @extschema@.chash_shard_join(directory text, shard text, directory_conninfo text DEFAULT NULL)
        RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    slot constant text := @extschema@.chash_shard_slot_name();
    sub name;
    has_slot boolean;
    dirs bigint;
    joined text;
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE EXCEPTION 'permission denied to join a directory'
            USING ERRCODE = '42501', DETAIL = 'Only a superuser may join a directory or leave it.';
    END IF;
    IF directory IS NULL OR shard IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN directory IS NULL THEN 'directory' ELSE 'shard' END
            USING ERRCODE = '22004';
    END IF;
    -- One join or leave at a time.
    LOCK TABLE @extschema@.chash_shard_member IN SHARE ROW EXCLUSIVE MODE;
    SELECT m.shard INTO joined FROM @extschema@.chash_shard_member m WHERE m.directory = chash_shard_join.directory;
    IF FOUND THEN
        RAISE EXCEPTION 'this database is already shard "%" of directory "%"',
                @extschema@.chash_message_text(joined), @extschema@.chash_message_text(directory)
            USING ERRCODE = '42710', HINT = 'Leave it first with chash_shard_leave().';
    END IF;
    sub := @extschema@.chash_shard_subscription();

    IF directory_conninfo IS NULL THEN
        -- This database is the directory database: nothing to replicate.
        IF sub IS NOT NULL THEN
            RAISE EXCEPTION 'this database is not a directory database'
                USING ERRCODE = '55000',
                      DETAIL = format('Its directory tables are replicated from a directory database by subscription "%s".', sub),
                      HINT = 'Join with the connection string of that directory database.';
        END IF;
        PERFORM @extschema@.chash_directory_row(directory);
        IF NOT EXISTS (SELECT FROM @extschema@.chash_shard s
                       WHERE s.directory = chash_shard_join.directory AND s.shard = chash_shard_join.shard) THEN
            RAISE EXCEPTION 'shard "%" does not exist in directory "%"',
                    @extschema@.chash_message_text(shard), @extschema@.chash_message_text(directory)
                USING ERRCODE = '42704', HINT = 'Add it with chash_add_shard() first.';
        END IF;
        INSERT INTO @extschema@.chash_shard_member (directory, shard) VALUES (directory, shard);
        PERFORM @extschema@.chash_guard_sync(directory);   -- src/sql/1.0--1.1/92_guard.sql
        RETURN;
    END IF;

    has_slot := @extschema@.chash_shard_remote_check(directory_conninfo, directory, shard,
        (SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'chash'), slot);
    IF sub IS NOT NULL THEN
        -- The subscription already replicates every directory of its directory database.
        IF NOT has_slot THEN
            RAISE EXCEPTION 'this database already replicates another directory database'
                USING ERRCODE = '55000',
                      DETAIL = format('Subscription "%s" replicates from "%s"; a shard has one directory database.', sub,
                                      (SELECT @extschema@.chash_conninfo_display(s.subconninfo) FROM pg_subscription s
                                       WHERE s.subname = sub
                                         AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())));
        END IF;
        INSERT INTO @extschema@.chash_shard_member (directory, shard, subscription) VALUES (directory, shard, sub);
        PERFORM @extschema@.chash_guard_sync(directory);
        RETURN;
    END IF;

    -- First join from the directory database: the tables must be empty,
    -- the replica takes their place.
    IF EXISTS (SELECT FROM @extschema@.chash_directory d WHERE d.name = chash_shard_join.directory) THEN
        RAISE EXCEPTION 'directory "%" already exists in this database', @extschema@.chash_message_text(directory)
            USING ERRCODE = '55006',
                  DETAIL = 'A shard gets the directory from the directory database and must not hold a copy of its own.',
                  HINT = 'Drop the local copy with chash_drop_directory() first; or, if this is the directory database, join with a NULL directory_conninfo.';
    END IF;
    SELECT count(*) INTO dirs FROM @extschema@.chash_directory;
    IF dirs > 0 OR EXISTS (SELECT FROM @extschema@.chash_shard_member) THEN
        RAISE EXCEPTION 'this database holds directories of its own'
            USING ERRCODE = '55006',
                  DETAIL = format('It holds %s directories. A shard replicates every directory of its directory database, so its directory tables must be empty.', dirs),
                  HINT = 'Drop them with chash_drop_directory() first.';
    END IF;
    IF has_slot THEN
        RAISE EXCEPTION 'replication slot "%" already exists on the directory database', slot
            USING ERRCODE = '42710',
                  DETAIL = 'It is the slot of this database; an earlier join left it, or this database is a copy of one that joined.',
                  HINT = format('Drop it there with SELECT pg_drop_replication_slot(%L) and join again.', slot);
    END IF;
    IF EXISTS (SELECT FROM pg_subscription s WHERE s.subname = slot
               AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())) THEN
        RAISE EXCEPTION 'subscription "%" already exists', slot
            USING ERRCODE = '42710',
                  HINT = 'Drop it (ALTER SUBSCRIPTION ... DISABLE, SET (slot_name = NONE), DROP SUBSCRIPTION) and join again.';
    END IF;
    PERFORM @extschema@.chash_shard_create_slot(directory_conninfo, slot);
    PERFORM @extschema@.chash_shard_create_subscription(slot, directory_conninfo, slot);
    INSERT INTO @extschema@.chash_shard_member (directory, shard, subscription) VALUES (directory, shard, slot);
    -- The registrations arrive with the initial copy: chash_table_follow
    -- guards them as they are applied.
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_join(text, text, text) IS
    'makes this database shard "shard" of the directory: replicates the directory tables from the directory database (NULL conninfo: this is it)';

CREATE FUNCTION @extschema@.chash_shard_leave(directory text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sub name;
    conninfo text;
    slot text;
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE EXCEPTION 'permission denied to leave a directory'
            USING ERRCODE = '42501', DETAIL = 'Only a superuser may join a directory or leave it.';
    END IF;
    IF directory IS NULL THEN
        RAISE EXCEPTION 'directory must not be null' USING ERRCODE = '22004';
    END IF;
    LOCK TABLE @extschema@.chash_shard_member IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM @extschema@.chash_shard_member m WHERE m.directory = chash_shard_leave.directory
    RETURNING m.subscription INTO sub;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'this database is not a shard of directory "%"', @extschema@.chash_message_text(directory)
            USING ERRCODE = '42704';
    END IF;
    PERFORM @extschema@.chash_unguard(directory);
    -- The subscription serves every directory joined from its directory
    -- database: it (and the replica) stay while another one is joined.
    IF sub IS NULL OR EXISTS (SELECT FROM @extschema@.chash_shard_member m WHERE m.subscription = sub) THEN
        RETURN;
    END IF;
    SELECT s.subconninfo, s.subslotname INTO conninfo, slot FROM pg_subscription s
    WHERE s.subname = sub AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database());
    IF FOUND THEN
        EXECUTE format('ALTER SUBSCRIPTION %I DISABLE', sub);
        EXECUTE format('ALTER SUBSCRIPTION %I SET (slot_name = NONE)', sub);
        EXECUTE format('DROP SUBSCRIPTION %I', sub);
        IF slot IS NOT NULL THEN
            PERFORM @extschema@.chash_shard_drop_slot(conninfo, slot);
        END IF;
    END IF;
    -- The replica goes with it (sizes measured here too: they belong to
    -- its directories).
    DELETE FROM @extschema@.chash_migration_step;
    DELETE FROM @extschema@.chash_migration;
    DELETE FROM @extschema@.chash_directory;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_leave(text) IS
    'undoes chash_shard_join: with the last directory joined from a directory database, drops the subscription, its slot there and the replica here';

CREATE VIEW @extschema@.chash_shard_status WITH (security_invoker = true) AS
SELECT m.directory,
       m.shard,
       m.subscription,
       d.version AS replicated_version,
       CASE WHEN m.subscription IS NULL THEN true
            ELSE s.oid IS NOT NULL AND NOT EXISTS (
                SELECT FROM pg_subscription_rel r WHERE r.srsubid = s.oid AND r.srsubstate <> 'r')
       END AS synced,
       st.received_lsn,
       st.last_msg_send_time AS last_sent,
       CASE WHEN m.subscription IS NULL THEN interval '0'
            ELSE pg_catalog.now() - st.last_msg_send_time
       END AS lag,
       t.present_tables,
       t.missing_tables,
       t.guarded_tables
FROM @extschema@.chash_shard_member m
LEFT JOIN @extschema@.chash_directory d ON d.name = m.directory
LEFT JOIN pg_subscription s ON s.subname = m.subscription
      AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())
LEFT JOIN pg_stat_subscription st ON st.subid = s.oid AND st.relid IS NULL
CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(x.table_name ORDER BY x.table_name)
                    FILTER (WHERE to_regclass(x.table_name) IS NOT NULL), '{}') AS present_tables,
           coalesce(array_agg(x.table_name ORDER BY x.table_name)
                    FILTER (WHERE to_regclass(x.table_name) IS NULL), '{}') AS missing_tables,
           coalesce(array_agg(x.table_name ORDER BY x.table_name)
                    FILTER (WHERE EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = to_regclass(x.table_name)
                                          AND g.tgname = ('chash_guard_' || left(md5(m.directory), 12))::name)),
                    '{}') AS guarded_tables
    FROM @extschema@.chash_table x WHERE x.directory = m.directory
) t;
COMMENT ON VIEW @extschema@.chash_shard_status IS
    'per joined directory: shard, subscription, replicated version, initial copy done, lag (time since the directory database last sent), registered tables present and missing here, and those guarded';
