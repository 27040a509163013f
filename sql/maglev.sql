-- Maglev (docs/placement.md): tables, balance, disruption, weights, lookups.

SELECT * FROM chash_maglev_table('{a,b,c}', 7);
SELECT chash_maglev('tenant-42', '{a,b,c}') AS backend,
       chash_maglev('tenant-42', '{a,b,c}', 13, hash => 'md5') AS md5_backend;

-- Every backend holds floor(M/N) or ceil(M/N) entries: 16 backends, 65,537 slots.
CREATE TEMP TABLE t16 AS
SELECT * FROM chash_maglev_table(ARRAY(SELECT 'b' || lpad(i::text, 2, '0') FROM generate_series(1, 16) i));
SELECT count(*) AS slots, count(DISTINCT backend) AS backends,
       min(n) AS fewest, max(n) AS most, bool_and(n IN (65537 / 16, 65537 / 16 + 1)) AS balanced
FROM t16 JOIN (SELECT backend, count(*) AS n FROM t16 GROUP BY 1) c USING (backend);

-- b05 leaves: its slots change, and only a small share of the others.
CREATE TEMP TABLE t15 AS
SELECT * FROM chash_maglev_table(ARRAY(SELECT 'b' || lpad(i::text, 2, '0') FROM generate_series(1, 16) i WHERE i <> 5));
SELECT count(*) FILTER (WHERE a.backend = 'b05') AS b05_slots,
       count(*) FILTER (WHERE a.backend <> 'b05' AND a.backend <> b.backend) AS other_slots_changed,
       count(*) FILTER (WHERE a.backend <> 'b05' AND a.backend <> b.backend)
           < 0.02 * count(*) FILTER (WHERE a.backend <> 'b05') AS under_2_percent,
       (SELECT bool_and(n IN (65537 / 15, 65537 / 15 + 1))
        FROM (SELECT count(*) AS n FROM t15 GROUP BY backend) c) AS still_balanced
FROM t16 a JOIN t15 b USING (slot);

-- Lookups are the table entry at H(key) mod M.
CREATE TEMP TABLE keys AS SELECT 'key-' || i AS k FROM generate_series(1, 100000) i;
SELECT count(*) FILTER (WHERE chash_maglev(k, '{a,b,c,d}', 13) <> t.backend) AS mismatches
FROM keys JOIN chash_maglev_table('{a,b,c,d}', 13) t
    ON t.slot = ((chash_xxh64(k)::numeric + CASE WHEN chash_xxh64(k) < 0 THEN 2::numeric ^ 64 ELSE 0 END) % 13)::int
WHERE k LIKE '%3';

-- A fifth backend joins four: about 1/5 of the keys move, nearly all onto it.
SELECT count(*) FILTER (WHERE a <> b) AS moved,
       count(*) FILTER (WHERE a <> b) BETWEEN 19000 AND 23000 AS about_a_fifth,
       count(*) FILTER (WHERE a <> b AND b <> 'n5') < 2000 AS few_elsewhere
FROM (SELECT chash_maglev(k, '{n1,n2,n3,n4}') AS a,
             chash_maglev(k, '{n1,n2,n3,n4,n5}') AS b FROM keys) t;

-- Weights 1:2:3:4: entries within half a point of 10/20/30/40 %, and keys
-- within a point; equal weights build the unweighted table.
SELECT backend, count(*) AS slots, abs(count(*) / 65537.0 - w / 10.0) < 0.005 AS slots_ok
FROM chash_maglev_table('{w1,w2,w3,w4,w0}', 65537, '{1,2,3,4,0}')
JOIN (VALUES ('w1', 1), ('w2', 2), ('w3', 3), ('w4', 4)) AS v(backend, w) USING (backend)
GROUP BY backend, w ORDER BY backend;
SELECT count(*) FILTER (WHERE backend = 'w0') AS weight_0_slots
FROM chash_maglev_table('{w1,w2,w3,w4,w0}', 65537, '{1,2,3,4,0}');
SELECT bool_and(abs(n / 100000.0 - w / 10.0) < 0.01) AS key_shares_ok
FROM (SELECT chash_maglev(k, '{w1,w2,w3,w4}', 65537, '{1,2,3,4}') AS backend, count(*) AS n
      FROM keys GROUP BY 1) c
JOIN (VALUES ('w1', 1), ('w2', 2), ('w3', 3), ('w4', 4)) AS v(backend, w) USING (backend);
SELECT count(*) FILTER (WHERE a.backend <> b.backend) AS equal_weight_differences
FROM chash_maglev_table('{a,b,c,d,e}', 1009, '{3,3,3,3,3}') a
JOIN chash_maglev_table('{a,b,c,d,e}', 1009) b USING (slot);

-- NULLs: NULL key, backends, table_size or hash gives NULL / no rows.
SELECT chash_maglev(NULL, '{a}') IS NULL AS null_key,
       chash_maglev('k', NULL) IS NULL AS null_backends,
       chash_maglev('k', '{a}', NULL) IS NULL AS null_size,
       (SELECT count(*) FROM chash_maglev_table('{a}', NULL)) AS null_size_rows,
       chash_maglev('k', '{a,b}', 7, NULL) = chash_maglev('k', '{a,b}', 7) AS null_weights;
