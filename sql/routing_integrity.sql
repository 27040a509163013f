-- Routing is a read of the tables (docs/directory.md): it answers what a SELECT in
-- the calling statement's snapshot answers, returns the caller's own
-- copy, refuses where row-level security applies, and never trusts a row
-- it reads: a bad row is 55000 naming the directory and the row.
\i sql/include/bad.sql

SELECT chash_create_directory('ri', ARRAY['s1', 's2', 's3'], 64);
SELECT chash_create_directory('ri_ids', ARRAY['a', 'b'], 64, key_type => 'bigint');

-- The state a SELECT of the tables gives for tenant acme.
CREATE FUNCTION acme_by_select() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT shard FROM chash_override WHERE directory = 'ri' AND tenant = 'acme'),
                    (SELECT shard FROM chash_slot WHERE directory = 'ri' AND slot = chash_slot('ri', 'acme')))
$$;

-- ---------------------------------------------------------------------------
-- Our own transaction's changes, statement by statement, and cursors whose
-- snapshot is older than a later change of the same transaction.
-- ---------------------------------------------------------------------------
BEGIN;
DECLARE before_any CURSOR FOR
    SELECT chash_route('ri', 'acme') AS routed, acme_by_select() AS selected FROM generate_series(1, 4);
FETCH 1 FROM before_any;
SELECT chash_pin('ri', 'acme', 's2');
DECLARE after_first CURSOR FOR
    SELECT chash_route('ri', 'acme') AS routed, acme_by_select() AS selected FROM generate_series(1, 4);
FETCH 1 FROM after_first;
-- the second change of the transaction leaves the version where it was
SELECT chash_pin('ri', 'acme', 's3');
SELECT chash_route('ri', 'acme') AS routed, acme_by_select() AS selected;
FETCH 1 FROM after_first;
FETCH 1 FROM before_any;
SELECT chash_route('ri', 'acme') AS routed, acme_by_select() AS selected;
-- a rolled-back subtransaction's change is gone from the next statement
SAVEPOINT s;
SELECT chash_unpin('ri', 'acme');
SELECT chash_route('ri', 'acme') AS routed, acme_by_select() AS selected;
ROLLBACK TO SAVEPOINT s;
SELECT chash_route('ri', 'acme') AS routed, acme_by_select() AS selected;
FETCH 1 FROM after_first;
FETCH 1 FROM before_any;
COMMIT;
SELECT chash_route('ri', 'acme') AS routed, acme_by_select() AS selected;
SELECT chash_unpin('ri', 'acme');

-- ---------------------------------------------------------------------------
-- The value returned is the caller's own copy: it outlives the
-- transaction, here as the argument of a procedure that commits after the
-- directory changed (and its cache memory was reused).
-- ---------------------------------------------------------------------------
CREATE PROCEDURE show_after_commit(shard text) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM chash_drop_directory('ri_tmp');
    COMMIT;
    PERFORM chash_create_directory('ri_tmp', ARRAY['xx', 'yy', 'zz'], 4096);
    -- new states of the directory, each routed: the old ones are freed
    FOR i IN 1 .. 6 LOOP
        PERFORM chash_pin('ri_tmp', 'tenant' || i, 'yy');
        COMMIT;
        PERFORM chash_route('ri_tmp', 'acme');
    END LOOP;
    RAISE NOTICE 'the argument is still %', shard;
END
$$;
SELECT chash_create_directory('ri_tmp', ARRAY['t1', 't2', 't3'], 4096);
CALL show_after_commit(chash_route('ri_tmp', 'acme'));
SELECT chash_drop_directory('ri_tmp');
SELECT chash_create_directory('ri_tmp', ARRAY['t1', 't2', 't3'], 4096);
CALL show_after_commit(chash_route_for_write('ri_tmp', 'acme'));
SELECT chash_drop_directory('ri_tmp');
SELECT chash_create_directory('ri_tmp', ARRAY['t1', 't2', 't3'], 4096);
CALL show_after_commit(chash_route('ri_tmp', 42::bigint));
SELECT chash_drop_directory('ri_tmp');

-- ---------------------------------------------------------------------------
-- Row-level security on a directory table: routing refuses (42501) rather
-- than answer from rows the policies hide from the caller.
-- ---------------------------------------------------------------------------
SELECT chash_pin('ri', 'acme', 's2');
CREATE ROLE regress_ri_reader;
GRANT SELECT ON chash_directory, chash_shard, chash_slot, chash_override,
    chash_migration, chash_migration_step TO regress_ri_reader;
SET ROLE regress_ri_reader;
SELECT chash_route('ri', 'acme');
RESET ROLE;
ALTER TABLE chash_override ENABLE ROW LEVEL SECURITY;
CREATE POLICY hide_acme ON chash_override FOR SELECT TO regress_ri_reader
    USING (tenant <> 'acme');
