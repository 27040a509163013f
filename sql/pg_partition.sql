-- chash_pg_partition against PostgreSQL's own hash partitioning: real
-- tables PARTITION BY HASH on text, bigint, int and uuid columns with
-- several moduli; each row's partition (tableoid) must be the remainder
-- the function computes.
CREATE FUNCTION pg_temp.make_partitioned(typ text, modulus int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE part_%s_%s (k %s) PARTITION BY HASH (k)', typ, modulus, typ);
    FOR r IN 0 .. modulus - 1 LOOP
        EXECUTE format('CREATE TABLE part_%s_%s_%s PARTITION OF part_%s_%s
                        FOR VALUES WITH (MODULUS %s, REMAINDER %s)',
                       typ, modulus, r, typ, modulus, modulus, r);
    END LOOP;
END $$;

CREATE TEMP TABLE results (typ text, modulus int, keys bigint, mismatches bigint);
DO $$
DECLARE
    typ text;
    modulus int;
    source text;
BEGIN
    FOREACH typ IN ARRAY ARRAY['text', 'bigint', 'int', 'uuid'] LOOP
        FOREACH modulus IN ARRAY ARRAY[1, 2, 3, 8, 17, 64] LOOP
            PERFORM pg_temp.make_partitioned(typ, modulus);
            source := CASE typ
                WHEN 'text' THEN $q$SELECT 'tenant-' || i || repeat('é', i % 7) FROM generate_series(-2000, 2000) i$q$
                WHEN 'bigint' THEN $q$SELECT chash_xxh64(i::text) FROM generate_series(-2000, 2000) i
                                      UNION ALL VALUES (-9223372036854775808), (9223372036854775807)$q$
                WHEN 'int' THEN $q$SELECT (chash_xxh64(i::text) >> 32)::int FROM generate_series(-2000, 2000) i
                                   UNION ALL VALUES (-2147483648), (2147483647)$q$
                ELSE $q$SELECT md5(i::text)::uuid FROM generate_series(-2000, 2000) i$q$
            END;
            EXECUTE format('INSERT INTO part_%s_%s %s', typ, modulus, source);
            EXECUTE format(
                $q$INSERT INTO results
                   SELECT %L, %s, count(*),
                          count(*) FILTER (WHERE chash_pg_partition(k, %s)::text
                                           <> substring(tableoid::regclass::text FROM '_(\d+)$'))
                   FROM part_%s_%s$q$,
                typ, modulus, modulus, typ, modulus);
        END LOOP;
    END LOOP;
END $$;
SELECT typ, modulus, keys, mismatches FROM results ORDER BY typ, modulus;

-- Remainder of a modulus: PgDog-style shard numbers from the same hash.
SELECT chash_pg_partition('tenant-42', 4) = chash_pg_partition('tenant-42', 8) % 4 AS nested_moduli;
