-- Consistent-hash ring with virtual nodes (docs/placement.md): points, shares,
-- lookups, replicas with zones, and the properties over 100,000 keys.

-- Points in ring order (unsigned: the negative bigints come last).
SELECT * FROM chash_ring_points('{a,b}', 3);
SELECT bool_and(p < q) AS ascending_unsigned
FROM (SELECT point::numeric + CASE WHEN point < 0 THEN 2::numeric ^ 64 ELSE 0 END AS p,
             lead(point::numeric + CASE WHEN point < 0 THEN 2::numeric ^ 64 ELSE 0 END)
                 OVER () AS q
      FROM chash_ring_points('{n1,n2,n3,n4,n5}')) t WHERE q IS NOT NULL;

-- round(vnodes * w) points (halves away from zero): 2.5 -> 3, 0.4 -> 0.
SELECT * FROM chash_ring_shares('{a,b,c}', 10, '{0.25,1.5,0.04}');

CREATE TEMP TABLE keys AS SELECT 'key-' || i AS k FROM generate_series(1, 100000) i;

-- Shares sum to 1 and match the key counts.
SELECT node, points, round(share::numeric, 4) AS share FROM chash_ring_shares('{n1,n2,n3,n4,n5}');
SELECT abs(sum(share) - 1) < 1e-12 AS sums_to_1 FROM chash_ring_shares('{n1,n2,n3,n4,n5}');
SELECT bool_and(abs(s.share - c.keys / 100000.0) < 0.005) AS counts_match_shares
FROM chash_ring_shares('{n1,n2,n3,n4,n5}') s
JOIN (SELECT chash_ring_lookup(k, '{n1,n2,n3,n4,n5}') AS node, count(*) AS keys
      FROM keys GROUP BY 1) c USING (node);

\set lookup chash_ring_lookup
\set moved_low 15000
\set moved_high 25000
\i sql/include/churn.sql

-- Weights 1:2:3:4 (1,000 vnodes): shares within 1.5 points of 10/20/30/40 %.
SELECT node, points, abs(share - w / 10.0) < 0.015 AS share_ok,
       abs(keys / 100000.0 - w / 10.0) < 0.015 AS keys_ok
FROM chash_ring_shares('{w1,w2,w3,w4}', 1000, '{1,2,3,4}')
JOIN (VALUES ('w1', 1), ('w2', 2), ('w3', 3), ('w4', 4)) AS v(node, w) USING (node)
JOIN (SELECT chash_ring_lookup(k, '{w1,w2,w3,w4}', 1000, '{1,2,3,4}') AS node, count(*) AS keys
      FROM keys GROUP BY 1) c USING (node)
ORDER BY node;

-- Replicas: distinct nodes, the owner first; with zones, distinct zones.
SELECT count(*) FILTER (WHERE r[1] <> chash_ring_lookup(k, '{n1,n2,n3,n4,n5,n6}')) AS owner_not_first,
       count(*) FILTER (WHERE (SELECT count(DISTINCT x) FROM unnest(r) x) <> 3) AS not_distinct
FROM (SELECT k, chash_ring_replicas(k, '{n1,n2,n3,n4,n5,n6}', 3) AS r
      FROM keys WHERE k LIKE '%7') t;
SELECT count(*) FILTER (WHERE (SELECT count(DISTINCT z.zone)
                               FROM unnest(r) x JOIN (VALUES ('n1', 'east'), ('n2', 'east'), ('n3', 'west'),
                                                             ('n4', 'west'), ('n5', 'north'), ('n6', 'north')) AS z(node, zone)
                                                ON z.node = x) <> 3) AS zone_repeated
FROM (SELECT chash_ring_replicas(k, '{n1,n2,n3,n4,n5,n6}', 3,
                                 zones => '{east,east,west,west,north,north}') AS r
      FROM keys WHERE k LIKE '%7') t;
SELECT chash_ring_replicas('key-1', '{n1,n2,n3,n4,n5,n6}', 6) AS all_six,
       chash_ring_replicas('key-1', '{n1,n2,n3,n4,n5,n6}', 3, zones => '{east,east,west,west,north,north}') AS three_zones;

-- 1,000 nodes x 160 vnodes builds well under a second.
SELECT count(*) AS points FROM chash_ring_points(ARRAY(SELECT 'node-' || i FROM generate_series(1, 1000) i));
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() AS t;
SELECT chash_ring_lookup('x', ARRAY(SELECT 'node-' || i FROM generate_series(1, 1000) i)) IS NOT NULL AS built;
SELECT clock_timestamp() - t < interval '1 second' AS under_a_second FROM t0;

-- NULLs: a NULL key, node array, vnodes, k or hash gives NULL (no rows for
-- the set-returning functions); NULL weights and zones mean none.
SELECT chash_ring_lookup(NULL, '{a}') IS NULL AS null_key,
       chash_ring_lookup('k', NULL) IS NULL AS null_nodes,
       chash_ring_lookup('k', '{a}', NULL) IS NULL AS null_vnodes,
       chash_ring_replicas('k', '{a,b}', NULL) IS NULL AS null_k,
       chash_ring_replicas('k', '{a,b}', 2, zones => NULL) = chash_ring_replicas('k', '{a,b}', 2) AS null_zones,
       (SELECT count(*) FROM chash_ring_points(NULL)) AS null_points_rows;
