-- chash 1.0 install script, assembled from src/sql/*.sql in name order.

\echo Use "CREATE EXTENSION chash" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Stable hash functions (SPEC 1)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_xxh64(data text, seed bigint DEFAULT 0) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_xxh64'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_xxh64(text, bigint) IS
    'XXH64 of the text''s bytes with the given seed, as a signed bigint';

CREATE FUNCTION @extschema@.chash_xxh64(data bytea, seed bigint DEFAULT 0) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_xxh64'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_xxh64(bytea, bigint) IS
    'XXH64 of the bytes with the given seed, as a signed bigint';

CREATE FUNCTION @extschema@.chash_md5_64(data text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_md5_64'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_md5_64(text) IS
    'first 8 bytes of the MD5 of the text''s bytes, big-endian, as a signed bigint';

CREATE FUNCTION @extschema@.chash_md5_64(data bytea) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_md5_64'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_md5_64(bytea) IS
    'first 8 bytes of the MD5 of the bytes, big-endian, as a signed bigint';

CREATE FUNCTION @extschema@.chash_crc16(data text) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_crc16'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_crc16(text) IS
    'CRC-16/XMODEM of the text''s bytes (the CRC of Redis Cluster)';

CREATE FUNCTION @extschema@.chash_crc16(data bytea) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_crc16'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_crc16(bytea) IS
    'CRC-16/XMODEM of the bytes (the CRC of Redis Cluster)';

CREATE FUNCTION @extschema@.chash_pg_partition(value text, modulus int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_pg_partition_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_pg_partition(text, int) IS
    'remainder of the hash partition PostgreSQL routes this text key to for the given modulus';

CREATE FUNCTION @extschema@.chash_pg_partition(value bigint, modulus int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_pg_partition_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_pg_partition(bigint, int) IS
    'remainder of the hash partition PostgreSQL routes this bigint key to for the given modulus';

CREATE FUNCTION @extschema@.chash_pg_partition(value int, modulus int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_pg_partition_int4'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_pg_partition(int, int) IS
    'remainder of the hash partition PostgreSQL routes this int key to for the given modulus';

CREATE FUNCTION @extschema@.chash_pg_partition(value uuid, modulus int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_pg_partition_uuid'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_pg_partition(uuid, int) IS
    'remainder of the hash partition PostgreSQL routes this uuid key to for the given modulus';

CREATE FUNCTION @extschema@.chash_cassandra_token(data text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_cassandra_token'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_cassandra_token(text) IS
    'Cassandra Murmur3Partitioner token of a single-column partition key with the text''s bytes';

CREATE FUNCTION @extschema@.chash_cassandra_token(data bytea) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_cassandra_token'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_cassandra_token(bytea) IS
    'Cassandra Murmur3Partitioner token of a single-column partition key with these bytes';

-- ---------------------------------------------------------------------------
-- Modulo and jump consistent hash (SPEC 2.1, 2.2)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_mod(key bigint, n int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_mod_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_mod(bigint, int) IS
    'the key read as unsigned 64-bit, mod n: the baseline that moves most keys when n changes';

CREATE FUNCTION @extschema@.chash_mod(key text, n int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_mod_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_mod(text, int) IS
    'XXH64 of the key mod n: the baseline that moves most keys when n changes';

CREATE FUNCTION @extschema@.chash_jump(key bigint, buckets int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_jump_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_jump(bigint, int) IS
    'jump consistent hash (Lamping & Veach) of the 64-bit key into 0 .. buckets - 1';

CREATE FUNCTION @extschema@.chash_jump(key text, buckets int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_jump_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_jump(text, int) IS
    'jump consistent hash of XXH64(key) into 0 .. buckets - 1';

-- ---------------------------------------------------------------------------
-- Redis Cluster slots (SPEC 2.8)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_redis_slot(key text) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_redis_slot'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_redis_slot(text) IS
    'Redis Cluster hash slot (0 .. 16383) of the key, honouring {hash tags}';

CREATE FUNCTION @extschema@.chash_redis_slot(key bytea) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_redis_slot'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_redis_slot(bytea) IS
    'Redis Cluster hash slot (0 .. 16383) of the key bytes, honouring {hash tags}';

CREATE FUNCTION @extschema@.chash_redis_same_slot(keys text[]) RETURNS boolean
    AS 'MODULE_PATHNAME', 'chash_redis_same_slot'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_redis_same_slot(text[]) IS
    'true when all keys share one Redis Cluster slot (a multi-key command would not get CROSSSLOT)';
-- ---------------------------------------------------------------------------
-- Rendezvous / highest random weight (SPEC 2.3)
-- Not STRICT: weights DEFAULT NULL means "not given"; the C code returns
-- NULL itself for a NULL key, node array, k or hash.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_rendezvous(key text, nodes text[],
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64') RETURNS text
    AS 'MODULE_PATHNAME', 'chash_rendezvous'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_rendezvous(text, text[], float8[], text) IS
    'rendezvous (highest random weight) winner for the key among the nodes; weighted bids are -w / ln((S + 1) / (2^64 + 1))';

CREATE FUNCTION @extschema@.chash_rendezvous_top(key text, nodes text[], k int,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64') RETURNS text[]
    AS 'MODULE_PATHNAME', 'chash_rendezvous_top'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_rendezvous_top(text, text[], int, float8[], text) IS
    'the k highest rendezvous bidders for the key, best first (a replica list)';
-- ---------------------------------------------------------------------------
-- Consistent-hash ring with virtual nodes (SPEC 2.4)
-- Node n of weight w has round(vnodes * w) points at H(n || '#' || i).
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_ring_lookup(key text, nodes text[], vnodes int DEFAULT 160,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64') RETURNS text
    AS 'MODULE_PATHNAME', 'chash_ring_lookup'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_ring_lookup(text, text[], int, float8[], text) IS
    'owner of the key on a consistent-hash ring: the node of the first point at or clockwise after H(key)';

CREATE FUNCTION @extschema@.chash_ring_replicas(key text, nodes text[], k int, vnodes int DEFAULT 160,
        weights float8[] DEFAULT NULL, zones text[] DEFAULT NULL, hash text DEFAULT 'xxh64') RETURNS text[]
    AS 'MODULE_PATHNAME', 'chash_ring_replicas'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_ring_replicas(text, text[], int, int, float8[], text[], text) IS
    'the first k distinct nodes clockwise from the key''s owner on the ring, skipping nodes of a zone already used when zones are given';

CREATE FUNCTION @extschema@.chash_ring_points(nodes text[], vnodes int DEFAULT 160,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64')
    RETURNS TABLE (node text, vnode int, point bigint)
    AS 'MODULE_PATHNAME', 'chash_ring_points'
    LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 2560;
COMMENT ON FUNCTION @extschema@.chash_ring_points(text[], int, float8[], text) IS
    'every point of the ring in ring order (unsigned position, shown as a signed bigint)';

CREATE FUNCTION @extschema@.chash_ring_shares(nodes text[], vnodes int DEFAULT 160,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64')
    RETURNS TABLE (node text, points int, share float8)
    AS 'MODULE_PATHNAME', 'chash_ring_shares'
    LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 16;
COMMENT ON FUNCTION @extschema@.chash_ring_shares(text[], int, float8[], text) IS
    'per node, its number of points and the exact fraction of the 2^64 ring it owns (the shares sum to 1)';
-- ---------------------------------------------------------------------------
-- Ketama, as libketama builds it (SPEC 2.5)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_ketama(key text, servers text[],
        weights float8[] DEFAULT NULL) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_ketama'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_ketama(text, text[], float8[]) IS
    'server of the key on the libketama continuum (memcached clients): 40 MD5 digests of server-k per server, scaled by weight in single precision as libketama does';
-- ---------------------------------------------------------------------------
-- Maglev (SPEC 2.6)
-- Weighted rule: in round r = 1, 2, ... backend i (in array order) takes a
-- turn when floor(r * q) > floor((r - 1) * q), q = w_i / max(w), in double
-- precision; the heaviest take a turn every round, weight 0 never.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_maglev(key text, backends text[], table_size int DEFAULT 65537,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64') RETURNS text
    AS 'MODULE_PATHNAME', 'chash_maglev'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_maglev(text, text[], int, float8[], text) IS
    'Maglev backend of the key: entry H(key) mod table_size of the lookup table; weighted, backend i takes a turn in round r when floor(r * w_i / max(w)) > floor((r - 1) * w_i / max(w))';

CREATE FUNCTION @extschema@.chash_maglev_table(backends text[], table_size int DEFAULT 65537,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64')
    RETURNS TABLE (slot int, backend text)
    AS 'MODULE_PATHNAME', 'chash_maglev_table'
    LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 65537;
COMMENT ON FUNCTION @extschema@.chash_maglev_table(text[], int, float8[], text) IS
    'the Maglev lookup table, one row per slot; weighted, backend i takes a turn in round r when floor(r * w_i / max(w)) > floor((r - 1) * w_i / max(w))';
-- ---------------------------------------------------------------------------
-- Consistent hashing with bounded loads (SPEC 2.7)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_bounded_assign(keys text[], nodes text[], epsilon float8 DEFAULT 0.25,
        vnodes int DEFAULT 160, weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64')
    RETURNS TABLE (key text, node text, first_choice text)
    AS 'MODULE_PATHNAME', 'chash_bounded_assign'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_bounded_assign(text[], text[], float8, int, float8[], text) IS
    'places the keys in order on the ring, each node holding at most ceil((1 + epsilon) * K / N) keys (weighted: K * w / sum(w)); first_choice is the plain ring owner';
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
-- ---------------------------------------------------------------------------
-- Routing through a shard directory (SPEC 3)
--
-- STABLE: the answer follows the committed directory as the statement's
-- snapshot sees it.  Served from a per-backend cache; see
-- src/directory_cache.c for why it is never stale.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_slot(directory text, tenant text) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_slot'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_slot(text, text) IS
    'the slot of a tenant in a directory, by the directory''s slot method';

CREATE FUNCTION @extschema@.chash_route(directory text, tenant text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_route'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_route(text, text) IS
    'the shard of a tenant: its override if pinned, else its slot''s owner';

CREATE FUNCTION @extschema@.chash_route(directory text, tenant bigint) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_route_int8'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_route(text, bigint) IS
    'the shard of a bigint tenant, routed exactly like its decimal text';

CREATE FUNCTION @extschema@.chash_route_explain(directory text, tenant text)
        RETURNS TABLE (tenant text, slot int, shard text, source text,
                       slot_state text, moving_to text, migration bigint)
    AS 'MODULE_PATHNAME', 'chash_route_explain'
    LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 1;
COMMENT ON FUNCTION @extschema@.chash_route_explain(text, text) IS
    'how a tenant routes: canonical tenant, slot, shard, source (override or slot), and the migration step moving it, if any';

CREATE FUNCTION @extschema@.chash_route_for_write(directory text, tenant text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_route_for_write'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_route_for_write(text, text) IS
    'like chash_route, but raises 40001 (retry) while a migration step has fenced the tenant or its slot';
-- ---------------------------------------------------------------------------
-- Load per shard (SPEC 3)
--
-- security_invoker: reading it needs the same table privileges as the
-- tables themselves (and chash_route checks them anyway).
-- ---------------------------------------------------------------------------

CREATE VIEW @extschema@.chash_shard_load WITH (security_invoker = true) AS
WITH slots AS (
    SELECT directory, shard, count(*) AS slots
    FROM @extschema@.chash_slot GROUP BY directory, shard
), pins AS (
    SELECT directory, shard, count(*) AS pinned
    FROM @extschema@.chash_override GROUP BY directory, shard
), sized AS (
    SELECT directory, @extschema@.chash_route(directory, tenant) AS shard, sum(bytes) AS bytes
    FROM @extschema@.chash_tenant_size GROUP BY 1, 2
), totals AS (
    SELECT directory, sum(bytes) AS bytes
    FROM @extschema@.chash_tenant_size GROUP BY directory
), base AS (
    SELECT s.directory, s.shard, s.state, s.weight,
           coalesce(sl.slots, 0) AS slots,
           coalesce(sl.slots, 0)::float8 / d.slot_count AS slot_share,
           CASE WHEN s.state = 'active'
                THEN s.weight / sum(s.weight) FILTER (WHERE s.state = 'active')
                                OVER (PARTITION BY s.directory)
                ELSE 0 END AS target_share,
           coalesce(p.pinned, 0) AS pinned_tenants,
           CASE WHEN t.bytes IS NOT NULL THEN coalesce(z.bytes, 0)::bigint END AS bytes,
           t.bytes AS total_bytes
    FROM @extschema@.chash_shard s
    JOIN @extschema@.chash_directory d ON d.name = s.directory
    LEFT JOIN slots sl ON sl.directory = s.directory AND sl.shard = s.shard
    LEFT JOIN pins p ON p.directory = s.directory AND p.shard = s.shard
    LEFT JOIN sized z ON z.directory = s.directory AND z.shard = s.shard
    LEFT JOIN totals t ON t.directory = s.directory
)
SELECT directory, shard, state, weight, slots, slot_share, target_share, pinned_tenants, bytes,
       -- share of bytes when sizes are known, else share of slots, over the target
       (CASE WHEN total_bytes > 0 THEN bytes::float8 / total_bytes::float8 ELSE slot_share END)
           / NULLIF(target_share, 0) AS load_ratio
FROM base;
COMMENT ON VIEW @extschema@.chash_shard_load IS
    'per directory and shard: state, weight, slots and their share, target share by weight, pinned tenants, bytes when sizes are known, and load over target';
-- ---------------------------------------------------------------------------
-- The rebalance planner, whales, tenant measurement (SPEC 3.1)
--
-- chash_plan_rebalance is a dry run: it reads the committed directory and
-- returns the moves; chash_migration_start (70_migration) saves them.
-- docs/planner.md explains the plans and proves that every prefix of one
-- is an improvement.  Functions run with the caller's rights; each pins
-- search_path only so that no object of the caller's can stand in for a
-- built-in operator or function.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_plan_rebalance(directory text, strategy text DEFAULT 'slots',
                                                 max_moves int DEFAULT NULL)
    RETURNS TABLE (step int, slot int, from_shard text, to_shard text, tenants bigint, bytes bigint)
    AS 'MODULE_PATHNAME', 'chash_plan_rebalance'
    LANGUAGE C STABLE
    SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.chash_plan_rebalance(text, text, int) IS
    'dry run of a rebalance: the minimal slot moves (''slots'') or improving moves by measured bytes (''bytes''), in order';

-- A whale is a tenant larger than factor times a shard's fair share of all
-- measured bytes, the fair share being all bytes / active shards.
CREATE FUNCTION @extschema@.chash_whales(directory text, factor float8 DEFAULT 0.5)
    RETURNS TABLE (tenant text, bytes bigint, shard text, share float8)
    LANGUAGE plpgsql STABLE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
#variable_conflict use_column
DECLARE
    total numeric;
    active bigint;
BEGIN
    IF NOT (factor > 0 AND factor < 'Infinity') THEN
        RAISE EXCEPTION 'factor must be positive and finite'
            USING ERRCODE = '22023', DETAIL = pg_catalog.format('The value given was %s.', factor);
    END IF;
    PERFORM FROM @extschema@.chash_directory d WHERE d.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', $1 USING ERRCODE = '42704';
    END IF;
    SELECT pg_catalog.sum(t.bytes) INTO total
      FROM @extschema@.chash_tenant_size t WHERE t.directory = $1;
    SELECT pg_catalog.count(*) INTO active
      FROM @extschema@.chash_shard s WHERE s.directory = $1 AND s.state = 'active';
    IF total IS NULL OR total = 0 OR active = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT t.tenant, t.bytes, @extschema@.chash_route($1, t.tenant),
               (t.bytes / total)::float8
          FROM @extschema@.chash_tenant_size t
         WHERE t.directory = $1 AND t.bytes > $2::numeric * total / active
         ORDER BY t.bytes DESC, t.tenant COLLATE "C";
END
$$;
COMMENT ON FUNCTION @extschema@.chash_whales(text, float8) IS
    'tenants larger than factor times a shard''s fair share of all measured bytes: candidates to pin';

-- Bytes are pg_column_size of each row (its stored, possibly compressed,
-- size without the tuple header), summed per tenant: a measure of what
-- moving the tenant copies.  Tenants are canonicalised through the
-- directory's key type, so a bigint directory measured from a text column
-- stores '7' for '007'.  Tenants that no longer have rows keep their old
-- size; delete them from chash_tenant_size when they are gone.
CREATE FUNCTION @extschema@.chash_measure_tenants(directory text, rel regclass, tenant_column name)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    kt text;
    canonical text;
    measured bigint;
BEGIN
    SELECT d.key_type INTO kt FROM @extschema@.chash_directory d WHERE d.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', $1 USING ERRCODE = '42704';
    END IF;
    PERFORM FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = $2 AND a.attname = $3 AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation "%" does not exist', $3, $2::text
            USING ERRCODE = '42703';
    END IF;
    canonical := pg_catalog.format('@extschema@.chash_tenant_canonical(%L, (r.%I)::text)', kt, $3);
    EXECUTE pg_catalog.format(
        'INSERT INTO @extschema@.chash_tenant_size AS ts (directory, tenant, bytes, rows, measured_at)
         SELECT $1, %s, pg_catalog.sum(pg_catalog.pg_column_size(r.*))::bigint,
                pg_catalog.count(*), pg_catalog.now()
           FROM %s r WHERE r.%I IS NOT NULL GROUP BY 2
         ON CONFLICT (directory, tenant) DO UPDATE
            SET bytes = excluded.bytes, rows = excluded.rows, measured_at = excluded.measured_at',
        canonical, $2, $3)
        USING $1;
    GET DIAGNOSTICS measured = ROW_COUNT;
    RETURN measured;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_measure_tenants(text, regclass, name) IS
    'fills chash_tenant_size with rows and bytes per tenant of a table; returns the number of tenants measured';
-- ---------------------------------------------------------------------------
-- Migrations: saved plans carried out step by step (SPEC 3.2)
--
-- A step goes pending -> copying (claim) -> fenced (fence) -> done
-- (complete), or back to pending (release), or to cancelled.  Ownership
-- changes only in chash_step_complete, in the same transaction as the
-- step's state, so a crash at any point leaves every slot with exactly one
-- owner and the migration resumable.
--
-- Locks.  Every change to a step, a migration, a slot or an override
-- bumps the directory's version (51_directory_integrity), which updates
-- the directory row; so each function here first locks that row (FOR NO
-- KEY UPDATE), then the migration, then step rows.  One order everywhere:
-- no two of these functions can deadlock, and state changes of one
-- directory's migration take turns (they are short; workers copy data
-- between them, in their own transactions).  That also makes "one
-- unfinished migration per directory" and "the last complete marks the
-- migration done" exact.  Claims still use SKIP LOCKED, so a step locked
-- by anyone else (direct DML, a transaction that claimed and has not
-- committed) is never handed out twice.  The functions are meant for READ
-- COMMITTED; under REPEATABLE READ a concurrent change shows up as a
-- retryable 40001.
--
-- Functions run with the caller's rights (an operator role needs the
-- table privileges, docs/migrations.md); each pins search_path only so that
-- no object of the caller's can stand in for a built-in.
-- ---------------------------------------------------------------------------

-- Unfinished steps: claims look for the first pending one, complete asks
-- whether any is left.  Without this index both scan every finished step,
-- and a step would cost more the longer its migration is.
CREATE INDEX chash_migration_step_unfinished ON @extschema@.chash_migration_step (migration, step)
    WHERE state IN ('pending', 'copying', 'fenced');

-- The directory row, locked; 42704 when there is none.
CREATE FUNCTION @extschema@.chash_migration_lock_directory(directory text) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM FROM @extschema@.chash_directory d WHERE d.name = $1 FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', $1 USING ERRCODE = '42704';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_migration_lock_directory(text) IS
    'internal: locks a directory against a second migration starting at the same time';

-- The directory of a migration, its row locked; 42704 when there is none.
CREATE FUNCTION @extschema@.chash_migration_lock(migration bigint) RETURNS text
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    dir text;
BEGIN
    SELECT m.directory INTO dir FROM @extschema@.chash_migration m WHERE m.id = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'migration % does not exist', $1 USING ERRCODE = '42704';
    END IF;
    PERFORM @extschema@.chash_migration_lock_directory(dir);
    RETURN dir;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_migration_lock(bigint) IS
    'internal: locks the directory of a migration and returns its name';

-- 55006 when the directory has an unfinished migration.
CREATE FUNCTION @extschema@.chash_migration_check_none_running(directory text) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    running bigint;
BEGIN
    SELECT m.id INTO running FROM @extschema@.chash_migration m
     WHERE m.directory = $1 AND m.status = 'running' ORDER BY m.id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'directory "%" already has an unfinished migration', $1
            USING ERRCODE = '55006',
                  DETAIL = pg_catalog.format('Migration %s is running.', running),
                  HINT = 'Finish its steps, or cancel it with chash_migration_cancel().';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_migration_check_none_running(text) IS
    'internal: raises 55006 when the directory already has a running migration';

-- A migration without steps is done at once.
CREATE FUNCTION @extschema@.chash_migration_finish_if_empty(migration bigint) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    -- LIMIT 1: PERFORM runs its query to the end
    PERFORM FROM @extschema@.chash_migration_step s WHERE s.migration = $1 LIMIT 1;
    IF NOT FOUND THEN
        UPDATE @extschema@.chash_migration m
           SET status = 'done', finished_at = pg_catalog.now() WHERE m.id = $1;
        RAISE NOTICE 'nothing to move: the migration is done at once';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_migration_finish_if_empty(bigint) IS
    'internal: marks a migration without steps done';

CREATE FUNCTION @extschema@.chash_migration_start(directory text, strategy text DEFAULT 'slots',
                                                  max_moves int DEFAULT NULL)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    id bigint;
BEGIN
    IF $1 IS NULL OR $2 IS NULL THEN
        RETURN NULL;
    END IF;
    PERFORM @extschema@.chash_migration_lock_directory($1);
    PERFORM @extschema@.chash_migration_check_none_running($1);
    INSERT INTO @extschema@.chash_migration AS m (directory, kind, strategy)
         VALUES ($1, 'rebalance', $2) RETURNING m.id INTO id;
    INSERT INTO @extschema@.chash_migration_step (migration, step, slot, from_shard, to_shard)
         SELECT id, p.step, p.slot, p.from_shard, p.to_shard
           FROM @extschema@.chash_plan_rebalance($1, $2, $3) p;
    PERFORM @extschema@.chash_migration_finish_if_empty(id);
    RETURN id;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_migration_start(text, text, int) IS
    'saves the rebalance plan as a running migration and returns its id; one unfinished migration per directory';

CREATE FUNCTION @extschema@.chash_migration_move_tenant(directory text, tenant text, to_shard text)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    id bigint;
    canonical text;
    from_shard text;
    target_state text;
BEGIN
    PERFORM @extschema@.chash_migration_lock_directory($1);
    PERFORM @extschema@.chash_migration_check_none_running($1);
    SELECT s.state INTO target_state FROM @extschema@.chash_shard s
     WHERE s.directory = $1 AND s.shard = $3;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard "%" does not exist in directory "%"', $3, $1
            USING ERRCODE = '42704';
    END IF;
    IF target_state <> 'active' THEN
        RAISE EXCEPTION 'shard "%" is not active', $3
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; tenants can only move to an active shard.', target_state);
    END IF;
    -- canonical form (22P02 for a tenant that is not of the key type)
    SELECT e.tenant, e.shard INTO canonical, from_shard FROM @extschema@.chash_route_explain($1, $2) e;
    IF from_shard = $3 THEN
        RAISE EXCEPTION 'tenant "%" already routes to shard "%"', canonical, $3
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO @extschema@.chash_migration AS m (directory, kind)
         VALUES ($1, 'move_tenant') RETURNING m.id INTO id;
    INSERT INTO @extschema@.chash_migration_step (migration, step, tenant, from_shard, to_shard)
         VALUES (id, 1, canonical, from_shard, $3);
    RETURN id;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_migration_move_tenant(text, text, text) IS
    'a one-step migration that moves one tenant to a shard; completing it pins the tenant there';

CREATE FUNCTION @extschema@.chash_step_claim(migration bigint)
    RETURNS TABLE (step int, slot int, tenant text, from_shard text, to_shard text)
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
#variable_conflict use_column
DECLARE
    st text;
BEGIN
    PERFORM @extschema@.chash_migration_lock($1);
    SELECT m.status INTO st FROM @extschema@.chash_migration m WHERE m.id = $1 FOR KEY SHARE;
    IF st <> 'running' THEN
        RETURN;                 -- nothing left to claim: the worker stops
    END IF;
    RETURN QUERY
        WITH claimed AS (
        UPDATE @extschema@.chash_migration_step s
           SET state = 'copying', started_at = pg_catalog.now(),
               claimed_by = pg_catalog.concat_ws(' ',
                   NULLIF(pg_catalog.current_setting('application_name'), ''),
                   'pid ' || pg_catalog.pg_backend_pid())
          FROM (SELECT p.migration, p.step FROM @extschema@.chash_migration_step p
                 WHERE p.migration = $1 AND p.state = 'pending'
                 ORDER BY p.step LIMIT 1
                   FOR UPDATE SKIP LOCKED) c
         WHERE s.migration = c.migration AND s.step = c.step
        RETURNING s.step, s.slot, s.tenant, s.from_shard, s.to_shard)
        SELECT * FROM claimed;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_claim(bigint) IS
    'claims the next pending step of a migration (pending -> copying); concurrent workers never get the same step';

-- The step row, locked, with its migration's directory and kind.
CREATE FUNCTION @extschema@.chash_step_lock(migration bigint, step int,
                                            OUT state text, OUT slot int, OUT tenant text,
                                            OUT from_shard text, OUT to_shard text,
                                            OUT directory text, OUT kind text)
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
#variable_conflict use_column
BEGIN
    SELECT s.state, s.slot, s.tenant, s.from_shard, s.to_shard, m.directory, m.kind
      INTO state, slot, tenant, from_shard, to_shard, directory, kind
      FROM @extschema@.chash_migration_step s
      JOIN @extschema@.chash_migration m ON m.id = s.migration
     WHERE s.migration = $1 AND s.step = $2
       FOR UPDATE OF s;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'step % of migration % does not exist', $2, $1 USING ERRCODE = '42704';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lock(bigint, int) IS
    'internal: locks a migration step and returns it';

CREATE FUNCTION @extschema@.chash_step_fence(migration bigint, step int) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    r record;
BEGIN
    PERFORM @extschema@.chash_migration_lock($1);
    SELECT * INTO r FROM @extschema@.chash_step_lock($1, $2);
    IF r.state = 'fenced' THEN
        RETURN;                 -- a worker retrying after a lost connection
    END IF;
    IF r.state <> 'copying' THEN
        RAISE EXCEPTION 'step % of migration % is not being copied', $2, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; only a claimed ("copying") step can be fenced.', r.state);
    END IF;
    UPDATE @extschema@.chash_migration_step s SET state = 'fenced'
     WHERE s.migration = $1 AND s.step = $2;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_fence(bigint, int) IS
    'copying -> fenced: writes to the slot or tenant now get 40001 from chash_route_for_write; reads still go to the old shard';

CREATE FUNCTION @extschema@.chash_step_complete(migration bigint, step int) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    r record;
    owner text;
    slot_owner text;
BEGIN
    -- Completes of one directory take turns (the lock), so the last one
    -- sees every other step done.
    PERFORM @extschema@.chash_migration_lock($1);
    SELECT * INTO r FROM @extschema@.chash_step_lock($1, $2);
    IF r.state = 'done' THEN
        RETURN;                 -- a worker retrying after a lost connection
    END IF;
    IF r.state NOT IN ('copying', 'fenced') THEN
        RAISE EXCEPTION 'step % of migration % is not in flight', $2, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; only a claimed ("copying" or "fenced") step can complete.', r.state);
    END IF;

    IF r.slot IS NOT NULL THEN
        UPDATE @extschema@.chash_slot s SET shard = r.to_shard
         WHERE s.directory = r.directory AND s.slot = r.slot AND s.shard = r.from_shard;
        IF NOT FOUND THEN
            SELECT s.shard INTO owner FROM @extschema@.chash_slot s
             WHERE s.directory = r.directory AND s.slot = r.slot;
            RAISE EXCEPTION 'slot % of directory "%" is no longer owned by shard "%"',
                    r.slot, r.directory, r.from_shard
                USING ERRCODE = '55000',
                      DETAIL = pg_catalog.format('Its owner is now "%s".', owner),
                      HINT = 'Release the step or cancel the migration.';
        END IF;
    ELSE
        SELECT o.shard INTO owner FROM @extschema@.chash_override o
         WHERE o.directory = r.directory AND o.tenant = r.tenant FOR UPDATE;
        SELECT s.shard INTO slot_owner FROM @extschema@.chash_slot s
         WHERE s.directory = r.directory AND s.slot = @extschema@.chash_slot(r.directory, r.tenant);
        IF COALESCE(owner, slot_owner) IS DISTINCT FROM r.from_shard THEN
            RAISE EXCEPTION 'tenant "%" of directory "%" no longer routes to shard "%"',
                    r.tenant, r.directory, r.from_shard
                USING ERRCODE = '55000',
                      DETAIL = pg_catalog.format('It routes to "%s".', COALESCE(owner, slot_owner)),
                      HINT = 'Release the step or cancel the migration.';
        END IF;
        IF r.kind = 'revert' AND r.to_shard = slot_owner THEN
            -- undoing a move: the tenant follows its slot again
            DELETE FROM @extschema@.chash_override o
             WHERE o.directory = r.directory AND o.tenant = r.tenant;
        ELSE
            INSERT INTO @extschema@.chash_override AS o (directory, tenant, shard, note)
                 VALUES (r.directory, r.tenant, r.to_shard,
                         pg_catalog.format('moved by migration %s', $1))
            ON CONFLICT (directory, tenant) DO UPDATE
                 SET shard = excluded.shard, note = excluded.note;
        END IF;
    END IF;

    UPDATE @extschema@.chash_migration_step s
       SET state = 'done', finished_at = pg_catalog.now()
     WHERE s.migration = $1 AND s.step = $2;
    -- LIMIT 1: PERFORM runs its query to the end, and this must not cost
    -- more the more steps are left
    PERFORM FROM @extschema@.chash_migration_step s
     WHERE s.migration = $1 AND s.state IN ('pending', 'copying', 'fenced') LIMIT 1;
    IF NOT FOUND THEN
        UPDATE @extschema@.chash_migration m
           SET status = 'done', finished_at = pg_catalog.now()
         WHERE m.id = $1 AND m.status = 'running';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_complete(bigint, int) IS
    'copying or fenced -> done: ownership moves to the new shard in the same transaction; the migration is done with its last step';

CREATE FUNCTION @extschema@.chash_step_release(migration bigint, step int) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    r record;
BEGIN
    PERFORM @extschema@.chash_migration_lock($1);
    SELECT * INTO r FROM @extschema@.chash_step_lock($1, $2);
    IF r.state NOT IN ('copying', 'fenced') THEN
        RAISE EXCEPTION 'step % of migration % is not in flight', $2, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s"; only a claimed ("copying" or "fenced") step can be released.', r.state);
    END IF;
    UPDATE @extschema@.chash_migration_step s
       SET state = 'pending', claimed_by = NULL, started_at = NULL
     WHERE s.migration = $1 AND s.step = $2;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_release(bigint, int) IS
    'gives a claimed step back (-> pending); nothing else changes';

CREATE FUNCTION @extschema@.chash_migration_cancel(migration bigint) RETURNS void
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
BEGIN
    PERFORM @extschema@.chash_migration_lock($1);
    SELECT m.status INTO st FROM @extschema@.chash_migration m WHERE m.id = $1 FOR UPDATE;
    IF st <> 'running' THEN
        RAISE EXCEPTION 'migration % is not running', $1
            USING ERRCODE = '55000', DETAIL = pg_catalog.format('Its status is "%s".', st);
    END IF;
    -- Steps in flight are cancelled too: their owner never changed, and a
    -- worker's fence or complete now fails instead of racing the cancel.
    UPDATE @extschema@.chash_migration_step s
       SET state = 'cancelled', finished_at = pg_catalog.now()
     WHERE s.migration = $1 AND s.state IN ('pending', 'copying', 'fenced');
    UPDATE @extschema@.chash_migration m
       SET status = 'cancelled', finished_at = pg_catalog.now() WHERE m.id = $1;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_migration_cancel(bigint) IS
    'stops a migration: steps not done become cancelled, done steps stay done';

CREATE FUNCTION @extschema@.chash_migration_revert(migration bigint) RETURNS bigint
    LANGUAGE plpgsql VOLATILE STRICT
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    dir text;
    st text;
    id bigint;
    bad record;
BEGIN
    dir := @extschema@.chash_migration_lock($1);
    SELECT m.status INTO st FROM @extschema@.chash_migration m WHERE m.id = $1 FOR UPDATE;
    IF st = 'running' THEN
        PERFORM @extschema@.chash_migration_cancel($1);
    END IF;
    PERFORM @extschema@.chash_migration_check_none_running(dir);

    -- Every done step must still hold: its slot or tenant on its to_shard,
    -- and its from_shard able to take it back.
    SELECT s.step, s.slot, s.tenant, s.to_shard, o.shard AS owner INTO bad
      FROM @extschema@.chash_migration_step s
      LEFT JOIN @extschema@.chash_slot o
             ON s.slot IS NOT NULL AND o.directory = dir AND o.slot = s.slot
     WHERE s.migration = $1 AND s.state = 'done'
       AND (CASE WHEN s.slot IS NOT NULL THEN o.shard
                 ELSE @extschema@.chash_route(dir, s.tenant) END) IS DISTINCT FROM s.to_shard
     ORDER BY s.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'migration % cannot be reverted: % has moved since',
                $1, CASE WHEN bad.slot IS NOT NULL THEN 'slot ' || bad.slot
                         ELSE pg_catalog.format('tenant "%s"', bad.tenant) END
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Step %s moved it to "%s"; it is on "%s" now.',
                                             bad.step, bad.to_shard,
                                             COALESCE(bad.owner, @extschema@.chash_route(dir, bad.tenant)));
    END IF;
    SELECT s.step, s.from_shard INTO bad
      FROM @extschema@.chash_migration_step s
      JOIN @extschema@.chash_shard sh ON sh.directory = dir AND sh.shard = s.from_shard
     WHERE s.migration = $1 AND s.state = 'done' AND sh.state = 'retired'
     ORDER BY s.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'migration % cannot be reverted: shard "%" is retired', $1, bad.from_shard
            USING ERRCODE = '55000',
                  HINT = 'Set the shard back to "active" or "draining" first.';
    END IF;

    INSERT INTO @extschema@.chash_migration AS m (directory, kind, reverts)
         VALUES (dir, 'revert', $1) RETURNING m.id INTO id;
    -- the moves undone in the reverse order of the plan
    INSERT INTO @extschema@.chash_migration_step (migration, step, slot, tenant, from_shard, to_shard)
         SELECT id, pg_catalog.row_number() OVER (ORDER BY s.step DESC),
                s.slot, s.tenant, s.to_shard, s.from_shard
           FROM @extschema@.chash_migration_step s
          WHERE s.migration = $1 AND s.state = 'done';
    PERFORM @extschema@.chash_migration_finish_if_empty(id);
    RETURN id;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_migration_revert(bigint) IS
    'a new migration that moves every done step of the given one back (a running one is cancelled first); returns its id';

CREATE VIEW @extschema@.chash_migration_progress WITH (security_invoker = true) AS
SELECT m.id AS migration, m.directory, m.kind, m.status,
       c.total, c.done, c.in_flight, c.pending, c.cancelled,
       pg_catalog.round(100.0 * c.done / NULLIF(c.total, 0), 1) AS percent,
       c.started,
       COALESCE(m.finished_at, pg_catalog.now()) - c.started AS elapsed,
       CASE WHEN m.status <> 'running' THEN '0'::interval
            WHEN c.done > 0 THEN
                (pg_catalog.now() - c.started) * ((c.in_flight + c.pending)::float8 / c.done)
       END AS time_left,
       pg_catalog.format('%s of %s %s%s',
           pg_catalog.to_char(c.done, 'FM999,999,990'),
           pg_catalog.to_char(c.total, 'FM999,999,990'),
           CASE WHEN c.tenants = 0 THEN 'slot' WHEN c.tenants = c.total THEN 'tenant' ELSE 'step' END
               || CASE WHEN c.total = 1 THEN '' ELSE 's' END,
           CASE WHEN c.cancelled > 0
                THEN pg_catalog.format(' (%s cancelled)', pg_catalog.to_char(c.cancelled, 'FM999,999,990'))
                ELSE '' END) AS summary
  FROM @extschema@.chash_migration m
 CROSS JOIN LATERAL (
       SELECT pg_catalog.count(*) AS total,
              pg_catalog.count(*) FILTER (WHERE s.state = 'done') AS done,
              pg_catalog.count(*) FILTER (WHERE s.state IN ('copying', 'fenced')) AS in_flight,
              pg_catalog.count(*) FILTER (WHERE s.state = 'pending') AS pending,
              pg_catalog.count(*) FILTER (WHERE s.state = 'cancelled') AS cancelled,
              pg_catalog.count(*) FILTER (WHERE s.tenant IS NOT NULL) AS tenants,
              pg_catalog.min(s.started_at) AS started
         FROM @extschema@.chash_migration_step s WHERE s.migration = m.id) c;
COMMENT ON VIEW @extschema@.chash_migration_progress IS
    'per migration: steps done, in flight, pending and cancelled, elapsed time since the first claim, an estimate of the time left, and "1,200 of 4,096 slots"';
