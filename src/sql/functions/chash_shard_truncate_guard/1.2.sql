-- SECURITY DEFINER: a role with TRUNCATE on a guarded table needs no
-- grant on the directory tables.
CREATE OR REPLACE FUNCTION @extschema@.chash_shard_truncate_guard() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s record;
BEGIN
    SELECT st.migration, st.step, st.from_shard, st.to_shard INTO s
      FROM @extschema@.chash_migration_step st
      JOIN @extschema@.chash_migration m ON m.id = st.migration
     WHERE m.directory = TG_ARGV[0] AND m.status = 'running' AND st.state IN ('copying', 'fenced')
       AND TG_ARGV[2] IN (st.from_shard, st.to_shard)
     ORDER BY st.migration, st.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot truncate %.% while a migration step moves its rows', TG_TABLE_SCHEMA, TG_TABLE_NAME
            USING ERRCODE = '55006',
                  DETAIL = pg_catalog.format('Step %s of migration %s of directory "%s" moves rows from shard "%s" to shard "%s".',
                                             s.step, s.migration, @extschema@.chash_message_text(TG_ARGV[0]),
                                             @extschema@.chash_message_text(s.from_shard),
                                             @extschema@.chash_message_text(s.to_shard)),
                  HINT = 'Truncate once the step has completed.';
    END IF;
    RETURN NULL;
END
$$;
