-- The shard directory (docs/directory.md): tables, management functions, routing,
-- explain, snapshot and the load view.  Bad inputs and direct DML that
-- breaks the invariants are in directory_integrity.sql.
\i sql/include/bad.sql

-- 3 equal shards of 16,384 slots get 5,462 / 5,461 / 5,461, in contiguous
-- ranges in array order.
SELECT chash_create_directory('orgs', ARRAY['s1', 's2', 's3']);
SELECT name, slot_count, slot_method, key_type, version FROM chash_directory;
SELECT shard, count(*) AS slots, min(slot) AS first, max(slot) AS last
FROM chash_slot WHERE directory = 'orgs' GROUP BY shard ORDER BY first;
SELECT shard, weight, state, zone, server FROM chash_shard ORDER BY shard;

-- Weights: proportional sizes, largest remainder, ties to the earlier shard.
SELECT chash_create_directory('weighted', ARRAY['big', 'small', 'tiny'], 10, 'jump', ARRAY[5, 2.5, 2.5]);
SELECT shard, count(*) AS slots, min(slot) AS first, max(slot) AS last
FROM chash_slot WHERE directory = 'weighted' GROUP BY shard ORDER BY first;
SELECT chash_create_directory('one', ARRAY['only'], 1);
SELECT chash_route('one', 'anything'), chash_slot('one', 'anything');

-- Routing: the slot's owner; the bigint overload routes like its decimal.
SELECT chash_slot('orgs', 'acme') AS slot, chash_route('orgs', 'acme') AS shard;
SELECT chash_route('orgs', 42::bigint) = chash_route('orgs', '42') AS bigint_like_text;
SELECT count(*) AS tenants,
       count(*) FILTER (WHERE chash_route('orgs', 'tenant-' || i) <> s.shard) AS mismatches
FROM generate_series(1, 10000) AS i
JOIN chash_slot s ON s.directory = 'orgs' AND s.slot = chash_slot('orgs', 'tenant-' || i);
SELECT * FROM chash_route_explain('orgs', 'acme');
SELECT chash_route_for_write('orgs', 'acme');
SELECT chash_route(NULL, 'acme') IS NULL AS null_directory, chash_route('orgs', NULL::text) IS NULL AS null_tenant,
       chash_slot('orgs', NULL) IS NULL AS null_slot;

-- Pinning a whale: the override wins; unpinning restores the slot's owner.
-- Every change bumps the version.
SELECT chash_pin('orgs', 'acme', 's1', 'whale');
SELECT * FROM chash_route_explain('orgs', 'acme');
SELECT chash_route('orgs', 'acme'), version FROM chash_directory WHERE name = 'orgs';
SELECT tenant, shard, note FROM chash_override;
SELECT chash_pin('orgs', 'acme', 's2');     -- re-pinning replaces the override
SELECT chash_route('orgs', 'acme'), version FROM chash_directory WHERE name = 'orgs';
SELECT chash_unpin('orgs', 'acme');
SELECT chash_route('orgs', 'acme'), version FROM chash_directory WHERE name = 'orgs';
SELECT chash_unpin('orgs', 'acme');         -- not pinned: a notice

-- Within one transaction routing follows the transaction's own changes,
-- and a rollback takes them back.
BEGIN;
SELECT chash_pin('orgs', 'acme', 's1');
SELECT chash_route('orgs', 'acme');
UPDATE chash_slot SET shard = 's1' WHERE directory = 'orgs' AND slot = chash_slot('orgs', 'beta');
SELECT chash_route('orgs', 'beta');
ROLLBACK;
SELECT chash_route('orgs', 'acme'), chash_route('orgs', 'beta');
BEGIN;
SAVEPOINT a;
SELECT chash_pin('orgs', 'acme', 's1');
SELECT chash_route('orgs', 'acme');
ROLLBACK TO a;
SELECT chash_route('orgs', 'acme');
COMMIT;

