-- ---------------------------------------------------------------------------
-- Migrations: invariants of the step and migration tables, 1.1 (docs/migrations.md)
--
-- 1.0 checked steps only in the functions that write them; a step written
-- by hand could name slot -1, tenant '007' of a bigint directory (which
-- fences nothing: routing compares canonical tenants), or a shard that
-- does not exist.  Now the tables hold, as the slot table does:
-- - slot in 0 .. slot_count - 1 of the migration's directory (23514),
--   exactly one of slot and tenant (23514, since 1.0), from_shard <>
--   to_shard (23514);
-- - tenants stored canonical for the directory's key type (22P02 when not
--   a value of it), as in chash_override;
-- - from_shard and to_shard exist in the directory (23503), and such a
--   shard cannot be deleted or renamed while the step is unfinished
--   (51_directory_integrity.sql);
-- - a migration moves each slot and each tenant at most once (23505);
-- - at most one running migration per directory (23505; the functions
--   say 55006), and a migration stays with its directory (55000).
-- A database whose 1.0 rows break one of these (only direct DML could do
-- it) is refused by the update with the row to fix; tenants written in
-- another form of the same value are made canonical.
-- ---------------------------------------------------------------------------

DO $$
DECLARE
    r record;
    canonical text;
BEGIN
    -- tenants: canonical, or refused when not a value of the key type
    FOR r IN SELECT s.migration, s.step, s.tenant, d.key_type
               FROM @extschema@.chash_migration_step s
               JOIN @extschema@.chash_migration m ON m.id = s.migration
               JOIN @extschema@.chash_directory d ON d.name = m.directory
              WHERE s.tenant IS NOT NULL AND d.key_type <> 'text'
              ORDER BY s.migration, s.step LOOP
        BEGIN
            canonical := @extschema@.chash_tenant_canonical(r.key_type, r.tenant);
        EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
            RAISE EXCEPTION 'cannot update extension chash: step % of migration % moves tenant "%", which is not a valid %',
                    r.step, r.migration, r.tenant, r.key_type
                USING ERRCODE = '22P02',
                      HINT = 'Delete or correct the step, then update again.';
        END;
        IF canonical <> r.tenant THEN
            UPDATE @extschema@.chash_migration_step s SET tenant = canonical
             WHERE s.migration = r.migration AND s.step = r.step;
        END IF;
    END LOOP;

    SELECT s.migration, s.step, s.slot, d.name, d.slot_count INTO r
      FROM @extschema@.chash_migration_step s
      JOIN @extschema@.chash_migration m ON m.id = s.migration
      JOIN @extschema@.chash_directory d ON d.name = m.directory
     WHERE s.slot < 0 OR s.slot >= d.slot_count
     ORDER BY s.migration, s.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot update extension chash: step % of migration % moves slot %, out of range for directory "%"',
                r.step, r.migration, r.slot, r.name
            USING ERRCODE = '23514',
                  DETAIL = format('Its slots are 0 .. %s.', r.slot_count - 1),
                  HINT = 'Delete or correct the step, then update again.';
    END IF;

    SELECT s.migration, s.step, s.from_shard INTO r
      FROM @extschema@.chash_migration_step s
     WHERE s.from_shard = s.to_shard ORDER BY s.migration, s.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot update extension chash: step % of migration % moves from shard "%" to itself',
                r.step, r.migration, r.from_shard
            USING ERRCODE = '23514',
                  HINT = 'Delete or correct the step, then update again.';
    END IF;

    SELECT s.migration, s.step, x.shard, m.directory INTO r
      FROM @extschema@.chash_migration_step s
      JOIN @extschema@.chash_migration m ON m.id = s.migration
     CROSS JOIN LATERAL (VALUES (s.from_shard), (s.to_shard)) x(shard)
     WHERE m.status = 'running' AND s.state IN ('pending', 'copying', 'fenced')
       AND NOT EXISTS (SELECT FROM @extschema@.chash_shard h
                        WHERE h.directory = m.directory AND h.shard = x.shard)
       AND EXISTS (SELECT FROM @extschema@.chash_shard h WHERE h.directory = m.directory)
     ORDER BY s.migration, s.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot update extension chash: step % of migration % moves from or to shard "%", which directory "%" does not have',
                r.step, r.migration, r.shard, r.directory
            USING ERRCODE = '23503',
                  HINT = 'Cancel the migration or delete the step, then update again.';
    END IF;

    SELECT s.migration, coalesce('slot ' || s.slot, format('tenant "%s"', s.tenant)) AS what INTO r
      FROM @extschema@.chash_migration_step s
     GROUP BY s.migration, s.slot, s.tenant HAVING count(*) > 1
     ORDER BY 1, 2 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot update extension chash: migration % moves % more than once', r.migration, r.what
            USING ERRCODE = '23505',
                  HINT = 'Delete all but one of its steps, then update again.';
    END IF;

    SELECT m.directory, string_agg(m.id::text, ', ' ORDER BY m.id) AS ids INTO r
      FROM @extschema@.chash_migration m WHERE m.status = 'running'
     GROUP BY m.directory HAVING count(*) > 1
     ORDER BY m.directory LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot update extension chash: directory "%" has more than one unfinished migration', r.directory
            USING ERRCODE = '23505',
                  DETAIL = format('Migrations %s are running.', r.ids),
                  HINT = 'Cancel all but one with chash_migration_cancel(), then update again.';
    END IF;
