# A migration seen from a streaming hot standby: a standby session with a
# warm routing cache follows every step (copying, fenced: 40001 for writes,
# done: the new owner) as the primary's commits are replayed, and the
# planner and the progress view work read-only on the standby.
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
my $m = $primary->safe_psql('postgres', q{
	SELECT chash_create_directory('orgs', ARRAY['s1', 's2', 's3'], 4096);
	SELECT chash_add_shard('orgs', 's4');
	CREATE TABLE watched AS
	SELECT t FROM (SELECT 'tenant-' || i AS t FROM generate_series(1, 10000) i) x
	 WHERE chash_slot('orgs', t) = 0 LIMIT 1;
	SELECT chash_migration_start('orgs');
});
$m = (split /\n/, $m)[-1];
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

my $read = q{SELECT chash_route('orgs', t) FROM watched};
my $write = q{SELECT sqlstate_of(format('SELECT chash_route_for_write(%L, %L)', 'orgs', t)) FROM watched};

# A long-lived standby session whose cache is loaded before the steps.
my $session = $standby->background_psql('postgres');
is($session->query_safe($read), 's1', 'before: the standby routes to the old owner');
is($standby->safe_psql('postgres', "SELECT count(*) FROM chash_plan_rebalance('orgs')"),
	'1024', 'the planner works read-only on the standby');

# Step 1 moves slot 0 (s1's lowest) to s4.
$primary->safe_psql('postgres', "SELECT step FROM chash_step_claim($m)");
$primary->wait_for_catchup($standby);
is($session->query_safe($read), 's1', 'copying: reads still go to the old owner');
is($session->query_safe($write), 'no error', 'copying: writes are allowed');

$primary->safe_psql('postgres', "SELECT chash_step_fence($m, 1)");
$primary->wait_for_catchup($standby);
is($session->query_safe($read), 's1', 'fenced: reads still go to the old owner');
is($session->query_safe($write), '40001', 'fenced: writes get 40001 on the standby too');

$primary->safe_psql('postgres', "SELECT chash_step_complete($m, 1)");
$primary->wait_for_catchup($standby);
is($session->query_safe($read), 's4', 'done: the standby routes to the new owner');
is($session->query_safe($write), 'no error', 'done: writes are allowed again');
is($session->query_safe(
	"SELECT summary FROM chash_migration_progress WHERE migration = $m"),
	'1 of 1,024 slots', 'the progress view on the standby');

# The standby refuses to change anything.
my ($ret, $out, $err) = $standby->psql('postgres', "SELECT chash_step_claim($m)");
like($err, qr/read-only transaction|recovery/, 'no claims on a standby');

$session->quit;
$standby->stop;
$primary->stop;
done_testing();
