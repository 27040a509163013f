-- C (src/rebalance.c): signals the worker, or records the rebalance
-- stopped as the extension's owner when none runs, and waits until the
-- worker's process has ended.
CREATE FUNCTION @extschema@.chash_rebalance_stop(directory text) RETURNS void
    AS 'MODULE_PATHNAME', 'chash_rebalance_stop'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.chash_rebalance_stop(text) IS
    'stops the background rebalance of directory: its worker gives back or finishes its batches, releases its leases and exits before this returns; a later chash_rebalance_start resumes';
