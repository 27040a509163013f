CREATE FUNCTION @extschema@.chash_shard_drop_check() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'chash_shard_drop_check'
    LANGUAGE C;
COMMENT ON FUNCTION @extschema@.chash_shard_drop_check() IS
    'internal: event trigger at ddl_command_start: refuses (55006) DROP EXTENSION chash, and DROP SCHEMA ... CASCADE of its schema, while this database has joined a directory';
