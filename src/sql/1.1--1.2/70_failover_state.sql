-- ---------------------------------------------------------------------------
-- Failover: whether a shard can vouch for its replica of the directory
-- (docs/shards.md, "Failover"; src/shard_failover.c)
--
-- A shard records who its directory database is when it joins or is
-- re-pointed (chash_shard_origin), and its replica's triggers record a
-- history that contradicts the one it has (a version that goes back or
-- comes again: the directory database it follows is another one, a
-- promoted standby that missed versions).  chash_shard_refusal_reason
-- says why the replica cannot be vouched for; the guard refuses writes
-- then (chash.fail_closed; SH002 when it lasts until a DBA mends it, SH003
-- when it ends by itself) and chash_shard_status shows it.
-- ---------------------------------------------------------------------------

-- On the directory database, every version also records the server that
-- made it: kind 'origin', key '<system identifier>:<timeline>'.  A promoted
-- standby writes its new timeline from its first change on, so a shard
-- (and chash_directory_reconcile) tells a version the standby made from
-- one of the same number that the old primary made and the standby lost.
ALTER TABLE @extschema@.chash_directory_change DROP CONSTRAINT chash_directory_change_kind_check;
ALTER TABLE @extschema@.chash_directory_change ADD CONSTRAINT chash_directory_change_kind_check
    CHECK (kind IN ('version', 'full', 'shard', 'slot', 'slots', 'override', 'migration', 'step', 'origin'));
COMMENT ON TABLE @extschema@.chash_directory_change IS
    'the keys each version of a directory changed: version (key: the previous version, empty when created), full (not described here), shard, slot, slots (a batch''s slots, comma-separated in slot order, up to 200 a key), override, migration (key: id), step (key: migration:step); origin (key: system identifier:timeline of the server that made the version)';

\ir ../functions/chash_server_identity/1.2.sql

\ir ../functions/chash_directory_log_origin/1.2.sql
CREATE TRIGGER chash_directory_log_origin AFTER INSERT OR UPDATE ON @extschema@.chash_directory
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_directory_log_origin();

-- Not replicated: one row per subscription to a directory database.
CREATE TABLE @extschema@.chash_shard_origin (
    subscription name PRIMARY KEY,
    system_identifier numeric,
    timeline int,
    recorded_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    diverged text,
    diverged_at timestamptz
);
COMMENT ON TABLE @extschema@.chash_shard_origin IS
    'per subscription: the system identifier and timeline of the directory database when the shard joined or was re-pointed (NULL: joined before 1.2), and the first contradiction its replica met';
COMMENT ON COLUMN @extschema@.chash_shard_origin.diverged IS
    'NULL, or what showed that the directory database replicated from has another history, each contradiction once (cleared by chash_shard_repoint)';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_shard_origin', '');

\ir ../functions/chash_replica_note_divergence/1.2.sql

\ir ../functions/chash_replica_version_check/1.2.sql
CREATE TRIGGER chash_replica_version_check BEFORE UPDATE ON @extschema@.chash_directory
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_replica_version_check();
ALTER TABLE @extschema@.chash_directory ENABLE REPLICA TRIGGER chash_replica_version_check;

\ir ../functions/chash_replica_change_check/1.2.sql
CREATE TRIGGER chash_replica_change_check BEFORE INSERT ON @extschema@.chash_directory_change
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_replica_change_check();
ALTER TABLE @extschema@.chash_directory_change ENABLE REPLICA TRIGGER chash_replica_change_check;

\ir ../functions/chash_shard_refusal_reason/1.2.sql

\ir ../functions/chash_shard_refusal/1.2.sql
\ir ../functions/chash_shard_refusal_code/1.2.sql
REVOKE ALL ON FUNCTION @extschema@.chash_replica_note_divergence(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.chash_shard_refusal_reason(text, int) FROM PUBLIC;

-- chash_shard_status, with the failover columns at the end.
CREATE OR REPLACE VIEW @extschema@.chash_shard_status WITH (security_invoker = true) AS
SELECT m.directory,
       m.shard,
       m.subscription,
       d.version AS replicated_version,
       CASE WHEN m.subscription IS NULL THEN true
            ELSE s.oid IS NOT NULL AND NOT EXISTS (
                SELECT FROM pg_subscription_rel r WHERE r.srsubid = s.oid AND r.srsubstate <> 'r')
       END AS synced,
       st.received_lsn,
       st.last_msg_send_time AS last_sent,
       CASE WHEN m.subscription IS NULL THEN interval '0'
            ELSE pg_catalog.now() - st.last_msg_send_time
       END AS lag,
       t.present_tables,
       t.missing_tables,
       t.guarded_tables,
       @extschema@.chash_statement_check_active() AS statement_check,
       o.system_identifier AS directory_system_identifier,
       o.timeline AS directory_timeline,
       o.diverged,
       CASE WHEN m.subscription IS NULL THEN true
            ELSE coalesce(s.subenabled AND st.pid IS NOT NULL, false)
       END AS streaming,
       @extschema@.chash_shard_refusal(m.directory) AS refusal,
       @extschema@.chash_stats_tracking() AS stats_tracked,
       @extschema@.chash_shard_refusal_code(m.directory) AS refusal_code
FROM @extschema@.chash_shard_member m
LEFT JOIN @extschema@.chash_directory d ON d.name = m.directory
LEFT JOIN pg_subscription s ON s.subname = m.subscription
      AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())
LEFT JOIN pg_stat_subscription st ON st.subid = s.oid AND st.relid IS NULL
LEFT JOIN @extschema@.chash_shard_origin o ON o.subscription = m.subscription
CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(x.table_name ORDER BY x.table_name)
                    FILTER (WHERE to_regclass(x.table_name) IS NOT NULL), '{}') AS present_tables,
           coalesce(array_agg(x.table_name ORDER BY x.table_name)
                    FILTER (WHERE to_regclass(x.table_name) IS NULL), '{}') AS missing_tables,
           coalesce(array_agg(x.table_name ORDER BY x.table_name)
                    FILTER (WHERE EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = to_regclass(x.table_name)
                                          AND g.tgname = ('chash_guard_' || left(md5(m.directory), 12))::name
                                          AND g.tgfoid = '@extschema@.chash_shard_row_guard()'::regprocedure)),
                    '{}') AS guarded_tables
    FROM @extschema@.chash_table x WHERE x.directory = m.directory
) t;
COMMENT ON VIEW @extschema@.chash_shard_status IS
    'per joined directory: shard, subscription, replicated version, initial copy done, lag, registered tables present, missing and guarded here; the directory database''s identity as recorded, a divergence seen, whether the replica streams, and why the shard cannot vouch for it (refusal); whether load statistics are counted; the refusal''s SQLSTATE (refusal_code: SH002 lasting, SH003 transient)';
