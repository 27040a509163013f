-- The shard directory (docs/directory.md): every bad input with its SQLSTATE, direct
-- DML that would break an invariant (it fails and changes nothing), and
-- privileges.
\i sql/include/bad.sql

SELECT chash_create_directory('orgs', ARRAY['s1', 's2', 's3'], 64);
SELECT chash_create_directory('ids', ARRAY['a', 'b'], 16, key_type => 'bigint');
SELECT chash_create_directory('uuids', ARRAY['a', 'b'], 16, 'pg_hash', key_type => 'uuid');

-- chash_create_directory
SELECT bad($$SELECT chash_create_directory('orgs', ARRAY['x'])$$);
SELECT bad($$SELECT chash_create_directory('', ARRAY['x'])$$);
SELECT bad($$SELECT chash_create_directory(NULL, ARRAY['x'])$$);
SELECT bad($$SELECT chash_create_directory('d', NULL)$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x'], NULL)$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x'], slot_method => NULL)$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x'], key_type => NULL)$$);
SELECT bad($$SELECT chash_create_directory('d', '{}')$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x', NULL])$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x', 'x'])$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY[['x'], ['y']])$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x'], 0)$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x'], 1048577)$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x'], 16384, 'md5')$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x'], 1024, 'redis')$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x'], key_type => 'int')$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x', 'y'], weights => ARRAY[1.0])$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x', 'y'], weights => ARRAY[1, 0])$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x', 'y'], weights => ARRAY[1, -1])$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x', 'y'], weights => ARRAY[1, 'NaN']::float8[])$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x', 'y'], weights => ARRAY[1, 'Infinity']::float8[])$$);
SELECT bad($$SELECT chash_create_directory('d', ARRAY['x', 'y'], weights => ARRAY[1, NULL])$$);
SELECT count(*) AS directories FROM chash_directory;

-- unknown directory, unknown shard
SELECT bad($$SELECT chash_route('nope', 'x')$$);
SELECT bad($$SELECT chash_route('nope', 1::bigint)$$);
SELECT bad($$SELECT chash_slot('nope', 'x')$$);
SELECT bad($$SELECT * FROM chash_route_explain('nope', 'x')$$);
SELECT bad($$SELECT chash_route_for_write('nope', 'x')$$);
SELECT bad($$SELECT chash_directory_snapshot('nope')$$);
SELECT bad($$SELECT chash_drop_directory('nope')$$);
SELECT bad($$SELECT chash_drop_directory(NULL)$$);
SELECT bad($$SELECT chash_add_shard('nope', 's')$$);
SELECT bad($$SELECT chash_set_shard('nope', 's', 2)$$);
SELECT bad($$SELECT chash_set_shard('orgs', 'nope', 2)$$);
SELECT bad($$SELECT chash_pin('nope', 't', 's1')$$);
SELECT bad($$SELECT chash_pin('orgs', 't', 'nope')$$);
SELECT bad($$SELECT chash_unpin('nope', 't')$$);