SET ROLE regress_ri_reader;
SELECT chash_directory_snapshot('ri') -> 'overrides' AS overrides_visible;
SELECT bad($$SELECT chash_route('ri', 'acme')$$);
SELECT bad($$SELECT chash_route_for_write('ri', 'acme')$$);
SELECT bad($$SELECT * FROM chash_route_explain('ri', 'acme')$$);
RESET ROLE;
-- the owner is not subject to the policies
SELECT chash_route('ri', 'acme');
DROP POLICY hide_acme ON chash_override;
ALTER TABLE chash_override DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON chash_directory, chash_shard, chash_slot, chash_override,
    chash_migration, chash_migration_step FROM regress_ri_reader;
DROP ROLE regress_ri_reader;
SELECT chash_unpin('ri', 'acme');

-- ---------------------------------------------------------------------------
-- User text in routing messages is cut to 200 bytes on a character
-- boundary: a long tenant does not flood the log, and the message stays
-- valid text (a cut inside a character would fail conversion to the
-- client's encoding, 22021 instead of the error itself).
-- ---------------------------------------------------------------------------
SELECT left(m, 30) AS message, octet_length(m) < 400 AS short,
       convert_to(m, 'LATIN1') IS NOT NULL AS converts_to_latin1
FROM (SELECT bad(format($$SELECT chash_route('ri_ids', %L)$$, 'a' || repeat('é', 100000))) AS m) s;
SELECT chash_migration_move_tenant('ri', 'a' || repeat('é', 100000),
    CASE chash_route('ri', 'a' || repeat('é', 100000)) WHEN 's1' THEN 's2' ELSE 's1' END) > 0 AS started;
SELECT step FROM chash_step_claim((SELECT max(id) FROM chash_migration));
SELECT chash_step_fence((SELECT max(id) FROM chash_migration), 1);
SELECT left(m, 30) AS message, octet_length(m) < 400 AS short,
       convert_to(m, 'LATIN1') IS NOT NULL AS converts_to_latin1
FROM (SELECT bad(format($$SELECT chash_route_for_write('ri', %L)$$, 'a' || repeat('é', 100000))) AS m) s;
SELECT chash_migration_cancel((SELECT max(id) FROM chash_migration));

-- ---------------------------------------------------------------------------
-- Bad rows.  bad_row(dml, query) makes rows as only the tables' owner can
-- (CHECK constraints dropped, triggers and foreign keys off), moves the
-- directory rows on so that routing reloads, shows what the query gives,
-- and rolls it all back.
-- ---------------------------------------------------------------------------
CREATE FUNCTION bad_row(dml text, query text DEFAULT $$SELECT chash_route('ri', 'acme')$$)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    c record;
    result text;
BEGIN
    BEGIN
        FOR c IN SELECT conrelid::regclass AS tab, conname FROM pg_constraint
                 WHERE contype = 'c' AND conrelid::regclass::text LIKE 'chash\_%' LOOP
            EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.tab, c.conname);
        END LOOP;
        SET LOCAL session_replication_role = replica;
        EXECUTE dml;
        UPDATE chash_directory SET version = version + 1;
        SET LOCAL session_replication_role = origin;
        result := bad(query);
        RAISE EXCEPTION 'roll back' USING ERRCODE = 'U0001';
    EXCEPTION WHEN SQLSTATE 'U0001' THEN
        RETURN result;
    END;
END
$$;
INSERT INTO chash_migration (id, directory, kind, status) VALUES (1000, 'ri', 'rebalance', 'done');
INSERT INTO chash_migration (id, directory, kind, status) VALUES (1001, 'ri_ids', 'rebalance', 'done');

-- the step of the report: slot -1, in flight
SELECT bad_row($$
    UPDATE chash_migration SET status = 'running' WHERE id = 1000;
    INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
    VALUES (1000, 1, -1, 's1', 's2', 'copying')$$);
-- ... every routing function, not only chash_route
SELECT bad_row($$
    UPDATE chash_migration SET status = 'running' WHERE id = 1000;
    INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
    VALUES (1000, 1, -1, 's1', 's2', 'fenced')$$,
    $$SELECT chash_route_for_write('ri', 'acme')$$);
SELECT bad_row($$
    UPDATE chash_migration SET status = 'running' WHERE id = 1000;
    INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
    VALUES (1000, 1, 64, 's1', 's2', 'copying')$$,
    $$SELECT * FROM chash_route_explain('ri', 'acme')$$);
SELECT bad_row($$
    UPDATE chash_migration SET status = 'running' WHERE id = 1000;
    INSERT INTO chash_migration_step (migration, step, slot, tenant, from_shard, to_shard, state)
    VALUES (1000, 1, NULL, NULL, 's1', 's2', 'copying')$$);
