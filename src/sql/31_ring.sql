-- ---------------------------------------------------------------------------
-- Consistent-hash ring with virtual nodes (SPEC 2.4)
-- Node n of weight w has round(vnodes * w) points at H(n || '#' || i).
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_ring_lookup(key text, nodes text[], vnodes int DEFAULT 160,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64') RETURNS text
    AS 'MODULE_PATHNAME', 'chash_ring_lookup'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_ring_lookup(text, text[], int, float8[], text) IS
    'owner of the key on a consistent-hash ring: the node of the first point at or clockwise after H(key)';

CREATE FUNCTION @extschema@.chash_ring_replicas(key text, nodes text[], k int, vnodes int DEFAULT 160,
        weights float8[] DEFAULT NULL, zones text[] DEFAULT NULL, hash text DEFAULT 'xxh64') RETURNS text[]
    AS 'MODULE_PATHNAME', 'chash_ring_replicas'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_ring_replicas(text, text[], int, int, float8[], text[], text) IS
    'the first k distinct nodes clockwise from the key''s owner on the ring, skipping nodes of a zone already used when zones are given';

CREATE FUNCTION @extschema@.chash_ring_points(nodes text[], vnodes int DEFAULT 160,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64')
    RETURNS TABLE (node text, vnode int, point bigint)
    AS 'MODULE_PATHNAME', 'chash_ring_points'
    LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 2560;
COMMENT ON FUNCTION @extschema@.chash_ring_points(text[], int, float8[], text) IS
    'every point of the ring in ring order (unsigned position, shown as a signed bigint)';

CREATE FUNCTION @extschema@.chash_ring_shares(nodes text[], vnodes int DEFAULT 160,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64')
    RETURNS TABLE (node text, points int, share float8)
    AS 'MODULE_PATHNAME', 'chash_ring_shares'
    LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 16;
COMMENT ON FUNCTION @extschema@.chash_ring_shares(text[], int, float8[], text) IS
    'per node, its number of points and the exact fraction of the 2^64 ring it owns (the shares sum to 1)';