-- invalid tenants for the key type (22P02)
SELECT bad($$SELECT chash_route('ids', 'abc')$$);
SELECT bad($$SELECT chash_route('ids', '')$$);
SELECT bad($$SELECT chash_route('ids', '12 34')$$);
SELECT bad($$SELECT chash_route('ids', '9223372036854775808')$$);
SELECT bad($$SELECT chash_slot('ids', '1.5')$$);
SELECT bad($$SELECT * FROM chash_route_explain('ids', '0x10')$$);
SELECT bad($$SELECT chash_route_for_write('ids', 'x')$$);
SELECT bad($$SELECT chash_route('uuids', 'not-a-uuid')$$);
SELECT bad($$SELECT chash_route('uuids', 42::bigint)$$);
SELECT bad($$SELECT chash_slot('uuids', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1')$$);
SELECT bad($$SELECT chash_pin('ids', 'abc', 'a')$$);
SELECT bad($$SELECT chash_unpin('ids', 'abc')$$);
SELECT bad($$INSERT INTO chash_override (directory, tenant, shard) VALUES ('ids', 'abc', 'a')$$);
SELECT bad($$INSERT INTO chash_tenant_size (directory, tenant, bytes) VALUES ('uuids', 'abc', 1)$$);
SELECT bad($$SELECT chash_tenant_canonical('bigint', '-9223372036854775809')$$);
SELECT bad($$SELECT chash_tenant_canonical('float', '1')$$);

-- chash_add_shard / chash_set_shard
SELECT bad($$SELECT chash_add_shard('orgs', 's1')$$);
SELECT bad($$SELECT chash_add_shard('orgs', NULL)$$);
SELECT bad($$SELECT chash_add_shard('orgs', 's9', NULL)$$);
SELECT bad($$SELECT chash_add_shard('orgs', 's9', 0)$$);
SELECT bad($$SELECT chash_add_shard('orgs', 's9', -1)$$);
SELECT bad($$SELECT chash_add_shard('orgs', 's9', 'NaN')$$);
SELECT bad($$SELECT chash_add_shard('orgs', 's9', 'Infinity')$$);
SELECT bad($$SELECT chash_set_shard('orgs', 's1', 0)$$);
SELECT bad($$SELECT chash_set_shard('orgs', 's1', state => 'gone')$$);
SELECT bad($$SELECT chash_set_shard('orgs', NULL, 1)$$);
-- retiring a shard that still owns slots (55006); draining one is fine
SELECT bad($$SELECT chash_set_shard('orgs', 's1', state => 'retired')$$);
SELECT chash_set_shard('orgs', 's1', state => 'draining');
SELECT bad($$SELECT chash_set_shard('orgs', 's1', state => 'retired')$$);
SELECT chash_set_shard('orgs', 's1', state => 'active');
-- pinning to a shard that is not active; draining a shard with pins
SELECT chash_add_shard('orgs', 's4');
SELECT chash_set_shard('orgs', 's4', state => 'draining');
SELECT bad($$SELECT chash_pin('orgs', 'acme', 's4')$$);
SELECT chash_set_shard('orgs', 's4', state => 'retired');
SELECT bad($$SELECT chash_pin('orgs', 'acme', 's4')$$);
SELECT chash_pin('orgs', 'acme', 's2');
SELECT bad($$SELECT chash_set_shard('orgs', 's2', state => 'draining')$$);
SELECT bad($$SELECT chash_pin('orgs', NULL, 's2')$$);
SELECT bad($$SELECT chash_pin('orgs', 'x', NULL)$$);

-- Direct DML that breaks an invariant fails and changes nothing.
SELECT version AS version_before FROM chash_directory WHERE name = 'orgs' \gset
SELECT bad($$DELETE FROM chash_slot WHERE directory = 'orgs' AND slot = 3$$);
SELECT bad($$INSERT INTO chash_slot VALUES ('orgs', 64, 's1')$$);
SELECT bad($$INSERT INTO chash_slot VALUES ('orgs', -1, 's1')$$);
SELECT bad($$INSERT INTO chash_slot VALUES ('orgs', 3, 's1')$$);
SELECT bad($$UPDATE chash_slot SET slot = slot + 64 WHERE directory = 'orgs' AND slot = 0$$);
SELECT bad($$UPDATE chash_slot SET shard = 's4' WHERE directory = 'orgs' AND slot = 0$$);
SELECT bad($$UPDATE chash_slot SET shard = 'nope' WHERE directory = 'orgs' AND slot = 0$$);
SELECT bad($$UPDATE chash_slot SET shard = NULL WHERE directory = 'orgs' AND slot = 0$$);
SELECT bad($$TRUNCATE chash_slot$$);
SELECT bad($$UPDATE chash_shard SET state = 'retired' WHERE directory = 'orgs' AND shard = 's3'$$);
SELECT bad($$UPDATE chash_shard SET weight = 0 WHERE directory = 'orgs' AND shard = 's3'$$);
SELECT bad($$UPDATE chash_shard SET weight = 'NaN' WHERE directory = 'orgs' AND shard = 's3'$$);
SELECT bad($$UPDATE chash_shard SET state = 'paused' WHERE directory = 'orgs' AND shard = 's3'$$);
SELECT bad($$UPDATE chash_shard SET shard = 's5' WHERE directory = 'orgs' AND shard = 's3'$$);
SELECT bad($$DELETE FROM chash_shard WHERE directory = 'orgs' AND shard = 's3'$$);
SELECT bad($$INSERT INTO chash_shard (directory, shard, weight) VALUES ('orgs', 's9', -2)$$);
SELECT bad($$INSERT INTO chash_override (directory, tenant, shard) VALUES ('orgs', 'x', 's4')$$);
SELECT bad($$INSERT INTO chash_override (directory, tenant, shard) VALUES ('orgs', 'x', 'nope')$$);
SELECT bad($$UPDATE chash_override SET shard = 's4' WHERE directory = 'orgs'$$);
SELECT bad($$UPDATE chash_directory SET slot_count = 128 WHERE name = 'orgs'$$);
SELECT bad($$UPDATE chash_directory SET slot_method = 'jump' WHERE name = 'orgs'$$);
SELECT bad($$UPDATE chash_directory SET key_type = 'bigint' WHERE name = 'orgs'$$);
SELECT bad($$INSERT INTO chash_directory (name, slot_count, created_at) VALUES ('d', 0, '2000-01-01')$$);
SELECT bad($$INSERT INTO chash_directory (name, slot_method, slot_count, created_at) VALUES ('d', 'redis', 100, '2000-01-01')$$);
SELECT bad($$INSERT INTO chash_migration_step VALUES (1, 1, 1, 'x', 's1', 's2')$$);
SELECT version = :version_before AS version_unchanged,
       (SELECT count(*) FROM chash_slot WHERE directory = 'orgs') AS slots,
       (SELECT count(*) FROM chash_slot WHERE directory = 'orgs' AND shard = 's4') AS slots_on_retired
FROM chash_directory WHERE name = 'orgs';
-- moving a slot away and back in one statement is fine; so is a version
-- written by hand, as long as it grows
UPDATE chash_slot SET shard = CASE shard WHEN 's1' THEN 's2' ELSE 's1' END
WHERE directory = 'orgs' AND slot IN (0, 63);
UPDATE chash_directory SET version = 1 WHERE name = 'orgs';
SELECT version > :version_before AS version_grew FROM chash_directory WHERE name = 'orgs';

-- Weights: each finite, and their sum too (22023), through the functions
-- and by hand; the load view and the planner keep working.
SELECT chash_create_directory('heavy', ARRAY['a', 'b'], 8);
SELECT chash_add_shard('heavy', 'c', 1e308);
SELECT bad($$SELECT chash_add_shard('heavy', 'd', 1e308)$$);
SELECT bad($$SELECT chash_set_shard('heavy', 'a', 1e308)$$);
SELECT bad($$UPDATE chash_shard SET weight = 1e308 WHERE directory = 'heavy' AND shard = 'b'$$);
SELECT bad($$INSERT INTO chash_shard (directory, shard, weight) VALUES ('heavy', 'e', 1e308), ('heavy', 'f', 1e308)$$);
SELECT shard, weight, slots, target_share > 0.99 AS takes_all FROM chash_shard_load
 WHERE directory = 'heavy' ORDER BY shard;
SELECT count(*) AS moves, count(*) FILTER (WHERE to_shard = 'c') AS to_heavy
  FROM chash_plan_rebalance('heavy');

-- Versions: written by hand at most 2^53 - 1 (22003); bumps go on from
-- there.  A version at the bigint maximum (only with the guard disabled)
-- fails every change with 22003 and says why.
SELECT bad($$UPDATE chash_directory SET version = 9223372036854775807 WHERE name = 'heavy'$$);
SELECT bad($$UPDATE chash_directory SET version = 9007199254740992 WHERE name = 'heavy'$$);
SELECT bad($$INSERT INTO chash_directory (name, version) VALUES ('v0', 0)$$);
SELECT bad($$INSERT INTO chash_directory (name, version) VALUES ('v0', 9007199254740992)$$);
UPDATE chash_directory SET version = 9007199254740991 WHERE name = 'heavy';
SELECT chash_set_shard('heavy', 'a', 2);
SELECT version FROM chash_directory WHERE name = 'heavy';
ALTER TABLE chash_directory DISABLE TRIGGER chash_directory_guard;
UPDATE chash_directory SET version = 9223372036854775807 WHERE name = 'heavy';
ALTER TABLE chash_directory ENABLE TRIGGER chash_directory_guard;
SELECT bad($$SELECT chash_set_shard('heavy', 'a', 3)$$);
SELECT bad($$SELECT chash_pin('heavy', 't', 'a')$$);
SELECT weight FROM chash_shard WHERE directory = 'heavy' AND shard = 'a';
SELECT chash_drop_directory('heavy');

-- Privileges: nothing is granted to PUBLIC; a role without grants gets
-- 42501 from every function; the documented grants are enough.
CREATE ROLE regress_chash_nobody;
CREATE ROLE regress_chash_app;
CREATE ROLE regress_chash_operator;
GRANT SELECT ON chash_directory, chash_shard, chash_slot, chash_override,
                chash_migration, chash_migration_step TO regress_chash_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON chash_directory, chash_shard, chash_slot, chash_override,
      chash_tenant_size, chash_migration, chash_migration_step TO regress_chash_operator;
GRANT USAGE ON SEQUENCE chash_migration_id_seq TO regress_chash_operator;
GRANT chash_operator TO regress_chash_operator;
SELECT c.relname, c.relacl IS NULL OR NOT EXISTS (
           SELECT 1 FROM aclexplode(c.relacl) a WHERE a.grantee = 0) AS nothing_for_public
FROM pg_class c JOIN pg_depend d ON d.objid = c.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'chash'
WHERE c.relkind IN ('r', 'v', 'S') ORDER BY c.relname;
SET ROLE regress_chash_nobody;
SELECT bad($$SELECT chash_route('orgs', 'x')$$);
SELECT bad($$SELECT chash_slot('orgs', 'x')$$);
SELECT bad($$SELECT chash_route_for_write('orgs', 'x')$$);
SELECT bad($$SELECT * FROM chash_route_explain('orgs', 'x')$$);
SELECT bad($$SELECT chash_directory_snapshot('orgs')$$);
SELECT bad($$SELECT * FROM chash_shard_load$$);
SELECT bad($$SELECT chash_pin('orgs', 'x', 's1')$$);
SELECT bad($$SELECT chash_create_directory('mine', ARRAY['a'])$$);
SELECT bad($$SELECT chash_drop_directory('orgs')$$);
RESET ROLE;
SELECT chash_route('orgs', 'x') AS warm_cache;   -- a cached directory is no way around
SET ROLE regress_chash_nobody;
SELECT bad($$SELECT chash_route('orgs', 'x')$$);
SET ROLE regress_chash_app;
SELECT chash_route('orgs', 'x') IS NOT NULL AS app_routes,
       (SELECT count(*) FROM chash_route_explain('orgs', 'x')) AS app_explains,
       chash_directory_snapshot('orgs') IS NOT NULL AS app_snapshots;
SELECT bad($$SELECT chash_pin('orgs', 'x', 's1')$$);
SELECT bad($$SELECT chash_set_shard('orgs', 's1', 2)$$);
SELECT bad($$UPDATE chash_slot SET shard = 's1' WHERE directory = 'orgs' AND slot = 5$$);
SET ROLE regress_chash_operator;
SELECT chash_pin('orgs', 'x', 's1');
SELECT chash_route('orgs', 'x');
SELECT chash_set_shard('orgs', 's1', 2);
SELECT chash_create_directory('ops', ARRAY['a', 'b'], 8);
SELECT chash_drop_directory('ops');
RESET ROLE;
DROP OWNED BY regress_chash_app, regress_chash_operator;
DROP ROLE regress_chash_nobody, regress_chash_app, regress_chash_operator;

SELECT chash_drop_directory(name) FROM chash_directory ORDER BY name;
