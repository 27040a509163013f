CREATE FUNCTION @extschema@.chash_guard_ddl() RETURNS event_trigger
    AS 'MODULE_PATHNAME', 'chash_guard_ddl'
    LANGUAGE C;
COMMENT ON FUNCTION @extschema@.chash_guard_ddl() IS
    'internal: event trigger at ddl_command_start: refuses (42501), unless the role is a superuser or has chash_operator, disabling, re-timing, dropping or renaming a guard trigger, changing a guarded table''s tenant column, and adding a table with rows under a guarded one';
