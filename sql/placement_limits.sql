-- Placement builds at their limits (the conventions in docs/reference.md): structures that would come
-- out empty are argument errors (a lookup on them would read past the
-- end), never a crash; user text quoted in messages is cut to 200 bytes.
\i sql/include/bad.sql

-- Ketama: each weight is 0 in single precision, but their sum is not, so
-- no server gets a point.
SELECT bad($$SELECT chash_ketama('k', '{a,b}', '{5e-46,5e-46}')$$);
SELECT bad($$SELECT chash_ketama('k', '{a,b,c}', '{5e-46,5e-46,5e-46}')$$);
SELECT bad($$SELECT chash_ketama(k, '{a,b}', '{5e-46,5e-46}') FROM (VALUES ('x'), ('y')) v(k)$$);
-- One weight that is a float (the smallest one) is enough for a continuum.
SELECT chash_ketama('k', '{a,b}', '{1.5e-45,5e-46}') AS ketama_smallest_float;

-- Ring: every node's round(vnodes * weight) is 0, in each function built on it.
SELECT bad($$SELECT chash_ring_lookup('k', '{a,b}', 1, '{0.4,0.49}')$$);
SELECT bad($$SELECT chash_ring_lookup('k', '{a,b}', 160, '{1e-300,5e-324}')$$);
SELECT bad($$SELECT chash_ring_replicas('k', '{a,b}', 1, 1, '{0.4,0.49}')$$);
SELECT bad($$SELECT chash_ring_replicas('k', '{a,b}', 1, 1, '{0.4,0.49}', '{z1,z2}')$$);
SELECT bad($$SELECT * FROM chash_ring_points('{a,b}', 1, '{0.4,0.49}')$$);
SELECT bad($$SELECT * FROM chash_ring_shares('{a,b}', 1, '{0.4,0.49}')$$);
SELECT bad($$SELECT * FROM chash_bounded_assign('{k}', '{a,b}', 0.25, 1, '{0.4,0.49}')$$);
SELECT bad($$SELECT * FROM chash_bounded_assign('{}', '{a,b}', 0.25, 1, '{0.4,0.49}')$$);
-- Half a point rounds up: one point is a ring.
SELECT chash_ring_lookup('k', '{a,b}', 1, '{0.4,0.5}') AS ring_one_point;

-- Maglev and rendezvous with the smallest doubles still place every key:
-- weights are compared relative to the largest.
SELECT chash_maglev('k', '{a,b}', 7, '{5e-324,0}') AS maglev_denormal,
       (SELECT count(DISTINCT backend) FROM chash_maglev_table('{a,b,c}', 7, '{5e-324,5e-324,0}')) AS maglev_backends,
       chash_rendezvous('k', '{a,b}', '{5e-324,0}') AS rendezvous_denormal,
       chash_rendezvous_top('k', '{a,b,c}', 2, '{5e-324,1e-300,0}') AS rendezvous_top_denormal;

-- Maglev: one backend of weight 1 and 60,000 of weight 0 used to be asked
-- for their turn every round (65,537 x 60,001 times, seconds).  Now only
-- backends due for a turn are visited; the table is all "b0".
SELECT count(*) FILTER (WHERE backend = 'b0') AS b0_slots, count(*) AS slots
FROM chash_maglev_table(ARRAY(SELECT 'b' || i FROM generate_series(0, 60000) i), 65537,
                        ARRAY(SELECT CASE WHEN i = 0 THEN 1 ELSE 0 END FROM generate_series(0, 60000) i));

-- rendezvous_top with k = n ranks through a heap: the same list as k = 3
-- at the front, every node once.
SELECT t[1:3] = chash_rendezvous_top('k', a, 3) AS same_front,
       cardinality(t) = 2000 AND (SELECT count(DISTINCT x) FROM unnest(t) x) = 2000 AS all_nodes
FROM (SELECT a, chash_rendezvous_top('k', a, 2000) AS t
      FROM (SELECT ARRAY(SELECT 'n' || i FROM generate_series(1, 2000) i) AS a) s) s;
SELECT t[1:3] = chash_rendezvous_top('k', a, 3, w) AS same_front_weighted,
       cardinality(t) = 1500 AS positive_nodes
FROM (SELECT a, w, chash_rendezvous_top('k', a, 1500, w) AS t
      FROM (SELECT ARRAY(SELECT 'n' || i FROM generate_series(1, 2000) i) AS a,
                   ARRAY(SELECT (i % 4)::float8 FROM generate_series(1, 2000) i) AS w) s) s;

-- Quoted user text: at most 200 bytes, cut on a character boundary.
SELECT length(m) AS message_chars, octet_length(m) AS message_bytes
FROM (SELECT bad(format($$SELECT chash_ring_lookup('k', ARRAY[%L, %L])$$,
                        repeat('x', 300), repeat('x', 300))) AS m) b;
SELECT length(m) AS message_chars, octet_length(m) AS message_bytes,
       m LIKE '%' || repeat('é', 100) || '" appears%' AS cut_after_100_chars
FROM (SELECT bad(format($$SELECT chash_maglev('k', ARRAY[%L, %L])$$,
                        repeat('é', 150), repeat('é', 150))) AS m) b;
SELECT length(m) AS message_chars
FROM (SELECT bad(format($$SELECT chash_ring_lookup('k', '{a}', hash => %L)$$,
                        repeat('h', 5000))) AS m) b;
SELECT bad(format($$SELECT chash_rendezvous('k', '{a}', hash => %L)$$, repeat('é', 101)));
