-- The 'md5' hash family of the placement functions against an independent
-- python3 hashlib reference (tests/reference/placement_md5 wrote the data
-- files; it is the way Python tutorials build rings).  Each query prints
-- counts, then any mismatching rows (none expected).

CREATE TEMP TABLE md5_sets (set_id int, nodes text[], vnodes int, weights float8[],
                            zones text[], k int, table_size int);
\copy md5_sets FROM 'sql/data/placement_md5_sets.csv' WITH (FORMAT csv, HEADER true)
CREATE TEMP TABLE md5_ring (set_id int, key text, owner text, replicas text[]);
\copy md5_ring FROM 'sql/data/placement_md5_ring.csv' WITH (FORMAT csv, HEADER true)
CREATE TEMP TABLE md5_rendezvous (set_id int, key text, winner text, top text[]);
\copy md5_rendezvous FROM 'sql/data/placement_md5_rendezvous.csv' WITH (FORMAT csv, HEADER true)
CREATE TEMP TABLE md5_maglev (set_id int, slot int, backend text);
\copy md5_maglev FROM 'sql/data/placement_md5_maglev.csv' WITH (FORMAT csv, HEADER true)

SELECT set_id, array_length(nodes, 1) AS nodes, vnodes, weights, zones, k, table_size
FROM md5_sets ORDER BY set_id;

-- Ring owners and replica lists (zones for set 3).
CREATE TEMP TABLE ring_result AS
SELECT r.*, chash_ring_lookup(r.key, s.nodes, s.vnodes, s.weights, 'md5') AS got_owner,
       chash_ring_replicas(r.key, s.nodes, s.k, s.vnodes, s.weights, s.zones, 'md5') AS got_replicas
FROM md5_ring r JOIN md5_sets s USING (set_id);
SELECT set_id, count(*) AS vectors,
       count(*) FILTER (WHERE got_owner <> owner) AS owner_mismatches,
       count(*) FILTER (WHERE got_replicas <> replicas) AS replica_mismatches
FROM ring_result GROUP BY set_id ORDER BY set_id;
SELECT * FROM ring_result WHERE got_owner <> owner OR got_replicas <> replicas LIMIT 5;

-- Rendezvous winners and top-k (weights for sets 2, 4, 5).
CREATE TEMP TABLE rendezvous_result AS
SELECT r.*, chash_rendezvous(r.key, s.nodes, s.weights, 'md5') AS got_winner,
       chash_rendezvous_top(r.key, s.nodes, s.k, s.weights, 'md5') AS got_top
FROM md5_rendezvous r JOIN md5_sets s USING (set_id);
SELECT set_id, count(*) AS vectors,
       count(*) FILTER (WHERE got_winner <> winner) AS winner_mismatches,
       count(*) FILTER (WHERE got_top <> top) AS top_mismatches
FROM rendezvous_result GROUP BY set_id ORDER BY set_id;
SELECT * FROM rendezvous_result WHERE got_winner <> winner OR got_top <> top LIMIT 5;

-- Whole Maglev tables, and lookups through them.
CREATE TEMP TABLE maglev_result AS
SELECT s.set_id, t.slot, t.backend AS got_backend
FROM md5_sets s, chash_maglev_table(s.nodes, s.table_size, s.weights, 'md5') t;
SELECT m.set_id, count(*) AS slots,
       count(*) FILTER (WHERE r.got_backend IS DISTINCT FROM m.backend) AS slot_mismatches
FROM md5_maglev m LEFT JOIN maglev_result r USING (set_id, slot)
GROUP BY m.set_id ORDER BY m.set_id;
SELECT (SELECT count(*) FROM maglev_result) = (SELECT count(*) FROM md5_maglev) AS same_table_sizes;
SELECT count(*) AS lookups,
       count(*) FILTER (WHERE chash_maglev(r.key, s.nodes, s.table_size, s.weights, 'md5')
                        <> m.backend) AS lookup_mismatches
FROM md5_ring r JOIN md5_sets s USING (set_id)
JOIN md5_maglev m ON m.set_id = s.set_id
    AND m.slot = ((chash_md5_64(r.key)::numeric + CASE WHEN chash_md5_64(r.key) < 0 THEN 2::numeric ^ 64 ELSE 0 END)
                  % s.table_size)::int;