-- Shards: add (owns nothing), change weight/zone/server, drain, retire.
SELECT chash_add_shard('orgs', 's4', 2, 'eu-1', 'host=s4');
SELECT chash_set_shard('orgs', 's1', weight => 3, zone => 'eu-2');
SELECT chash_set_shard('orgs', 's2', server => 'host=s2');
SELECT shard, weight, state, zone, server FROM chash_shard WHERE directory = 'orgs' ORDER BY shard;
SELECT version FROM chash_directory WHERE name = 'orgs';
SELECT chash_set_shard('orgs', 's4', state => 'draining');
SELECT chash_set_shard('orgs', 's4', state => 'retired');   -- owns nothing: allowed
SELECT chash_set_shard('orgs', 's4', state => 'active');
SELECT shard, state FROM chash_shard WHERE directory = 'orgs' AND shard = 's4';

-- Direct DML routes too: move a slot by UPDATE, pin by INSERT.
UPDATE chash_slot SET shard = 's4' WHERE directory = 'orgs' AND slot = chash_slot('orgs', 'beta');
SELECT chash_route('orgs', 'beta');
INSERT INTO chash_override (directory, tenant, shard) VALUES ('orgs', 'gamma', 's4');
SELECT chash_route('orgs', 'gamma');
DELETE FROM chash_override WHERE directory = 'orgs' AND tenant = 'gamma';
SELECT version FROM chash_directory WHERE name = 'orgs';

-- Slot methods agree with the placement functions (docs/directory.md).
SELECT chash_create_directory('m_xxh64', ARRAY['a', 'b'], 1000, 'xxh64');
SELECT chash_create_directory('m_jump', ARRAY['a', 'b'], 1000, 'jump');
SELECT chash_create_directory('m_redis', ARRAY['a', 'b'], 16384, 'redis');
SELECT count(*) AS tenants,
       count(*) FILTER (WHERE chash_slot('m_xxh64', t)
           <> ((chash_xxh64(t)::numeric + CASE WHEN chash_xxh64(t) < 0 THEN 18446744073709551616 ELSE 0 END) % 1000)::int) AS xxh64_mismatches,
       count(*) FILTER (WHERE chash_slot('m_jump', t) <> chash_jump(t, 1000)) AS jump_mismatches,
       count(*) FILTER (WHERE chash_slot('m_redis', t) <> chash_redis_slot(t)) AS redis_mismatches
FROM (SELECT 'tenant-' || i AS t FROM generate_series(1, 10000) AS i) x;
SELECT chash_slot('m_redis', '{user1000}.following') = chash_slot('m_redis', '{user1000}.followers') AS hash_tags;

-- 'pg_hash': slot k is the hash partition (MODULUS slot_count, REMAINDER k)
-- PostgreSQL itself puts the tenant in, for each key type.
SELECT chash_create_directory('ph_text', ARRAY['a', 'b'], 8, 'pg_hash');
SELECT chash_create_directory('ph_bigint', ARRAY['a', 'b'], 8, 'pg_hash', key_type => 'bigint');
SELECT chash_create_directory('ph_uuid', ARRAY['a', 'b'], 8, 'pg_hash', key_type => 'uuid');
CREATE TABLE ph_text_t (tenant text) PARTITION BY HASH (tenant);
CREATE TABLE ph_bigint_t (tenant bigint) PARTITION BY HASH (tenant);
CREATE TABLE ph_uuid_t (tenant uuid) PARTITION BY HASH (tenant);
SELECT format('CREATE TABLE %s_%s PARTITION OF %s FOR VALUES WITH (MODULUS 8, REMAINDER %s)', t, r, t, r)
FROM unnest(ARRAY['ph_text_t', 'ph_bigint_t', 'ph_uuid_t']) AS t, generate_series(0, 7) AS r \gexec
INSERT INTO ph_text_t SELECT 'tenant-' || i FROM generate_series(1, 2000) AS i;
INSERT INTO ph_bigint_t SELECT i * 7919 - 5000 FROM generate_series(1, 2000) AS i;
INSERT INTO ph_uuid_t SELECT md5(i::text)::uuid FROM generate_series(1, 2000) AS i;
SELECT 'text' AS key_type, count(*) AS tenants,
       count(*) FILTER (WHERE tableoid::regclass::text <> 'ph_text_t_' || chash_slot('ph_text', tenant)) AS mismatches,
       count(DISTINCT tableoid) AS partitions_used
