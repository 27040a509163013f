-- Registering or unregistering a table while a batch of the directory is
-- in flight would change the set of tables under a copy: the batch would
-- complete without the new table's rows (left on the source, routed
-- elsewhere) or its source delete would remove rows it never copied.  So
-- the two exclude each other: a batch claims under the directory row's
-- lock, and so does a registration (chash_directory_row), which then
-- refuses while any step of the directory is copying or fenced, or still
-- holds a lease (a completed batch whose source delete is to come).
CREATE FUNCTION @extschema@.chash_table_registration_check(directory text) RETURNS void
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    busy record;
BEGIN
    PERFORM @extschema@.chash_directory_row($1);
    IF @extschema@.chash_shard_subscription() IS NOT NULL THEN
        RETURN;     -- a shard's replica: the registration itself is refused there (25006)
    END IF;
    SELECT s.migration, pg_catalog.count(*) AS steps INTO busy
      FROM @extschema@.chash_migration_step s
      JOIN @extschema@.chash_migration m ON m.id = s.migration
     WHERE m.directory OPERATOR(pg_catalog.=) $1
       AND (s.state OPERATOR(pg_catalog.=) ANY (ARRAY['copying', 'fenced'])
            OR EXISTS (SELECT FROM @extschema@.chash_step_lease l
                        WHERE l.migration OPERATOR(pg_catalog.=) s.migration
                          AND l.step OPERATOR(pg_catalog.=) s.step))
     GROUP BY s.migration
     ORDER BY s.migration
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot change the registered tables of directory "%" while a move is in flight',
                @extschema@.chash_message_text($1)
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.format('Migration %s has %s step(s) being copied, fenced or deleted.',
                                             busy.migration, busy.steps),
                  HINT = 'Register tables before a migration starts, or stop its movers (chash_rebalance_stop, or end chash_move) and wait until its batches are given back or completed.';
    END IF;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_table_registration_check(text) IS
    'internal: locks the directory row and refuses (55000) while a batch of the directory is copying, fenced or deleting';
