# ALTER EXTENSION chash UPDATE from a used 1.0 or 1.1 database gives exactly the
# catalog of a fresh install of the default version: functions (whole
# definitions), tables (columns, defaults, constraints, indexes, triggers
# and whether they fire on replicas), views, sequences, comments,
# privileges and the objects pg_dump dumps.  The 1.0 database holds
# directories, pins and a migration with a step in flight, which must route
# the same after the update (an upgrade step that rewrites or rejects
# existing rows would show here).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->start;

my $default = $node->safe_psql('postgres',
	q{SELECT default_version FROM pg_available_extensions WHERE name = 'chash'});
isnt($default, '1.0', "the default version is newer than the released 1.0 ($default)");

# Every object of the extension, described by what a user can observe.
my $catalog = q{
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'chash'),
members AS (
    SELECT d.classid, d.objid FROM pg_depend d, ext
    WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
rels AS (SELECT objid AS oid FROM members WHERE classid = 'pg_class'::regclass),
lines AS (
    SELECT 'object ' || pg_describe_object(classid, objid, 0) AS line FROM members
    UNION ALL
    SELECT 'function ' || p.oid::regprocedure || E'\n' ||
           CASE WHEN p.prokind IN ('f', 'p', 'w') THEN pg_get_functiondef(p.oid) ELSE p.prokind::text END ||
           E'\nacl ' || coalesce(p.proacl::text, 'default') ||
           E'\ncomment ' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
    FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
    UNION ALL
    SELECT 'relation ' || c.oid::regclass || ' kind ' || c.relkind::text ||
           ' acl ' || coalesce(c.relacl::text, 'default') ||
           ' options ' || coalesce(c.reloptions::text, '-') ||
           ' rls ' || c.relrowsecurity || '/' || c.relforcerowsecurity ||
           ' comment ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
    FROM pg_class c JOIN rels r ON r.oid = c.oid
    UNION ALL
    SELECT 'column ' || a.attrelid::regclass || '.' || a.attname || ' ' ||
           format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END ||
           ' default ' || coalesce(pg_get_expr(ad.adbin, ad.adrelid), '-') ||
           ' acl ' || coalesce(a.attacl::text, 'default') ||
           ' comment ' || coalesce(col_description(a.attrelid, a.attnum), '-')
    FROM pg_attribute a JOIN rels r ON r.oid = a.attrelid
    LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
    WHERE a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT 'constraint ' || co.conrelid::regclass || ' ' || co.conname || ' ' ||
           pg_get_constraintdef(co.oid) ||
           CASE WHEN co.condeferrable THEN ' deferrable' ELSE '' END ||
           CASE WHEN co.convalidated THEN '' ELSE ' not valid' END
    FROM pg_constraint co JOIN rels r ON r.oid = co.conrelid
    UNION ALL
    SELECT 'index ' || pg_get_indexdef(i.indexrelid)
    FROM pg_index i JOIN rels r ON r.oid = i.indrelid
    UNION ALL
    SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' enabled ' || t.tgenabled::text
    FROM pg_trigger t JOIN rels r ON r.oid = t.tgrelid WHERE NOT t.tgisinternal
    UNION ALL
    SELECT 'policy ' || po.polrelid::regclass || ' ' || po.polname || ' ' || po.polcmd::text
    FROM pg_policy po JOIN rels r ON r.oid = po.polrelid
    UNION ALL
    SELECT 'view ' || c.oid::regclass || E'\n' || pg_get_viewdef(c.oid)
    FROM pg_class c JOIN rels r ON r.oid = c.oid WHERE c.relkind = 'v'
    UNION ALL
    SELECT 'sequence ' || s.seqrelid::regclass || ' ' || format_type(s.seqtypid, NULL) || ' ' ||
           s.seqstart || ' ' || s.seqincrement || ' ' || s.seqmax || ' ' || s.seqmin || ' ' || s.seqcycle
    FROM pg_sequence s JOIN rels r ON r.oid = s.seqrelid
    UNION ALL
    SELECT 'dumped ' || x.cfg::regclass || ' where ' || coalesce(x.cond, '-')
    FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS x(cfg, cond)
    WHERE e.extname = 'chash')
SELECT string_agg(line, E'\n' ORDER BY line) FROM lines};

# What the data routes to, and the directory state a client sees.
my $state = q{
SELECT string_agg(chash_directory_snapshot(name)::text, E'\n' ORDER BY name) || E'\n' ||
       (SELECT string_agg(t || ' ' || chash_route('orgs', t), ',' ORDER BY t)
        FROM (SELECT 'tenant-' || i AS t FROM generate_series(1, 300) i) k) || E'\n' ||
       (SELECT string_agg(chash_route('users', i::bigint), ',' ORDER BY i) FROM generate_series(-50, 50) i)
FROM chash_directory};

