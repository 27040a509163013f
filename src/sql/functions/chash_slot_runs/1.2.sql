CREATE FUNCTION @extschema@.chash_slot_runs(directory text, slots int[] DEFAULT NULL) RETURNS jsonb
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_array(r.first, r.last, r.shard) ORDER BY r.first), '[]')
      FROM (SELECT min(x.slot) AS first, max(x.slot) AS last, x.shard
              FROM (SELECT s.slot, s.shard,
                           s.slot - row_number() OVER (PARTITION BY s.shard ORDER BY s.slot) AS run
                      FROM @extschema@.chash_slot s
                     WHERE s.directory = $1 AND ($2 IS NULL OR s.slot = ANY ($2))) x
             GROUP BY x.shard, x.run) r
$$;
COMMENT ON FUNCTION @extschema@.chash_slot_runs(text, int[]) IS
    'runs of consecutive slots with one owner, [first, last, shard] in slot order: of every slot of the directory, or of the slots given';
