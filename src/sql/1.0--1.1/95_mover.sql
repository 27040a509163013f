-- ---------------------------------------------------------------------------
-- The mover's leases (README.md, "chash_move"; docs/migrations.md)
--
-- chash_move holds each step it works on by a lease and records how far
-- the step got, so that a rerun takes over the steps of a mover that died
-- once their lease has expired and redoes only what is needed.  Leases
-- live in a table of their own rather than in chash_migration_step: a
-- renewal every few seconds must not bump the directory's version (every
-- routing backend would reload its cache) nor be replicated to the shards.
-- A row exists while the mover has work left on the step, including the
-- deletion of the moved rows on the source after the step is done; when
-- the step is finished the row is deleted.
--
-- progress: 'claimed' (copying, nothing on the target yet), 'subscribed'
-- (an online move: a subscription on the target copies and streams the
-- step's rows; writes still go on), 'fenced' (writes refused; the copy or
-- the last catch-up follows), 'copied' (the rows are on the target,
-- verified and committed), 'completed' (the step is done; the rows are
-- still to be deleted on the source).
-- ---------------------------------------------------------------------------

CREATE TABLE @extschema@.chash_step_lease (
    migration bigint NOT NULL,
    step int NOT NULL,
    holder text NOT NULL,
    lease_until timestamptz NOT NULL,
    progress text NOT NULL DEFAULT 'claimed'
        CHECK (progress IN ('claimed', 'subscribed', 'fenced', 'copied', 'completed')),
    rows bigint CHECK (rows >= 0),
    bytes bigint CHECK (bytes >= 0),
    updated_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (migration, step),
    FOREIGN KEY (migration, step) REFERENCES @extschema@.chash_migration_step (migration, step)
        ON DELETE CASCADE
);
COMMENT ON TABLE @extschema@.chash_step_lease IS
    'the steps chash_move works on: who holds each, until when, and how far it got; not routing state';
COMMENT ON COLUMN @extschema@.chash_step_lease.progress IS
    'claimed, subscribed (an online copy streams), fenced, copied (on the target, verified) or completed (the source still has the rows)';

-- The lease row of a step, locked, when `holder` holds it (55006 otherwise).
CREATE FUNCTION @extschema@.chash_step_lease_check(migration bigint, step int, holder text) RETURNS text
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    h text;
    p text;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step', 'holder'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    SELECT l.holder, l.progress INTO h, p FROM @extschema@.chash_step_lease l
     WHERE l.migration = $1 AND l.step = $2 FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'step % of migration % has no lease', $2, $1
            USING ERRCODE = '55006',
                  DETAIL = 'It was released, or finished by another mover.';
    END IF;
    IF h <> $3 THEN
        RAISE EXCEPTION 'step % of migration % is held by another mover', $2, $1
            USING ERRCODE = '55006',
                  DETAIL = pg_catalog.format('Its lease is held by "%s".', h),
                  HINT = 'The lease expired and another mover took the step over.';
    END IF;
    RETURN p;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_check(bigint, int, text) IS
    'internal: locks the lease of a step and returns its progress; 55006 unless holder holds it';

