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

SELECT chash_drop_directory(name) FROM chash_directory WHERE name IN ('dc', 'dc_prune');
DELETE FROM chash_directory_dropped;
