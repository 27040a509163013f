-- Carries out the migration this session started last (the sequence's
-- currval), one step at a time as a mover does: claim, fence, complete,
-- until no step is left to claim.
DO $$
DECLARE
    s record;
BEGIN
    LOOP
        SELECT * INTO s FROM chash_step_claim(currval('chash_migration_id_seq'));
        EXIT WHEN NOT FOUND;
        PERFORM chash_step_fence(currval('chash_migration_id_seq'), s.step);
        PERFORM chash_step_complete(currval('chash_migration_id_seq'), s.step);
    END LOOP;
END
$$;
