CREATE FUNCTION @extschema@.chash_decoding_filter_drop(slot_name text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    PERFORM @extschema@.chash_require(ARRAY['slot_name'], ARRAY[$1 IS NULL]);
    DELETE FROM @extschema@.chash_decoding_filter f WHERE f.slot_name = $1;
    RETURN FOUND;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_decoding_filter_drop(text) IS
    'drops the decoding filter of a logical slot (after the slot); true when there was one';
