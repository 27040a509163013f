CREATE FUNCTION @extschema@.chash_server_has_password(server text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'chash_server_has_password'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_server_has_password(text) IS
    'internal: whether libpq would find a password in the connection string (password=..., or user:password@ in a URI)';
