CREATE FUNCTION @extschema@.chash_rebalance_stop(directory text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory'], ARRAY[$1 IS NULL]);
    -- the worker is signalled and records its state itself; this waits
    -- until its process has ended
    WHILE @extschema@.chash_rebalance_request_stop($1) = 'stopping' LOOP
        PERFORM pg_catalog.pg_sleep(0.1);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_rebalance_stop(text) IS
    'stops the background rebalance of directory: its worker gives back or finishes its batches, releases its leases and exits before this returns; a later chash_rebalance_start resumes';
