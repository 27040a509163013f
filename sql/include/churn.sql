-- The churn properties of a placement over the temp table keys (k text):
-- :lookup is its function (key, nodes), :moved_low and :moved_high the
-- bounds of the keys that move when a fifth node joins four.

-- A fifth node joins four: about 1/5 of the keys move, all onto it.
SELECT count(*) FILTER (WHERE a <> b) AS moved,
       count(*) FILTER (WHERE a <> b) BETWEEN :moved_low AND :moved_high AS about_a_fifth,
       count(*) FILTER (WHERE a <> b AND b <> 'n5') AS moved_elsewhere
FROM (SELECT :lookup(k, '{n1,n2,n3,n4}') AS a,
             :lookup(k, '{n1,n2,n3,n4,n5}') AS b FROM keys) t;

-- n2 leaves: only its keys move.
SELECT count(*) FILTER (WHERE a = 'n2') AS n2_keys,
       count(*) FILTER (WHERE a <> b AND a <> 'n2') AS other_keys_moved
FROM (SELECT :lookup(k, '{n1,n2,n3,n4,n5}') AS a,
             :lookup(k, '{n1,n3,n4,n5}') AS b FROM keys) t;
