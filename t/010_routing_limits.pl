# Routing's limits (the conventions in docs/reference.md): loading a directory with 80,000 steps in
# flight is fast and stops within 0.5 s of a statement_timeout; a backend
# follows DROP EXTENSION / CREATE EXTENSION made in another session without
# reconnecting; and none of it restarts the server.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('limits');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION chash');
my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

# 160,000 slots on one shard, a second shard added: a migration of 80,000
# slot moves, all of them in flight (claimed in one statement, as the
# owner, with triggers off; the directory row moved on by hand).  The
# steps move slots in descending order: the worst order for a sort that
# expects the table's order (an insertion sort took 47 s).
$node->safe_psql('postgres', q{
    SELECT chash_create_directory('big', ARRAY['a'], 160000);
    SELECT chash_add_shard('big', 'b');
    SELECT chash_migration_start('big');
    SET session_replication_role = replica;
    UPDATE chash_migration_step
       SET state = 'copying', claimed_by = 'tap', started_at = now(), slot = 159999 - slot;
    UPDATE chash_directory SET version = version + 1 WHERE name = 'big';
});
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM chash_migration_step WHERE state = 'copying'}),
	'80000', '80,000 steps in flight');

# A cold load in a new session (the connection's own cost measured apart).
my $t0 = time;
$node->safe_psql('postgres', 'SELECT 1');
my $connect = time - $t0;
$t0 = time;
my $explain = $node->safe_psql('postgres',
	q{SELECT e.slot_state, e.moving_to
      FROM generate_series(1, 20) AS i, chash_route_explain('big', 'tenant-' || i) AS e
      WHERE e.slot >= 80000 LIMIT 1});
my $load = time - $t0 - $connect;
is($explain, 'copying|b', 'a tenant of a slot in flight (the upper half now) shows its step');
diag(sprintf('load of 160,000 slots and 80,000 steps in flight: %.0f ms', $load * 1000));
cmp_ok($load, '<', 2, 'the load takes well under 2 s (an insertion sort took 47 s here)');

# statement_timeout during a load: a fifth of the load time, at least 1 ms.
my $timeout_ms = int($load * 1000 / 5) || 1;
my ($stdout, $stderr) = ('', '');
$t0 = time;
$node->psql('postgres',
	"SET statement_timeout = '${timeout_ms}ms'; SELECT chash_route('big', 'acme')",
	stdout => \$stdout, stderr => \$stderr);
my $cancel = time - $t0 - $connect;
like($stderr, qr/canceling statement due to statement timeout/, "statement_timeout of $timeout_ms ms cancels the load");
diag(sprintf('cancel after %d ms of timeout: the statement ended after %.0f ms', $timeout_ms, $cancel * 1000));
cmp_ok($cancel - $timeout_ms / 1000, '<', 0.5, 'the load stops within 0.5 s of the timeout');

# DROP EXTENSION / CREATE EXTENSION in another session: a backend that
# only created a directory, and one that had routed, both route through
# the new tables without reconnecting.
my $creator = $node->background_psql('postgres');
my $router = $node->background_psql('postgres');
$creator->query_safe(q{SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 64)});
is($router->query_safe(q{SELECT chash_route('orgs', 'acme') IN ('s1', 's2')}), 't', 'routes before');
$node->safe_psql('postgres', q{
    DROP EXTENSION chash CASCADE;
    CREATE EXTENSION chash;
    SELECT chash_create_directory('orgs', ARRAY['n1', 'n2'], 64);
});
is($creator->query_safe(q{SELECT chash_route('orgs', 'acme') IN ('n1', 'n2')}), 't',
	'a backend that only created a directory routes through the re-created extension');
is($router->query_safe(q{SELECT chash_route('orgs', 'acme') IN ('n1', 'n2')}), 't',
	'a backend that had routed routes through the re-created extension');
$creator->query_safe(q{SELECT chash_create_directory('more', ARRAY['m1'], 16)});
is($creator->query_safe(q{SELECT chash_route('more', 'acme')}), 'm1',
	'and creates directories in it');
$creator->quit;
$router->quit;

is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $started,
	'the server never restarted');
unlike(slurp_file($node->logfile), qr/terminated by signal|server process .* was terminated/,
	'no backend crashed');

$node->stop;
done_testing();
