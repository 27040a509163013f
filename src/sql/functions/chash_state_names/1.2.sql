CREATE FUNCTION @extschema@.chash_state_names(
    OUT kind text, OUT table_name text, OUT column_name text, OUT state text, OUT value int)
RETURNS SETOF record
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'chash_state_names';
COMMENT ON FUNCTION @extschema@.chash_state_names() IS
    'the state names the C code knows (kind, the table and column that store them, name, enum value); internal';
