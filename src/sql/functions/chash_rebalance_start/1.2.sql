-- C (src/rebalance.c): the plan is made with the caller's rights, the run
-- recorded in chash_rebalance as the extension's owner within it, so that
-- no internal function of the launch is executable on its own.
CREATE FUNCTION @extschema@.chash_rebalance_start(directory text, mode text DEFAULT 'slots',
                                                  max_parallel int DEFAULT 1, max_rate bigint DEFAULT NULL)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'chash_rebalance_start'
    LANGUAGE C VOLATILE
    SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION @extschema@.chash_rebalance_start(text, text, int, bigint) IS
    'plans a migration of directory (mode: the planner''s strategy) or takes over the running one, and moves it in the background with max_parallel batches at once; returns the migration';
