-- The change history of a directory (docs/directory.md, "Changes"):
-- versions unique per name across drop and re-creation, the changes feed,
-- and, over random change sequences with a fixed seed, that applying
-- chash_directory_changes(d, v) to the snapshot at v gives the current
-- snapshot.  NOTIFY is in specs/directory_notify.spec.
\i sql/include/bad.sql
-- later tests print migration ids: give back the ones used here
SELECT last_value AS migration_id_before FROM chash_migration_id_seq \gset

-- A re-created directory continues after the version its drop reached.
SELECT chash_create_directory('dc', ARRAY['s1', 's2'], 8);
SELECT chash_pin('dc', 't1', 's2');
SELECT version FROM chash_directory WHERE name = 'dc';
SELECT chash_drop_directory('dc');
SELECT * FROM chash_directory_dropped WHERE name = 'dc';
SELECT chash_create_directory('dc', ARRAY['s1', 's2'], 8);
SELECT version FROM chash_directory WHERE name = 'dc';
SELECT count(*) AS dropped_rows FROM chash_directory_dropped WHERE name = 'dc';
-- the old incarnation's versions name no state of this one
SELECT chash_directory_changes('dc', 2);
SELECT chash_directory_changes('dc', 4);
SELECT chash_pin('dc', 't1', 's1');
SELECT chash_directory_changes('dc', 4);
UPDATE chash_slot SET shard = 's1' WHERE directory = 'dc' AND slot IN (5, 6);
SELECT chash_directory_changes('dc', 4);
SELECT chash_directory_changes('dc', 5);
SELECT chash_add_shard('dc', 's3');
SELECT chash_directory_changes('dc', 6) -> 'shards' AS shards;
SELECT chash_directory_changes('dc', 99);
-- a truncate is recorded as a full change
TRUNCATE chash_override;
SELECT chash_directory_changes('dc', 6);
SELECT bad($$SELECT chash_directory_changes('nope', 1)$$);
SELECT chash_directory_changes(NULL, 1) IS NULL AS strict;

-- History is pruned to the last 1,000 versions, a hundred at a time.
SELECT chash_create_directory('dc_prune', ARRAY['s1', 's2'], 8);
UPDATE chash_directory SET version = 150 WHERE name = 'dc_prune';
UPDATE chash_directory SET version = 1199 WHERE name = 'dc_prune';
SELECT chash_pin('dc_prune', 't', 's1');
SELECT version, kind, key FROM chash_directory_change WHERE directory = 'dc_prune' ORDER BY 1, 2, 3;
SELECT (chash_directory_changes('dc_prune', 1) ->> 'full')::bool AS full_from_1,
       (chash_directory_changes('dc_prune', 150) ->> 'full')::bool AS full_from_150;

-- Applies a changes document to a snapshot, as a client would.
CREATE FUNCTION apply_changes(snap jsonb, ch jsonb) RETURNS jsonb LANGUAGE sql AS $$
    WITH old AS (SELECT g AS slot, r ->> 2 AS shard
                   FROM jsonb_array_elements(snap -> 'slots') r,
                        generate_series((r ->> 0)::int, (r ->> 1)::int) g),
         new AS (SELECT g AS slot, r ->> 2 AS shard
                   FROM jsonb_array_elements(ch -> 'slots') r,
                        generate_series((r ->> 0)::int, (r ->> 1)::int) g),
         merged AS (SELECT o.slot, coalesce(n.shard, o.shard) AS shard
                      FROM old o LEFT JOIN new n USING (slot)),
         runs AS (SELECT min(slot) AS first, max(slot) AS last, shard
                    FROM (SELECT slot, shard, slot - row_number() OVER (PARTITION BY shard ORDER BY slot) AS run
                            FROM merged) x
                   GROUP BY shard, run)
    SELECT snap || jsonb_build_object(
        'version', ch -> 'version',
        'shards', coalesce(ch -> 'shards', snap -> 'shards'),
        'steps', coalesce(ch -> 'steps', snap -> 'steps'),
        'slots', (SELECT coalesce(jsonb_agg(jsonb_build_array(first, last, shard) ORDER BY first), '[]') FROM runs),
        'overrides', (SELECT coalesce(jsonb_object_agg(key, value), '{}')
                        FROM (SELECT key, value FROM jsonb_each(snap -> 'overrides')
                               WHERE NOT (ch -> 'overrides') ? key
                              UNION ALL
                              SELECT key, value FROM jsonb_each(ch -> 'overrides')
                               WHERE value <> 'null') o))
$$;

-- Random changes, each its own transaction (some rolled back, some
-- several changes long); after each, the changes since a random earlier
-- version, applied to the snapshot at that version, give the snapshot now.
CREATE TABLE seen (version bigint PRIMARY KEY, snap jsonb);
CREATE TABLE route_mismatch (i int, tenant text, routed text, selected text);
CREATE TABLE fulls (n int, checked int);
CREATE TABLE mismatch (since bigint, now bigint, expected jsonb, got jsonb);
CREATE PROCEDURE random_changes(n int) LANGUAGE plpgsql AS $$
DECLARE
    m bigint;
    s record;
    v bigint;
    r float8;
    ch jsonb;
    cur jsonb;
    fulls int := 0;
    checked int := 0;
