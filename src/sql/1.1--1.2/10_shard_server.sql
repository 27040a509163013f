-- ---------------------------------------------------------------------------
-- chash_shard.server holds no password (docs/directory.md, "Shard
-- servers"): every role that reads the directory, every shard and an
-- online move's target read it.  src/shard_server.c.
-- ---------------------------------------------------------------------------
\ir ../functions/chash_server_has_password/1.2.sql

\ir ../functions/chash_shard_server_check/1.2.sql
CREATE TRIGGER chash_shard_server_check BEFORE INSERT OR UPDATE OF server ON @extschema@.chash_shard
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_shard_server_check();

-- A 1.1 database whose shards already name a password: the update stops
-- and names the first such row, rather than keep the password in sight or
-- change a connection string behind the operator's back.
DO $$
DECLARE
    r record;
BEGIN
    SELECT s.directory, s.shard INTO r FROM @extschema@.chash_shard s
     WHERE @extschema@.chash_server_has_password(s.server)
     ORDER BY s.directory, s.shard LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'the server of shard "%" of directory "%" contains a password',
                @extschema@.chash_message_text(r.shard), @extschema@.chash_message_text(r.directory)
            USING ERRCODE = '22023',
                  DETAIL = 'chash 1.2 keeps passwords out of chash_shard.server: every role that reads the directory, every shard and the target of an online move can read it.',
                  HINT = 'Put the password in the .pgpass file of the role that connects, remove it from the server with chash_set_shard, and update again.';
    END IF;
END
$$;
