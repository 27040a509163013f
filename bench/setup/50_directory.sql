-- The shard directory (docs/directory.md).
--  bench_tenants: 1,000,000 rows over 100,000 distinct tenants, routed
--    through 'bench' (16,384 slots, 8 shards, 10,000 overrides); a fresh
--    backend loads the directory once per query, amortised over the rows.
--  bench_sql_route: the same lookup done by SQL, joining the tenants
--    against chash_slot and chash_override.
--  bench_one: one row, routed through 'bench_big' (1,048,576 slots,
--    100,000 overrides): the query's time is the cold cache load.
SELECT chash_drop_directory(name) FROM chash_directory WHERE name IN ('bench', 'bench_big');
SELECT chash_create_directory('bench', ARRAY['s1', 's2', 's3', 's4', 's5', 's6', 's7', 's8'], 16384);
INSERT INTO chash_override (directory, tenant, shard)
SELECT 'bench', 'tenant-' || i, 's' || (1 + i % 8) FROM generate_series(10, 100000, 10) AS i;

DROP TABLE IF EXISTS bench_tenants CASCADE;
CREATE TABLE bench_tenants AS
    SELECT 'tenant-' || (1 + (i::bigint * 7919) % 100000) AS k FROM generate_series(1, 1000000) AS i;

CREATE VIEW bench_sql_route AS
    SELECT t.k, coalesce(o.shard, s.shard) AS shard
    FROM bench_tenants t
    LEFT JOIN chash_override o ON o.directory = 'bench' AND o.tenant = t.k
    JOIN chash_slot s ON s.directory = 'bench' AND s.slot = chash_mod(t.k, 16384);

SELECT chash_create_directory('bench_big', ARRAY['s1', 's2', 's3', 's4', 's5', 's6', 's7', 's8'], 1048576);
INSERT INTO chash_override (directory, tenant, shard)
SELECT 'bench_big', 'whale-' || i, 's' || (1 + i % 8) FROM generate_series(1, 100000) AS i;
DROP TABLE IF EXISTS bench_one;
CREATE TABLE bench_one AS SELECT 'tenant-1'::text AS k;

-- Planning: 1,048,576 slots over 64 shards, the 64th just added (it owns
-- nothing; the plan moves 1/64 of the slots onto it).
SELECT chash_drop_directory(name) FROM chash_directory WHERE name = 'bench_plan';
SELECT chash_create_directory('bench_plan', array_agg('p' || i ORDER BY i), 1048576)
FROM generate_series(1, 63) AS i;
SELECT chash_add_shard('bench_plan', 'p64');
