CREATE FUNCTION @extschema@.chash_steps_lease_record(migration bigint, steps int[], holder text, progress text,
                                                     lease interval, rows bigint[] DEFAULT NULL,
                                                     bytes bigint[] DEFAULT NULL)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    held text[];
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'holder', 'progress', 'lease'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL, $5 IS NULL]);
    IF $4 NOT IN ('subscribed', 'copied') THEN
        -- the other states change with the steps' own state, in their functions
        RAISE EXCEPTION 'invalid progress "%"', $4
            USING ERRCODE = '22023', DETAIL = 'Only "subscribed" and "copied" are recorded on their own.';
    END IF;
    IF cardinality($6) IS DISTINCT FROM cardinality($2) AND $6 IS NOT NULL
       OR cardinality($7) IS DISTINCT FROM cardinality($2) AND $7 IS NOT NULL THEN
        RAISE EXCEPTION '% must have one entry per step', CASE WHEN $6 IS NOT NULL
                   AND cardinality($6) IS DISTINCT FROM cardinality($2) THEN 'rows' ELSE 'bytes' END
            USING ERRCODE = '22023';
    END IF;
    held := @extschema@.chash_steps_lease_check($1, $2, $3);
    IF $4 = 'subscribed' AND NOT held <@ ARRAY['claimed', 'subscribed'] THEN
        RAISE EXCEPTION 'steps of migration % are past their subscription', $1
            USING ERRCODE = '55000',
                  DETAIL = 'Only claimed steps, not yet fenced, are copied by a subscription.';
    END IF;
    IF $6 IS NULL AND $7 IS NULL THEN
        PERFORM @extschema@.chash_steps_lease_set($1, $2, $5, $4);
    ELSE
        -- chash_steps_lease_set and the sizes in one change of each lease
        UPDATE @extschema@.chash_step_lease l
           SET progress = $4, lease_until = pg_catalog.clock_timestamp() + $5,
               updated_at = pg_catalog.clock_timestamp(),
               rows = COALESCE(x.rows, l.rows), bytes = COALESCE(x.bytes, l.bytes)
          FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($6), pg_catalog.unnest($7)) x (step, rows, bytes)
         WHERE l.migration = $1 AND l.step = x.step;
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lease_record(bigint, int[], text, text, interval, bigint[], bigint[]) IS
    'records that the holder of a batch''s leases has subscribed the target to its rows, or copied and verified them there (rows and bytes: per step, in the order of steps)';
