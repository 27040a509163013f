-- ---------------------------------------------------------------------------
-- The guard for every table shape (docs/shards.md, "The guard"):
-- - the row guard checks the final new row: on a table where a later
--   BEFORE trigger or a stored generated tenant column may change it
--   after the BEFORE guard, the guard fires AFTER INSERT OR UPDATE too
--   (only there: it costs every statement a queued event), and follows
--   triggers created or altered later;
-- - inheritance children of a registered table are guarded with it, also
--   ones created or attached later; partitions get the partitioned
--   table's row trigger as clones;
-- - the TRUNCATE guard reads the migration steps with the extension's
--   rights, as the row guard does;
-- - a tenant column with a nondeterministic collation is refused at
--   registration (and by the guard, src/shard_guard.c).
-- ---------------------------------------------------------------------------

-- SECURITY DEFINER: a role with TRUNCATE on a guarded table needs no
-- grant on the directory tables.
CREATE OR REPLACE FUNCTION @extschema@.chash_shard_truncate_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
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

-- A table and its inheritance descendants (not partitions: they carry
-- clones of the partitioned table's row triggers).
CREATE FUNCTION @extschema@.chash_guard_tree(rel regclass) RETURNS SETOF regclass
    LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
    WITH RECURSIVE tree(oid) AS (
        SELECT rel::oid
        UNION
        SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.oid
          JOIN pg_class c ON c.oid = i.inhrelid
         WHERE NOT c.relispartition
    )
    SELECT oid::regclass FROM tree
$$;
COMMENT ON FUNCTION @extschema@.chash_guard_tree(regclass) IS
    'internal: a table and its inheritance children, grandchildren and so on (not its partitions), which its guard covers';

-- Whether anything may change a new row's tenant after the BEFORE guard
-- g in the table or any table under it (children, partitions): a stored
-- generated tenant column, or a BEFORE ROW INSERT or UPDATE trigger that
-- sorts after g (they fire in name order).  src/shard_guard.c checks the
-- same as it fires, and refuses (55000) where this guard is missing.
CREATE FUNCTION @extschema@.chash_guard_needs_final(rel regclass, tenant_column text, g name) RETURNS boolean
    LANGUAGE sql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
    WITH RECURSIVE tree(oid) AS (
        SELECT rel::oid
        UNION
        SELECT i.inhrelid FROM pg_inherits i JOIN tree ON i.inhparent = tree.oid
    )
    SELECT EXISTS (SELECT FROM pg_attribute a JOIN tree ON a.attrelid = tree.oid
                    WHERE a.attname = tenant_column AND a.attgenerated = 's')
        OR EXISTS (SELECT FROM pg_trigger t JOIN tree ON t.tgrelid = tree.oid
                    WHERE t.tgname COLLATE "C" > g COLLATE "C" AND t.tgenabled <> 'D'
                      AND t.tgfoid <> '@extschema@.chash_shard_row_guard()'::regprocedure
                      -- ROW (1) and BEFORE (2), on INSERT (4) or UPDATE (16)
                      AND t.tgtype & 3 = 3 AND t.tgtype & 20 <> 0)
$$;
COMMENT ON FUNCTION @extschema@.chash_guard_needs_final(regclass, text, name) IS
    'internal: whether a trigger or a generated tenant column may change a new row after the guard g, which then also checks it after the row';

CREATE OR REPLACE FUNCTION @extschema@.chash_guard_table(directory text, table_name text) RETURNS boolean
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    rel regclass := to_regclass(table_name);
    me text;
    col text;
    g name := @extschema@.chash_guard_name(directory);
    gt name := ('chash_guard_truncate_' || left(md5(directory), 12))::name;
    gf name := (@extschema@.chash_guard_name(directory) || '_final')::name;
    member regclass;
    final boolean;
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
    final := @extschema@.chash_guard_needs_final(rel, col, g);
    -- Rows written through an inheritance child (or by an UPDATE or
    -- DELETE of the parent that reaches them) fire the child's triggers
    -- only: each child gets the guard too.
    FOR member IN SELECT * FROM @extschema@.chash_guard_tree(rel) LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW '
                       'EXECUTE FUNCTION @extschema@.chash_shard_row_guard(%L, %L, %L)', g, member, directory, col, me);
        IF final THEN
            EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE ON %s FOR EACH ROW '
                           'EXECUTE FUNCTION @extschema@.chash_shard_row_guard(%L, %L, %L)', gf, member, directory, col, me);
        END IF;
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT '
                       'EXECUTE FUNCTION @extschema@.chash_shard_truncate_guard(%L, %L, %L)', gt, member, directory, col, me);
    END LOOP;
    RETURN true;
END
$$;

