-- A batch's fence holds one lock per slot or tenant until it commits, in
-- the server's shared lock table; a claim returns at most this many steps,
-- a quarter of that table, so that a fence leaves room for everybody else.
CREATE FUNCTION @extschema@.chash_steps_max() RETURNS int
    LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT greatest(1, pg_catalog.current_setting('max_locks_per_transaction')::int
                       * pg_catalog.current_setting('max_connections')::int / 4)
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_max() IS
    'the most steps one batch holds: a quarter of the lock table (max_locks_per_transaction x max_connections / 4), since its fence locks each slot or tenant';