CREATE FUNCTION @extschema@.chash_step_lease_claim(migration bigint, holder text, lease interval)
    RETURNS TABLE (step int, slot int, tenant text, from_shard text, to_shard text,
                   state text, progress text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
#variable_conflict use_column
DECLARE
    l record;
    c record;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'holder', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    IF $3 <= interval '0' THEN
        RAISE EXCEPTION 'lease must be positive' USING ERRCODE = '22023';
    END IF;
    PERFORM @extschema@.chash_migration_lock($1);
    -- First the expired leases of movers that died: the work they left.
    LOOP
        SELECT e.step, e.progress INTO l FROM @extschema@.chash_step_lease e
         WHERE e.migration = $1 AND e.lease_until < pg_catalog.clock_timestamp()
         ORDER BY e.step LIMIT 1
           FOR UPDATE SKIP LOCKED;
        EXIT WHEN NOT FOUND;
        SELECT s.step, s.slot, s.tenant, s.from_shard, s.to_shard, s.state INTO c
          FROM @extschema@.chash_migration_step s WHERE s.migration = $1 AND s.step = l.step;
        IF c.state = 'pending' THEN
            -- released by hand; claimed again below like any pending step
            DELETE FROM @extschema@.chash_step_lease e WHERE e.migration = $1 AND e.step = l.step;
            CONTINUE;
        END IF;
        UPDATE @extschema@.chash_step_lease e
           SET holder = $2, lease_until = pg_catalog.clock_timestamp() + $3,
               updated_at = pg_catalog.clock_timestamp()
         WHERE e.migration = $1 AND e.step = l.step;
        step := c.step; slot := c.slot; tenant := c.tenant;
        from_shard := c.from_shard; to_shard := c.to_shard;
        state := c.state; progress := l.progress;
        RETURN NEXT;
        RETURN;
    END LOOP;
    SELECT * INTO c FROM @extschema@.chash_step_claim($1);
    IF c.step IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO @extschema@.chash_step_lease (migration, step, holder, lease_until)
         VALUES ($1, c.step, $2, pg_catalog.clock_timestamp() + $3);
    step := c.step; slot := c.slot; tenant := c.tenant;
    from_shard := c.from_shard; to_shard := c.to_shard;
    state := 'copying'; progress := 'claimed';
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_claim(bigint, text, interval) IS
    'takes over a step whose lease expired (with the progress it reached), else claims the next pending step; holds it for lease';

CREATE FUNCTION @extschema@.chash_step_lease_renew(migration bigint, holder text, lease interval, steps int[])
    RETURNS int
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    n int;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'holder', 'lease', 'steps'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL]);
    UPDATE @extschema@.chash_step_lease l
       SET lease_until = pg_catalog.clock_timestamp() + $3
     WHERE l.migration = $1 AND l.holder = $2 AND l.step = ANY ($4);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_renew(bigint, text, interval, int[]) IS
    'extends the leases holder holds on those steps of the migration (a step it gave up is left to expire); returns how many';

CREATE FUNCTION @extschema@.chash_step_lease_fence(migration bigint, step int, holder text, lease interval)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step', 'holder', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    PERFORM @extschema@.chash_step_lease_check($1, $2, $3);
    PERFORM @extschema@.chash_step_fence($1, $2);
    UPDATE @extschema@.chash_step_lease l
       SET progress = 'fenced', lease_until = pg_catalog.clock_timestamp() + $4,
           updated_at = pg_catalog.clock_timestamp()
     WHERE l.migration = $1 AND l.step = $2;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_fence(bigint, int, text, interval) IS
    'chash_step_fence for the holder of the step''s lease, recording the progress';

CREATE FUNCTION @extschema@.chash_step_lease_record(migration bigint, step int, holder text, progress text,
                                                   lease interval, rows bigint DEFAULT NULL,
                                                   bytes bigint DEFAULT NULL)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step', 'holder', 'progress', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL, $5 IS NULL]);
    IF $4 NOT IN ('subscribed', 'copied') THEN
        -- the other states change with the step's own state, in its functions
        RAISE EXCEPTION 'invalid progress "%"', $4
            USING ERRCODE = '22023', DETAIL = 'Only "subscribed" and "copied" are recorded on their own.';
    END IF;
    IF @extschema@.chash_step_lease_check($1, $2, $3) NOT IN ('claimed', 'subscribed') AND $4 = 'subscribed' THEN
        RAISE EXCEPTION 'step % of migration % is past its subscription', $2, $1
            USING ERRCODE = '55000',
                  DETAIL = 'Only a claimed step, not yet fenced, is copied by a subscription.';
    END IF;
    UPDATE @extschema@.chash_step_lease l
       SET progress = $4, lease_until = pg_catalog.clock_timestamp() + $5,
           rows = COALESCE($6, l.rows), bytes = COALESCE($7, l.bytes),
           updated_at = pg_catalog.clock_timestamp()
     WHERE l.migration = $1 AND l.step = $2;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_record(bigint, int, text, text, interval, bigint, bigint) IS
    'records that the holder of the step''s lease has subscribed the target to its rows, or copied and verified them there';

