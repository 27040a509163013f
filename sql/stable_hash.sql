-- Stable hash functions (SPEC 1) against vectors from real systems.
-- Each data file names the program that produced it; tests/reference/
-- regenerates them from those programs and compares.

-- CRC-16/XMODEM check value (CRC catalogue): 0x31C3.
SELECT chash_crc16('123456789') AS crc16_check, to_hex(chash_crc16('123456789'));
SELECT chash_crc16(''::bytea), chash_crc16('\x00'::bytea), chash_crc16('\xff'::bytea);

-- XXH64 against xxhsum (seed 0) and python3-xxhash (other seeds).
CREATE TEMP TABLE xxh64_vectors (data bytea, seed numeric, hash numeric);
\copy xxh64_vectors FROM 'sql/data/xxh64.csv' WITH (FORMAT csv, HEADER true)
SELECT count(*) AS vectors,
       count(*) FILTER (WHERE chash_xxh64(data, (CASE WHEN seed >= 2^63 THEN seed - 2^64 ELSE seed END)::bigint)
                        <> (CASE WHEN hash >= 2^63 THEN hash - 2^64 ELSE hash END)::bigint) AS mismatches
FROM xxh64_vectors;
-- the text overload hashes the same bytes
SELECT count(*) FILTER (WHERE chash_xxh64(convert_from(data, 'UTF8')) <> chash_xxh64(data)) AS text_mismatches
FROM xxh64_vectors WHERE seed = 0;
SELECT chash_xxh64(''), to_hex(chash_xxh64('')) AS xxh64_empty;

-- MD5 prefix against python3 hashlib.
CREATE TEMP TABLE md5_vectors (data bytea, prefix numeric);
\copy md5_vectors FROM 'sql/data/md5_64.csv' WITH (FORMAT csv, HEADER true)
SELECT count(*) AS vectors,
       count(*) FILTER (WHERE chash_md5_64(data)
                        <> (CASE WHEN prefix >= 2^63 THEN prefix - 2^64 ELSE prefix END)::bigint) AS mismatches
FROM md5_vectors;
SELECT to_hex(chash_md5_64('')) AS md5_empty, to_hex(chash_md5_64('abc')) AS md5_abc;

-- Cassandra tokens against the DataStax drivers' Murmur3 token code
-- (sql/data/cassandra_tokens.csv, see its header) and published values.
CREATE TEMP TABLE cassandra_vectors (data bytea, token bigint);
\copy cassandra_vectors FROM 'sql/data/cassandra_tokens.csv' WITH (FORMAT csv, HEADER true)
SELECT count(*) AS vectors, count(*) FILTER (WHERE chash_cassandra_token(data) <> token) AS mismatches
FROM cassandra_vectors;
-- python-driver tests/unit/test_metadata.py: murmur3(b'123')
SELECT chash_cassandra_token('123') AS token_123;
SELECT chash_cassandra_token(''::bytea) = -9223372036854775808 AS empty_is_minimum;
