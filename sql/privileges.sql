-- Who may execute what (docs/directory.md, "Privileges").  PUBLIC may
-- execute exactly the documented API: a function is documented when
-- README.md or docs/*.md show it called, "`chash_name(".  The names are
-- read from the docs themselves (psql runs in the top of the tree), so a
-- function left out of the docs or out of 99_privileges.sql's list shows
-- here.  Then an application role and an operator role, granted as the
-- docs say, do their work, and the internal functions refuse them.

\set docs `cat README.md docs/*.md`
CREATE TEMP TABLE documented AS
SELECT DISTINCT m[1] AS proname
  FROM regexp_matches(:'docs', '`(chash_[a-z0-9_]+)\(', 'g') AS m;

CREATE TEMP VIEW chash_functions AS
SELECT p.oid, p.oid::regprocedure AS fn, p.proname::text AS proname, p.prorettype = 'trigger'::regtype AS is_trigger,
       EXISTS (SELECT FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE') AS public_execute
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'chash';

-- undocumented functions PUBLIC may execute: none
SELECT fn FROM chash_functions
 WHERE public_execute AND proname NOT IN (SELECT proname FROM documented) ORDER BY fn::text;
-- documented functions PUBLIC may not execute: the privileges, granted
-- to chash_operator (docs/load.md: chash_stats_reset)
SELECT fn, has_function_privilege('chash_operator', oid, 'EXECUTE') AS operator,
       has_function_privilege('chash_mover', oid, 'EXECUTE') AS mover
  FROM chash_functions
 WHERE NOT public_execute AND proname IN (SELECT proname FROM documented) ORDER BY fn::text;
-- the roles the extension creates
SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname IN ('chash_mover', 'chash_operator') ORDER BY 1;
-- every internal function, and which of them may execute it (trigger
-- functions need no EXECUTE to fire)
SELECT f.fn,
       has_function_privilege('chash_operator', f.oid, 'EXECUTE') AS operator,
       has_function_privilege('chash_mover', f.oid, 'EXECUTE') AS mover,
       f.is_trigger
  FROM chash_functions f
 WHERE NOT f.public_execute ORDER BY f.fn::text;

\i sql/include/bad.sql
SELECT chash_create_directory('priv', ARRAY['s1', 's2'], 8);

-- An application role granted as docs/directory.md says routes and reads,
-- and the internal functions refuse it: chash_shard_member_wait (which
-- would hold a lock the shard's replication waits for) among them.
CREATE ROLE regress_priv_app;
GRANT SELECT ON chash_directory, chash_shard, chash_slot, chash_override,
                chash_migration, chash_migration_step, chash_directory_change TO regress_priv_app;
GRANT SELECT ON chash_tenant_size, chash_shard_load, chash_migration_progress TO regress_priv_app;
SET ROLE regress_priv_app;
SELECT chash_route('priv', 'x') IS NOT NULL AS routes,
       chash_directory_snapshot('priv') IS NOT NULL AS snapshots,
       chash_directory_changes('priv', 0) IS NOT NULL AS changes,
       (SELECT count(*) FROM chash_plan_rebalance('priv')) AS plans,
       chash_statement_check_active() IS NOT NULL AS statement_check;
SELECT bad($$SELECT chash_directory_changes('no such', 0)$$);
SELECT bad($$SELECT chash_shard_member_wait()$$);
SELECT bad($$SELECT chash_directory_row('priv')$$);
SELECT bad($$SELECT chash_migration_lock_directory('priv')$$);
SELECT bad($$SELECT chash_step_fence_barrier('priv', 1, NULL)$$);
SELECT bad($$SELECT chash_step_lease_claim(1, 'me', '1 minute')$$);
-- resetting the load statistics is a privilege (docs/load.md)
SELECT bad($$SELECT chash_stats_reset()$$);
SELECT bad($$SELECT chash_stats_reset('priv')$$);
RESET ROLE;

-- chash_shard_sizes reads the registered tables with the caller's rights
-- (docs/load.md): 42501 before a table it may not read is opened.
CREATE TABLE regress_priv_t (org_id text, id int, PRIMARY KEY (org_id, id));
INSERT INTO regress_priv_t VALUES ('acme', 1), ('acme', 2), ('zeta', 1);
SELECT chash_add_table('priv', 'public.regress_priv_t', 'org_id');
GRANT SELECT ON chash_table TO regress_priv_app;
SET ROLE regress_priv_app;
SELECT bad($$SELECT * FROM chash_shard_sizes('priv')$$);
RESET ROLE;
GRANT SELECT ON regress_priv_t TO regress_priv_app;
SET ROLE regress_priv_app;
SELECT tenant, slot = chash_slot('priv', tenant) AS same_slot, rows FROM chash_shard_sizes('priv');
RESET ROLE;
SELECT chash_drop_table('priv', 'public.regress_priv_t');
DROP TABLE regress_priv_t;

-- The operator role of docs/directory.md (table grants and membership in
-- chash_operator) changes the directory and runs a migration by hand.
CREATE ROLE regress_priv_operator;
GRANT SELECT, INSERT, UPDATE, DELETE
    ON chash_directory, chash_shard, chash_slot, chash_override,
       chash_tenant_size, chash_migration, chash_migration_step TO regress_priv_operator;
GRANT USAGE ON SEQUENCE chash_migration_id_seq TO regress_priv_operator;
GRANT SELECT ON chash_shard_load, chash_migration_progress TO regress_priv_operator;
SET ROLE regress_priv_operator;
-- without chash_operator its functions refuse it
SELECT bad($$SELECT chash_add_shard('priv', 's3')$$);
RESET ROLE;
GRANT chash_operator TO regress_priv_operator;
SET ROLE regress_priv_operator;
SELECT chash_add_shard('priv', 's3');
SELECT chash_set_shard('priv', 's3', weight => 2);
SELECT chash_pin('priv', 'acme', 's3');
SELECT chash_unpin('priv', 'acme');
SELECT chash_migration_start('priv') AS m \gset
SELECT step FROM chash_step_claim(:m) LIMIT 1;
SELECT chash_step_fence(:m, 1);
SELECT chash_step_complete(:m, 1);
SELECT chash_migration_cancel(:m);
UPDATE chash_shard SET zone = 'z1' WHERE directory = 'priv' AND shard = 's3';
-- the mover's lease functions are chash_mover's
SELECT bad($$SELECT chash_step_lease_claim(1, 'me', '1 minute')$$);
-- the reset of the load statistics is chash_operator's (55000 here: no
-- preload in this test, past the privilege check)
SELECT bad($$SELECT chash_stats_reset('priv')$$);
RESET ROLE;

-- The mover's role: chash_mover (and the table grants) runs the leases.
CREATE ROLE regress_priv_mover IN ROLE chash_mover;
GRANT SELECT, INSERT, UPDATE, DELETE
    ON chash_directory, chash_shard, chash_slot, chash_override, chash_table,
       chash_migration, chash_migration_step, chash_step_lease TO regress_priv_mover;
SELECT chash_migration_start('priv') AS m \gset
SET ROLE regress_priv_mover;
SELECT step FROM chash_step_lease_claim(:m, 'regress', '1 minute') LIMIT 1;
SELECT chash_step_lease_release(:m, 1, 'regress');
-- the rebalance's start and stop are the API; nothing of them is internal
-- to call directly, and the reset of the load statistics is not a mover's
SELECT bad($$SELECT chash_rebalance_stop('priv')$$);
SELECT bad($$SELECT chash_stats_reset()$$);
RESET ROLE;
SELECT chash_migration_cancel(:m);

SELECT chash_drop_directory('priv');
DROP OWNED BY regress_priv_app, regress_priv_operator, regress_priv_mover;
DROP ROLE regress_priv_app, regress_priv_operator, regress_priv_mover;
