-- Redis Cluster slots (docs/placement.md) against a real redis-server.
-- sql/data/redis_slots.csv: CLUSTER KEYSLOT of 10,000 keys (hash-tag edge
-- cases, multibyte text, arbitrary bytes) from Debian's redis-server,
-- regenerated and compared by tests/reference/redis.
CREATE TEMP TABLE redis_vectors (key bytea, slot int);
\copy redis_vectors FROM 'sql/data/redis_slots.csv' WITH (FORMAT csv, HEADER true)
SELECT count(*) AS vectors,
       count(*) FILTER (WHERE position('\x7b'::bytea IN key) > 0) AS with_brace,
       count(*) FILTER (WHERE chash_redis_slot(key) <> slot) AS mismatches
FROM redis_vectors;

-- The text overload hashes the same bytes (keys that are valid UTF-8
-- without NUL: the ones a text value can hold).
\i sql/include/as_text.sql
SELECT count(*) AS text_keys,
       count(*) FILTER (WHERE chash_redis_slot(t) <> slot) AS mismatches
FROM (SELECT pg_temp.as_text(key) AS t, slot FROM redis_vectors) v WHERE t IS NOT NULL;

-- Hash tags, from the Redis Cluster specification.
SELECT k, chash_redis_slot(k) AS slot, chash_redis_slot(k) = chash_redis_slot(tag) AS same_as_tag
FROM (VALUES ('{user1000}.following', 'user1000'),
             ('{user1000}.followers', 'user1000'),
             ('foo{}{bar}', 'foo{}{bar}'),
             ('foo{{bar}}zap', '{bar'),
             ('foo{bar}{zap}', 'bar'),
             ('{}', '{}'),
             ('}{x}', 'x'),
             ('a{}{b}', 'a{}{b}'),
             ('{café}:1', 'café')) AS t(k, tag);

SELECT chash_redis_same_slot(ARRAY['{user1000}.following', '{user1000}.followers']) AS tagged,
       chash_redis_same_slot(ARRAY['a', 'b']) AS untagged,
       chash_redis_same_slot(ARRAY['only']) AS single;
