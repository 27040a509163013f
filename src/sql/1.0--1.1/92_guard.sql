-- ---------------------------------------------------------------------------
-- The fence as a barrier (docs/migrations.md, "The fence is a barrier") and
-- the guard on shards (docs/shards.md, "The guard"), src/fence.c and
-- src/shard_guard.c.
-- ---------------------------------------------------------------------------

-- Internal: chash_step_fence calls it after setting the step fenced.
CREATE FUNCTION @extschema@.chash_step_fence_barrier(directory text, slot int, tenant text) RETURNS void
    AS 'MODULE_PATHNAME', 'chash_step_fence_barrier'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_step_fence_barrier(text, int, text) IS
    'internal: waits for the writers admitted for a fenced slot (or tenant) and holds later ones until the transaction ends; needs UPDATE on chash_migration_step';
COMMENT ON FUNCTION @extschema@.chash_step_fence(bigint, int) IS
    'copying -> fenced: writes to the slot or tenant now get 40001 from chash_route_for_write; reads still go to the old shard; returns once every write admitted before has ended';

-- Writes are admitted by the latest committed state and hold lock tags
-- until the transaction ends: not STABLE, and not in parallel workers
-- (their locks end with them, before the transaction).
ALTER FUNCTION @extschema@.chash_route_for_write(text, text) VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.chash_route_for_write(text, text) IS
    'like chash_route, but by the latest committed state, and raises 40001 (retry) while a migration step has fenced the tenant or its slot; a fence waits for the transaction';

CREATE FUNCTION @extschema@.chash_shard_wait_fence(directory text, migration bigint, step int) RETURNS void
    AS 'MODULE_PATHNAME', 'chash_shard_wait_fence'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_wait_fence(text, bigint, int) IS
    'on a step''s source shard: returns once the fence has been applied here and every write the guard admitted for the step''s slot or tenant before has ended';
