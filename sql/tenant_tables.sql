-- Tenant tables and chash_tenant_slot (docs/shards.md, "Tenant tables").
\i sql/include/bad.sql

-- chash_tenant_slot equals chash_slot of a directory with that layout, for
-- every slot method and key type.
SELECT chash_create_directory('tt_' || m || '_' || k, ARRAY['a', 'b'],
       CASE WHEN m = 'redis' THEN 16384 ELSE 1000 END, m, key_type => k)
FROM unnest(ARRAY['xxh64', 'jump', 'redis', 'pg_hash']) m, unnest(ARRAY['text', 'bigint', 'uuid']) k;

SELECT m AS slot_method, count(*) AS tenants,
       count(*) FILTER (WHERE chash_slot('tt_' || m || '_text', t) = chash_tenant_slot(t, n, m)) AS text_equal,
       count(*) FILTER (WHERE chash_slot('tt_' || m || '_bigint', b::text) = chash_tenant_slot(b, n, m)) AS bigint_equal,
       count(*) FILTER (WHERE chash_slot('tt_' || m || '_uuid', u::text) = chash_tenant_slot(u, n, m)) AS uuid_equal
FROM (SELECT m, CASE WHEN m = 'redis' THEN 16384 ELSE 1000 END AS n
      FROM unnest(ARRAY['xxh64', 'jump', 'redis', 'pg_hash']) m) l,
     (SELECT 'org-' || i AS t, (i * 2654435761 - 5000000000) AS b,
             md5(i::text)::uuid AS u FROM generate_series(1, 2000) i) keys
GROUP BY m ORDER BY m;

-- Extremes and non-canonical spellings route like their canonical form.
SELECT chash_tenant_slot(9223372036854775807, 1000) = chash_slot('tt_xxh64_bigint', '9223372036854775807') AS max_equal,
       chash_tenant_slot(-9223372036854775808, 1000, 'pg_hash') = chash_slot('tt_pg_hash_bigint', '-9223372036854775808') AS min_equal,
       chash_tenant_slot('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid, 1000) = chash_slot('tt_xxh64_uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11') AS uuid_equal,
       chash_tenant_slot('', 1000) = chash_slot('tt_xxh64_text', '') AS empty_equal,
       chash_tenant_slot('{tag}x', 16384, 'redis') = chash_redis_slot('{tag}x') AS redis_equal;
SELECT chash_tenant_slot(NULL::text, 16) IS NULL AS strict_null;

-- The default method is 'xxh64'; an expression index on it is allowed.
SELECT chash_tenant_slot('org-1', 16384) = chash_tenant_slot('org-1', 16384, 'xxh64') AS default_xxh64;
CREATE TABLE tt_accounts (org_id text, id int, PRIMARY KEY (org_id, id));
CREATE INDEX ON tt_accounts (chash_tenant_slot(org_id, 1000));
INSERT INTO tt_accounts SELECT 'org-' || i % 100, i FROM generate_series(1, 1000) i;
SET enable_seqscan = off;
SELECT count(*) = (SELECT count(*) FROM tt_accounts WHERE chash_slot('tt_xxh64_text', org_id) = 7)
       AS index_finds_the_slot
FROM tt_accounts WHERE chash_tenant_slot(org_id, 1000) = 7;
RESET enable_seqscan;

SELECT bad($$SELECT chash_tenant_slot('x', 0)$$);
SELECT bad($$SELECT chash_tenant_slot('x', 1048577)$$);
SELECT bad($$SELECT chash_tenant_slot('x', 1000, 'redis')$$);
SELECT bad($$SELECT chash_tenant_slot('x', 1000, 'md5')$$);
SELECT bad($$SELECT chash_tenant_slot('x', 1000, repeat('é', 300))$$);

-- Registering tables.
SELECT chash_add_table('tt_xxh64_text', 'public.tt_accounts', 'org_id');
SELECT chash_add_table('tt_xxh64_text', 'app."Orders"', 'org_id');     -- not here: not checked
SELECT chash_add_table('tt_xxh64_bigint', 'public.tt_accounts', 'org_id');
SELECT directory, table_name, tenant_column FROM chash_table ORDER BY 1, 2;
SELECT bad($$SELECT chash_add_table('tt_xxh64_text', 'PUBLIC.TT_ACCOUNTS', 'org_id')$$);
SELECT bad($$SELECT chash_add_table('tt_xxh64_text', 'tt_accounts', 'org_id')$$);
SELECT bad($$SELECT chash_add_table('tt_xxh64_text', 'a.b.c', 'org_id')$$);
SELECT bad($$SELECT chash_add_table('tt_xxh64_text', 'public.', 'org_id')$$);
SELECT bad($$SELECT chash_add_table('tt_jump_text', 'public.tt_accounts', 'nope')$$);
SELECT bad($$SELECT chash_add_table('tt_jump_text', 'public.tt_accounts', '')$$);
SELECT bad($$SELECT chash_add_table('missing', 'public.tt_accounts', 'org_id')$$);
SELECT bad($$SELECT chash_add_table('tt_jump_text', NULL, 'org_id')$$);
SELECT bad($$SELECT chash_add_table('tt_jump_text', 'public.tt_accounts', NULL)$$);
CREATE TABLE tt_nokey (org_id text);
SELECT bad($$SELECT chash_add_table('tt_jump_text', 'public.tt_nokey', 'org_id')$$);
-- Direct DML keeps the one spelling.
INSERT INTO chash_table VALUES ('tt_jump_text', '"public".tt_nokey', 'org_id');
SELECT table_name FROM chash_table WHERE directory = 'tt_jump_text';
SELECT bad($$INSERT INTO chash_table VALUES ('tt_jump_text', 'nokey', 'org_id')$$);

-- A registration is a directory change: the version moves.
SELECT version AS v FROM chash_directory WHERE name = 'tt_xxh64_text' \gset
SELECT chash_drop_table('tt_xxh64_text', 'app."Orders"');
SELECT version > :v AS bumped FROM chash_directory WHERE name = 'tt_xxh64_text';
SELECT bad($$SELECT chash_drop_table('tt_xxh64_text', 'app."Orders"')$$);
SELECT bad($$SELECT chash_drop_table('tt_xxh64_text', NULL)$$);
-- Dropping the directory drops its registrations.
SELECT chash_drop_directory('tt_xxh64_bigint');
SELECT count(*) FROM chash_table WHERE directory = 'tt_xxh64_bigint';

SELECT chash_drop_directory(name) FROM chash_directory WHERE name LIKE 'tt\_%';
DROP TABLE tt_accounts, tt_nokey;