SELECT bad_row($$
    UPDATE chash_migration SET status = 'running' WHERE id = 1000;
    INSERT INTO chash_migration_step (migration, step, slot, tenant, from_shard, to_shard, state)
    VALUES (1000, 1, 5, 'acme', 's1', 's2', 'copying')$$);
SELECT bad_row($$
    UPDATE chash_migration SET status = 'running' WHERE id = 1000;
    INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
    VALUES (1000, 1, 5, 's1', 'nowhere', 'copying')$$);
-- a step whose state is not copying or fenced is not in flight: routing
-- loads the steps in flight only (an index has them) and never reads it
SELECT bad_row($$
    UPDATE chash_migration SET status = 'running' WHERE id = 1000;
    INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
    VALUES (1000, 1, 5, 's1', 's2', 'flying')$$);
SELECT bad_row($$
    ALTER TABLE chash_migration_step ALTER COLUMN state DROP NOT NULL;
    UPDATE chash_migration SET status = 'running' WHERE id = 1000;
    INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
    VALUES (1000, 1, 5, 's1', 's2', NULL)$$);
SELECT bad_row($$
    ALTER TABLE chash_migration_step ALTER COLUMN to_shard DROP NOT NULL;
    UPDATE chash_migration SET status = 'running' WHERE id = 1000;
    INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
    VALUES (1000, 1, 5, 's1', NULL, 'copying')$$);
-- tenant steps: a tenant that is not of the key type, or not canonical
SELECT bad_row($$
    UPDATE chash_migration SET status = 'running' WHERE id = 1001;
    INSERT INTO chash_migration_step (migration, step, tenant, from_shard, to_shard, state)
    VALUES (1001, 1, 'twelve', 'a', 'b', 'copying')$$,
    $$SELECT chash_route('ri_ids', 12)$$);
SELECT bad_row($$
    UPDATE chash_migration SET status = 'running' WHERE id = 1001;
    INSERT INTO chash_migration_step (migration, step, tenant, from_shard, to_shard, state)
    VALUES (1001, 1, '+012', 'a', 'b', 'copying')$$,
    $$SELECT chash_route('ri_ids', 12)$$);
-- a step that is not in flight is not read beyond its state
SELECT bad_row($$
    UPDATE chash_migration SET status = 'running' WHERE id = 1000;
    INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
    VALUES (1000, 1, -1, 's1', 'nowhere', 'pending')$$);
-- slots
SELECT bad_row($$INSERT INTO chash_slot VALUES ('ri', -1, 's1')$$);
SELECT bad_row($$INSERT INTO chash_slot VALUES ('ri', 64, 's1')$$);
SELECT bad_row($$DELETE FROM chash_slot WHERE directory = 'ri' AND slot = 7$$);
SELECT bad_row($$UPDATE chash_slot SET shard = 'nowhere' WHERE directory = 'ri' AND slot = 7$$);
SELECT bad_row($$
    ALTER TABLE chash_slot ALTER COLUMN shard DROP NOT NULL;
    UPDATE chash_slot SET shard = NULL WHERE directory = 'ri' AND slot = 7$$);
-- overrides
SELECT bad_row($$INSERT INTO chash_override (directory, tenant, shard) VALUES ('ri', 'acme', 'nowhere')$$);
SELECT bad_row($$INSERT INTO chash_override (directory, tenant, shard) VALUES ('ri_ids', '012', 'a')$$,
               $$SELECT chash_route('ri_ids', 12)$$);
SELECT bad_row($$INSERT INTO chash_override (directory, tenant, shard) VALUES ('ri_ids', 'twelve', 'a')$$,
               $$SELECT chash_route('ri_ids', 12)$$);
-- shards
SELECT bad_row($$UPDATE chash_shard SET state = 'sleeping' WHERE directory = 'ri' AND shard = 's3'$$);
-- the directory row
SELECT bad_row($$UPDATE chash_directory SET slot_count = 0 WHERE name = 'ri'$$);
SELECT bad_row($$UPDATE chash_directory SET slot_count = 2000000 WHERE name = 'ri'$$);
SELECT bad_row($$UPDATE chash_directory SET slot_method = 'md4' WHERE name = 'ri'$$);
SELECT bad_row($$UPDATE chash_directory SET key_type = 'float' WHERE name = 'ri'$$);
SELECT bad_row($$UPDATE chash_directory SET slot_method = 'redis' WHERE name = 'ri'$$);
SELECT bad_row($$
    ALTER TABLE chash_directory ALTER COLUMN slot_count DROP NOT NULL;
    UPDATE chash_directory SET slot_count = NULL WHERE name = 'ri'$$);
-- the directory itself still routes once the rows are gone
SELECT chash_route('ri', 'acme') AS routed, acme_by_select() AS selected;
SELECT chash_route('ri_ids', 12);

DELETE FROM chash_migration WHERE id IN (1000, 1001);
SELECT chash_drop_directory('ri');
SELECT chash_drop_directory('ri_ids');
