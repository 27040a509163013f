# pg_dump / restore keeps every directory identical: chash_directory_snapshot
# (version included) is the same before and after, for a custom-format
# restore and a plain-SQL restore, with the extension in a schema of its own.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
    CREATE SCHEMA routing;
    CREATE EXTENSION chash SCHEMA routing;
    SET search_path = routing;
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2', 's3'], 16384, weights => ARRAY[2, 1, 1]);
    SELECT chash_create_directory('users', ARRAY['u1', 'u2'], 1024, 'pg_hash', key_type => 'bigint');
    SELECT chash_create_directory('devices', ARRAY['d1', 'd2'], 16384, 'redis', key_type => 'uuid');
    SELECT chash_add_shard('orgs', 's4', 1.5, 'eu-1', 'host=s4 dbname=app');
    SELECT chash_pin('orgs', 'whale-' || i, (ARRAY['s1', 's2', 's4'])[1 + i % 3], 'big') FROM generate_series(1, 50) AS i;
    SELECT chash_pin('users', '-42', 'u2');
    UPDATE chash_slot SET shard = 's4' WHERE directory = 'orgs' AND slot % 7 = 0;
    SELECT chash_set_shard('orgs', 's3', state => 'draining');
    INSERT INTO chash_tenant_size (directory, tenant, bytes, rows) VALUES ('orgs', 'whale-1', 1000000, 10);
    INSERT INTO chash_migration (directory, kind, strategy) VALUES ('orgs', 'rebalance', 'slots');
    INSERT INTO chash_migration_step (migration, step, slot, from_shard, to_shard, state)
    SELECT max(id), 1, 5, 's1', 's2', 'copying' FROM chash_migration;
});

my $snapshots = q{
    SELECT string_agg(routing.chash_directory_snapshot(name)::text, E'\n' ORDER BY name)
    FROM routing.chash_directory};
my $extras = q{
    SELECT (SELECT count(*) FROM routing.chash_tenant_size) || ' ' ||
           (SELECT last_value FROM routing.chash_migration_id_seq) || ' ' ||
           (SELECT string_agg(name || ':' || version, ',' ORDER BY name) FROM routing.chash_directory)};
my $routes = q{
    SELECT string_agg(routing.chash_route('orgs', 'whale-' || i), ',' ORDER BY i)
    FROM generate_series(1, 200) AS i};
my $snapshot = $node->safe_psql('postgres', $snapshots);
my $extra = $node->safe_psql('postgres', $extras);
my $route = $node->safe_psql('postgres', $routes);
like($snapshot, qr/"steps": \[\{/, 'the source has a step in flight');

my $dump = $node->basedir . '/dump.custom';
my $plain = $node->basedir . '/dump.sql';
command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ], 'pg_dump -Fc');
command_ok([ 'pg_dump', '-f', $plain, '-d', $node->connstr('postgres') ], 'pg_dump plain');

$node->safe_psql('postgres', 'CREATE DATABASE restored_custom');
command_ok([ 'pg_restore', '--single-transaction', '--exit-on-error', '-d',
	$node->connstr('restored_custom'), $dump ], 'pg_restore');
is($node->safe_psql('restored_custom', $snapshots), $snapshot, 'custom restore: snapshots identical');
is($node->safe_psql('restored_custom', $extras), $extra, 'custom restore: sizes, sequence, versions identical');
is($node->safe_psql('restored_custom', $routes), $route, 'custom restore: routes identical');

$node->safe_psql('postgres', 'CREATE DATABASE restored_plain');
command_ok([ 'psql', '-X', '-q', '--single-transaction', '-v', 'ON_ERROR_STOP=1', '-f', $plain,
	'-d', $node->connstr('restored_plain') ], 'psql restore');
is($node->safe_psql('restored_plain', $snapshots), $snapshot, 'plain restore: snapshots identical');
is($node->safe_psql('restored_plain', $extras), $extra, 'plain restore: sizes, sequence, versions identical');

# The restored directory keeps its invariants and keeps versioning.
my ($rc, $out, $err) = $node->psql('restored_custom',
	q{DELETE FROM routing.chash_slot WHERE directory = 'orgs' AND slot = 1});
like($err, qr/must have exactly one owner/, 'restored directory keeps its invariants');
$node->safe_psql('restored_custom', q{SELECT routing.chash_pin('orgs', 'new', 's1')});
is($node->safe_psql('restored_custom',
	q{SELECT version > (SELECT version FROM routing.chash_directory WHERE name = 'users') FROM routing.chash_directory WHERE name = 'orgs'}),
	't', 'restored directory bumps its version on change');

# Restoring without a single transaction routes identically (versions grow:
# each committed load counts as a change).
$node->safe_psql('postgres', 'CREATE DATABASE restored_steps');
command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('restored_steps'), $dump ],
	'pg_restore without --single-transaction');
is($node->safe_psql('restored_steps', $routes), $route, 'restore in steps: routes identical');

done_testing();
