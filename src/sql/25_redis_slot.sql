
-- ---------------------------------------------------------------------------
-- Redis Cluster slots (SPEC 2.8)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_redis_slot(key text) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_redis_slot'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_redis_slot(text) IS
    'Redis Cluster hash slot (0 .. 16383) of the key, honouring {hash tags}';

CREATE FUNCTION @extschema@.chash_redis_slot(key bytea) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_redis_slot'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_redis_slot(bytea) IS
    'Redis Cluster hash slot (0 .. 16383) of the key bytes, honouring {hash tags}';

CREATE FUNCTION @extschema@.chash_redis_same_slot(keys text[]) RETURNS boolean
    AS 'MODULE_PATHNAME', 'chash_redis_same_slot'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_redis_same_slot(text[]) IS
    'true when all keys share one Redis Cluster slot (a multi-key command would not get CROSSSLOT)';