FROM ph_text_t
UNION ALL
SELECT 'bigint', count(*),
       count(*) FILTER (WHERE tableoid::regclass::text <> 'ph_bigint_t_' || chash_slot('ph_bigint', tenant::text)),
       count(DISTINCT tableoid)
FROM ph_bigint_t
UNION ALL
SELECT 'uuid', count(*),
       count(*) FILTER (WHERE tableoid::regclass::text <> 'ph_uuid_t_' || chash_slot('ph_uuid', tenant::text)),
       count(DISTINCT tableoid)
FROM ph_uuid_t;
-- and it is chash_pg_partition of the typed value
SELECT count(*) FILTER (WHERE chash_slot('ph_bigint', tenant::text) <> chash_pg_partition(tenant, 8)) AS bigint_mismatches
FROM ph_bigint_t;

-- Key types: tenants are canonical (bigint in plain decimal, uuid lower
-- case with hyphens); only pg_hash hashes the typed value.
SELECT chash_create_directory('users', ARRAY['u1', 'u2', 'u3'], 1024, key_type => 'bigint');
SELECT chash_create_directory('devices', ARRAY['d1', 'd2'], 512, 'jump', key_type => 'uuid');
SELECT tenant, slot, chash_slot('users', ' +042 ') AS padded_slot,
       slot = (chash_xxh64('42')::numeric + CASE WHEN chash_xxh64('42') < 0 THEN 18446744073709551616 ELSE 0 END)::numeric % 1024 AS hashes_canonical_text
