-- Ketama (docs/placement.md) against libmemcached 1.1.4 (Debian libmemcached-dev) in
-- its weighted ketama mode, which builds libketama's continuum; the vectors
-- come from tests/reference/ketama_libmemcached (see its header for the
-- two corner cases where libmemcached departs from libketama, avoided
-- there).  Unweighted sets pass no weights: 40 digests per server.

CREATE TEMP TABLE ketama_sets (set_id int, servers text[], weights float8[]);
\copy ketama_sets FROM 'sql/data/ketama_sets.csv' WITH (FORMAT csv, HEADER true)
CREATE TEMP TABLE ketama_vectors (set_id int, key text, server text);
\copy ketama_vectors FROM 'sql/data/ketama_libmemcached.csv' WITH (FORMAT csv, HEADER true)

SELECT s.set_id, array_length(s.servers, 1) AS servers, s.weights, count(*) AS vectors,
       count(*) FILTER (WHERE chash_ketama(v.key, s.servers, s.weights) <> v.server) AS mismatches
FROM ketama_vectors v JOIN ketama_sets s USING (set_id)
GROUP BY s.set_id, s.servers, s.weights ORDER BY s.set_id;
SELECT v.*, chash_ketama(v.key, s.servers, s.weights) AS got
FROM ketama_vectors v JOIN ketama_sets s USING (set_id)
WHERE chash_ketama(v.key, s.servers, s.weights) <> v.server LIMIT 5;

-- The same lists as constants (the cached fast path) agree too.
SELECT count(*) FILTER (WHERE chash_ketama(key, '{10.0.0.1:11212,10.0.0.2:11212,10.0.0.3:11212,10.0.0.4:11212,10.0.0.5:11212,10.0.0.6:11212,10.0.0.7:11212}') <> server) AS seven_server_mismatches
FROM ketama_vectors WHERE set_id = 2;

-- Equal weights follow libketama's float formula: 40 digests each for 7
-- servers, as without weights.
SELECT count(*) FILTER (WHERE chash_ketama(key, s.servers, '{1,1,1,1,1,1,1}')
                        <> chash_ketama(key, s.servers)) AS equal_weight_differences
FROM ketama_vectors v JOIN ketama_sets s USING (set_id) WHERE set_id = 2;

-- Weights 1:2:3:4 (16, 32, 48 and 64 digests): key shares within 3 points
-- of 10/20/30/40 % over 100,000 keys.
SELECT server, count(*) AS keys, abs(count(*) / 100000.0 - w / 10.0) < 0.03 AS share_ok
FROM (SELECT chash_ketama('key-' || i, '{s1:1,s2:1,s3:1,s4:1}', '{1,2,3,4}') AS server
      FROM generate_series(1, 100000) i) t
JOIN (VALUES ('s1:1', 1), ('s2:1', 2), ('s3:1', 3), ('s4:1', 4)) AS v(server, w) USING (server)
GROUP BY server, w ORDER BY server;

-- Weight 0: never chosen.  NULL key or servers: NULL.
SELECT count(*) FILTER (WHERE chash_ketama('k' || i, '{a:1,b:1,c:1}', '{1,0,1}') = 'b:1') AS zero_weight_hits
FROM generate_series(1, 10000) i;
SELECT chash_ketama(NULL, '{a}') IS NULL AS null_key, chash_ketama('k', NULL) IS NULL AS null_servers,
       chash_ketama('k', '{a,b}', NULL) IS NOT NULL AS null_weights_mean_none;
