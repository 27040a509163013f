-- ---------------------------------------------------------------------------
-- The replication objects of online moves, recorded before they are
-- created (docs/shards.md, "Background rebalancing"): a publication and a
-- slot on the step's source shard, a subscription on its target, named
-- after the step (mover/online.c).  A mover that dies, or a step given
-- back by hand, can leave them behind, and a slot holds WAL on its shard
-- for as long as it exists.  The cleaner (mover/replication_cleaner.c,
-- which chash_move and the background rebalance run before and after
-- their jobs) drops those of steps that are done, cancelled or given back
-- and that no mover holds, and forgets them.  The functions are the only
-- way to the table: they check the caller's lease, and run as the
-- extension's owner.
-- ---------------------------------------------------------------------------

CREATE TABLE @extschema@.chash_replication_object (
    migration bigint NOT NULL,
    step int NOT NULL,
    kind text NOT NULL CHECK (kind IN ('publication', 'slot', 'subscription')),
    shard text NOT NULL,
    name text NOT NULL,
    recorded_by text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (migration, step, kind),
    FOREIGN KEY (migration, step) REFERENCES @extschema@.chash_migration_step (migration, step)
        ON DELETE CASCADE
);
COMMENT ON TABLE @extschema@.chash_replication_object IS
    'the publications, slots and subscriptions of online moves, recorded before they are created and forgotten once dropped; not routing state';

-- The steps whose objects the cleaner may drop: done or cancelled with no
-- lease left, or given back (pending) with none that is live.
CREATE FUNCTION @extschema@.chash_replication_object_orphan(migration bigint, step int) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $$
    SELECT EXISTS (
        SELECT FROM @extschema@.chash_migration_step s
         WHERE s.migration = $1 AND s.step = $2
           AND (s.state IN ('done', 'cancelled')
                AND NOT EXISTS (SELECT FROM @extschema@.chash_step_lease l
                                 WHERE l.migration = s.migration AND l.step = s.step)
                OR s.state = 'pending'
                AND NOT EXISTS (SELECT FROM @extschema@.chash_step_lease l
                                 WHERE l.migration = s.migration AND l.step = s.step
                                   AND l.lease_until >= pg_catalog.clock_timestamp())))
$$;
COMMENT ON FUNCTION @extschema@.chash_replication_object_orphan(bigint, int) IS
    'internal: whether the recorded replication objects of a step may be dropped (done or cancelled with no lease, or pending with no live lease)';

CREATE FUNCTION @extschema@.chash_replication_object_record(migration bigint, step int, holder text,
                                                            source text, target text, name text)
    RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step', 'holder', 'source', 'target', 'name'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL, $5 IS NULL, $6 IS NULL]);
    PERFORM @extschema@.chash_steps_lease_check($1, ARRAY[$2], $3);
    INSERT INTO @extschema@.chash_replication_object AS o (migration, step, kind, shard, name, recorded_by)
    VALUES ($1, $2, 'publication', $4, $6, $3), ($1, $2, 'slot', $4, $6, $3), ($1, $2, 'subscription', $5, $6, $3)
    ON CONFLICT ON CONSTRAINT chash_replication_object_pkey DO UPDATE
       SET shard = excluded.shard, name = excluded.name, recorded_by = excluded.recorded_by,
           recorded_at = pg_catalog.now();
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replication_object_record(bigint, int, text, text, text, text) IS
    'internal: records, for the holder of the step''s lease, the publication and slot about to be created on source and the subscription on target';

CREATE FUNCTION @extschema@.chash_replication_object_orphans(migration bigint)
    RETURNS TABLE (step int, from_shard text, to_shard text, name text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
    SELECT s.step, s.from_shard, s.to_shard, pg_catalog.min(o.name)
      FROM @extschema@.chash_replication_object o
      JOIN @extschema@.chash_migration_step s ON s.migration = o.migration AND s.step = o.step
     WHERE o.migration = $1 AND @extschema@.chash_replication_object_orphan(o.migration, o.step)
     GROUP BY s.step, s.from_shard, s.to_shard
     ORDER BY s.step
$$;
COMMENT ON FUNCTION @extschema@.chash_replication_object_orphans(bigint) IS
    'internal: the steps of a migration whose recorded replication objects the cleaner may drop, with their shards';

-- Locks the step (a claim of a step given back waits until the cleaner's
-- transaction ends) and, when forget, deletes its records; true when the
-- step's objects may be dropped.
CREATE FUNCTION @extschema@.chash_replication_object_take(migration bigint, step int, forget boolean)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step', 'forget'], ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    PERFORM FROM @extschema@.chash_migration_step s WHERE s.migration = $1 AND s.step = $2 FOR UPDATE;
    IF NOT @extschema@.chash_replication_object_orphan($1, $2) THEN
        RETURN false;
    END IF;
    IF $3 THEN
        DELETE FROM @extschema@.chash_replication_object o WHERE o.migration = $1 AND o.step = $2;
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_replication_object_take(bigint, int, boolean) IS
    'internal: locks a step for the cleaner and tells whether its replication objects may be dropped; with forget, deletes their records';
