-- Claims a batch: the first pending step, and after it, in step order,
-- pending steps of the same shard pair and kind, up to max_steps (and
-- chash_steps_max()).  With max_rows or max_bytes, the steps' sizes are
-- estimated from chash_tenant_size (tenants without a size count as
-- nothing; a slot step's pinned tenants do not move with it) and the batch
-- ends before the step that would exceed a bound; the first step is
-- claimed whatever its size.  With fence, the steps are fenced in the
-- claim's transaction, pending -> fenced as chash_steps_fence would fence
-- them: one directory version, one change of each step's row, where a
-- claim and then a fence make two of each (a mover that copies with
-- writes blocked has nothing to do between them).
CREATE FUNCTION @extschema@.chash_steps_claim(migration bigint, max_steps int,
                                              max_rows bigint DEFAULT NULL, max_bytes bigint DEFAULT NULL,
                                              fence boolean DEFAULT false)
    RETURNS TABLE (step int, slot int, tenant text, from_shard text, to_shard text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
#variable_conflict use_column
DECLARE
    dir text;
    st text;
    first record;
    chosen int[];
    fence_slots int[];
    fence_tenants text[];
    other record;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'max_steps', 'fence'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $5 IS NULL]);
    IF $2 < 1 OR $3 < 1 OR $4 < 1 THEN
        RAISE EXCEPTION '% must be positive',
                CASE WHEN $2 < 1 THEN 'max_steps' WHEN $3 < 1 THEN 'max_rows' ELSE 'max_bytes' END
            USING ERRCODE = '22023';
    END IF;
    dir := @extschema@.chash_migration_lock($1);
    SELECT m.status INTO st FROM @extschema@.chash_migration m WHERE m.id = $1 FOR KEY SHARE;
    IF st <> 'running' THEN
        RETURN;                 -- nothing left to claim: the worker stops
    END IF;
    -- Nothing is claimed while another migration of the directory still
    -- holds steps (a cancelled or abandoned batch, a completed one whose
    -- source delete is to come): an online batch's subscription may still
    -- stream from its source, and would carry this batch's deletions
    -- there to its target.  A mover of that migration finishes them first.
    SELECT l.migration, pg_catalog.count(*) AS steps INTO other
      FROM @extschema@.chash_step_lease l
      JOIN @extschema@.chash_migration m ON m.id OPERATOR(pg_catalog.=) l.migration
     WHERE m.directory OPERATOR(pg_catalog.=) dir AND l.migration OPERATOR(pg_catalog.<>) $1
     GROUP BY l.migration ORDER BY l.migration LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'migration % of directory "%" still has steps in flight', other.migration,
                @extschema@.chash_message_text(dir)
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('%s step(s) of migration %s hold a lease: a batch cancelled or abandoned while it moved, or completed with its rows on the source still to delete. Its replication objects may still stream from its source.',
                                             other.steps, other.migration),
                  HINT = pg_catalog.format('Finish them first with chash_move --migration %s; it takes their copies off the targets, drops their replication objects and deletes what was moved.',
                                           other.migration);
    END IF;
    SELECT p.step, p.from_shard, p.to_shard, p.slot IS NULL AS by_tenant INTO first
      FROM @extschema@.chash_migration_step p
     WHERE p.migration = $1 AND p.state = 'pending'
     ORDER BY p.step LIMIT 1
       FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    WITH candidate AS MATERIALIZED (
        SELECT p.step, p.slot, p.tenant FROM @extschema@.chash_migration_step p
         WHERE p.migration = $1 AND p.state = 'pending' AND p.step >= first.step
           AND p.from_shard = first.from_shard AND p.to_shard = first.to_shard
           AND (p.slot IS NULL) = first.by_tenant
         ORDER BY p.step LIMIT least($2, @extschema@.chash_steps_max())
           FOR UPDATE SKIP LOCKED
    ), slot_size AS (
        -- the sizes only when a bound asks for them: one pass over the
        -- directory's sized tenants
        SELECT @extschema@.chash_slot(dir, t.tenant) AS slot,
               pg_catalog.sum(t.rows) AS rows, pg_catalog.sum(t.bytes) AS bytes
          FROM @extschema@.chash_tenant_size t
         WHERE ($3 IS NOT NULL OR $4 IS NOT NULL) AND NOT first.by_tenant AND t.directory = dir
           AND NOT EXISTS (SELECT FROM @extschema@.chash_override o
                            WHERE o.directory = dir AND o.tenant = t.tenant)
         GROUP BY 1
    ), estimate AS (
        SELECT c.step,
               pg_catalog.sum(COALESCE(z.rows, y.rows, 0)) OVER w AS rows_so_far,
               pg_catalog.sum(COALESCE(z.bytes, y.bytes, 0)) OVER w AS bytes_so_far,
               pg_catalog.row_number() OVER w AS n
          FROM candidate c
          LEFT JOIN slot_size z ON z.slot = c.slot
          LEFT JOIN @extschema@.chash_tenant_size y
                 ON ($3 IS NOT NULL OR $4 IS NOT NULL) AND y.directory = dir AND y.tenant = c.tenant
        WINDOW w AS (ORDER BY c.step)
    )
    SELECT array_agg(e.step ORDER BY e.step) INTO chosen FROM estimate e
     WHERE e.n = 1 OR ((e.rows_so_far <= $3 OR $3 IS NULL) AND (e.bytes_so_far <= $4 OR $4 IS NULL));
    RETURN QUERY
        UPDATE @extschema@.chash_migration_step s
           SET state = CASE WHEN $5 THEN 'fenced' ELSE 'copying' END, started_at = pg_catalog.now(),
               claimed_by = pg_catalog.concat_ws(' ',
                   NULLIF(pg_catalog.current_setting('application_name'), ''),
                   'pid ' || pg_catalog.pg_backend_pid())
         WHERE s.migration = $1 AND s.step = ANY (chosen)
        RETURNING s.step, s.slot, s.tenant, s.from_shard, s.to_shard;
    IF $5 THEN
        -- the barrier of chash_steps_fence, in slot (tenant) order
        SELECT array_agg(s.slot ORDER BY s.slot) FILTER (WHERE s.slot IS NOT NULL),
               array_agg(s.tenant ORDER BY s.tenant) FILTER (WHERE s.tenant IS NOT NULL)
          INTO fence_slots, fence_tenants
          FROM @extschema@.chash_migration_step s WHERE s.migration = $1 AND s.step = ANY (chosen);
        PERFORM @extschema@.chash_fence_barrier(dir, fence_slots, fence_tenants);
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_claim(bigint, int, bigint, bigint, boolean) IS
    'claims a batch: the next pending step and the pending steps after it with the same shards, up to max_steps (and max_rows / max_bytes by chash_tenant_size); pending -> copying, or with fence pending -> fenced in the same transaction';
