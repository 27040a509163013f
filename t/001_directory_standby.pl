# Routing on a streaming hot standby matches the primary, before and after
# changes, also in a standby session whose cache was warm before the change
# (relcache invalidations are replayed from WAL; the per-statement version
# check sees the replayed row).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION chash');
create_sql_helpers($primary);
$primary->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2', 's3'], 4096);
    SELECT chash_create_directory('ids', ARRAY['a', 'b'], 64, 'pg_hash', key_type => 'bigint');
    SELECT chash_pin('orgs', 'tenant-7', 's1');
});
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

# Routes of 2,000 tenants in both directories, as one text value.
my $routes = q{
    SELECT string_agg(chash_route('orgs', 'tenant-' || i) || chash_route('ids', i::bigint), ',' ORDER BY i)
    FROM generate_series(1, 2000) AS i};

sub routes_match
{
	my ($session, $name) = @_;
	my $on_primary = $primary->safe_psql('postgres', $routes);
	my $on_standby = $standby->safe_psql('postgres', $routes);
	is($on_standby, $on_primary, "$name: a new standby session routes like the primary");
	is($session->query_safe($routes), $on_primary,
		"$name: a standby session with a warm cache routes like the primary");
	return $on_primary;
}

# A long-lived standby session: its cache is loaded before the changes.
my $session = $standby->background_psql('postgres');
my $before = routes_match($session, 'before');
is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');

# Changes through the functions and by direct DML.
$primary->safe_psql('postgres', q{
    SELECT chash_pin('orgs', 'tenant-8', 's3');
    SELECT chash_unpin('orgs', 'tenant-7');
    UPDATE chash_slot SET shard = 's3' WHERE directory = 'orgs' AND slot < 1000;
    UPDATE chash_slot SET shard = 'b' WHERE directory = 'ids' AND slot % 2 = 0;
});
$primary->wait_for_catchup($standby);
my $after = routes_match($session, 'after');
isnt($after, $before, 'the changes changed some routes');

# In-flight steps are visible on the standby too.
$primary->safe_psql('postgres', q{
    INSERT INTO chash_migration (directory, kind) VALUES ('orgs', 'move_tenant');
    INSERT INTO chash_migration_step (migration, step, tenant, from_shard, to_shard, state)
    SELECT max(id), 1, 'tenant-9', chash_route('orgs', 'tenant-9'), 's2', 'fenced' FROM chash_migration;
});
$primary->wait_for_catchup($standby);
is($session->query_safe(q{SELECT sqlstate_of($$SELECT chash_route_for_write('orgs', 'tenant-9')$$)}),
	'40001', 'a fenced tenant gets 40001 on the standby');
my $explain = q{SELECT slot_state || ' ' || moving_to FROM chash_route_explain('orgs', 'tenant-9')};
is($session->query_safe($explain), 'fenced s2', 'the warm standby session shows the step');

# Dropping a directory is replayed as well.
$primary->safe_psql('postgres', q{SELECT chash_drop_directory('ids')});
$primary->wait_for_catchup($standby);
is($session->query_safe(q{SELECT sqlstate_of($$SELECT chash_route('ids', 1::bigint)$$)}),
	'42704', 'a dropped directory is gone on the standby');

$session->quit;
done_testing();
