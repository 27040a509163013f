-- Jump consistent hash and modulo (docs/placement.md).

-- github.com/dgryski/go-jump jump_test.go (jumpTestVectors), the vectors
-- Go, Rust and Java ports of the paper test against.
SELECT key, buckets, chash_jump(key, buckets) AS bucket, expected,
       chash_jump(key, buckets) = expected AS ok
FROM (VALUES (1::bigint, 1, 0), (42, 57, 43), (3735883980, 1, 0),
             (3735883980, 666, 361), (256, 1024, 520)) AS v(key, buckets, expected);

-- The paper's algorithm written again in exact numeric arithmetic: the
-- 64-bit LCG mod 2^64, and the floating-point step in float8 as the paper
-- has it.  Compared on 3,000 keys spread over the whole 64-bit range,
-- including negative bigints (two's complement read as unsigned).
CREATE FUNCTION pg_temp.paper_jump(key numeric, buckets int) RETURNS int
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    b bigint := -1;
    j bigint := 0;
    k numeric := CASE WHEN key < 0 THEN key + 2::numeric ^ 64 ELSE key END;
BEGIN
    WHILE j < buckets LOOP
        b := j;
        k := mod(k * 2862933555777941757 + 1, 2::numeric ^ 64);
        j := floor((b + 1)::float8 * (2147483648::float8 / (floor(k / 2::numeric ^ 33) + 1)::float8));
    END LOOP;
    RETURN b;
END $$;
SELECT count(*) AS keys,
       count(*) FILTER (WHERE chash_jump(k, n) <> pg_temp.paper_jump(k, n)) AS mismatches
FROM (SELECT chash_xxh64(i::text) AS k, 1 + (i % 5000) AS n FROM generate_series(1, 3000) i) t;

-- Text keys: jump of XXH64(key); chash_md5_64 feeds tutorials' MD5 keys.
SELECT chash_jump('tenant-42', 16) = chash_jump(chash_xxh64('tenant-42'), 16) AS text_is_xxh64,
       chash_jump(chash_md5_64('tenant-42'), 16) AS md5_tutorial_bucket;

-- Edge cases: one bucket, the largest bucket count, extreme keys.
SELECT chash_jump(-1::bigint, 1) AS one_bucket,
       chash_jump(-1::bigint, 2147483647) AS max_buckets,
       chash_jump(-9223372036854775808, 1000) AS min_key,
       chash_jump(9223372036854775807, 1000) AS max_key;

-- Consistency: growing 10 -> 11 buckets moves about 1/11 of the keys, all
-- to the new bucket.
SELECT count(*) FILTER (WHERE a <> b) AS moved,
       count(*) FILTER (WHERE a <> b AND b <> 10) AS moved_elsewhere,
       abs(count(*) FILTER (WHERE a <> b) - 100000 / 11.0) < 1000 AS about_one_eleventh
FROM (SELECT chash_jump('k' || i, 10) AS a, chash_jump('k' || i, 11) AS b
      FROM generate_series(1, 100000) i) t;

-- Modulo: unsigned, so a negative key is read as 2^64 + key.
SELECT chash_mod(-1::bigint, 10) AS neg_one_mod_10,      -- 18446744073709551615 mod 10 = 5
       chash_mod(10::bigint, 3) AS ten_mod_3,
       chash_mod('tenant-42', 16) = ((chash_xxh64('tenant-42')::numeric + 2::numeric ^ 64) % 2::numeric ^ 64 % 16)::int AS text_is_xxh64;
-- ... and it moves most keys when n changes: the baseline every article warns about.
SELECT round(count(*) FILTER (WHERE chash_mod('k' || i, 4) <> chash_mod('k' || i, 5)) / 1000.0) AS pct_moved_4_to_5
FROM generate_series(1, 100000) i;
