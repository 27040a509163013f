-- The guard (docs/shards.md, "The guard"): this database joins directory
-- 'bench_guard' as its only shard, so every tenant routes here and every
-- guarded INSERT is admitted.  Each row of bench_insert_keys runs one
-- single-row INSERT statement (a plpgsql function: a cached plan, the
-- executor started and the row trigger fired per call) into a narrow
-- table with a primary key, guarded or not.
SELECT chash_shard_leave('bench_guard') FROM chash_shard_member WHERE directory = 'bench_guard';
SELECT chash_drop_directory(name) FROM chash_directory WHERE name = 'bench_guard';
DROP TABLE IF EXISTS bench_guarded, bench_unguarded, bench_insert_keys;
DROP SEQUENCE IF EXISTS bench_insert_ids;
CREATE TABLE bench_guarded (org_id text, id bigint, PRIMARY KEY (org_id, id));
CREATE TABLE bench_unguarded (org_id text, id bigint, PRIMARY KEY (org_id, id));
CREATE SEQUENCE bench_insert_ids;
SELECT chash_create_directory('bench_guard', ARRAY['s1'], 16384);
SELECT chash_add_table('bench_guard', 'public.bench_guarded', 'org_id');
SELECT chash_shard_join('bench_guard', 's1', NULL);
CREATE TABLE bench_insert_keys AS SELECT 'tenant-' || (i % 1000) AS k FROM generate_series(1, 20000) AS i;

CREATE OR REPLACE FUNCTION bench_guarded_insert(k text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bench_guarded VALUES (k, nextval('bench_insert_ids'));
    RETURN 1;
END $$;
CREATE OR REPLACE FUNCTION bench_unguarded_insert(k text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bench_unguarded VALUES (k, nextval('bench_insert_ids'));
    RETURN 1;
END $$;
