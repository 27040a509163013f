-- ---------------------------------------------------------------------------
-- Ketama, as libketama builds it (SPEC 2.5)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_ketama(key text, servers text[],
        weights float8[] DEFAULT NULL) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_ketama'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_ketama(text, text[], float8[]) IS
    'server of the key on the libketama continuum (memcached clients): 40 MD5 digests of server-k per server, scaled by weight in single precision as libketama does';
