-- ---------------------------------------------------------------------------
-- Maglev (SPEC 2.6)
-- Weighted rule: in round r = 1, 2, ... backend i (in array order) takes a
-- turn when floor(r * q) > floor((r - 1) * q), q = w_i / max(w), in double
-- precision; the heaviest take a turn every round, weight 0 never.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_maglev(key text, backends text[], table_size int DEFAULT 65537,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64') RETURNS text
    AS 'MODULE_PATHNAME', 'chash_maglev'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_maglev(text, text[], int, float8[], text) IS
    'Maglev backend of the key: entry H(key) mod table_size of the lookup table; weighted, backend i takes a turn in round r when floor(r * w_i / max(w)) > floor((r - 1) * w_i / max(w))';

CREATE FUNCTION @extschema@.chash_maglev_table(backends text[], table_size int DEFAULT 65537,
        weights float8[] DEFAULT NULL, hash text DEFAULT 'xxh64')
    RETURNS TABLE (slot int, backend text)
    AS 'MODULE_PATHNAME', 'chash_maglev_table'
    LANGUAGE C IMMUTABLE PARALLEL SAFE ROWS 65537;
COMMENT ON FUNCTION @extschema@.chash_maglev_table(text[], int, float8[], text) IS
    'the Maglev lookup table, one row per slot; weighted, backend i takes a turn in round r when floor(r * w_i / max(w)) > floor((r - 1) * w_i / max(w))';
