CREATE FUNCTION @extschema@.chash_shard_server_check() RETURNS trigger
    AS 'MODULE_PATHNAME', 'chash_shard_server_check'
    LANGUAGE C;
COMMENT ON FUNCTION @extschema@.chash_shard_server_check() IS
    'trigger: refuses a shard server (connection string) that contains a password (22023)';