my $setup = q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2', 's3'], 4096, weights => ARRAY[2, 1, 1]);
    SELECT chash_create_directory('users', ARRAY['u1', 'u2'], 64, 'pg_hash', key_type => 'bigint');
    SELECT chash_add_shard('orgs', 's4');
    SELECT chash_pin('orgs', 'tenant-' || i, 's4', 'whale') FROM generate_series(1, 20) AS i;
    SELECT chash_pin('users', '-7', 'u1');
    SELECT chash_migration_start('orgs', max_moves => 10);
    SELECT * FROM chash_step_claim((SELECT max(id) FROM chash_migration));
    SELECT chash_step_fence(m, 1) FROM (SELECT max(id) m FROM chash_migration) x;
    SELECT * FROM chash_step_claim((SELECT max(id) FROM chash_migration));
    SELECT chash_step_complete(m, 2) FROM (SELECT max(id) m FROM chash_migration) x;
};

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION chash');
my $fresh_catalog = $node->safe_psql('fresh', $catalog);
cmp_ok(length($fresh_catalog), '>', 10000, 'the catalog description is not empty');

# Each released version, used, then updated: the same routing before and
# after, and the catalog of a fresh install.  1.1 also holds a registered
# table (its own tables must come through the update).
my $before;
for my $from ('1.0', '1.1')
{
	(my $db = "upgraded_$from") =~ s/\./_/;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, qq{CREATE EXTENSION chash VERSION '$from'});
	is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'chash'}),
		$from, "the released $from installs");
	$node->safe_psql($db, $setup);
	$node->safe_psql($db, q{SELECT chash_add_table('orgs', 'public.accounts', 'org_id')})
	  if $from ne '1.0';
	my $state_before = $node->safe_psql($db, $state);
	like($state_before, qr/"steps": \[\{/, "$from database has a step in flight");
	$before //= $state_before;

	$node->safe_psql($db, 'ALTER EXTENSION chash UPDATE');
	is($node->safe_psql($db, q{SELECT extversion FROM pg_extension WHERE extname = 'chash'}),
		$default, "ALTER EXTENSION UPDATE from $from reaches $default");
	is($node->safe_psql($db, $state), $state_before, "routing and snapshots unchanged by the update from $from");
	is($node->safe_psql($db, $catalog), $fresh_catalog, "catalog updated from $from equals a fresh install");
	is($node->safe_psql($db, q{SELECT count(*) FROM chash_table}), $from eq '1.0' ? 0 : 1,
		"registered tables kept by the update from $from");
}

# The same state built on the fresh install routes the same way.
$node->safe_psql('fresh', $setup);
is($node->safe_psql('fresh', $state), $before, 'fresh install routes the same state identically');

# The released versions are still what installs as them, and the
# comparison can tell each from the default version.
for my $old ('1.0', '1.1')
{
	(my $db = "old_$old") =~ s/\./_/;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, qq{CREATE EXTENSION chash VERSION '$old'});
	isnt($node->safe_psql($db, $catalog), $fresh_catalog,
		"$old and the default version differ (the comparison can tell them apart)");
}

# 1.0 rows that only direct DML could write: the update makes a tenant
# step canonical, and refuses (changing nothing) what it cannot fix, saying
# which row to fix.
$node->safe_psql('postgres', 'CREATE DATABASE handmade');
$node->safe_psql('handmade', q{CREATE EXTENSION chash VERSION '1.0'});
$node->safe_psql('handmade', q{
    SELECT chash_create_directory('ids', ARRAY['a', 'b'], 8, key_type => 'bigint');
    INSERT INTO chash_migration (id, directory, kind) VALUES (1001, 'ids', 'move_tenant');
    INSERT INTO chash_migration_step (migration, step, tenant, from_shard, to_shard, state)
    VALUES (1001, 1, '007', 'a', 'b', 'fenced');
    INSERT INTO chash_migration (id, directory, kind) VALUES (1002, 'ids', 'rebalance');
});
my ($rc, $out, $err) = $node->psql('handmade', 'ALTER EXTENSION chash UPDATE');
isnt($rc, 0, 'two running migrations of one directory: the update is refused');
like($err, qr/directory "ids" has more than one unfinished migration.*Migrations 1001, 1002 are running/s,
	'... naming the directory and the migrations');