END
$$;

-- One running migration per directory.  Same name as the 1.0 index, which
-- routing scans to find the steps in flight.
DROP INDEX @extschema@.chash_migration_running;
CREATE UNIQUE INDEX chash_migration_running ON @extschema@.chash_migration (directory)
    WHERE status = 'running';

ALTER TABLE @extschema@.chash_migration_step
    ADD CONSTRAINT chash_migration_step_slot_check CHECK (slot >= 0),
    ADD CONSTRAINT chash_migration_step_moves CHECK (from_shard <> to_shard);
CREATE UNIQUE INDEX chash_migration_step_slot ON @extschema@.chash_migration_step (migration, slot)
    WHERE slot IS NOT NULL;
CREATE UNIQUE INDEX chash_migration_step_tenant ON @extschema@.chash_migration_step (migration, tenant)
    WHERE tenant IS NOT NULL;
-- Routing loads the steps in flight of a running migration; without this
-- it reads every pending and finished one (20,000 of a large rebalance) to
-- skip them.
CREATE INDEX chash_migration_step_in_flight ON @extschema@.chash_migration_step (migration, step)
    WHERE state IN ('copying', 'fenced');

-- Tenant steps store the canonical tenant (22P02 when invalid), like
-- chash_override.  A step of a migration that does not exist is left to
-- the foreign key.
CREATE FUNCTION @extschema@.chash_step_tenant_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ktype text;
BEGIN
    SELECT d.key_type INTO ktype
      FROM @extschema@.chash_migration m JOIN @extschema@.chash_directory d ON d.name = m.directory
     WHERE m.id = NEW.migration;
    IF FOUND THEN
        NEW.tenant := @extschema@.chash_tenant_canonical(ktype, NEW.tenant);
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_tenant_guard() IS
    'trigger: migration steps store tenants canonical for the key type of their directory';
CREATE TRIGGER chash_step_tenant_guard BEFORE INSERT OR UPDATE OF migration, tenant
    ON @extschema@.chash_migration_step
    FOR EACH ROW WHEN (NEW.tenant IS NOT NULL)
    EXECUTE FUNCTION @extschema@.chash_step_tenant_guard();

-- After every statement: slots in range of the migration's directory, and
-- from_shard and to_shard shards of it.  An update checks the shards of
-- unfinished steps only: a finished step is history, and its shard may
-- have been deleted since.  A directory without any shard is being
-- restored (pg_dump orders steps before shards: no foreign key links
-- them), as a directory without slots is for chash_slot_check.  Per distinct (migration, shard), so saving a
-- plan of 16,384 steps costs a handful of lookups.
CREATE FUNCTION @extschema@.chash_step_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
BEGIN
    SELECT x.migration, x.slot, d.name, d.slot_count INTO r
      FROM (SELECT g.migration, max(g.slot) AS slot FROM new_rows g GROUP BY g.migration) x
      JOIN @extschema@.chash_migration m ON m.id = x.migration
      JOIN @extschema@.chash_directory d ON d.name = m.directory
     WHERE x.slot >= d.slot_count
     ORDER BY x.migration LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'slot % is out of range for directory "%"', r.slot, r.name
            USING ERRCODE = '23514',
                  DETAIL = format('Its slots are 0 .. %s; migration %s has a step for slot %s.',
                                  r.slot_count - 1, r.migration, r.slot);
    END IF;
    SELECT u.migration, u.shard, m.directory INTO r
      FROM (SELECT DISTINCT g.migration, x.shard
              FROM new_rows g CROSS JOIN LATERAL (VALUES (g.from_shard), (g.to_shard)) x(shard)
             WHERE TG_OP = 'INSERT' OR g.state IN ('pending', 'copying', 'fenced')) u
      JOIN @extschema@.chash_migration m ON m.id = u.migration
     WHERE NOT EXISTS (SELECT FROM @extschema@.chash_shard h
                        WHERE h.directory = m.directory AND h.shard = u.shard)
       AND EXISTS (SELECT FROM @extschema@.chash_shard h WHERE h.directory = m.directory)
     ORDER BY u.migration, u.shard LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'shard "%" does not exist in directory "%"', r.shard, r.directory
            USING ERRCODE = '23503',
                  DETAIL = format('A step of migration %s moves from or to it.', r.migration);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_check() IS
    'trigger: migration steps move slots in range between shards of their directory';
CREATE TRIGGER chash_step_check_insert AFTER INSERT ON @extschema@.chash_migration_step
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_step_check();
CREATE TRIGGER chash_step_check_update AFTER UPDATE ON @extschema@.chash_migration_step
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_step_check();

-- A migration's steps are checked against its directory: it keeps it.
CREATE FUNCTION @extschema@.chash_migration_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'cannot move migration % to another directory', OLD.id
        USING ERRCODE = '55000',
              HINT = 'Start a new migration in the other directory.';
END
$$;
COMMENT ON FUNCTION @extschema@.chash_migration_guard() IS
    'trigger: a migration stays with the directory it was started in';
CREATE TRIGGER chash_migration_guard BEFORE UPDATE ON @extschema@.chash_migration
    FOR EACH ROW WHEN (NEW.directory IS DISTINCT FROM OLD.directory)
    EXECUTE FUNCTION @extschema@.chash_migration_guard();
