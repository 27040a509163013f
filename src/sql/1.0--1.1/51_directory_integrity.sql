-- ---------------------------------------------------------------------------
-- The shard directory: invariants added in 1.1 (docs/directory.md)
--
-- - versions: written by hand at most 2^53 - 1, and a bump at the bigint
--   maximum says so (22003) instead of failing inside the bump trigger;
-- - the weights of a directory sum to a finite number (22023);
-- - a shard an unfinished migration step moves from or to cannot be
--   deleted or renamed (23503);
-- - shard rows are locked in name order (the lock order of
--   docs/directory.md).
-- ---------------------------------------------------------------------------

-- A database whose directory weights already sum to infinity cannot take
-- the new check: refuse, naming the directory.  (1.0's chash_add_shard
-- allowed it; chash_set_shard of 1.0 lowers the weights.)
DO $$
DECLARE
    dir text;
    total float8;
BEGIN
    FOR dir IN SELECT DISTINCT s.directory FROM @extschema@.chash_shard s ORDER BY 1 LOOP
        BEGIN
            SELECT pg_catalog.sum(s.weight) INTO total FROM @extschema@.chash_shard s WHERE s.directory = dir;
        EXCEPTION WHEN numeric_value_out_of_range THEN
            RAISE EXCEPTION 'cannot update extension chash: the weights of directory "%" sum to infinity', dir
                USING ERRCODE = '22023',
                      HINT = 'Lower the weights with chash_set_shard() (they are relative), then update again.';
        END;
    END LOOP;
END
$$;

-- chash_directory: the slot layout is fixed; version only grows, and
-- leaves room to grow.  A version written by hand (INSERT, or an UPDATE
-- that raises it by more than one) is at most 2^53 - 1, the largest
-- integer every JSON client reads exactly; from there 2^63 - 2^53 bumps
-- remain.  The bump itself happens here (chash_directory_bump writes the
-- version unchanged), so a bump at the bigint maximum is a clear 22003.
CREATE OR REPLACE FUNCTION @extschema@.chash_directory_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.version IS NOT NULL AND NEW.version NOT BETWEEN 1 AND 9007199254740991 THEN
            RAISE EXCEPTION 'version % of directory "%" is out of range', NEW.version, NEW.name
                USING ERRCODE = '22003',
                      DETAIL = 'A version written by hand must be between 1 and 9007199254740991 (2^53 - 1).';
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.name <> OLD.name OR NEW.slot_count <> OLD.slot_count
       OR NEW.slot_method <> OLD.slot_method OR NEW.key_type <> OLD.key_type THEN
        RAISE EXCEPTION 'cannot change the name, slot_count, slot_method or key_type of directory "%"', OLD.name
            USING ERRCODE = '55000',
                  HINT = 'Create a new directory and move the tenants to it.';
    END IF;
    IF NEW.version IS NULL OR NEW.version <= OLD.version THEN
        IF OLD.version = 9223372036854775807 THEN
            RAISE EXCEPTION 'version of directory "%" cannot grow any further', OLD.name
                USING ERRCODE = '22003',
                      DETAIL = 'It is 9223372036854775807, the largest bigint; it was written by hand.',
                      HINT = 'Write a lower version with the trigger chash_directory_guard disabled; clients then need a fresh chash_directory_snapshot().';
        END IF;
        NEW.version := OLD.version + 1;
    ELSIF NEW.version > OLD.version + 1 AND NEW.version > 9007199254740991 THEN
        RAISE EXCEPTION 'version % of directory "%" is out of range', NEW.version, OLD.name
            USING ERRCODE = '22003',
                  DETAIL = 'A version written by hand must be between 1 and 9007199254740991 (2^53 - 1).',
                  HINT = 'Leave the version to the triggers: every change increments it.';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_guard() IS
    'trigger: keeps the slot layout of a directory fixed and its version increasing, at most 2^53 - 1 when written by hand';
DROP TRIGGER chash_directory_guard ON @extschema@.chash_directory;
CREATE TRIGGER chash_directory_guard BEFORE INSERT OR UPDATE ON @extschema@.chash_directory
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_directory_guard();

