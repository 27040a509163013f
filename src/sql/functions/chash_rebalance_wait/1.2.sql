CREATE FUNCTION @extschema@.chash_rebalance_wait(directory text, timeout interval DEFAULT NULL) RETURNS text
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    s record;
    until timestamptz := pg_catalog.clock_timestamp() + $2;
    said bigint := -1;
    said_at timestamptz;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory'], ARRAY[$1 IS NULL]);
    IF EXISTS (SELECT FROM @extschema@.chash_rebalance r
                WHERE r.directory = $1 AND r.xmin = pg_catalog.pg_current_xact_id_if_assigned()::xid) THEN
        RAISE EXCEPTION 'the rebalance of directory "%" starts when this transaction commits', $1
            USING ERRCODE = '25000', HINT = 'Wait for it in a later transaction.';
    END IF;
    LOOP
        SELECT * INTO s FROM @extschema@.chash_rebalance_status r WHERE r.directory = $1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'directory "%" has no rebalance', $1
                USING ERRCODE = '42704', HINT = 'Start one with chash_rebalance_start().';
        END IF;
        IF s.state NOT IN ('running', 'stopping') THEN
            RETURN s.state;
        END IF;
        IF until IS NOT NULL AND pg_catalog.clock_timestamp() >= until THEN
            RETURN s.state;
        END IF;
        IF s.steps_done <> said AND (said_at IS NULL OR pg_catalog.clock_timestamp() >= said_at + interval '1 second') THEN
            RAISE NOTICE 'rebalance of directory "%": % of % steps, % rows moved%', $1,
                s.steps_done, s.steps_total, s.rows_moved,
                CASE WHEN s.time_left IS NOT NULL
                     THEN pg_catalog.format(', %s left', pg_catalog.date_trunc('second', s.time_left)) ELSE '' END;
            said := s.steps_done;
            said_at := pg_catalog.clock_timestamp();
        END IF;
        PERFORM pg_catalog.pg_sleep(0.2);
    END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_rebalance_wait(text, interval) IS
    'waits until the rebalance of directory has ended (or timeout has passed), with its progress as NOTICEs; returns its state';
