-- ---------------------------------------------------------------------------
-- Routing through a shard directory (SPEC 3)
--
-- STABLE: the answer follows the committed directory as the statement's
-- snapshot sees it.  Served from a per-backend cache; see
-- src/directory_cache.c for why it is never stale.
-- ---------------------------------------------------------------------------

CREATE FUNCTION @extschema@.chash_slot(directory text, tenant text) RETURNS int
    AS 'MODULE_PATHNAME', 'chash_slot'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_slot(text, text) IS
    'the slot of a tenant in a directory, by the directory''s slot method';

CREATE FUNCTION @extschema@.chash_route(directory text, tenant text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_route'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_route(text, text) IS
    'the shard of a tenant: its override if pinned, else its slot''s owner';

CREATE FUNCTION @extschema@.chash_route(directory text, tenant bigint) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_route_int8'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_route(text, bigint) IS
    'the shard of a bigint tenant, routed exactly like its decimal text';

CREATE FUNCTION @extschema@.chash_route_explain(directory text, tenant text)
        RETURNS TABLE (tenant text, slot int, shard text, source text,
                       slot_state text, moving_to text, migration bigint)
    AS 'MODULE_PATHNAME', 'chash_route_explain'
    LANGUAGE C STABLE STRICT PARALLEL SAFE ROWS 1;
COMMENT ON FUNCTION @extschema@.chash_route_explain(text, text) IS
    'how a tenant routes: canonical tenant, slot, shard, source (override or slot), and the migration step moving it, if any';

CREATE FUNCTION @extschema@.chash_route_for_write(directory text, tenant text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_route_for_write'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_route_for_write(text, text) IS
    'like chash_route, but raises 40001 (retry) while a migration step has fenced the tenant or its slot';
