CREATE FUNCTION @extschema@.chash_remove_shard(directory text, shard text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    s @extschema@.chash_shard;
    n bigint;
    r record;
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['directory', 'shard'], ARRAY[directory IS NULL, shard IS NULL]);
    -- the directory lock first, as every management function takes it
    PERFORM @extschema@.chash_directory_row(directory);
    SELECT * INTO s FROM @extschema@.chash_shard x
     WHERE x.directory = chash_remove_shard.directory AND x.shard = chash_remove_shard.shard FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard "%" does not exist in directory "%"',
                @extschema@.chash_message_text(shard), @extschema@.chash_message_text(directory)
            USING ERRCODE = '42704';
    END IF;
    SELECT count(*) INTO n FROM @extschema@.chash_slot x
     WHERE x.directory = chash_remove_shard.directory AND x.shard = chash_remove_shard.shard;
    IF n > 0 THEN
        RAISE EXCEPTION 'shard "%" of directory "%" still owns slots',
                @extschema@.chash_message_text(shard), @extschema@.chash_message_text(directory)
            USING ERRCODE = '55006',
                  DETAIL = format('It owns %s of the directory''s slots.', n),
                  HINT = 'Move them away first: chash_set_shard(state => ''draining''), then chash_migration_start and chash_move.';
    END IF;
    SELECT count(*) INTO n FROM @extschema@.chash_override x
     WHERE x.directory = chash_remove_shard.directory AND x.shard = chash_remove_shard.shard;
    IF n > 0 THEN
        RAISE EXCEPTION 'shard "%" of directory "%" still has pinned tenants',
                @extschema@.chash_message_text(shard), @extschema@.chash_message_text(directory)
            USING ERRCODE = '55006',
                  DETAIL = format('Tenants pinned to it: %s.', n),
                  HINT = 'Move them to other shards with chash_migration_move_tenant first.';
    END IF;
    SELECT st.migration, st.step INTO r
      FROM @extschema@.chash_migration m
      JOIN @extschema@.chash_migration_step st ON st.migration = m.id
     WHERE m.directory = chash_remove_shard.directory AND m.status = 'running'
       AND st.state IN ('pending', 'copying', 'fenced')
       AND chash_remove_shard.shard IN (st.from_shard, st.to_shard)
     ORDER BY st.migration, st.step LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'shard "%" of directory "%" is still moved by a migration step',
                @extschema@.chash_message_text(shard), @extschema@.chash_message_text(directory)
            USING ERRCODE = '55006',
                  DETAIL = format('Step %s of migration %s moves from or to it.', r.step, r.migration),
                  HINT = 'Finish or cancel the migration first.';
    END IF;
    -- Joined as it: this database itself (chash_shard_join with no
    -- conninfo), or a shard database that replicates this one.  Which
    -- shard a remote database joined as is recorded only there; its slot
    -- here (chash_shard_slot_name) names the database.  So while any
    -- shard database replicates this one, only a retired shard is
    -- removed: retiring it is the operator's word that its database left.
    IF EXISTS (SELECT FROM @extschema@.chash_shard_member m
                WHERE m.directory = chash_remove_shard.directory AND m.shard = chash_remove_shard.shard) THEN
        RAISE EXCEPTION 'shard "%" of directory "%" is still joined by this database',
                @extschema@.chash_message_text(shard), @extschema@.chash_message_text(directory)
            USING ERRCODE = '55006',
                  HINT = format('Leave it first with SELECT chash_shard_leave(%L).', directory);
    END IF;
    IF s.state <> 'retired' THEN
        SELECT count(*) INTO n FROM pg_catalog.pg_replication_slots x
         WHERE x.database = pg_catalog.current_database() AND x.slot_type = 'logical'
           AND x.slot_name ~ '^chash_[0-9]+_[0-9]+$';
        IF n > 0 THEN
            RAISE EXCEPTION 'shard "%" of directory "%" may still be joined by a shard database',
                    @extschema@.chash_message_text(shard), @extschema@.chash_message_text(directory)
                USING ERRCODE = '55006',
                      DETAIL = format('Shard databases replicating this directory database: %s. Which shard each joined as is recorded only there.', n),
                      HINT = format('Run SELECT chash_shard_leave(%L) on the shard''s database, then retire the shard with chash_set_shard(state => ''retired'') and remove it.', directory);
        END IF;
    END IF;
    DELETE FROM @extschema@.chash_shard x
     WHERE x.directory = chash_remove_shard.directory AND x.shard = chash_remove_shard.shard;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_remove_shard(text, text) IS
    'deletes a shard of a directory; 55006 while it owns slots, has pins, is moved by a step in flight, or may still be joined by a shard database';
