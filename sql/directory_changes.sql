-- The change history of a directory (docs/directory.md, "Changes"):
-- versions unique per name across drop and re-creation, the changes feed
-- and its pruning.  That applying chash_directory_changes(d, v) to the
-- snapshot at v gives the current snapshot, over random change sequences,
-- is t/060_routing_model.pl; NOTIFY is specs/directory_notify.spec.
\i sql/include/bad.sql

-- A re-created directory continues after the version its drop reached.
SELECT chash_create_directory('dc', ARRAY['s1', 's2'], 8);
SELECT chash_pin('dc', 't1', 's2');
SELECT version FROM chash_directory WHERE name = 'dc';
SELECT chash_drop_directory('dc');
SELECT * FROM chash_directory_dropped WHERE name = 'dc';
SELECT chash_create_directory('dc', ARRAY['s1', 's2'], 8);
SELECT version FROM chash_directory WHERE name = 'dc';
SELECT count(*) AS dropped_rows FROM chash_directory_dropped WHERE name = 'dc';
-- the old incarnation's versions name no state of this one
SELECT chash_directory_changes('dc', 2);
SELECT chash_directory_changes('dc', 4);
SELECT chash_pin('dc', 't1', 's1');
SELECT chash_directory_changes('dc', 4);
UPDATE chash_slot SET shard = 's1' WHERE directory = 'dc' AND slot IN (5, 6);
SELECT chash_directory_changes('dc', 4);
SELECT chash_directory_changes('dc', 5);
SELECT chash_add_shard('dc', 's3');
SELECT chash_directory_changes('dc', 6) -> 'shards' AS shards;
SELECT chash_directory_changes('dc', 99);
-- a truncate is recorded as a full change
TRUNCATE chash_override;
SELECT chash_directory_changes('dc', 6);
SELECT bad($$SELECT chash_directory_changes('nope', 1)$$);
SELECT chash_directory_changes(NULL, 1) IS NULL AS strict;

-- History is pruned to the last 1,000 versions, a hundred at a time.
SELECT chash_create_directory('dc_prune', ARRAY['s1', 's2'], 8);
UPDATE chash_directory SET version = 150 WHERE name = 'dc_prune';
UPDATE chash_directory SET version = 1199 WHERE name = 'dc_prune';
SELECT chash_pin('dc_prune', 't', 's1');
SELECT version, kind, key FROM chash_directory_change WHERE directory = 'dc_prune' AND kind <> 'origin' ORDER BY 1, 2, 3;
-- every version also names the server that made it (docs/shards.md, "Failover")
SELECT count(*) FILTER (WHERE kind = 'origin') = count(*) FILTER (WHERE kind = 'version') AS each_version_has_its_origin,
       bool_and(key = chash_server_identity()) FILTER (WHERE kind = 'origin') AS made_here
  FROM chash_directory_change WHERE directory = 'dc_prune';
SELECT (chash_directory_changes('dc_prune', 1) ->> 'full')::bool AS full_from_1,
       (chash_directory_changes('dc_prune', 150) ->> 'full')::bool AS full_from_150;

-- A statement that changes more than 16 slots of a directory (a batch's
-- completion) records 'slots' keys of up to 200 slots each, in slot order;
-- 16 or fewer are 'slot' keys.  The routing cache of this session, warm
-- from before, catches up from them slot by slot.
SELECT chash_create_directory('dc_batch', ARRAY['s1', 's2'], 512);
CREATE TEMP TABLE dc_tenants AS SELECT 'tenant-' || g AS tenant FROM generate_series(1, 3000) g;
SELECT count(*) AS routed FROM dc_tenants WHERE chash_route('dc_batch', tenant) IS NOT NULL;
SELECT version AS v0 FROM chash_directory WHERE name = 'dc_batch' \gset
UPDATE chash_slot SET shard = CASE shard WHEN 's1' THEN 's2' ELSE 's1' END
 WHERE directory = 'dc_batch' AND slot BETWEEN 30 AND 479;
UPDATE chash_slot SET shard = 's1' WHERE directory = 'dc_batch' AND slot IN (500, 501, 502);
SELECT version - :v0 AS version, kind, cardinality(string_to_array(key, ',')) AS slots,
       split_part(key, ',', 1) AS first, reverse(split_part(reverse(key), ',', 1)) AS last
  FROM chash_directory_change WHERE directory = 'dc_batch' AND version > :v0 AND kind IN ('slot', 'slots')
 ORDER BY version, split_part(key, ',', 1)::int;
SELECT count(*) AS misrouted FROM dc_tenants t
 WHERE chash_route('dc_batch', t.tenant) IS DISTINCT FROM
       (SELECT o.shard FROM chash_slot o WHERE o.directory = 'dc_batch' AND o.slot = chash_slot('dc_batch', t.tenant));
SELECT jsonb_array_length(chash_directory_changes('dc_batch', :v0) -> 'slots') AS runs,
       chash_directory_changes('dc_batch', :v0) -> 'slots' -> 0 AS first_run,
       chash_directory_changes('dc_batch', :v0) -> 'slots' -> -1 AS last_run;

-- A transaction's own changes load the directory once for a statement
-- that routes after them, also where it runs in a copied snapshot (the
-- statements of a SQL function, which PostgreSQL gives no completion
-- count), not once for every tenant it routes.
CREATE FUNCTION dc_route_all() RETURNS bigint LANGUAGE sql STABLE AS
$$ SELECT count(*) FROM dc_tenants t, LATERAL chash_route_explain('dc_batch', t.tenant) e
   WHERE chash_route('dc_batch', t.tenant) = e.shard $$;
BEGIN;
SELECT chash_pin('dc_batch', 'tenant-1', 's1');
CREATE TEMP TABLE dc_cache0 AS SELECT * FROM chash_routing_cache_stats();
SELECT dc_route_all() AS routed;
SELECT c.loads - s.loads AS loaded FROM chash_routing_cache_stats() c, dc_cache0 s;
SELECT dc_route_all() AS routed;
SELECT c.loads - s.loads AS loaded FROM chash_routing_cache_stats() c, dc_cache0 s;
ROLLBACK;
DROP FUNCTION dc_route_all();

SELECT chash_drop_directory(name) FROM chash_directory WHERE name IN ('dc', 'dc_prune', 'dc_batch');
DELETE FROM chash_directory_dropped;
