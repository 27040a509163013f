-- ---------------------------------------------------------------------------
-- Consistent hashing with bounded loads (SPEC 2.7)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_bounded_assign(keys text[], nodes text[], epsilon float8 DEFAULT 0.25,
        vnodes int DEFAULT 160, weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64')
    RETURNS TABLE (key text, node text, first_choice text)
    AS 'MODULE_PATHNAME', 'chash_bounded_assign'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_bounded_assign(text[], text[], float8, int, float8[], text) IS
    'places the keys in order on the ring, each node holding at most ceil((1 + epsilon) * K / N) keys (weighted: K * w / sum(w)); first_choice is the plain ring owner';
