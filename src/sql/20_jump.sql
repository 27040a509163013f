
-- ---------------------------------------------------------------------------
-- Modulo and jump consistent hash (SPEC 2.1, 2.2)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_mod(key bigint, n int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_mod_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_mod(bigint, int) IS
    'the key read as unsigned 64-bit, mod n: the baseline that moves most keys when n changes';

CREATE FUNCTION @extschema@.chash_mod(key text, n int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_mod_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_mod(text, int) IS
    'XXH64 of the key mod n: the baseline that moves most keys when n changes';

CREATE FUNCTION @extschema@.chash_jump(key bigint, buckets int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_jump_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_jump(bigint, int) IS
    'jump consistent hash (Lamping & Veach) of the 64-bit key into 0 .. buckets - 1';

CREATE FUNCTION @extschema@.chash_jump(key text, buckets int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_jump_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_jump(text, int) IS
    'jump consistent hash of XXH64(key) into 0 .. buckets - 1';
