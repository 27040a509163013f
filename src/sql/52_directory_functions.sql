-- ---------------------------------------------------------------------------
-- The shard directory: management functions (SPEC 3)
--
-- Privileges: these functions keep PostgreSQL's default EXECUTE for PUBLIC
-- (SPEC 3: nothing beyond the defaults) and run with the caller's rights,
-- so what a role may do is decided by its privileges on the tables (none
-- for PUBLIC): a role without them gets 42501.  docs/directory.md lists the
-- grants for an application role and an operator role.  A NULL in a
-- required argument is an error (22004): a management call that silently
-- did nothing would hide a bug.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_create_directory(name text, shards text[],
        slot_count int DEFAULT 16384, slot_method text DEFAULT 'xxh64',
        weights float8[] DEFAULT NULL, key_type text DEFAULT 'text') RETURNS void
    AS 'MODULE_PATHNAME', 'chash_create_directory'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_create_directory(text, text[], int, text, float8[], text) IS
    'creates a directory whose slots go to the shards in contiguous ranges proportional to weight (largest remainder)';

-- The directory row, locked against a concurrent drop; 42704 when missing.
CREATE FUNCTION @extschema@.chash_directory_row(directory text)
        RETURNS @extschema@.chash_directory
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d @extschema@.chash_directory;
BEGIN
    IF directory IS NULL THEN
        RAISE EXCEPTION 'directory must not be null' USING ERRCODE = '22004';
    END IF;
    SELECT * INTO d FROM @extschema@.chash_directory x WHERE x.name = directory FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', directory USING ERRCODE = '42704';
    END IF;
    RETURN d;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_row(text) IS
    'the row of a directory, locked against a concurrent drop (error 42704 when there is none)';

