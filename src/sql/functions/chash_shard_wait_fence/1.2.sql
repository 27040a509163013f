CREATE FUNCTION @extschema@.chash_shard_wait_fence(directory text, migration bigint, steps int[]) RETURNS void
    AS 'MODULE_PATHNAME', 'chash_shard_wait_fence_steps'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_shard_wait_fence(text, bigint, int[]) IS
    'on a batch''s source shard: returns once every step of the batch has been applied here fenced (or done) and every write the guard admitted for their slots or tenants before has ended';
