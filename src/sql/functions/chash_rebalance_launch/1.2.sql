CREATE FUNCTION @extschema@.chash_rebalance_launch(directory text, migration bigint, max_parallel int,
                                                   max_rate bigint)
    RETURNS void
    AS 'MODULE_PATHNAME', 'chash_rebalance_launch'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_rebalance_launch(text, bigint, int, bigint) IS
    'internal: records a run of the rebalance of directory for the current role and starts its worker when the transaction commits; needs shared_preload_libraries = ''chash'' and membership in chash_mover';