CREATE FUNCTION @extschema@.chash_step_lease_complete(migration bigint, step int, holder text, lease interval)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step', 'holder', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    IF @extschema@.chash_step_lease_check($1, $2, $3) NOT IN ('copied', 'completed') THEN
        RAISE EXCEPTION 'step % of migration % has not been copied', $2, $1
            USING ERRCODE = '55000',
                  DETAIL = 'Only a step whose rows are on the target, verified, can complete.';
    END IF;
    PERFORM @extschema@.chash_step_complete($1, $2);
    UPDATE @extschema@.chash_step_lease l
       SET progress = 'completed', lease_until = pg_catalog.clock_timestamp() + $4,
           updated_at = pg_catalog.clock_timestamp()
     WHERE l.migration = $1 AND l.step = $2;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_complete(bigint, int, text, interval) IS
    'chash_step_complete for the holder of the step''s lease once its rows are copied, recording the progress';

CREATE FUNCTION @extschema@.chash_step_lease_release(migration bigint, step int, holder text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step', 'holder'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    PERFORM @extschema@.chash_migration_lock($1);
    PERFORM @extschema@.chash_step_lease_check($1, $2, $3);
    SELECT s.state INTO st FROM @extschema@.chash_migration_step s
     WHERE s.migration = $1 AND s.step = $2;
    IF st IN ('copying', 'fenced') THEN
        PERFORM @extschema@.chash_step_release($1, $2);     -- deletes the lease too
    ELSIF st = 'done' THEN
        RAISE EXCEPTION 'step % of migration % is done', $2, $1
            USING ERRCODE = '55000',
                  DETAIL = 'Its rows are still to be deleted on the source; finish it with chash_step_lease_finish().';
    END IF;
    DELETE FROM @extschema@.chash_step_lease l WHERE l.migration = $1 AND l.step = $2;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_release(bigint, int, text) IS
    'chash_step_release for the holder of the step''s lease (the caller has removed its copy from the target), dropping the lease';

CREATE FUNCTION @extschema@.chash_step_lease_finish(migration bigint, step int, holder text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    st text;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'step', 'holder'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL]);
    PERFORM @extschema@.chash_step_lease_check($1, $2, $3);
    SELECT s.state INTO st FROM @extschema@.chash_migration_step s
     WHERE s.migration = $1 AND s.step = $2;
    IF st NOT IN ('done', 'cancelled') THEN
        RAISE EXCEPTION 'step % of migration % is not finished', $2, $1
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Its state is "%s".', st);
    END IF;
    DELETE FROM @extschema@.chash_step_lease l WHERE l.migration = $1 AND l.step = $2;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_finish(bigint, int, text) IS
    'drops the lease of a done (or cancelled) step once the holder has left its rows on one shard only';

-- A step released (back to pending) forgets its lease.  A trigger, so that
-- a role that may change steps needs no grant on the mover's bookkeeping
-- (an operator role of 1.0 keeps working after the update); SECURITY
-- DEFINER with search_path pinned, and trigger functions cannot be called
-- directly.
CREATE FUNCTION @extschema@.chash_step_lease_forget() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM @extschema@.chash_step_lease l
     WHERE l.migration = NEW.migration AND l.step = NEW.step;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_forget() IS
    'trigger: a step released back to pending loses its mover lease';
CREATE TRIGGER chash_step_lease_forget AFTER UPDATE OF state ON @extschema@.chash_migration_step
    FOR EACH ROW WHEN (NEW.state = 'pending' AND OLD.state IS DISTINCT FROM 'pending')
    EXECUTE FUNCTION @extschema@.chash_step_lease_forget();
