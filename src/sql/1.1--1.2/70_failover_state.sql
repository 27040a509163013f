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
    CHECK (kind IN ('version', 'full', 'shard', 'slot', 'override', 'migration', 'step', 'origin'));
COMMENT ON TABLE @extschema@.chash_directory_change IS
    'the keys each version of a directory changed: version (key: the previous version, empty when created), full (not described here), shard, slot, override, migration (key: id), step (key: migration:step); origin (key: system identifier:timeline of the server that made the version)';

-- '<system identifier>:<timeline>' of this server: the timeline of the WAL
-- being written (pg_control's lags behind a promotion until a checkpoint).
CREATE FUNCTION @extschema@.chash_server_identity() RETURNS text
    LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    SELECT (SELECT system_identifier FROM pg_control_system())::text || ':'
        || ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int
$$;
COMMENT ON FUNCTION @extschema@.chash_server_identity() IS
    'this server''s system identifier and current timeline, as <system identifier>:<timeline>';

CREATE FUNCTION @extschema@.chash_directory_log_origin() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO @extschema@.chash_directory_change (directory, version, kind, key)
         VALUES (NEW.name, NEW.version, 'origin', @extschema@.chash_server_identity())
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_log_origin() IS
    'trigger: records with each new version of a directory the server that made it (kind origin)';
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

-- Records the first contradiction; run by the replica's triggers in the
-- apply worker (committed with the change that showed it).
CREATE FUNCTION @extschema@.chash_replica_note_divergence(reason text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sub constant name := @extschema@.chash_shard_subscription();
BEGIN
    IF reason IS NULL THEN
        RAISE EXCEPTION 'reason must not be null' USING ERRCODE = '22004';
    END IF;
    IF sub IS NULL THEN
        RETURN;     -- the directory database itself
    END IF;
    INSERT INTO @extschema@.chash_shard_origin AS o (subscription, diverged, diverged_at)
         VALUES (sub, reason, pg_catalog.now())
    ON CONFLICT (subscription) DO UPDATE
        -- each contradiction once, the first ones if there are many
        SET diverged = CASE WHEN o.diverged IS NULL THEN excluded.diverged
                            WHEN strpos(o.diverged, excluded.diverged) > 0 OR length(o.diverged) > 1000 THEN o.diverged
                            ELSE o.diverged || ' ' || excluded.diverged END,
            diverged_at = coalesce(o.diverged_at, excluded.diverged_at);
    RAISE WARNING 'the replica of the directory tables has met another history'
        USING DETAIL = reason,
              HINT = 'See docs/shards.md, "Failover": chash_directory_reconcile() on the directory database, then chash_shard_repoint() here.';
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replica_note_divergence(text) IS
    'internal: records on a shard that its replica met a directory history contradicting its own';

-- Every committed change raises a directory's version, so an applied
-- version that is not above the replica's comes from another history.
CREATE FUNCTION @extschema@.chash_replica_version_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NEW.version <= OLD.version THEN
        PERFORM @extschema@.chash_replica_note_divergence(format(
            'Version %s of directory "%s" arrived after version %s.', NEW.version, NEW.name, OLD.version));
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replica_version_check() IS
    'trigger on a shard''s replica: a directory version that goes back or repeats records a divergence';
CREATE TRIGGER chash_replica_version_check BEFORE UPDATE ON @extschema@.chash_directory
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_replica_version_check();
ALTER TABLE @extschema@.chash_directory ENABLE REPLICA TRIGGER chash_replica_version_check;

-- A history entry that is there already is a version used twice: recorded
-- and skipped, so that the apply goes on (a duplicate key would stop it
-- for good, and roll the record back with it).
CREATE FUNCTION @extschema@.chash_replica_change_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    recorded text;
BEGIN
    IF NEW.kind = 'origin' THEN
        SELECT o.system_identifier || ':' || o.timeline INTO recorded FROM @extschema@.chash_shard_origin o
         WHERE o.subscription = @extschema@.chash_shard_subscription();
        IF recorded <> NEW.key THEN
            PERFORM @extschema@.chash_replica_note_divergence(format(
                'Version %s of directory "%s" was made by server %s, but this shard replicates from server %s.',
                NEW.version, NEW.directory, NEW.key, recorded));
        END IF;
    END IF;
    IF EXISTS (SELECT FROM @extschema@.chash_directory_change c
                WHERE c.directory = NEW.directory AND c.version = NEW.version
                  AND c.kind = NEW.kind AND c.key = NEW.key) THEN
        PERFORM @extschema@.chash_replica_note_divergence(format(
            'Version %s of directory "%s" arrived a second time.', NEW.version, NEW.directory));
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replica_change_check() IS
    'trigger on a shard''s replica: a history entry applied twice records a divergence and is skipped';
CREATE TRIGGER chash_replica_change_check BEFORE INSERT ON @extschema@.chash_directory_change
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_replica_change_check();
ALTER TABLE @extschema@.chash_directory_change ENABLE REPLICA TRIGGER chash_replica_change_check;

-- Why this shard cannot vouch for its replica of the directory, or NULLs,
-- and the refusal's SQLSTATE: SH002 when it lasts until a DBA mends it
-- (another history: chash_directory_reconcile and chash_shard_repoint;
-- the subscription gone: a join), SH003 when it ends by itself once the
-- replica follows again (disabled, no apply worker, silent: a partition,
-- a directory server down).  max_silence (seconds, 0: no bound) is
-- chash.replica_max_silence.
CREATE FUNCTION @extschema@.chash_shard_refusal_reason(directory text, max_silence int, OUT code text, OUT reason text)
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN r.reason IS NULL THEN NULL WHEN r.lasting THEN 'SH002' ELSE 'SH003' END, r.reason
    FROM @extschema@.chash_shard_member m
    LEFT JOIN pg_subscription s ON s.subname = m.subscription
          AND s.subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())
    LEFT JOIN pg_stat_subscription st ON st.subid = s.oid AND st.relid IS NULL
    LEFT JOIN @extschema@.chash_shard_origin o ON o.subscription = m.subscription
    CROSS JOIN LATERAL (SELECT CASE
        WHEN m.subscription IS NULL THEN NULL
        WHEN s.oid IS NULL THEN format('Its subscription "%s" does not exist.', m.subscription)
        WHEN o.diverged IS NOT NULL THEN
            'Its replica met another directory history: ' || o.diverged
        WHEN NOT s.subenabled THEN format('Its subscription "%s" is disabled.', m.subscription)
        WHEN max_silence > 0 AND st.pid IS NULL THEN
            format('No apply worker of subscription "%s" is running.', m.subscription)
        WHEN max_silence > 0 AND (st.last_msg_receipt_time IS NULL
                                  OR st.last_msg_receipt_time < pg_catalog.clock_timestamp() - make_interval(secs => max_silence)) THEN
            format('Subscription "%s" has received nothing from the directory database for more than %s s (chash.replica_max_silence).',
                   m.subscription, max_silence)
        END AS reason,
        m.subscription IS NOT NULL AND (s.oid IS NULL OR o.diverged IS NOT NULL) AS lasting) r
    WHERE m.directory = chash_shard_refusal_reason.directory
$$;
COMMENT ON FUNCTION @extschema@.chash_shard_refusal_reason(text, int) IS
    'internal: why this shard cannot vouch for its replica of the directory (another history, its subscription gone or disabled, silent for longer than max_silence seconds), NULL when it can, with the refusal''s SQLSTATE (SH002 lasting, SH003 transient)';

CREATE FUNCTION @extschema@.chash_shard_refusal(directory text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_shard_refusal'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION @extschema@.chash_shard_refusal(text) IS
    'why this shard cannot vouch for its replica of the directory (with chash.fail_closed on its guards refuse writes, SH002 or SH003), NULL when it can';
CREATE FUNCTION @extschema@.chash_shard_refusal_code(directory text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_shard_refusal_code'
    LANGUAGE C STABLE STRICT;
COMMENT ON FUNCTION @extschema@.chash_shard_refusal_code(text) IS
    'the SQLSTATE of this shard''s refusal (chash_shard_refusal): SH002 until a DBA mends the replica, SH003 until it follows again; NULL when it can vouch for it';
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
                                          AND g.tgname = ('chash_guard_' || left(md5(m.directory), 12))::name)),
                    '{}') AS guarded_tables
    FROM @extschema@.chash_table x WHERE x.directory = m.directory
) t;
COMMENT ON VIEW @extschema@.chash_shard_status IS
    'per joined directory: shard, subscription, replicated version, initial copy done, lag, registered tables present, missing and guarded here; the directory database''s identity as recorded, a divergence seen, whether the replica streams, and why the shard cannot vouch for it (refusal); whether load statistics are counted; the refusal''s SQLSTATE (refusal_code: SH002 lasting, SH003 transient)';