-- The guards of a table go with its inheritance children; clones on
-- partitions go with the partitioned table's trigger.
CREATE OR REPLACE FUNCTION @extschema@.chash_unguard(directory text, table_name text DEFAULT NULL) RETURNS bigint
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t record;
    n bigint := 0;
    rel regclass := to_regclass(table_name);
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory'], ARRAY[directory IS NULL]);
    IF table_name IS NOT NULL AND rel IS NULL THEN
        RETURN 0;
    END IF;
    FOR t IN SELECT tg.tgname, tg.tgrelid::regclass AS rel FROM pg_trigger tg
              WHERE tg.tgname IN (@extschema@.chash_guard_name(directory),
                                  (@extschema@.chash_guard_name(directory) || '_final')::name,
                                  ('chash_guard_truncate_' || left(md5(directory), 12))::name)
                AND tg.tgparentid = 0
                AND (table_name IS NULL OR tg.tgrelid IN (SELECT * FROM @extschema@.chash_guard_tree(rel)))
    LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', t.tgname, t.rel);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

-- A registered table created (or renamed, or moved to its schema) after
-- the join, a table that becomes an inheritance child of one (CREATE
-- TABLE ... INHERITS, ALTER TABLE ... INHERIT), or a trigger created,
-- renamed or enabled on one that now fires after the guard: the
-- registered table's guards are made again, over its whole tree.  (The
-- guard's own CREATE TRIGGER comes here too, and changes nothing.)
CREATE OR REPLACE FUNCTION @extschema@.chash_guard_new_tables() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    t record;
BEGIN
    IF NOT EXISTS (SELECT FROM @extschema@.chash_shard_member) THEN
        RETURN;
    END IF;
    FOR t IN WITH RECURSIVE created(objid) AS (
                 SELECT DISTINCT c.objid FROM pg_event_trigger_ddl_commands() c
                  WHERE c.classid = 'pg_class'::regclass
                 UNION
                 SELECT tg.tgrelid FROM pg_event_trigger_ddl_commands() c
                   JOIN pg_trigger tg ON tg.oid = c.objid
                  WHERE c.classid = 'pg_trigger'::regclass
                    AND tg.tgfoid NOT IN ('@extschema@.chash_shard_row_guard()'::regprocedure,
                                          '@extschema@.chash_shard_truncate_guard()'::regprocedure)
             ), ancestry(objid, rel) AS (
                 SELECT objid, objid FROM created
                 UNION
                 SELECT a.objid, i.inhparent FROM ancestry a JOIN pg_inherits i ON i.inhrelid = a.rel
             )
             SELECT DISTINCT r.directory, r.table_name
               FROM ancestry a
               JOIN @extschema@.chash_table r ON to_regclass(r.table_name) = a.rel
               JOIN @extschema@.chash_shard_member m ON m.directory = r.directory
              WHERE NOT EXISTS (SELECT FROM pg_trigger tg WHERE tg.tgrelid = a.objid
                                AND tg.tgname = @extschema@.chash_guard_name(r.directory))
                 OR (NOT EXISTS (SELECT FROM pg_trigger tg WHERE tg.tgrelid = a.rel
                                 AND tg.tgname = @extschema@.chash_guard_name(r.directory) || '_final')
                     AND @extschema@.chash_guard_needs_final(a.rel::regclass, r.tenant_column,
                                                             @extschema@.chash_guard_name(r.directory)))
    LOOP
        PERFORM @extschema@.chash_guard_table(t.directory, t.table_name);
    END LOOP;
END
$$;

-- At registration, where the table is here too (the directory database
-- may be a shard): a tenant column whose collation is nondeterministic
-- makes different tenants compare equal ("org-3" = "ORG-3"), so a move of
-- one would take the other's rows.  (Not in the apply worker: registered
-- names arrive checked.)
CREATE FUNCTION @extschema@.chash_table_check_column() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    coll record;
BEGIN
    SELECT c.collname, c.collisdeterministic INTO coll
      FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation
     WHERE a.attrelid = to_regclass(NEW.table_name) AND a.attname = NEW.tenant_column
       AND a.attnum > 0 AND NOT a.attisdropped;
    IF FOUND AND NOT coll.collisdeterministic THEN
        RAISE EXCEPTION 'tenant column "%" of table % has a nondeterministic collation',
                @extschema@.chash_message_text(NEW.tenant_column), @extschema@.chash_message_text(NEW.table_name)
            USING ERRCODE = '0A000',
                  DETAIL = format('Collation "%s" makes different tenants compare equal.', coll.collname),
                  HINT = 'Give the column a deterministic collation, e.g. ALTER TABLE ... ALTER COLUMN ... TYPE ... COLLATE "C".';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_table_check_column() IS
    'trigger: refuses to register a table whose tenant column has a nondeterministic collation';
-- (named to fire after chash_table_guard, which checks and spells the name:
-- BEFORE triggers fire in name order)
CREATE TRIGGER chash_table_guard_tenant_column BEFORE INSERT OR UPDATE ON @extschema@.chash_table
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_table_check_column();

-- Triggers created or altered on a guarded table after the join.
DROP EVENT TRIGGER chash_guard_new_tables;
CREATE EVENT TRIGGER chash_guard_new_tables ON ddl_command_end
    WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE', 'CREATE TRIGGER', 'ALTER TRIGGER')
    EXECUTE FUNCTION @extschema@.chash_guard_new_tables();

-- Guards made by 1.1: children and final-row guards where needed.
SELECT @extschema@.chash_guard_sync(m.directory) FROM @extschema@.chash_shard_member m;
