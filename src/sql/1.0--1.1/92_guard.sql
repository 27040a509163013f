-- ---------------------------------------------------------------------------
-- The fence as a barrier (docs/migrations.md, "The fence is a barrier") and
-- the guard on shards (docs/shards.md, "The guard"), src/fence.c and
-- src/shard_guard.c.
-- ---------------------------------------------------------------------------

-- Internal: chash_step_fence calls it after setting the step fenced.
CREATE FUNCTION @extschema@.chash_step_fence_barrier(directory text, slot int DEFAULT NULL, tenant text DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME', 'chash_step_fence_barrier'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_step_fence_barrier(text, int, text) IS
    'internal: waits for the writers admitted for a fenced slot (or tenant) and holds later ones until the transaction ends; needs UPDATE on chash_migration_step';
COMMENT ON FUNCTION @extschema@.chash_step_fence(bigint, int) IS
    'copying -> fenced: writes to the slot or tenant now get 40001 from chash_route_for_write; reads still go to the old shard; returns once every write admitted before has ended';

-- Writes are admitted by the latest committed state and hold lock tags
-- until the transaction ends: not in parallel workers, whose locks end
-- with them, before the transaction.  (It stays STABLE, as in 1.0: a
-- write's route is taken once per statement anyway.)
ALTER FUNCTION @extschema@.chash_route_for_write(text, text) PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.chash_route_for_write(text, text) IS
    'like chash_route, but by the latest committed state, and raises 40001 (retry) while a migration step has fenced the tenant or its slot; a fence waits for the transaction';

CREATE FUNCTION @extschema@.chash_shard_wait_fence(directory text, migration bigint, step int) RETURNS void
    AS 'MODULE_PATHNAME', 'chash_shard_wait_fence'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_wait_fence(text, bigint, int) IS
    'on a step''s source shard: returns once the fence has been applied here and every write the guard admitted for the step''s slot or tenant before has ended';

-- ---------------------------------------------------------------------------
-- The guard: a row trigger on every registered table present on a joined
-- shard, named chash_guard_<first 12 hex digits of md5(directory)> (a
-- table may be registered in several directories), and a TRUNCATE
-- trigger beside it.  Guards follow the registrations: chash_shard_join
-- guards the tables present, a trigger on chash_table (ENABLE ALWAYS: it
-- fires in the subscription's apply worker too) guards tables registered
-- later and unguards dropped ones, and an event trigger guards a
-- registered table created (or renamed into place) later.
-- ---------------------------------------------------------------------------
CREATE FUNCTION @extschema@.chash_shard_row_guard() RETURNS trigger
    AS 'MODULE_PATHNAME', 'chash_shard_row_guard'
    LANGUAGE C;
COMMENT ON FUNCTION @extschema@.chash_shard_row_guard() IS
    'guard trigger (directory, tenant column, shard): refuses writes of tenants that are not on this shard (SH001) or are fenced (40001)';

CREATE FUNCTION @extschema@.chash_shard_truncate_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s record;
BEGIN
    SELECT st.migration, st.step, st.from_shard, st.to_shard INTO s
      FROM @extschema@.chash_migration_step st
      JOIN @extschema@.chash_migration m ON m.id = st.migration
     WHERE m.directory = TG_ARGV[0] AND m.status = 'running' AND st.state IN ('copying', 'fenced')
       AND TG_ARGV[2] IN (st.from_shard, st.to_shard)
     ORDER BY st.migration, st.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot truncate %.% while a migration step moves its rows', TG_TABLE_SCHEMA, TG_TABLE_NAME
            USING ERRCODE = '55006',
                  DETAIL = pg_catalog.format('Step %s of migration %s of directory "%s" moves rows from shard "%s" to shard "%s".',
                                             s.step, s.migration, @extschema@.chash_message_text(TG_ARGV[0]),
                                             @extschema@.chash_message_text(s.from_shard),
                                             @extschema@.chash_message_text(s.to_shard)),
                  HINT = 'Truncate once the step has completed.';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_truncate_guard() IS
    'guard trigger (directory, tenant column, shard): refuses TRUNCATE while a step moves rows from or to this shard (55006)';

CREATE FUNCTION @extschema@.chash_guard_name(directory text) RETURNS name
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT ('chash_guard_' || left(md5(directory), 12))::name
$$;
COMMENT ON FUNCTION @extschema@.chash_guard_name(text) IS
    'the name of the guard trigger of a directory on its tables (the TRUNCATE trigger is chash_guard_truncate_...)';

-- Guards one registered table when this database is a shard of its
-- directory and has the table; true when it is guarded.  The guard is
-- made again, so a changed tenant column is followed.
CREATE FUNCTION @extschema@.chash_guard_table(directory text, table_name text) RETURNS boolean
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    rel regclass := to_regclass(table_name);
    me text;
    col text;
    g name := @extschema@.chash_guard_name(directory);
    gt name := ('chash_guard_truncate_' || left(md5(directory), 12))::name;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'table_name'], ARRAY[directory IS NULL, table_name IS NULL]);
    SELECT m.shard INTO me FROM @extschema@.chash_shard_member m WHERE m.directory = chash_guard_table.directory;
    SELECT t.tenant_column INTO col FROM @extschema@.chash_table t
     WHERE t.directory = chash_guard_table.directory AND t.table_name = chash_guard_table.table_name;
    IF rel IS NULL OR me IS NULL OR col IS NULL
       OR (SELECT relkind FROM pg_class WHERE oid = rel) NOT IN ('r', 'p') THEN
        RETURN false;
    END IF;
    -- (not DROP TRIGGER IF EXISTS: its notices would reach the DBA who joins)
    PERFORM @extschema@.chash_unguard(directory, table_name);
    EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW '
                   'EXECUTE FUNCTION @extschema@.chash_shard_row_guard(%L, %L, %L)', g, rel, directory, col, me);
    EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT '
                   'EXECUTE FUNCTION @extschema@.chash_shard_truncate_guard(%L, %L, %L)', gt, rel, directory, col, me);
    RETURN true;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_guard_table(text, text) IS
    'guards a registered table of a directory this database is a shard of, if the table exists here; true when guarded';