is($node->safe_psql('handmade', q{SELECT extversion FROM pg_extension WHERE extname = 'chash'}),
	'1.0', '... and changes nothing');
$node->safe_psql('handmade', 'SELECT chash_migration_cancel(1002)');
$node->safe_psql('handmade', q{
    INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard) VALUES (1001, 2, -1, 'a', 'b')});
($rc, $out, $err) = $node->psql('handmade', 'ALTER EXTENSION chash UPDATE');
like($err, qr/step 2 of migration 1001 moves slot -1, out of range for directory "ids"/,
	'a step of slot -1: refused, naming the step');
$node->safe_psql('handmade', 'DELETE FROM chash_migration_step WHERE migration = 1001 AND step = 2');
$node->safe_psql('handmade', 'ALTER EXTENSION chash UPDATE');
is($node->safe_psql('handmade', 'SELECT tenant FROM chash_migration_step WHERE migration = 1001'),
	'7', "a step for tenant '007' of a bigint directory is updated to tenant 7");

# A 1.1 database whose shard server names a password: the update stops,
# naming the row, and changes nothing; without the password it goes
# through.  Its operator and mover roles keep working after it
# (docs/directory.md, "Privileges").
$node->safe_psql('postgres', 'CREATE DATABASE passwords');
$node->safe_psql('passwords', q{CREATE EXTENSION chash VERSION '1.1'});
$node->safe_psql('passwords', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 8);
    SELECT chash_set_shard('orgs', 's1', server => 'host=pg1 dbname=app');
    SELECT chash_set_shard('orgs', 's2', server => 'postgresql://mover:secret@pg2/app');
    CREATE ROLE upgrade_operator;
    GRANT SELECT, INSERT, UPDATE, DELETE ON chash_directory, chash_shard, chash_slot, chash_override,
        chash_tenant_size, chash_migration, chash_migration_step TO upgrade_operator;
    GRANT USAGE ON SEQUENCE chash_migration_id_seq TO upgrade_operator;
    CREATE ROLE upgrade_mover;
    GRANT SELECT, INSERT, UPDATE, DELETE ON chash_directory, chash_shard, chash_slot, chash_override,
        chash_migration, chash_migration_step, chash_step_lease, chash_table TO upgrade_mover;
});
($rc, $out, $err) = $node->psql('passwords', 'ALTER EXTENSION chash UPDATE');
like($err, qr/ERROR:  the server of shard "s2" of directory "orgs" contains a password/,
	'a shard server with a password: the update is refused, naming the shard');
is($node->safe_psql('passwords', q{SELECT extversion FROM pg_extension WHERE extname = 'chash'}),
	'1.1', '... and changes nothing');
$node->safe_psql('passwords', q{SELECT chash_set_shard('orgs', 's2', server => 'postgresql://mover@pg2/app')});
$node->safe_psql('passwords', 'ALTER EXTENSION chash UPDATE');
is($node->safe_psql('passwords', q{SELECT extversion FROM pg_extension WHERE extname = 'chash'}),
	$default, 'without the password the update goes through');
like($node->safe_psql('passwords', q{SET ROLE upgrade_operator; SELECT chash_pin('orgs', 'acme', 's2'); SELECT chash_unpin('orgs', 'acme'); SELECT 'pinned'}),
	qr/^\s*pinned$/, 'a 1.1 operator role still changes the directory after the update (a member of chash_operator)');
like($node->safe_psql('passwords', q{SET ROLE upgrade_operator; SELECT chash_add_shard('orgs', 's3'); SELECT chash_migration_start('orgs')}),
	qr/^\s*1$/, '... and starts a migration');
is($node->safe_psql('passwords', q{SELECT pg_has_role('upgrade_operator', 'chash_operator', 'MEMBER'),
                                             pg_has_role('upgrade_mover', 'chash_mover', 'MEMBER'),
                                             pg_has_role('upgrade_operator', 'chash_mover', 'MEMBER')}),
	't|t|f', 'the update made the 1.1 operator a member of chash_operator and the 1.1 mover of chash_mover');
is($node->safe_psql('passwords', q{SET ROLE upgrade_mover; SELECT step FROM chash_step_lease_claim(1, 'upgrade', '1 minute')}),
	'1', 'a 1.1 mover role still claims a step with a lease after the update');
($rc, $out, $err) = $node->psql('passwords', q{SET ROLE upgrade_operator; SELECT chash_set_shard('orgs', 's1', server => 'host=pg1 password=x')});
like($err, qr/ERROR:  the server of shard "s1" of directory "orgs" contains a password/,
	'after the update a password is refused');
done_testing();
