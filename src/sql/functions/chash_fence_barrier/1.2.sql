CREATE FUNCTION @extschema@.chash_fence_barrier(directory text, slots int[] DEFAULT NULL, tenants text[] DEFAULT NULL)
    RETURNS void
    AS 'MODULE_PATHNAME', 'chash_steps_fence_barrier'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_fence_barrier(text, int[], text[]) IS
    'internal: chash_step_fence_barrier over a batch''s slots and tenants (waits for the writers admitted for any of them and holds later ones until the transaction ends); needs UPDATE on chash_migration_step';