FROM chash_route_explain('users', '042');
SELECT chash_route('users', 42::bigint) = chash_route('users', '42') AS bigint_overload;
SELECT chash_pin('users', ' -0017', 'u3');
SELECT tenant FROM chash_override WHERE directory = 'users';
SELECT chash_route('users', -17::bigint), chash_route('users', '-17'), (chash_route_explain('users', '-000017')).source;
SELECT tenant, slot = chash_jump('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 512) AS jump_of_canonical
FROM chash_route_explain('devices', '{A0EEBC99-9C0B4EF8-BB6D6BB9-BD380A11}');
INSERT INTO chash_override (directory, tenant, shard) VALUES ('devices', 'A0EEBC999C0B4EF8BB6D6BB9BD380A11', 'd2');
SELECT tenant FROM chash_override WHERE directory = 'devices';
SELECT chash_route('devices', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
-- the canonical form agrees with PostgreSQL's own input functions
SELECT count(*) FILTER (WHERE chash_tenant_canonical('uuid', u::text) <> u::text
                           OR chash_tenant_canonical('uuid', upper(replace(u::text, '-', ''))) <> u::text) AS uuid_mismatches,
       count(*) FILTER (WHERE chash_tenant_canonical('bigint', ' ' || (i * 7919 - 5000)) <> (i * 7919 - 5000)::bigint::text) AS bigint_mismatches
FROM (SELECT i, md5(i::text)::uuid AS u FROM generate_series(1, 1000) AS i) x;
SELECT chash_tenant_canonical('bigint', '-9223372036854775808'), chash_tenant_canonical('text', ' Mixed ');

-- Steps in flight: explain shows them, writes to fenced tenants get 40001,
-- the snapshot lists them.
INSERT INTO chash_migration (directory, kind, strategy) VALUES ('orgs', 'rebalance', 'slots');
INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
SELECT id, 1, chash_slot('orgs', 'delta'), chash_route('orgs', 'delta'), 's4', 'copying' FROM chash_migration;
INSERT INTO chash_migration_step (migration, step, tenant, from_shard, to_shard, state)
SELECT id, 2, 'omega', chash_route('orgs', 'omega'), 's4', 'fenced' FROM chash_migration;
SELECT tenant, shard, source, slot_state, moving_to, migration IS NOT NULL AS has_migration
FROM chash_route_explain('orgs', 'delta');
SELECT chash_route_for_write('orgs', 'delta') = chash_route('orgs', 'delta') AS copying_allows_writes;
UPDATE chash_migration_step SET state = 'fenced' WHERE step = 1;
SELECT tenant, shard = chash_route('orgs', 'delta') AS reads_from_shard, slot_state, moving_to
FROM chash_route_explain('orgs', 'delta');
SELECT regexp_replace(bad($$SELECT chash_route_for_write('orgs', 'delta')$$), 'migration [0-9]+', 'migration N');
SELECT regexp_replace(bad($$SELECT chash_route_for_write('orgs', 'omega')$$), 'migration [0-9]+', 'migration N');
SELECT jsonb_path_query(chash_directory_snapshot('orgs'), '$.steps[*].state') AS step_states;
-- a pinned tenant does not move with its slot
SELECT chash_pin('orgs', 'delta', 's2');
SELECT source, slot_state FROM chash_route_explain('orgs', 'delta');
SELECT chash_route_for_write('orgs', 'delta');
SELECT chash_unpin('orgs', 'delta');
-- done steps and finished migrations are not in flight
UPDATE chash_migration_step SET state = 'done';
SELECT slot_state FROM chash_route_explain('orgs', 'delta');
UPDATE chash_migration_step SET state = 'fenced';
UPDATE chash_migration SET status = 'cancelled';
SELECT slot_state FROM chash_route_explain('orgs', 'delta');
SELECT chash_route_for_write('orgs', 'omega') IS NOT NULL AS writes_again;
DELETE FROM chash_migration;

-- The snapshot: everything a client needs, slot ownership as ranges.
SELECT jsonb_pretty(chash_directory_snapshot('weighted'));
SELECT chash_pin('weighted', 'whale', 'small', 'big customer');
SELECT s->'version' AS version, s->'slots' AS slots, s->'overrides' AS overrides
FROM chash_directory_snapshot('weighted') AS s;
-- the ranges cover every slot of 'orgs' with its owner
SELECT count(*) AS mismatches
FROM chash_slot s,
     LATERAL jsonb_array_elements(chash_directory_snapshot('orgs')->'slots') AS r
WHERE s.directory = 'orgs' AND s.slot BETWEEN (r->>0)::int AND (r->>1)::int AND s.shard <> r->>2;
SELECT sum((r->>1)::int - (r->>0)::int + 1) AS covered
FROM jsonb_array_elements(chash_directory_snapshot('orgs')->'slots') AS r;

-- The load view: slots, shares, target by weight, pins, bytes.
SELECT directory, shard, state, weight, slots, round(slot_share::numeric, 4) AS slot_share,
       round(target_share::numeric, 4) AS target_share, pinned_tenants, bytes,
       round(load_ratio::numeric, 4) AS load_ratio
FROM chash_shard_load WHERE directory IN ('orgs', 'weighted') ORDER BY directory, shard;
INSERT INTO chash_tenant_size (directory, tenant, bytes, rows)
VALUES ('weighted', 'whale', 6000, 60), ('weighted', 'minnow', 1000, 10), ('weighted', 'krill', 3000, 30);
SELECT shard, slots, pinned_tenants, bytes, round(load_ratio::numeric, 4) AS load_ratio
FROM chash_shard_load WHERE directory = 'weighted' ORDER BY shard;
SELECT sum(bytes) = 10000 AS all_bytes_counted FROM chash_shard_load WHERE directory = 'weighted';

-- Parallel workers route too (chash_route is PARALLEL SAFE).
CREATE TABLE parallel_tenants AS SELECT 'tenant-' || i AS k FROM generate_series(1, 20000) AS i;
ANALYZE parallel_tenants;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT count(*) FROM parallel_tenants WHERE chash_route('orgs', k) = 's1';
SELECT count(*) = (SELECT count(*) FROM parallel_tenants p JOIN chash_slot s
                   ON s.directory = 'orgs' AND s.slot = chash_slot('orgs', p.k) AND s.shard = 's1') AS parallel_agrees
FROM parallel_tenants WHERE chash_route('orgs', k) = 's1';
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE parallel_tenants;

-- Dropping a directory removes everything of it.
SELECT chash_drop_directory('weighted');
SELECT count(*) AS left_over FROM chash_shard WHERE directory = 'weighted';
SELECT count(*) AS left_over FROM chash_tenant_size WHERE directory = 'weighted';
SELECT bad($$SELECT chash_route('weighted', 'x')$$);

DROP TABLE ph_text_t, ph_bigint_t, ph_uuid_t;
SELECT chash_drop_directory(name) FROM chash_directory ORDER BY name;
