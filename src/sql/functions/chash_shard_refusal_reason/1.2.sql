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
