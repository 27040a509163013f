-- ---------------------------------------------------------------------------
-- Rendezvous / highest random weight (SPEC 2.3)
-- Not STRICT: weights DEFAULT NULL means "not given"; the C code returns
-- NULL itself for a NULL key, node array, k or hash.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_rendezvous(key text, nodes text[],
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64') RETURNS text
    AS 'MODULE_PATHNAME', 'chash_rendezvous'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_rendezvous(text, text[], float8[], text) IS
    'rendezvous (highest random weight) winner for the key among the nodes; weighted bids are -w / ln((S + 1) / (2^64 + 1))';

CREATE FUNCTION @extschema@.chash_rendezvous_top(key text, nodes text[], k int,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64') RETURNS text[]
    AS 'MODULE_PATHNAME', 'chash_rendezvous_top'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_rendezvous_top(text, text[], int, float8[], text) IS
    'the k highest rendezvous bidders for the key, best first (a replica list)';