CREATE FUNCTION @extschema@.chash_drop_directory(name text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION 'directory name must not be null' USING ERRCODE = '22004';
    END IF;
    DELETE FROM @extschema@.chash_directory d WHERE d.name = chash_drop_directory.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', name USING ERRCODE = '42704';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_drop_directory(text) IS
    'drops a directory with its shards, slots, overrides, sizes and migrations';

-- 22023 unless a shard weight is finite and > 0.
CREATE FUNCTION @extschema@.chash_check_shard_weight(shard text, weight float8) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT (weight > 0 AND weight < 'Infinity') THEN
        RAISE EXCEPTION 'weight % of shard "%" is invalid', weight, shard
            USING ERRCODE = '22023',
                  DETAIL = 'Shard weights must be finite and greater than zero.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_check_shard_weight(text, float8) IS
    'raises 22023 unless the weight is finite and positive';

CREATE FUNCTION @extschema@.chash_add_shard(directory text, shard text, weight float8 DEFAULT 1,
        zone text DEFAULT NULL, server text DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF shard IS NULL OR weight IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN shard IS NULL THEN 'shard' ELSE 'weight' END
            USING ERRCODE = '22004';
    END IF;
    PERFORM @extschema@.chash_directory_row(directory);
    PERFORM @extschema@.chash_check_shard_weight(shard, weight);
    IF EXISTS (SELECT 1 FROM @extschema@.chash_shard s
               WHERE s.directory = chash_add_shard.directory AND s.shard = chash_add_shard.shard) THEN
        RAISE EXCEPTION 'shard "%" already exists in directory "%"', shard, directory
            USING ERRCODE = '42710';
    END IF;
    INSERT INTO @extschema@.chash_shard (directory, shard, weight, zone, server)
    VALUES (directory, shard, weight, zone, server);
END
$$;
COMMENT ON FUNCTION @extschema@.chash_add_shard(text, text, float8, text, text) IS
    'adds an active shard that owns nothing until a rebalance moves slots to it';

CREATE FUNCTION @extschema@.chash_set_shard(directory text, shard text, weight float8 DEFAULT NULL,
        state text DEFAULT NULL, zone text DEFAULT NULL, server text DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF shard IS NULL THEN
        RAISE EXCEPTION 'shard must not be null' USING ERRCODE = '22004';
    END IF;
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
COMMENT ON FUNCTION @extschema@.chash_set_shard(text, text, float8, text, text, text) IS
    'changes a shard''s weight, state (active, draining = target zero slots, retired = owns nothing), zone or server; NULL leaves a field as it is';

CREATE FUNCTION @extschema@.chash_pin(directory text, tenant text, shard text, note text DEFAULT NULL)
        RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d @extschema@.chash_directory;
    sstate text;
BEGIN
    IF tenant IS NULL OR shard IS NULL THEN
        RAISE EXCEPTION '% must not be null', CASE WHEN tenant IS NULL THEN 'tenant' ELSE 'shard' END
            USING ERRCODE = '22004';
    END IF;
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
COMMENT ON FUNCTION @extschema@.chash_pin(text, text, text, text) IS
    'pins a tenant to an active shard: it routes there whatever its slot says (re-pinning replaces the override)';

CREATE FUNCTION @extschema@.chash_unpin(directory text, tenant text) RETURNS void
    LANGUAGE plpgsql STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d @extschema@.chash_directory;
BEGIN
    d := @extschema@.chash_directory_row(directory);
    tenant := @extschema@.chash_tenant_canonical(d.key_type, tenant);
    DELETE FROM @extschema@.chash_override o
    WHERE o.directory = chash_unpin.directory AND o.tenant = chash_unpin.tenant;
    IF NOT FOUND THEN
        RAISE NOTICE 'tenant "%" is not pinned in directory "%", skipping', tenant, directory;
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_unpin(text, text) IS
    'removes a tenant''s override: it routes by its slot again';

CREATE FUNCTION @extschema@.chash_directory_snapshot(directory text) RETURNS jsonb
    LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d @extschema@.chash_directory;
BEGIN
    SELECT * INTO d FROM @extschema@.chash_directory x WHERE x.name = directory;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', directory USING ERRCODE = '42704';
    END IF;
    RETURN jsonb_build_object(
        'name', d.name,
        'version', d.version,
        'slot_count', d.slot_count,
        'slot_method', d.slot_method,
        'key_type', d.key_type,
        'shards', coalesce((
            SELECT jsonb_agg(jsonb_build_object('shard', s.shard, 'weight', s.weight, 'state', s.state,
                                                'zone', s.zone, 'server', s.server) ORDER BY s.shard)
            FROM @extschema@.chash_shard s WHERE s.directory = d.name), '[]'),
        -- runs of consecutive slots with one owner, as [first, last, shard]
        'slots', coalesce((
            SELECT jsonb_agg(jsonb_build_array(r.first, r.last, r.shard) ORDER BY r.first)
            FROM (SELECT min(x.slot) AS first, max(x.slot) AS last, x.shard
                  FROM (SELECT s.slot, s.shard,
                               s.slot - row_number() OVER (PARTITION BY s.shard ORDER BY s.slot) AS run
                        FROM @extschema@.chash_slot s WHERE s.directory = d.name) x
                  GROUP BY x.shard, x.run) r), '[]'),
        'overrides', coalesce((
            SELECT jsonb_object_agg(o.tenant, o.shard)
            FROM @extschema@.chash_override o WHERE o.directory = d.name), '{}'),
        'steps', coalesce((
            SELECT jsonb_agg(jsonb_build_object('migration', m.id, 'step', s.step, 'slot', s.slot,
                                                'tenant', s.tenant, 'from_shard', s.from_shard,
                                                'to_shard', s.to_shard, 'state', s.state)
                             ORDER BY m.id, s.step)
            FROM @extschema@.chash_migration m
            JOIN @extschema@.chash_migration_step s ON s.migration = m.id
            WHERE m.directory = d.name AND m.status = 'running'
              AND s.state IN ('copying', 'fenced')), '[]'));
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_snapshot(text) IS
    'everything a client needs to route without asking: version, slot method, shards, slot ranges, overrides, steps in flight';