BEGIN
    PERFORM setseed(0.25);
    PERFORM chash_create_directory('dr', ARRAY['a', 'b', 'c'], 64);
    COMMIT;
    FOR i IN 1 .. n LOOP
        FOR j IN 1 .. 1 + floor(random() * 3)::int LOOP
          -- a refused change (a move to where the tenant is, say) rolls
          -- back its subtransaction only
          BEGIN
            r := random();
            IF r < 0.25 THEN
                PERFORM chash_pin('dr', 't' || floor(random() * 20)::int,
                                  (SELECT shard FROM chash_shard WHERE directory = 'dr' AND state = 'active'
                                    ORDER BY random() LIMIT 1));
            ELSIF r < 0.4 THEN
                DELETE FROM chash_override WHERE directory = 'dr' AND tenant = 't' || floor(random() * 20)::int;
            ELSIF r < 0.55 THEN
                UPDATE chash_slot SET shard = (SELECT shard FROM chash_shard WHERE directory = 'dr' AND state <> 'retired'
                                                ORDER BY random() LIMIT 1)
                 WHERE directory = 'dr' AND slot BETWEEN (SELECT floor(random() * 64)::int) AND (SELECT floor(random() * 64)::int);
            ELSIF r < 0.6 THEN
                UPDATE chash_shard SET weight = 1 + floor(random() * 4), zone = 'z' || floor(random() * 3)::int
                 WHERE directory = 'dr' AND shard = (ARRAY['a', 'b', 'c'])[1 + floor(random() * 3)::int];
            ELSIF r < 0.9 THEN
                SELECT id INTO m FROM chash_migration WHERE directory = 'dr' AND status = 'running';
                IF m IS NULL THEN
                    UPDATE chash_shard SET weight = 1 + floor(random() * 4) WHERE directory = 'dr';
                    IF random() < 0.3 THEN
                        PERFORM chash_migration_move_tenant('dr', 't' || floor(random() * 20)::int,
                                                            (ARRAY['a', 'b', 'c'])[1 + floor(random() * 3)::int]);
                    ELSE
                        PERFORM chash_migration_start('dr', 'slots', 4);
                    END IF;
                ELSE
                    SELECT step, state INTO s FROM chash_migration_step
                     WHERE migration = m AND state IN ('pending', 'copying', 'fenced')
                     ORDER BY random() LIMIT 1;
                    IF s.state = 'pending' THEN
                        PERFORM chash_step_claim(m);
                    ELSIF s.state = 'copying' AND random() < 0.2 THEN
                        PERFORM chash_step_release(m, s.step);
                    ELSIF s.state = 'copying' THEN
                        PERFORM chash_step_fence(m, s.step);
                    ELSIF s.state = 'fenced' THEN
                        PERFORM chash_step_complete(m, s.step);
                    END IF;
                END IF;
            ELSIF r < 0.99 THEN
                SELECT id INTO m FROM chash_migration WHERE directory = 'dr' AND status = 'running';
                IF m IS NOT NULL THEN
                    PERFORM chash_migration_cancel(m);
                END IF;
            ELSE
                TRUNCATE chash_override;
            END IF;
          EXCEPTION WHEN OTHERS THEN
            NULL;
          END;
        END LOOP;
        IF random() < 0.15 THEN
            ROLLBACK;
        ELSE
            COMMIT;
        END IF;
        -- the routing cache catches up from the history: it answers what
        -- a SELECT of the tables does
        INSERT INTO route_mismatch
        SELECT i, t, chash_route('dr', t),
               coalesce((SELECT o.shard FROM chash_override o WHERE o.directory = 'dr' AND o.tenant = t),
                        (SELECT l.shard FROM chash_slot l WHERE l.directory = 'dr' AND l.slot = chash_slot('dr', t)))
          FROM (SELECT 't' || g AS t FROM generate_series(0, 40) g) x
         WHERE chash_route('dr', t) IS DISTINCT FROM
               coalesce((SELECT o.shard FROM chash_override o WHERE o.directory = 'dr' AND o.tenant = t),
                        (SELECT l.shard FROM chash_slot l WHERE l.directory = 'dr' AND l.slot = chash_slot('dr', t)));
        cur := chash_directory_snapshot('dr');
        INSERT INTO seen VALUES ((cur ->> 'version')::bigint, cur) ON CONFLICT DO NOTHING;
        FOR s IN SELECT * FROM seen ORDER BY random() LIMIT 3 LOOP
            ch := chash_directory_changes('dr', s.version);
            IF (ch ->> 'full')::bool THEN
                fulls := fulls + 1;
            ELSE
                checked := checked + 1;
            END IF;
            IF NOT (ch ->> 'full')::bool AND apply_changes(s.snap, ch) IS DISTINCT FROM cur THEN
                INSERT INTO mismatch VALUES (s.version, (cur ->> 'version')::bigint, cur, apply_changes(s.snap, ch));
            END IF;
        END LOOP;
        COMMIT;
    END LOOP;
    INSERT INTO fulls VALUES (fulls, checked);
END
$$;
CALL random_changes(150);
SELECT n > 0 AS some_full_answers, checked > 100 AS over_100_applied FROM fulls;
SELECT count(*) > 75 AS versions_seen_over_75 FROM seen;
SELECT count(*) AS mismatches FROM mismatch;
SELECT count(*) AS route_mismatches FROM route_mismatch;
SELECT since, now, expected, got FROM mismatch ORDER BY since, now LIMIT 3;

SELECT chash_drop_directory(name) FROM chash_directory WHERE name IN ('dc', 'dc_prune', 'dr');
DELETE FROM chash_directory_dropped;
SELECT setval('chash_migration_id_seq', :migration_id_before) > 0 AS ids_given_back;
