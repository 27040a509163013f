-- ---------------------------------------------------------------------------
-- chash_shard: retiring or draining a shard that still holds data
-- (docs/directory.md).  1.0's hint for pinned tenants said "pin them to
-- another shard", which moves no rows: the pinned tenants' rows would be
-- left behind, unreachable.  The hint now names the function that moves
-- a tenant with its rows.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION @extschema@.chash_shard_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n bigint;
BEGIN
    IF NEW.state = 'retired' AND OLD.state <> 'retired' THEN
        SELECT count(*) INTO n FROM @extschema@.chash_slot
        WHERE directory = OLD.directory AND shard = OLD.shard;
        IF n > 0 THEN
            RAISE EXCEPTION 'cannot retire shard "%" of directory "%" because it still owns slots',
                    @extschema@.chash_message_text(OLD.shard), @extschema@.chash_message_text(OLD.directory)
                USING ERRCODE = '55006',
                      DETAIL = format('It owns %s slots.', n),
                      HINT = 'Drain it and move its slots away first.';
        END IF;
    END IF;
    IF NEW.state <> 'active' AND OLD.state = 'active' THEN
        SELECT count(*) INTO n FROM @extschema@.chash_override
        WHERE directory = OLD.directory AND shard = OLD.shard;
        IF n > 0 THEN
            RAISE EXCEPTION 'cannot set shard "%" of directory "%" to % because tenants are pinned to it',
                    @extschema@.chash_message_text(OLD.shard), @extschema@.chash_message_text(OLD.directory), NEW.state
                USING ERRCODE = '55006',
                      DETAIL = format('Tenants pinned to it: %s.', n),
                      HINT = 'Move each of them with chash_migration_move_tenant(), which copies its rows; '
                             'chash_pin() and chash_unpin() change the route only and would leave the rows behind.';
        END IF;
    END IF;
    RETURN NULL;
END
$$;
