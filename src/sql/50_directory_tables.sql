-- ---------------------------------------------------------------------------
-- The shard directory: tables (SPEC 3, 3.2)
--
-- Tenants map to slots (fixed per directory), slots to shards; overrides pin
-- single tenants.  Nothing here is granted to PUBLIC: CREATE TABLE grants
-- nothing, and reading or changing routing state is for roles the owner
-- chooses (docs/directory.md lists the grants).  Invariants that CHECK and
-- FOREIGN KEY cannot express are kept by triggers in 51_directory_integrity.
-- ---------------------------------------------------------------------------

CREATE TABLE @extschema@.chash_directory (
    name text PRIMARY KEY,
    slot_count int NOT NULL DEFAULT 16384
        CHECK (slot_count BETWEEN 1 AND 1048576),
    slot_method text NOT NULL DEFAULT 'xxh64'
        CHECK (slot_method IN ('xxh64', 'jump', 'redis', 'pg_hash')),
    key_type text NOT NULL DEFAULT 'text'
        CHECK (key_type IN ('text', 'bigint', 'uuid')),
    version bigint NOT NULL DEFAULT 1,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CHECK (slot_method <> 'redis' OR slot_count = 16384)
);
COMMENT ON TABLE @extschema@.chash_directory IS
    'one row per shard directory: slot count and method, key type, and a version bumped by every committed change';

CREATE TABLE @extschema@.chash_shard (
    directory text NOT NULL REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    shard text NOT NULL,
    weight float8 NOT NULL DEFAULT 1
        -- NaN sorts above Infinity in PostgreSQL, so this also rejects NaN
        CHECK (weight > 0 AND weight < 'Infinity'),
    state text NOT NULL DEFAULT 'active'
        CHECK (state IN ('active', 'draining', 'retired')),
    zone text,
    server text,
    PRIMARY KEY (directory, shard)
);
COMMENT ON TABLE @extschema@.chash_shard IS
    'the shards of each directory: weight, state (active, draining, retired), zone and server for the application';

CREATE TABLE @extschema@.chash_slot (
    directory text NOT NULL REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    slot int NOT NULL CHECK (slot >= 0),
    shard text NOT NULL,
    PRIMARY KEY (directory, slot),
    FOREIGN KEY (directory, shard) REFERENCES @extschema@.chash_shard (directory, shard)
);
COMMENT ON TABLE @extschema@.chash_slot IS
    'the owner of every slot 0 .. slot_count - 1 of each directory';

CREATE TABLE @extschema@.chash_override (
    directory text NOT NULL REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    tenant text NOT NULL,
    shard text NOT NULL,
    note text,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (directory, tenant),
    FOREIGN KEY (directory, shard) REFERENCES @extschema@.chash_shard (directory, shard)
);
COMMENT ON TABLE @extschema@.chash_override IS
    'pinned tenants: each routes to its shard whatever its slot says';

CREATE TABLE @extschema@.chash_tenant_size (
    directory text NOT NULL REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    tenant text NOT NULL,
    bytes bigint NOT NULL CHECK (bytes >= 0),
    rows bigint CHECK (rows >= 0),
    measured_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (directory, tenant)
);
COMMENT ON TABLE @extschema@.chash_tenant_size IS
    'measured tenant sizes, used by the planner and chash_shard_load; not routing state';

CREATE TABLE @extschema@.chash_migration (
    id bigserial PRIMARY KEY,
    directory text NOT NULL REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('rebalance', 'move_tenant', 'revert')),
    strategy text,
    status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'cancelled')),
    reverts bigint REFERENCES @extschema@.chash_migration (id),
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at timestamptz
);
COMMENT ON TABLE @extschema@.chash_migration IS
    'saved plans an operator carries out step by step (SPEC 3.2)';
CREATE INDEX chash_migration_running ON @extschema@.chash_migration (directory)
    WHERE status = 'running';

CREATE TABLE @extschema@.chash_migration_step (
    migration bigint NOT NULL REFERENCES @extschema@.chash_migration (id) ON DELETE CASCADE,
    step int NOT NULL,
    slot int,
    tenant text,
    from_shard text NOT NULL,
    to_shard text NOT NULL,
    state text NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'copying', 'fenced', 'done', 'cancelled')),
    claimed_by text,
    started_at timestamptz,
    finished_at timestamptz,
    PRIMARY KEY (migration, step),
    CHECK ((slot IS NULL) <> (tenant IS NULL))
);
COMMENT ON TABLE @extschema@.chash_migration_step IS
    'one move of a slot or a tenant; copying and fenced steps are in flight and routing shows them';

-- pg_dump dumps the rows of these tables (all of them: the directory is user
-- data, not extension state).
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_directory', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_shard', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_slot', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_override', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_tenant_size', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_migration', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_migration_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_migration_step', '');
