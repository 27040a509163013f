-- ---------------------------------------------------------------------------
-- The shard directory: management functions, 1.1 (docs/directory.md)
--
-- Every function here checks its required arguments first (22004, see
-- 05_arguments.sql) and then locks the directory row FOR NO KEY UPDATE:
-- the first lock of the lock order in docs/directory.md.  Every change
-- bumps the version, which updates that row anyway; taking it first means
-- two functions on one directory take turns instead of deadlocking
-- (chash_set_shard against chash_step_complete did), and a check made
-- under it (the shard does not exist yet) still holds at the insert.
-- ---------------------------------------------------------------------------

-- The directory row, locked for a change (FOR NO KEY UPDATE: routing,
-- foreign keys and readers do not wait for it); 42704 when missing.
CREATE OR REPLACE FUNCTION @extschema@.chash_directory_row(directory text)
        RETURNS @extschema@.chash_directory
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d @extschema@.chash_directory;
BEGIN
    IF directory IS NULL THEN
        RAISE EXCEPTION 'directory must not be null' USING ERRCODE = '22004';
    END IF;
    SELECT * INTO d FROM @extschema@.chash_directory x WHERE x.name = directory FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', directory USING ERRCODE = '42704';
    END IF;
    RETURN d;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_row(text) IS
    'the row of a directory, locked for a change (the first lock of every management function; 42704 when there is none)';

-- 22023 unless a shard weight is finite and > 0 (22004 when NULL).
CREATE OR REPLACE FUNCTION @extschema@.chash_check_shard_weight(shard text, weight float8) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['shard', 'weight'], ARRAY[shard IS NULL, weight IS NULL]);
    IF NOT (weight > 0 AND weight < 'Infinity') THEN
        RAISE EXCEPTION 'weight % of shard "%" is invalid', weight, shard
            USING ERRCODE = '22023',
                  DETAIL = 'Shard weights must be finite and greater than zero.';
    END IF;
END
$$;

-- A shard added concurrently by someone who does not take the directory
-- lock (direct DML) is caught by ON CONFLICT: 42710 either way, never 23505.
CREATE OR REPLACE FUNCTION @extschema@.chash_add_shard(directory text, shard text, weight float8 DEFAULT 1,
        zone text DEFAULT NULL, server text DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'shard', 'weight'],
                                      ARRAY[directory IS NULL, shard IS NULL, weight IS NULL]);
    PERFORM @extschema@.chash_directory_row(directory);
    PERFORM @extschema@.chash_check_shard_weight(shard, weight);
    -- the weight check trigger says 22023 when the weights would sum to infinity
    INSERT INTO @extschema@.chash_shard AS s (directory, shard, weight, zone, server)
    VALUES (directory, shard, weight, zone, server)
    ON CONFLICT ON CONSTRAINT chash_shard_pkey DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard "%" already exists in directory "%"', shard, directory
            USING ERRCODE = '42710';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_set_shard(directory text, shard text, weight float8 DEFAULT NULL,
        state text DEFAULT NULL, zone text DEFAULT NULL, server text DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'shard'], ARRAY[directory IS NULL, shard IS NULL]);
    PERFORM @extschema@.chash_directory_row(directory);
    IF weight IS NOT NULL THEN
        PERFORM @extschema@.chash_check_shard_weight(shard, weight);
    END IF;
    IF state IS NOT NULL AND state NOT IN ('active', 'draining', 'retired') THEN
        RAISE EXCEPTION 'unrecognized shard state "%"', state
            USING ERRCODE = '22023',
                  HINT = 'Valid states are "active", "draining" and "retired".';
    END IF;
    UPDATE @extschema@.chash_shard s
    SET weight = coalesce(chash_set_shard.weight, s.weight),
        state = coalesce(chash_set_shard.state, s.state),
        zone = coalesce(chash_set_shard.zone, s.zone),
        server = coalesce(chash_set_shard.server, s.server)
    WHERE s.directory = chash_set_shard.directory AND s.shard = chash_set_shard.shard;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard "%" does not exist in directory "%"', shard, directory
            USING ERRCODE = '42704';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION @extschema@.chash_pin(directory text, tenant text, shard text, note text DEFAULT NULL)
        RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d @extschema@.chash_directory;
    sstate text;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'tenant', 'shard'],
                                      ARRAY[directory IS NULL, tenant IS NULL, shard IS NULL]);
    d := @extschema@.chash_directory_row(directory);
    tenant := @extschema@.chash_tenant_canonical(d.key_type, tenant);
    SELECT s.state INTO sstate FROM @extschema@.chash_shard s
    WHERE s.directory = chash_pin.directory AND s.shard = chash_pin.shard;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard "%" does not exist in directory "%"', shard, directory
            USING ERRCODE = '42704';
    END IF;
    -- the override trigger checks (under a lock) that the shard is active
    INSERT INTO @extschema@.chash_override AS o (directory, tenant, shard, note)
    VALUES (directory, tenant, shard, note)
    ON CONFLICT ON CONSTRAINT chash_override_pkey
    DO UPDATE SET shard = excluded.shard, note = excluded.note, created_at = now();
END
$$;

-- CALLED ON NULL INPUT (1.0 was STRICT and did nothing on a NULL).
CREATE OR REPLACE FUNCTION @extschema@.chash_unpin(directory text, tenant text) RETURNS void
    LANGUAGE plpgsql CALLED ON NULL INPUT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d @extschema@.chash_directory;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'tenant'], ARRAY[directory IS NULL, tenant IS NULL]);
    d := @extschema@.chash_directory_row(directory);
    tenant := @extschema@.chash_tenant_canonical(d.key_type, tenant);
    DELETE FROM @extschema@.chash_override o
    WHERE o.directory = chash_unpin.directory AND o.tenant = chash_unpin.tenant;
    IF NOT FOUND THEN
        RAISE NOTICE 'tenant "%" is not pinned in directory "%", skipping', tenant, directory;
    END IF;
END
$$;
