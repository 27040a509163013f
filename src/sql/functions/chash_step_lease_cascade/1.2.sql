-- Definer's rights, as the foreign key's cascade it replaces ran with the
-- table owner's: whoever may delete steps takes their leases with them.
CREATE FUNCTION @extschema@.chash_step_lease_cascade() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM @extschema@.chash_step_lease;
    ELSE
        DELETE FROM @extschema@.chash_step_lease l
         USING old_rows o WHERE l.migration = o.migration AND l.step = o.step;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_step_lease_cascade() IS
    'trigger: deleted steps take their mover leases with them';
