-- ---------------------------------------------------------------------------
-- The shard directory: invariants, versions and cache invalidation (SPEC 3)
--
-- Direct INSERT/UPDATE/DELETE on the tables must keep the invariants the
-- functions keep, and every committed change must bump the directory's
-- version and drop the routing caches of every backend.  The trigger
-- functions pin search_path so a caller's path cannot redirect them; they
-- run with the caller's rights (the caller needs the table privileges
-- anyway).
-- ---------------------------------------------------------------------------

-- Drops every backend's routing cache at commit (relcache invalidation on
-- the changed table; the cache listens for all directory tables).
CREATE FUNCTION @extschema@.chash_directory_invalidate() RETURNS trigger
    AS 'MODULE_PATHNAME', 'chash_directory_invalidate'
    LANGUAGE C;
COMMENT ON FUNCTION @extschema@.chash_directory_invalidate() IS
    'trigger: invalidates the routing caches of all backends when a directory table changes';

-- The tenant in its canonical text for a key type (22P02 when invalid):
-- bigint in plain decimal, uuid lower case with hyphens, text unchanged.
CREATE FUNCTION @extschema@.chash_tenant_canonical(key_type text, tenant text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_tenant_canonical'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_tenant_canonical(text, text) IS
    'the canonical text of a tenant for a directory key type (text, bigint, uuid): what directories store and hash';

-- chash_directory: the slot layout is fixed at creation; version only grows.
CREATE FUNCTION @extschema@.chash_directory_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NEW.name <> OLD.name OR NEW.slot_count <> OLD.slot_count
       OR NEW.slot_method <> OLD.slot_method OR NEW.key_type <> OLD.key_type THEN
        RAISE EXCEPTION 'cannot change the name, slot_count, slot_method or key_type of directory "%"', OLD.name
            USING ERRCODE = '55000',
                  HINT = 'Create a new directory and move the tenants to it.';
    END IF;
    IF NEW.version <= OLD.version THEN
        NEW.version := OLD.version + 1;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_guard() IS
    'trigger: keeps the slot layout of a directory fixed and its version increasing';
CREATE TRIGGER chash_directory_guard BEFORE UPDATE ON @extschema@.chash_directory
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_directory_guard();

-- Bumps the version of every directory a statement touched, once per
-- transaction: the first change of a transaction moves the committed
-- version on, later changes in the same transaction are only visible to
-- it (its own cache follows them through local invalidations).  A
-- directory created by this transaction is not bumped either, so a
-- restore in one transaction keeps the dumped versions.
CREATE FUNCTION @extschema@.chash_directory_bump() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dirs text[];
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
    UPDATE @extschema@.chash_directory d SET version = d.version + 1
    WHERE d.name = ANY (dirs) AND d.xmin <> xid(pg_current_xact_id());
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_bump() IS
    'trigger: bumps the version of the directories a statement changed (once per transaction)';

-- chash_slot: after every statement, each directory it touched still has
-- exactly one owner per slot, inside 0 .. slot_count - 1, none retired.
-- (A directory with no slots at all is a directory being restored: its
-- slots come in one later statement; routing reports it as incomplete.)
CREATE FUNCTION @extschema@.chash_slot_check() RETURNS trigger
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
COMMENT ON FUNCTION @extschema@.chash_slot_check() IS
    'trigger: every slot of a directory keeps exactly one owner, in range, not retired';
CREATE TRIGGER chash_slot_check_insert AFTER INSERT ON @extschema@.chash_slot
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_slot_check();
CREATE TRIGGER chash_slot_check_update AFTER UPDATE ON @extschema@.chash_slot
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_slot_check();
CREATE TRIGGER chash_slot_check_delete AFTER DELETE ON @extschema@.chash_slot
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_slot_check();

-- TRUNCATE would leave every directory without owners.
CREATE FUNCTION @extschema@.chash_slot_no_truncate() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'cannot truncate %', TG_TABLE_NAME
        USING ERRCODE = '55000',
              HINT = 'Drop directories with chash_drop_directory() or DELETE FROM chash_directory.';
END
$$;
COMMENT ON FUNCTION @extschema@.chash_slot_no_truncate() IS
    'trigger: slots cannot be truncated away (every slot must keep an owner)';
CREATE TRIGGER chash_slot_no_truncate BEFORE TRUNCATE ON @extschema@.chash_slot
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_slot_no_truncate();

-- chash_shard: retiring needs an empty shard; leaving 'active' needs no
-- pinned tenants (overrides always point at active shards).  An AFTER
-- trigger: it runs once the row lock is ours, i.e. after a concurrent slot
-- move or pin that holds the shard FOR SHARE has committed, and its
-- queries (READ COMMITTED) then see that move or pin.
CREATE FUNCTION @extschema@.chash_shard_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n bigint;
BEGIN
    IF NEW.state = 'retired' AND OLD.state <> 'retired' THEN
        SELECT count(*) INTO n FROM @extschema@.chash_slot
        WHERE directory = OLD.directory AND shard = OLD.shard;
        IF n > 0 THEN
            RAISE EXCEPTION 'cannot retire shard "%" of directory "%" because it still owns slots', OLD.shard, OLD.directory
                USING ERRCODE = '55006',
                      DETAIL = format('It owns %s slots.', n),
                      HINT = 'Drain it and move its slots away first.';
        END IF;
    END IF;
    IF NEW.state <> 'active' AND OLD.state = 'active' THEN
        SELECT count(*) INTO n FROM @extschema@.chash_override
        WHERE directory = OLD.directory AND shard = OLD.shard;
        IF n > 0 THEN
            RAISE EXCEPTION 'cannot set shard "%" of directory "%" to % because tenants are pinned to it', OLD.shard, OLD.directory, NEW.state
                USING ERRCODE = '55006',
                      DETAIL = format('Tenants pinned to it: %s.', n),
                      HINT = 'Pin them to another shard or unpin them first.';
        END IF;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_guard() IS
    'trigger: a shard is retired only when it owns nothing, and leaves active only without pinned tenants';
CREATE TRIGGER chash_shard_guard AFTER UPDATE ON @extschema@.chash_shard
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_shard_guard();

-- chash_override and chash_tenant_size store tenants in canonical form;
-- an override's shard must be active.
CREATE FUNCTION @extschema@.chash_tenant_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ktype text;
    sstate text;
BEGIN
    SELECT key_type INTO ktype FROM @extschema@.chash_directory WHERE name = NEW.directory;
    IF FOUND THEN
        NEW.tenant := @extschema@.chash_tenant_canonical(ktype, NEW.tenant);
    END IF;
    IF TG_TABLE_NAME <> 'chash_override' THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' OR NEW.shard <> OLD.shard OR NEW.directory <> OLD.directory THEN
        -- FOR SHARE waits for (and then sees) a concurrent state change.
        SELECT state INTO sstate FROM @extschema@.chash_shard
        WHERE directory = NEW.directory AND shard = NEW.shard FOR SHARE;
        IF FOUND AND sstate <> 'active' THEN
            RAISE EXCEPTION 'cannot pin tenant "%" to shard "%" because it is %', NEW.tenant, NEW.shard, sstate
                USING ERRCODE = '55000',
                      HINT = 'Pin tenants to active shards only.';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_tenant_guard() IS
    'trigger: tenants are stored canonical for the key type; overrides point at active shards';
CREATE TRIGGER chash_override_guard BEFORE INSERT OR UPDATE ON @extschema@.chash_override
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_tenant_guard();
CREATE TRIGGER chash_tenant_size_guard BEFORE INSERT OR UPDATE ON @extschema@.chash_tenant_size
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_tenant_guard();

-- Version bumps and cache invalidation on every table routing reads.
-- The directory row itself only invalidates (its version is what changes).
CREATE TRIGGER chash_directory_invalidate AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON @extschema@.chash_directory
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_invalidate();

-- Transition tables allow one event per trigger, hence one bump trigger per
-- event on each table; the same five triggers on every table, so a loop.
DO $$
DECLARE
    tab text;
BEGIN
    FOREACH tab IN ARRAY ARRAY['chash_shard', 'chash_slot', 'chash_override',
                               'chash_migration', 'chash_migration_step'] LOOP
        EXECUTE format($t$
            CREATE TRIGGER %1$s_bump_insert AFTER INSERT ON @extschema@.%1$s
                REFERENCING NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_bump();
            CREATE TRIGGER %1$s_bump_update AFTER UPDATE ON @extschema@.%1$s
                REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows
                FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_bump();
            CREATE TRIGGER %1$s_bump_delete AFTER DELETE ON @extschema@.%1$s
                REFERENCING OLD TABLE AS old_rows
                FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_bump();
            CREATE TRIGGER %1$s_bump_truncate AFTER TRUNCATE ON @extschema@.%1$s
                FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_bump();
            CREATE TRIGGER %1$s_invalidate AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
                ON @extschema@.%1$s
                FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_directory_invalidate();
        $t$, tab);
    END LOOP;
END
$$;
