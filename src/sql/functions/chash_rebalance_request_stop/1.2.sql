CREATE FUNCTION @extschema@.chash_rebalance_request_stop(directory text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_rebalance_request_stop'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_rebalance_request_stop(text) IS
    'internal: signals the live worker of the rebalance of directory to stop and returns stopping, or records the rebalance stopped when no worker of it runs; returns its state';
