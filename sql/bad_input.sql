-- Every bad input, with the SQLSTATE and message it gets.
-- bad(statement) runs the statement and shows "SQLSTATE: message" (plus
-- the detail when there is one), or "no error" when it succeeds.
CREATE FUNCTION bad(statement text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN others THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || SQLERRM
        || CASE WHEN detail <> '' THEN ' (' || detail || ')' ELSE '' END;
END
$$;

-- NULL arguments give NULL (STRICT), never an error.
SELECT chash_xxh64(NULL::text), chash_md5_64(NULL::bytea), chash_crc16(NULL::text),
       chash_jump(NULL::bigint, 3), chash_jump('a', NULL), chash_mod(NULL::text, 3),
       chash_redis_slot(NULL::text), chash_redis_same_slot(NULL),
       chash_pg_partition(NULL::uuid, 4), chash_cassandra_token(NULL::bytea),
       chash_xxh64('a', NULL);

-- Bucket counts and moduli below 1.
SELECT bad($$SELECT chash_jump(1::bigint, 0)$$);
SELECT bad($$SELECT chash_jump('k', -5)$$);
SELECT bad($$SELECT chash_jump('k', -2147483648)$$);
SELECT bad($$SELECT chash_mod(1::bigint, 0)$$);
SELECT bad($$SELECT chash_mod('k', -1)$$);
SELECT bad($$SELECT chash_pg_partition('k', 0)$$);
SELECT bad($$SELECT chash_pg_partition(1::bigint, -3)$$);
SELECT bad($$SELECT chash_pg_partition(1, 0)$$);
SELECT bad($$SELECT chash_pg_partition('00000000-0000-0000-0000-000000000000'::uuid, 0)$$);

-- Arrays: NULL elements and more than one dimension.
SELECT bad($$SELECT chash_redis_same_slot(ARRAY['a', NULL])$$);
SELECT bad($$SELECT chash_redis_same_slot(ARRAY[['a', 'b'], ['c', 'd']])$$);
SELECT chash_redis_same_slot('{}');     -- no keys: nothing can cross slots

-- Values that are not of the argument's type never reach the functions.
SELECT bad($$SELECT chash_pg_partition('not-a-uuid'::uuid, 4)$$);
SELECT bad($$SELECT chash_jump(1::bigint, 4294967296)$$);