-- As in 1.0, except that the version is written unchanged and
-- chash_directory_guard increments it (with a clear error at the maximum
-- instead of "bigint out of range" from here); and that the keys the
-- statement changed go into the history (chash_directory_change, created
-- in 56_directory_changes.sql), at the version the transaction gives the
-- directory.  A directory created in this transaction records none (its
-- creation means "take a snapshot"), and a statement that changes more
-- than 10,000 keys of a directory records that version as full instead.
-- SECURITY DEFINER: the history is the extension's own bookkeeping, so a
-- role allowed to change a directory table needs no grant on it (nor on
-- the version column); search_path is pinned.
CREATE OR REPLACE FUNCTION @extschema@.chash_directory_bump() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dirs text[];
    rows_sql text;
    key_sql text;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        SELECT array_agg(name) INTO dirs FROM @extschema@.chash_directory;
    ELSIF TG_TABLE_NAME = 'chash_migration_step' THEN
        IF TG_OP = 'INSERT' THEN
            SELECT array_agg(DISTINCT m.directory) INTO dirs
            FROM new_rows r JOIN @extschema@.chash_migration m ON m.id = r.migration;
        ELSIF TG_OP = 'DELETE' THEN
            SELECT array_agg(DISTINCT m.directory) INTO dirs
            FROM old_rows r JOIN @extschema@.chash_migration m ON m.id = r.migration;
        ELSE
            SELECT array_agg(DISTINCT m.directory) INTO dirs
            FROM (SELECT migration FROM new_rows UNION SELECT migration FROM old_rows) r
            JOIN @extschema@.chash_migration m ON m.id = r.migration;
        END IF;
    ELSIF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT directory) INTO dirs FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT directory) INTO dirs FROM old_rows;
    ELSE
        SELECT array_agg(directory) INTO dirs
        FROM (SELECT directory FROM new_rows UNION SELECT directory FROM old_rows) r;
    END IF;
    -- in name order: the lock order of docs/directory.md
    UPDATE @extschema@.chash_directory d SET version = d.version
    FROM (SELECT x.name FROM @extschema@.chash_directory x
          WHERE x.name = ANY (dirs) AND x.xmin <> xid(pg_current_xact_id())
          ORDER BY x.name FOR NO KEY UPDATE) l
    WHERE d.name = l.name;

    -- the history: not for directories created by this transaction (their
    -- version's entry says "created"), nor for registered tables (not
    -- routing state: the version entry alone says something changed)
    SELECT array_agg(d.name) INTO dirs FROM @extschema@.chash_directory d
     WHERE d.name = ANY (dirs)
       AND NOT EXISTS (SELECT FROM @extschema@.chash_directory_change c
                        WHERE c.directory = d.name AND c.version = d.version
                          AND c.kind = 'version' AND c.key = '');
    IF dirs IS NULL OR TG_TABLE_NAME = 'chash_table' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        INSERT INTO @extschema@.chash_directory_change (directory, version, kind, key)
        SELECT d.name, d.version, 'full', '' FROM @extschema@.chash_directory d
         WHERE d.name = ANY (dirs)
        ON CONFLICT DO NOTHING;
        RETURN NULL;
    END IF;
    rows_sql := CASE TG_OP WHEN 'INSERT' THEN 'SELECT * FROM new_rows'
                           WHEN 'DELETE' THEN 'SELECT * FROM old_rows'
                           ELSE 'SELECT * FROM new_rows UNION ALL SELECT * FROM old_rows' END;
    -- steps matter to routing only while in flight
    key_sql := CASE TG_TABLE_NAME
        WHEN 'chash_shard' THEN 'SELECT r.directory, ''shard'', r.shard FROM (%s) r'
        WHEN 'chash_slot' THEN 'SELECT r.directory, ''slot'', r.slot::text FROM (%s) r'
        WHEN 'chash_override' THEN 'SELECT r.directory, ''override'', r.tenant FROM (%s) r'
        WHEN 'chash_migration' THEN 'SELECT r.directory, ''migration'', r.id::text FROM (%s) r'
        ELSE 'SELECT m.directory, ''step'', r.migration || '':'' || r.step FROM (%s) r
                JOIN @extschema@.chash_migration m ON m.id = r.migration
               WHERE r.state IN (''copying'', ''fenced'')' END;
    EXECUTE format($q$
        WITH k (directory, kind, key) AS (SELECT DISTINCT * FROM (%s) x WHERE x.directory = ANY ($1)),
             n AS (SELECT k.directory, count(*) AS keys FROM k GROUP BY k.directory)
        INSERT INTO @extschema@.chash_directory_change (directory, version, kind, key)
        SELECT k.directory, d.version, k.kind, k.key
          FROM k JOIN n ON n.directory = k.directory
          JOIN @extschema@.chash_directory d ON d.name = k.directory
         WHERE n.keys <= 10000
        UNION ALL
        SELECT n.directory, d.version, 'full', ''
          FROM n JOIN @extschema@.chash_directory d ON d.name = n.directory
         WHERE n.keys > 10000
        ON CONFLICT DO NOTHING$q$, format(key_sql, rows_sql)) USING dirs;
    RETURN NULL;
END
$$;

