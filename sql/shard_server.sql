-- chash_shard.server holds no password (docs/directory.md, "Shard
-- servers"): the functions and direct DML refuse one in every form libpq
-- reads (22023, with a hint to use .pgpass); everything else is kept.
\i sql/include/bad.sql
SELECT chash_create_directory('srv', ARRAY['s1'], 8);

-- refused
SELECT bad($$SELECT chash_add_shard('srv', 's2', server => 'host=pg2 dbname=app password=secret')$$);
SELECT bad($$SELECT chash_add_shard('srv', 's2', server => 'host=pg2 password = ''a b'' dbname=app')$$);
SELECT bad($$SELECT chash_add_shard('srv', 's2', server => 'postgresql://mover:secret@pg2/app')$$);
SELECT bad($$SELECT chash_add_shard('srv', 's2', server => 'postgres://mover:secret@pg2:5433,pg3/app')$$);
SELECT bad($$SELECT chash_add_shard('srv', 's2', server => 'postgresql://pg2/app?user=mover&password=secret')$$);
SELECT bad($$SELECT chash_add_shard('srv', 's2', server => 'postgresql://mover:secret@pg2/app?no_such_option=1')$$);
SELECT bad($$SELECT chash_set_shard('srv', 's1', server => 'host=pg1 password=secret')$$);
SELECT bad($$INSERT INTO chash_shard (directory, shard, server) VALUES ('srv', 's9', 'password=x')$$);
SELECT bad($$UPDATE chash_shard SET server = 'postgresql://u:p@h/db' WHERE directory = 'srv'$$);
-- the message, detail and hint in full
\set SHOW_CONTEXT never
SELECT chash_set_shard('srv', 's1', server => 'host=pg1 password=secret');
\set SHOW_CONTEXT errors
SELECT count(*) AS shards, count(server) AS servers FROM chash_shard WHERE directory = 'srv';

-- kept: no password, an empty one, or text that is no connection string
SELECT chash_add_shard('srv', 's2', server => 'host=pg2 port=5433 dbname=app user=mover');
SELECT chash_add_shard('srv', 's3', server => 'postgresql://mover@pg3/app?sslmode=require');
SELECT chash_add_shard('srv', 's4', server => 'host=pg4 password=');
SELECT chash_add_shard('srv', 's5', server => 'pg5.internal:5432');
SELECT chash_set_shard('srv', 's1', server => 'service=shard1');
UPDATE chash_shard SET weight = 2 WHERE directory = 'srv' AND shard = 's5';
SELECT shard, server FROM chash_shard WHERE directory = 'srv' ORDER BY shard;
SELECT chash_server_has_password(s) AS has_password, s
  FROM unnest(ARRAY['password=x', 'host=h', 'postgresql://u:p@h', 'postgresql://u@h', 'postgresql://h?password=x',
                    'postgresql://u:p@h?bad=1', 'not a conninfo', '']) AS s;
SELECT chash_drop_directory('srv');
