-- Consistent hashing with bounded loads (docs/placement.md).

SELECT * FROM chash_bounded_assign('{k1,k2,k3,k4,k5,k6,k7,k8}', '{a,b}', 0.01, 4);

-- 100,000 keys on 8 nodes, epsilon 0.05: capacity ceil(1.05 * 100000 / 8) = 13125.
CREATE TEMP TABLE placed AS
SELECT a.*, row_number() OVER () AS n
FROM chash_bounded_assign(ARRAY(SELECT 'key-' || i FROM generate_series(1, 100000) i),
                          '{n1,n2,n3,n4,n5,n6,n7,n8}', 0.05) a;
SELECT count(*) AS keys, count(*) FILTER (WHERE node <> first_choice) AS displaced,
       count(*) FILTER (WHERE first_choice <> chash_ring_lookup(key, '{n1,n2,n3,n4,n5,n6,n7,n8}')) AS first_choice_wrong,
       bool_and(key = 'key-' || n) AS in_key_order
FROM placed;
SELECT node, count(*) AS keys, count(*) <= 13125 AS within_capacity
FROM placed GROUP BY node ORDER BY node;
-- A key is displaced only from a node that was full at the time.
SELECT count(*) AS displaced_from_a_node_with_room
FROM placed p
LEFT JOIN (SELECT node, n AS full_at
           FROM (SELECT node, n, row_number() OVER (PARTITION BY node ORDER BY n) AS r FROM placed) x
           WHERE r = 13125) f ON f.node = p.first_choice
WHERE p.node <> p.first_choice AND (f.full_at IS NULL OR f.full_at > p.n);

-- Weights 1:1:2: capacities ceil(1.1 * 40000 * w / 4) = 11000, 11000, 22000.
SELECT node, count(*) AS keys,
       count(*) <= CASE node WHEN 'big' THEN 22000 ELSE 11000 END AS within_capacity
FROM chash_bounded_assign(ARRAY(SELECT 'key-' || i FROM generate_series(1, 40000) i),
                          '{s1,s2,big}', 0.1, 160, '{1,1,2}')
GROUP BY node ORDER BY node;

-- No keys: no rows.  NULL keys, nodes or epsilon: no rows.
SELECT count(*) AS no_keys FROM chash_bounded_assign('{}', '{a,b}');
SELECT count(*) AS null_keys FROM chash_bounded_assign(NULL, '{a,b}');
SELECT count(*) AS null_epsilon FROM chash_bounded_assign('{k}', '{a,b}', NULL);
