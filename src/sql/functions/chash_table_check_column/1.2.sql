-- At registration, where the table is here too (the directory database
-- may be a shard): a tenant column whose collation is nondeterministic
-- makes different tenants compare equal ("org-3" = "ORG-3"), so a move of
-- one would take the other's rows.  (Not in the apply worker: registered
-- names arrive checked.)
CREATE FUNCTION @extschema@.chash_table_check_column() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    coll record;
BEGIN
    SELECT c.collname, c.collisdeterministic INTO coll
      FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation
     WHERE a.attrelid = to_regclass(NEW.table_name) AND a.attname = NEW.tenant_column
       AND a.attnum > 0 AND NOT a.attisdropped;
    IF FOUND AND NOT coll.collisdeterministic THEN
        RAISE EXCEPTION 'tenant column "%" of table % has a nondeterministic collation',
                @extschema@.chash_message_text(NEW.tenant_column), @extschema@.chash_message_text(NEW.table_name)
            USING ERRCODE = '0A000',
                  DETAIL = format('Collation "%s" makes different tenants compare equal.', coll.collname),
                  HINT = 'Give the column a deterministic collation, e.g. ALTER TABLE ... ALTER COLUMN ... TYPE ... COLLATE "C".';
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_table_check_column() IS
    'trigger: refuses to register a table whose tenant column has a nondeterministic collation';