-- Removes a directory's guards from one table (NULL: from every table).
CREATE FUNCTION @extschema@.chash_unguard(directory text, table_name text DEFAULT NULL) RETURNS bigint
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t record;
    n bigint := 0;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory'], ARRAY[directory IS NULL]);
    FOR t IN SELECT tg.tgname, tg.tgrelid::regclass AS rel FROM pg_trigger tg
              WHERE tg.tgname IN (@extschema@.chash_guard_name(directory),
                                  ('chash_guard_truncate_' || left(md5(directory), 12))::name)
                AND (table_name IS NULL OR tg.tgrelid = to_regclass(table_name))
    LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', t.tgname, t.rel);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_unguard(text, text) IS
    'removes a directory''s guard triggers from a table, or from every table (NULL)';

-- Guards every registered table of a joined directory present here.
CREATE FUNCTION @extschema@.chash_guard_sync(directory text) RETURNS bigint
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory'], ARRAY[directory IS NULL]);
    RETURN (SELECT count(*) FILTER (WHERE @extschema@.chash_guard_table(t.directory, t.table_name))
              FROM @extschema@.chash_table t WHERE t.directory = chash_guard_sync.directory);
END
$$;
COMMENT ON FUNCTION @extschema@.chash_guard_sync(text) IS
    'guards every registered table of a directory this database is a shard of that exists here; returns how many are guarded';

-- Waits for a join or leave in progress here and keeps new ones waiting
-- until this transaction ends (they lock chash_shard_member in SHARE ROW
-- EXCLUSIVE mode).  Without it, a registration applied while a join runs
-- could be missed by both: the trigger below would not yet see the
-- membership, and the join's chash_guard_sync not yet the registration.
-- SECURITY DEFINER: the roles that register tables need no grant on
-- chash_shard_member.
CREATE FUNCTION @extschema@.chash_shard_member_wait() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    LOCK TABLE @extschema@.chash_shard_member IN SHARE MODE;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_member_wait() IS
    'waits for a chash_shard_join or chash_shard_leave in progress here; holds joins and leaves off until the transaction ends';

-- Follows registrations, also as the apply worker applies them.  It never
-- fails: an error here would stop the replication of the directory.  A
-- table it could not guard shows as unguarded in chash_shard_status.
CREATE FUNCTION @extschema@.chash_table_follow() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    BEGIN
        PERFORM @extschema@.chash_shard_member_wait();
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
            PERFORM @extschema@.chash_unguard(OLD.directory, OLD.table_name);
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
            PERFORM @extschema@.chash_guard_table(NEW.directory, NEW.table_name);
        END IF;
    EXCEPTION WHEN others THEN
        RAISE WARNING 'could not guard table "%" of directory "%": %',
            @extschema@.chash_message_text(coalesce(NEW.table_name, OLD.table_name)),
            @extschema@.chash_message_text(coalesce(NEW.directory, OLD.directory)), SQLERRM;
    END;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_table_follow() IS
    'trigger: guards a table registered for a joined directory and unguards an unregistered one, also in the apply worker';
CREATE TRIGGER chash_table_follow AFTER INSERT OR UPDATE OR DELETE ON @extschema@.chash_table
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_table_follow();
ALTER TABLE @extschema@.chash_table ENABLE ALWAYS TRIGGER chash_table_follow;

-- A registered table created (or renamed, or moved to its schema) after the
-- join.  SECURITY DEFINER: whoever creates a table need not read the
-- directory tables.
CREATE FUNCTION @extschema@.chash_guard_new_tables() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t record;
BEGIN
    IF NOT EXISTS (SELECT FROM @extschema@.chash_shard_member) THEN
        RETURN;
    END IF;
    FOR t IN SELECT DISTINCT r.directory, r.table_name
               FROM pg_event_trigger_ddl_commands() c
               JOIN @extschema@.chash_table r ON to_regclass(r.table_name) = c.objid
               JOIN @extschema@.chash_shard_member m ON m.directory = r.directory
              WHERE c.classid = 'pg_class'::regclass
                AND NOT EXISTS (SELECT FROM pg_trigger tg WHERE tg.tgrelid = c.objid
                                AND tg.tgname = @extschema@.chash_guard_name(r.directory))
    LOOP
        PERFORM @extschema@.chash_guard_table(t.directory, t.table_name);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_guard_new_tables() IS
    'event trigger: guards a registered table of a joined directory when it is created here';
CREATE EVENT TRIGGER chash_guard_new_tables ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE')
    EXECUTE FUNCTION @extschema@.chash_guard_new_tables();
