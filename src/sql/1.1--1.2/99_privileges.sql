-- ---------------------------------------------------------------------------
-- Who may execute what (docs/directory.md, "Privileges").  Runs last, so it
-- covers every function, those of the earlier 1.2 files included.
--
-- PUBLIC may execute the documented API only (the list below: every
-- function README.md or docs/*.md show called; sql/privileges.sql checks
-- the two agree).  Internal functions are executable by their callers
-- only: the documented functions that run with the caller's rights call
-- internal helpers, and PostgreSQL checks EXECUTE on those as the caller,
-- so a role that changes the directory (an operator) is a member of
-- chash_operator, and the mover's role of chash_mover, which may also
-- execute the lease functions of chash_move.  Trigger functions need no
-- EXECUTE when they fire; creating a guard trigger does (chash_guard_sync).
-- ---------------------------------------------------------------------------
DO $$
BEGIN
    -- chash_mover: the README asks the DBA to create it; either order works
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'chash_mover') THEN
        CREATE ROLE chash_mover NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'chash_operator') THEN
        CREATE ROLE chash_operator NOLOGIN;
    END IF;
END
$$;

DO $$
DECLARE
    -- the documented API: PUBLIC may execute these (every overload)
    api CONSTANT text[] := ARRAY[
        -- stable hashes and placement (docs/reference.md)
        'chash_xxh64', 'chash_md5_64', 'chash_crc16', 'chash_cassandra_token', 'chash_mod',
        'chash_jump', 'chash_rendezvous', 'chash_rendezvous_top', 'chash_ring_lookup',
        'chash_ring_points', 'chash_ring_replicas', 'chash_ring_shares', 'chash_ketama',
        'chash_maglev', 'chash_maglev_table', 'chash_bounded_assign', 'chash_redis_slot',
        'chash_redis_same_slot', 'chash_pg_partition',
        -- the directory (docs/directory.md)
        'chash_create_directory', 'chash_drop_directory', 'chash_add_shard', 'chash_set_shard',
        'chash_remove_shard', 'chash_pin', 'chash_unpin', 'chash_route', 'chash_route_explain',
        'chash_route_for_write', 'chash_slot', 'chash_tenant_canonical', 'chash_directory_snapshot',
        'chash_directory_changes', 'chash_slot_runs', 'chash_measure_tenants', 'chash_whales',
        'chash_message_text', 'chash_routing_cache_stats',
        -- planner and migrations (docs/planner.md, docs/migrations.md)
        'chash_plan_rebalance', 'chash_migration_start', 'chash_migration_move_tenant',
        'chash_migration_cancel', 'chash_migration_revert', 'chash_step_claim', 'chash_step_fence',
        'chash_step_complete', 'chash_step_release',
        -- batches of steps (docs/migrations.md, "Batches")
        'chash_steps_claim', 'chash_steps_fence', 'chash_steps_complete', 'chash_steps_release',
        'chash_steps_max', 'chash_decoding_filter_create', 'chash_decoding_filter_drop',
        -- shards (docs/shards.md)
        'chash_add_table', 'chash_drop_table', 'chash_tenant_slot', 'chash_directory_publish',
        'chash_shard_join', 'chash_shard_leave', 'chash_shard_slot_name', 'chash_shard_wait_fence',
        'chash_guard_sync', 'chash_unguard', 'chash_statement_check_active',
        -- failover (docs/shards.md, "Failover")
        'chash_shard_repoint', 'chash_directory_reconcile', 'chash_shard_refusal', 'chash_server_identity',
        'chash_shard_refusal_code', 'chash_directory_recover',
        -- load statistics (docs/load.md)
        'chash_slot_stats', 'chash_tenant_stats', 'chash_stats_tracking',
        'chash_collect', 'chash_suggest_pins', 'chash_shard_sizes',
        -- background rebalancing (docs/shards.md, "Background rebalancing")
        'chash_rebalance_start', 'chash_rebalance_stop', 'chash_rebalance_wait'];
    -- internal helpers that documented functions (and the triggers of the
    -- directory tables) call with the caller's rights
    helpers CONSTANT text[] := ARRAY[
        'chash_require', 'chash_directory_row', 'chash_check_shard_weight',
        'chash_migration_lock_directory', 'chash_migration_lock', 'chash_migration_check_none_running',
        'chash_migration_finish_if_empty', 'chash_migration_insert', 'chash_step_lock',
        'chash_step_fence_barrier', 'chash_shard_subscription', 'chash_guard_name', 'chash_guard_table',
        'chash_shard_row_guard', 'chash_shard_truncate_guard', 'chash_fence_barrier', 'chash_steps_lock',
        'chash_steps_lock_claimed', 'chash_table_registration_check',
        'chash_guard_tree', 'chash_guard_needs_final'];
    -- what chash_move calls on the directory database (mover/lease.c, mover/step.c)
    mover CONSTANT text[] := ARRAY[
        'chash_step_lease_claim', 'chash_step_lease_check', 'chash_step_lease_record',
        'chash_step_lease_renew', 'chash_step_lease_fence', 'chash_step_lease_complete',
        'chash_step_lease_release', 'chash_step_lease_finish',
        'chash_steps_lease_check', 'chash_steps_lease_set', 'chash_steps_lease_claim',
        'chash_steps_lease_fence', 'chash_steps_lease_record', 'chash_steps_lease_complete',
        'chash_steps_lease_release', 'chash_steps_lease_finish',
        -- the record of the online moves' replication objects (mover/replication_record.c, replication_cleaner.c)
        'chash_replication_object_record', 'chash_replication_object_orphans', 'chash_replication_object_take'];
    -- documented functions that are a privilege: chash_operator's (and
    -- whoever the owner grants them), not PUBLIC's (docs/load.md)
    operator_api CONSTANT text[] := ARRAY['chash_stats_reset'];
    f record;
    r record;
BEGIN
    FOR f IN
        SELECT p.oid::pg_catalog.regprocedure AS fn, p.proname::text AS name
          FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                                     AND d.objid = p.oid AND d.deptype = 'e'
          JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'chash'
         ORDER BY p.oid
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON ROUTINE %s FROM PUBLIC', f.fn);
        IF f.name = ANY (api) THEN
            EXECUTE pg_catalog.format('GRANT EXECUTE ON ROUTINE %s TO PUBLIC', f.fn);
        ELSIF f.name = ANY (operator_api) THEN
            EXECUTE pg_catalog.format('GRANT EXECUTE ON ROUTINE %s TO chash_operator', f.fn);
        ELSIF f.name = ANY (helpers) THEN
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO chash_operator, chash_mover', f.fn);
        ELSIF f.name = ANY (mover) THEN
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO chash_mover', f.fn);
        END IF;
    END LOOP;

    -- An update from 1.1 keeps its roles working: a role granted UPDATE on
    -- chash_directory (the 1.1 operator recipe; every mover needs it too)
    -- becomes a member of chash_operator, and a role that may write
    -- chash_step_lease (a 1.1 mover) a member of chash_mover.  Memberships,
    -- not grants on the functions: those would differ from a fresh install
    -- and be lost by a dump and restore.  A fresh install has granted
    -- nothing yet and finds no such role.
    FOR r IN
        SELECT DISTINCT a.grantee::pg_catalog.regrole AS role,
               CASE c.relname WHEN 'chash_directory' THEN 'chash_operator' ELSE 'chash_mover' END AS member_of
          FROM pg_catalog.pg_class c
          CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a
         WHERE c.relnamespace = '@extschema@'::pg_catalog.regnamespace
           AND ((c.relname = 'chash_directory' AND a.privilege_type = 'UPDATE')
                OR (c.relname = 'chash_step_lease' AND a.privilege_type IN ('INSERT', 'UPDATE')))
           AND a.grantee <> 0 AND a.grantee <> c.relowner
    LOOP
        IF NOT pg_catalog.pg_has_role(r.role, r.member_of, 'MEMBER') THEN
            EXECUTE pg_catalog.format('GRANT %I TO %s', r.member_of, r.role);
        END IF;
    END LOOP;
END
$$;

-- Registering a table refuses while a lease of the directory is held
-- (chash_table_registration_check, called with the operator's rights), so
-- an operator may see the leases.
GRANT SELECT ON @extschema@.chash_step_lease TO chash_operator;
