-- A registered table created (or renamed, or moved to its schema) after
-- the join, a table that becomes an inheritance child of one (CREATE
-- TABLE ... INHERITS, ALTER TABLE ... INHERIT), or a trigger created,
-- renamed or enabled on one that now fires after the guard: the
-- registered table's guards are made again, over its whole tree.  (The
-- guard's own CREATE TRIGGER comes here too, and changes nothing.)  A
-- guard is a trigger of chash's guard function under the guard's name: a
-- trigger of another function that takes the name is no guard.
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
                                AND tg.tgname = @extschema@.chash_guard_name(r.directory)
                                AND tg.tgfoid = '@extschema@.chash_shard_row_guard()'::regprocedure)
                 OR (NOT EXISTS (SELECT FROM pg_trigger tg WHERE tg.tgrelid = a.rel
                                 AND tg.tgname = @extschema@.chash_guard_name(r.directory) || '_final'
                                 AND tg.tgfoid = '@extschema@.chash_shard_row_guard()'::regprocedure)
                     AND @extschema@.chash_guard_needs_final(a.rel::regclass, r.tenant_column,
                                                             @extschema@.chash_guard_name(r.directory)))
    LOOP
        PERFORM @extschema@.chash_guard_table(t.directory, t.table_name);
    END LOOP;
END
$$;
