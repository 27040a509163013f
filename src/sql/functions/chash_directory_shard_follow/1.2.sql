CREATE FUNCTION @extschema@.chash_directory_shard_follow(server text, schema text, identity text,
                                                         directories text, directory_conninfo text) RETURNS text[]
    AS 'MODULE_PATHNAME', 'chash_directory_shard_follow'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION @extschema@.chash_directory_shard_follow(text, text, text, text, text) IS
    'internal: on a shard server, whether its replica of the directories (a text[] literal) follows the server of identity, re-pointed to directory_conninfo when not: {action, detail}';
