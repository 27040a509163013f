
-- ---------------------------------------------------------------------------
-- Stable hash functions (SPEC 1)
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_xxh64(data text, seed bigint DEFAULT 0) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_xxh64'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_xxh64(text, bigint) IS
    'XXH64 of the text''s bytes with the given seed, as a signed bigint';

CREATE FUNCTION @extschema@.chash_xxh64(data bytea, seed bigint DEFAULT 0) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_xxh64'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_xxh64(bytea, bigint) IS
    'XXH64 of the bytes with the given seed, as a signed bigint';

CREATE FUNCTION @extschema@.chash_md5_64(data text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_md5_64'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_md5_64(text) IS
    'first 8 bytes of the MD5 of the text''s bytes, big-endian, as a signed bigint';

CREATE FUNCTION @extschema@.chash_md5_64(data bytea) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_md5_64'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_md5_64(bytea) IS
    'first 8 bytes of the MD5 of the bytes, big-endian, as a signed bigint';

CREATE FUNCTION @extschema@.chash_crc16(data text) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_crc16'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_crc16(text) IS
    'CRC-16/XMODEM of the text''s bytes (the CRC of Redis Cluster)';

CREATE FUNCTION @extschema@.chash_crc16(data bytea) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_crc16'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_crc16(bytea) IS
    'CRC-16/XMODEM of the bytes (the CRC of Redis Cluster)';

CREATE FUNCTION @extschema@.chash_pg_partition(value text, modulus int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_pg_partition_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_pg_partition(text, int) IS
    'remainder of the hash partition PostgreSQL routes this text key to for the given modulus';

CREATE FUNCTION @extschema@.chash_pg_partition(value bigint, modulus int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_pg_partition_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_pg_partition(bigint, int) IS
    'remainder of the hash partition PostgreSQL routes this bigint key to for the given modulus';

CREATE FUNCTION @extschema@.chash_pg_partition(value int, modulus int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_pg_partition_int4'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_pg_partition(int, int) IS
    'remainder of the hash partition PostgreSQL routes this int key to for the given modulus';

CREATE FUNCTION @extschema@.chash_pg_partition(value uuid, modulus int) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_pg_partition_uuid'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_pg_partition(uuid, int) IS
    'remainder of the hash partition PostgreSQL routes this uuid key to for the given modulus';

CREATE FUNCTION @extschema@.chash_cassandra_token(data text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_cassandra_token'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_cassandra_token(text) IS
    'Cassandra Murmur3Partitioner token of a single-column partition key with the text''s bytes';

CREATE FUNCTION @extschema@.chash_cassandra_token(data bytea) RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_cassandra_token'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_cassandra_token(bytea) IS
    'Cassandra Murmur3Partitioner token of a single-column partition key with these bytes';
