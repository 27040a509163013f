-- Locks the steps as chash_steps_lock does and returns the directory of
-- their migration; 55000 for the first (in step order) whose state is not
-- one of states: message and detail are its format strings (message: the
-- step, then the migration; detail: the state).  What chash_steps_fence,
-- chash_steps_complete and chash_steps_release check first.
CREATE FUNCTION @extschema@.chash_steps_lock_claimed(migration bigint, steps int[], states text[],
                                                    one_pair boolean, message text, detail text)
    RETURNS text
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan
    AS $$
DECLARE
    bad record;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['migration', 'steps', 'states', 'one_pair', 'message', 'detail'],
                                      ARRAY[$1 IS NULL, $2 IS NULL, $3 IS NULL, $4 IS NULL, $5 IS NULL, $6 IS NULL]);
    SELECT l.step, l.state, l.directory INTO bad
      FROM @extschema@.chash_steps_lock($1, $2, $4) l
     ORDER BY l.state <> ALL ($3) DESC, l.step LIMIT 1;
    IF bad.state <> ALL ($3) THEN
        RAISE EXCEPTION '%', pg_catalog.format($5, bad.step, $1)
            USING ERRCODE = '55000', DETAIL = pg_catalog.format($6, bad.state);
    END IF;
    RETURN bad.directory;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_steps_lock_claimed(bigint, int[], text[], boolean, text, text) IS
    'internal: locks the steps (chash_steps_lock) and returns their directory; 55000 for a step in none of the states';
