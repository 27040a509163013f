CREATE OR REPLACE FUNCTION @extschema@.chash_step_lease_renew(migration bigint, holder text, lease interval, steps int[])
    RETURNS int
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    n int;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'holder', 'lease', 'steps'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL]);
    WITH free AS (
        SELECT l.step FROM @extschema@.chash_step_lease l
         WHERE l.migration = $1 AND l.holder = $2 AND l.step = ANY ($4)
         ORDER BY l.step
           FOR UPDATE SKIP LOCKED)
    UPDATE @extschema@.chash_step_lease l
       SET lease_until = pg_catalog.clock_timestamp() + $3
      FROM free f
     WHERE l.migration = $1 AND l.step = f.step;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_renew(bigint, text, interval, int[]) IS
    'extends the leases holder holds on those steps of the migration that no transaction has locked (a locked one is its job''s to extend; a step it gave up is left to expire); returns how many';
