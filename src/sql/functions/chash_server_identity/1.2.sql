-- '<system identifier>:<timeline>' of this server: the timeline of the WAL
-- being written (pg_control's lags behind a promotion until a checkpoint).
CREATE FUNCTION @extschema@.chash_server_identity() RETURNS text
    LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    SELECT (SELECT system_identifier FROM pg_control_system())::text || ':'
        || ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int
$$;
COMMENT ON FUNCTION @extschema@.chash_server_identity() IS
    'this server''s system identifier and current timeline, as <system identifier>:<timeline>';
