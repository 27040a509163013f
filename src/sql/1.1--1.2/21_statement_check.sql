-- ---------------------------------------------------------------------------
-- The guard's statement check in every session of a joined shard
-- (docs/shards.md, "Statements that name a tenant"): it runs only in
-- sessions that loaded chash.  While this database is a shard of a
-- directory, its database setting session_preload_libraries names chash
-- (appended to what it held); when it leaves the last one, chash's entry
-- goes and the rest stays.  chash_shard_status.statement_check shows
-- whether new sessions load it.
-- ---------------------------------------------------------------------------

\ir ../functions/chash_library_list/1.2.sql

\ir ../functions/chash_library_listed/1.2.sql

\ir ../functions/chash_database_preload/1.2.sql

\ir ../functions/chash_statement_check_active/1.2.sql

\ir ../functions/chash_statement_check_follow/1.2.sql
CREATE TRIGGER chash_statement_check_follow AFTER INSERT OR DELETE ON @extschema@.chash_shard_member
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.chash_statement_check_follow();

-- chash_shard_status gains statement_check: its column in the view's last
-- definition (70_failover_state.sql).

-- A shard joined before 1.2 (an INSERT of nothing fires the trigger).
INSERT INTO @extschema@.chash_shard_member SELECT * FROM @extschema@.chash_shard_member WHERE false;