-- chash_slot: as in 1.0, with the new owners locked in name order.
CREATE OR REPLACE FUNCTION @extschema@.chash_slot_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
    dirs text[];
    owned bigint;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        SELECT n.directory, n.slot, d.slot_count INTO r
        FROM new_rows n JOIN @extschema@.chash_directory d ON d.name = n.directory
        WHERE n.slot >= d.slot_count LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'slot % is out of range for directory "%"', r.slot, r.directory
                USING ERRCODE = '23514',
                      DETAIL = format('Its slots are 0 .. %s.', r.slot_count - 1);
        END IF;
        -- Lock the new owners first: a concurrent retirement waits for us,
        -- or we wait for it and the next query sees it.
        PERFORM 1 FROM @extschema@.chash_shard s
        JOIN (SELECT DISTINCT directory, shard FROM new_rows) n
          ON n.directory = s.directory AND n.shard = s.shard
        ORDER BY s.directory, s.shard
        FOR SHARE OF s;
        SELECT s.directory, s.shard INTO r
        FROM @extschema@.chash_shard s
        JOIN (SELECT DISTINCT directory, shard FROM new_rows) n
          ON n.directory = s.directory AND n.shard = s.shard
        WHERE s.state = 'retired' LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'cannot assign slots to retired shard "%" of directory "%"', r.shard, r.directory
                USING ERRCODE = '55000',
                      HINT = 'Set the shard back to active or draining first.';
        END IF;
    END IF;
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT directory) INTO dirs FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT directory) INTO dirs FROM old_rows;
    ELSE
        -- Moving ownership cannot change the number of slots.
        SELECT array_agg(DISTINCT coalesce(n.directory, o.directory)) INTO dirs
        FROM old_rows o FULL JOIN new_rows n ON o.directory = n.directory AND o.slot = n.slot
        WHERE o.slot IS NULL OR n.slot IS NULL;
    END IF;
    FOR r IN
        SELECT d.name, d.slot_count FROM @extschema@.chash_directory d
        WHERE d.name = ANY (dirs) ORDER BY d.name
    LOOP
        SELECT count(*) INTO owned FROM @extschema@.chash_slot s WHERE s.directory = r.name;
        IF owned <> r.slot_count THEN
            RAISE EXCEPTION 'every slot of directory "%" must have exactly one owner', r.name
                USING ERRCODE = '23514',
                      DETAIL = format('The directory has %s slots; %s of them would have an owner.',
                                      r.slot_count, owned),
                      HINT = 'Move slots with UPDATE instead of DELETE and INSERT.';
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

-- chash_shard after INSERT or UPDATE: the weights of each directory the
-- statement touched sum to a finite number.  Every weight is finite, but
-- two of 1e308 sum to infinity, and then target shares, the planner and
-- chash_shard_load have nothing to divide by.  sum(float8) raises 22003
-- on overflow; that is the test.
CREATE FUNCTION @extschema@.chash_shard_weight_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dir text;
    total float8;
BEGIN
    FOR dir IN SELECT DISTINCT n.directory FROM new_rows n ORDER BY 1 LOOP
        BEGIN
            SELECT sum(s.weight) INTO total FROM @extschema@.chash_shard s WHERE s.directory = dir;
        EXCEPTION WHEN numeric_value_out_of_range THEN
            total := 'Infinity';
        END;
        IF NOT total < 'Infinity' THEN
            RAISE EXCEPTION 'the weights of directory "%" would sum to infinity', dir
                USING ERRCODE = '22023',
                      DETAIL = 'The sum of a directory''s shard weights must be finite.',
                      HINT = 'Weights are relative: use smaller ones.';
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_weight_check() IS
    'trigger: the shard weights of a directory sum to a finite number';
CREATE TRIGGER chash_shard_weight_check_insert AFTER INSERT ON @extschema@.chash_shard
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_shard_weight_check();
CREATE TRIGGER chash_shard_weight_check_update AFTER UPDATE ON @extschema@.chash_shard
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_shard_weight_check();

-- chash_shard after DELETE or UPDATE: no unfinished step of a running
-- migration moves from or to a shard that is gone (as a foreign key would
-- say, 23503; steps have no directory column to hold one).  A directory
-- being dropped takes its migrations with it and is skipped.
CREATE FUNCTION @extschema@.chash_shard_step_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r record;
BEGIN
    SELECT o.directory, o.shard, s.migration, s.step INTO r
      FROM (SELECT DISTINCT g.directory, g.shard FROM old_rows g
             WHERE NOT EXISTS (SELECT FROM @extschema@.chash_shard x
                                WHERE x.directory = g.directory AND x.shard = g.shard)) o
      JOIN @extschema@.chash_directory d ON d.name = o.directory
      JOIN @extschema@.chash_migration m ON m.directory = o.directory AND m.status = 'running'
      JOIN @extschema@.chash_migration_step s
        ON s.migration = m.id AND s.state IN ('pending', 'copying', 'fenced')
       AND o.shard IN (s.from_shard, s.to_shard)
     ORDER BY s.migration, s.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'shard "%" of directory "%" is still moved by a migration step', r.shard, r.directory
            USING ERRCODE = '23503',
                  DETAIL = format('Step %s of migration %s moves from or to it.', r.step, r.migration),
                  HINT = 'Finish or cancel the migration first.';
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_step_check() IS
    'trigger: a shard that an unfinished migration step moves from or to cannot be deleted or renamed';
CREATE TRIGGER chash_shard_step_check_update AFTER UPDATE ON @extschema@.chash_shard
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_shard_step_check();
CREATE TRIGGER chash_shard_step_check_delete AFTER DELETE ON @extschema@.chash_shard
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_shard_step_check();
