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
