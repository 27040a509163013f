-- Stable hash functions (docs/placement.md) against vectors from real systems.
-- Each data file names the program that produced it; tests/reference/
-- regenerates them from those programs and compares.

-- CRC-16/XMODEM check value (CRC catalogue): 0x31C3.
SELECT chash_crc16('123456789') AS crc16_check, to_hex(chash_crc16('123456789'));
SELECT chash_crc16(''::bytea), chash_crc16('\x00'::bytea), chash_crc16('\xff'::bytea);

-- The data files hold unsigned 64-bit values; we return them as signed.
CREATE FUNCTION pg_temp.signed64(u numeric) RETURNS bigint LANGUAGE sql IMMUTABLE AS
$$ SELECT (CASE WHEN u >= 2::numeric ^ 63 THEN u - 2::numeric ^ 64 ELSE u END)::bigint $$;
\i sql/include/as_text.sql

-- XXH64 against xxhsum (seed 0) and python3-xxhash (other seeds).
CREATE TEMP TABLE xxh64_vectors (data bytea, seed numeric, hash numeric);
\copy xxh64_vectors FROM 'sql/data/xxh64.csv' WITH (FORMAT csv, HEADER true)
SELECT count(*) AS vectors,
       count(*) FILTER (WHERE chash_xxh64(data, pg_temp.signed64(seed))
                        <> pg_temp.signed64(hash)) AS mismatches
FROM xxh64_vectors;
-- the text overload hashes the same bytes
SELECT count(*) AS text_keys,
       count(*) FILTER (WHERE chash_xxh64(pg_temp.as_text(data)) <> pg_temp.signed64(hash)) AS text_mismatches
FROM xxh64_vectors WHERE seed = 0 AND pg_temp.as_text(data) IS NOT NULL;
SELECT chash_xxh64(''), to_hex(chash_xxh64('')) AS xxh64_empty;

-- MD5 prefix against python3 hashlib.
CREATE TEMP TABLE md5_vectors (data bytea, prefix numeric);
\copy md5_vectors FROM 'sql/data/md5_64.csv' WITH (FORMAT csv, HEADER true)
SELECT count(*) AS vectors,
       count(*) FILTER (WHERE chash_md5_64(data)
                        <> pg_temp.signed64(prefix)) AS mismatches
FROM md5_vectors;
SELECT count(*) AS text_keys,
       count(*) FILTER (WHERE chash_md5_64(pg_temp.as_text(data)) <> pg_temp.signed64(prefix)) AS text_mismatches
FROM md5_vectors WHERE pg_temp.as_text(data) IS NOT NULL;
SELECT to_hex(chash_md5_64('')) AS md5_empty, to_hex(chash_md5_64('abc')) AS md5_abc;

-- Cassandra tokens against the DataStax Node.js driver's Murmur3Tokenizer
-- (tests/reference/cassandra-driver), 2,000 keys, many with tail bytes
-- >= 0x80.  The driver hashes the empty key like any other (to 0); Cassandra
-- itself (Murmur3Partitioner.getToken) gives it the minimum token, and so
-- do we, so that one vector is checked on its own.
CREATE TEMP TABLE cassandra_vectors (data bytea, token bigint);
\copy cassandra_vectors FROM 'sql/data/cassandra_tokens.csv' WITH (FORMAT csv, HEADER true)
SELECT count(*) AS vectors,
       count(*) FILTER (WHERE get_byte(data, length(data) - 1) >= 128) AS high_last_byte,
       count(*) FILTER (WHERE chash_cassandra_token(data) <> token) AS mismatches
FROM cassandra_vectors WHERE data <> '';
SELECT chash_cassandra_token(''::bytea) = -9223372036854775808 AS empty_is_minimum,
       chash_cassandra_token('') = -9223372036854775808 AS empty_text_is_minimum;
-- DataStax python-driver tests/unit/test_metadata.py (murmur3 test vectors)
SELECT chash_cassandra_token('123') AS token_123,
       chash_cassandra_token('\xfefefefefefefefe'::bytea) AS token_fe8,
       chash_cassandra_token('\x1010101010101010'::bytea) AS token_108;
