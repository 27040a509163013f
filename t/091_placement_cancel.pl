# Long placement builds stop when cancelled (the conventions in docs/reference.md).
#
# Every build whose cost grows with an argument, at sizes the functions
# accept, must end with SQLSTATE 57014 within 0.5 s of statement_timeout
# (and of pg_cancel_backend / pg_terminate_backend), and the server must
# not restart.  Builds that used to cost more than their work (weighted
# Maglev with many idle backends, rendezvous_top with k near n) must now
# simply finish quickly.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $timeout_ms = 200;
my $grace = 0.5;

my $node = PostgreSQL::Test::Cluster->new('cancel');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION chash');

# Arguments built once, so the statements under test spend their time in
# the functions, not in building arrays.
$node->safe_psql('postgres', <<'SQL');
CREATE TABLE args AS SELECT
    ARRAY(SELECT 'node-' || i FROM generate_series(1, 1000) i) AS n1000,
    ARRAY(SELECT (1 + i % 4)::float8 FROM generate_series(1, 1000) i) AS w1000,
    ARRAY(SELECT '10.0.' || (i / 256) || '.' || (i % 256) || ':11211'
          FROM generate_series(1, 62500) i) AS s62500,
    ARRAY(SELECT 'n' || i FROM generate_series(1, 3000000) i) AS n3m,
    ARRAY(SELECT (i % 7)::float8 FROM generate_series(1, 3000000) i) AS w3m,
    ARRAY(SELECT 'key-' || i FROM generate_series(1, 5000000) i) AS keys5m;
-- Uncompressed: fetching the arguments (the server's code, not ours) stays short.
ALTER TABLE args ALTER n3m SET STORAGE EXTERNAL, ALTER w3m SET STORAGE EXTERNAL,
    ALTER keys5m SET STORAGE EXTERNAL, ALTER s62500 SET STORAGE EXTERNAL;
VACUUM FULL args;
SQL

my $started = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');

# Runs sql under statement_timeout; returns (elapsed seconds, stderr).
sub run_with_timeout
{
	my ($sql) = @_;
	my $t0 = time;
	my ($ret, $stdout, $stderr) = $node->psql(
		'postgres',
		"\\set VERBOSITY verbose\nSET statement_timeout = '${timeout_ms}ms';\n$sql",
		on_error_stop => 1);
	return (time - $t0, $stderr);
}

my @slow = (
	[ 'ring build, 10,000,000 points (xxh64)',
		q{SELECT chash_ring_lookup('k', n1000, 10000) FROM args} ],
	[ 'ring build, 10,000,000 points (md5)',
		q{SELECT chash_ring_lookup('k', n1000, 10000, hash => 'md5') FROM args} ],
	[ 'ring_replicas build, weighted',
		q{SELECT chash_ring_replicas('k', n1000, 3, 2500, w1000) FROM args} ],
	[ 'ring_points, 10,000,000 rows',
		q{SELECT count(*) FROM args, chash_ring_points(n1000, 10000)} ],
	[ 'ring_shares, 10,000,000 points',
		q{SELECT count(*) FROM args, chash_ring_shares(n1000, 10000)} ],
	[ 'ketama continuum, 62,500 servers',
		q{SELECT chash_ketama('k', s62500) FROM args} ],
	[ 'maglev table, M = 16,777,213, 1,000 backends',
		q{SELECT chash_maglev('k', n1000, 16777213) FROM args} ],
	[ 'maglev table, M = 16,777,213, weighted',
		q{SELECT chash_maglev('k', n1000, 16777213, w1000) FROM args} ],
	[ 'maglev_table, 16,777,213 rows',
		q{SELECT count(*) FROM chash_maglev_table('{a}', 16777213)} ],
	[ 'maglev, 3,000,000 backends (md5 permutations)',
		q{SELECT chash_maglev('k', n3m, 16777213, hash => 'md5') FROM args} ],
	[ 'bounded_assign, 5,000,000 keys',
		q{SELECT count(*) FROM args, chash_bounded_assign(keys5m, n1000, 0.01)} ],
	[ 'rendezvous, 3,000,000 nodes (duplicate check)',
		q{SELECT chash_rendezvous('k', n3m) FROM args} ],
	[ 'rendezvous, 3,000,000 weighted nodes (weight groups)',
		q{SELECT chash_rendezvous('k', n3m, w3m, 'md5') FROM args} ],);

for my $case (@slow)
{
	my ($name, $sql) = @$case;
	my ($elapsed, $stderr) = run_with_timeout($sql);
	like($stderr, qr/57014: canceling statement due to statement timeout/,
		"$name: cancelled by statement_timeout");
	cmp_ok($elapsed, '<', $timeout_ms / 1000 + $grace,
		sprintf('%s: ended %.0f ms after the start', $name, 1000 * $elapsed));
}

# No longer slow: work proportional to what is done.
for my $case (
	[ 'maglev, 1 backend of weight 1 and 60,000 of weight 0',
		q{SELECT count(*) FROM chash_maglev_table(
		    ARRAY(SELECT 'b' || i FROM generate_series(0, 60000) i), 65537,
		    ARRAY(SELECT (i = 0)::int::float8 FROM generate_series(0, 60000) i))} ],
	[ 'rendezvous_top, k = n = 200,000',
		q{SELECT cardinality(chash_rendezvous_top('k', a, 200000))
		  FROM (SELECT ARRAY(SELECT 'n' || i FROM generate_series(1, 200000) i) AS a) s} ])
{
	my ($name, $sql) = @$case;
	my $t0 = time;
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "SET statement_timeout = '5s';\n$sql");
	my $elapsed = time - $t0;
	is($ret, 0, "$name: finishes") or diag($stderr);
	cmp_ok($elapsed, '<', 2, sprintf('%s: %.0f ms', $name, 1000 * $elapsed));
}

# pg_cancel_backend and pg_terminate_backend reach a build in progress.
for my $how ('cancel', 'terminate')
{
	my $marker = "chash_$how";
	my ($in, $out, $err) = ('', '', '');
	my $h = IPC::Run::start(
		[
			'psql', '-X', '-v', 'VERBOSITY=verbose', '-d', $node->connstr('postgres'),
			'-c', "SELECT '$marker', chash_maglev('k', n1000, 16777213, w1000) FROM args"
		],
		\$in, \$out, \$err);
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%''$marker''%' AND pid <> pg_backend_pid()"
	) or die "the build did not start";
	usleep(300_000);    # well inside the build
	my $t0 = time;
	$node->safe_psql('postgres',
		"SELECT pg_${how}_backend(pid) FROM pg_stat_activity WHERE query LIKE '%''$marker''%' AND pid <> pg_backend_pid()"
	);
	$h->finish;
	my $elapsed = time - $t0;
	like(
		$err,
		$how eq 'cancel'
		? qr/57014: canceling statement due to user request/
		: qr/57P01: terminating connection due to administrator command/,
		"pg_${how}_backend stops the build");
	cmp_ok($elapsed, '<', $grace,
		sprintf('pg_%s_backend: the session ended %.0f ms later', $how, 1000 * $elapsed));
}

is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'),
	$started, 'the server did not restart');
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|server process .* was terminated/, 'no backend crashed');

$node->stop;
done_testing();
