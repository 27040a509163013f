# The mover's engine inside the server (docs/shards.md, "Background
# rebalancing"): an error of the engine ends the rebalance, never the
# worker's process or the server's other sessions.  A tenant whose text a
# shard's connection cannot quote (the shard's server string sets an
# encoding that cannot hold the UTF-8 of the directory's tenant) once made
# the engine call exit(1) in the worker's thread; the rebalance must now
# end "failed" with the error in chash_rebalance, the step given back, and
# a session that was open all along still connected.  A shard backend of
# the worker terminated in the middle of a batch is the other failure: the
# batch is retried and the rebalance finishes.  Both run with a session
# open, and the postmaster must never have restarted the server.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use Time::HiRes qw(usleep);

my $dir = new_node('directory', logical => 1, preload => 1, conf => qq{
chash.rebalance_lease = 2
chash.rebalance_batch_rows = 50
});
my %shard = map { $_ => new_node($_, preload => 1) } qw(s1 s2);
accounts_directory($dir, \%shard, join => 1, index => 1);
for my $name (qw(s1 s2))
{
	$shard{$name}->safe_psql('postgres', qq{
        INSERT INTO accounts
        SELECT t, i, 'seed'
          FROM (SELECT 'org-' || g AS t FROM generate_series(1, 200) g) a, generate_series(1, 5) i
         WHERE chash_route('orgs', t) = '$name'});
}

my $started_at = $dir->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
my $open = $dir->background_psql('postgres');
my $open_pid = $open->query_safe('SELECT pg_backend_pid()');

# Waits until the rebalance of orgs is no longer running: its state.
sub rebalance_end
{
	for (1 .. 600)
	{
		my $state = $dir->safe_psql('postgres', q{SELECT state FROM chash_rebalance WHERE directory = 'orgs'});
		return $state if $state ne 'running' && $state ne 'stopping';
		usleep(100_000);
	}
	return 'still running';
}

# ---- an error that called exit(1): a text the target's connection cannot quote ----
# U&'\3042' (HIRAGANA LETTER A) is three bytes of UTF-8, which EUC_JP reads
# as a two-byte character and a truncated one.
my $tenant = q{U&'\3042'};
my $from = $dir->safe_psql('postgres', "SELECT chash_route('orgs', $tenant)");
my $to = $from eq 's1' ? 's2' : 's1';
my $to_conn = $shard{$to}->connstr('postgres');
$dir->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', '$to', server => \$\$$to_conn client_encoding=EUC_JP\$\$)});
my $m = $dir->safe_psql('postgres', "SELECT chash_migration_move_tenant('orgs', $tenant, '$to')");
$dir->safe_psql('postgres', q{SELECT chash_rebalance_start('orgs')});
is(rebalance_end(), 'failed', 'the rebalance whose engine met the error ends failed');
my ($error, $worker) = split /\|/, $dir->safe_psql('postgres',
	q{SELECT last_error, coalesce(worker_pid::text, 'none') FROM chash_rebalance WHERE directory = 'orgs'});
like($error, qr/could not quote|chash_move_could_not_quote/, 'chash_rebalance has the error');
note "last error: $error";
is($worker, 'none', 'and no worker');
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), 'pending',
	'the step is given back, not left fenced');
is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_step_lease WHERE migration = $m"), '0',
	'and its lease released');
ok($dir->log_contains(qr/rebalance of directory "orgs": failed/), 'the worker says it failed');
is($open->query_safe('SELECT pg_backend_pid()'), $open_pid, 'the session open all along is still connected');

# the server string mended, the rebalance again: it finishes
$dir->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', '$to', server => \$\$$to_conn\$\$)});
$dir->safe_psql('postgres', q{SELECT chash_rebalance_start('orgs')});
is(rebalance_end(), 'done', 'started again with the server string mended, it finishes');
is($dir->safe_psql('postgres', "SELECT chash_route('orgs', $tenant)"), $to, 'the tenant is on its new shard');

# ---- a shard backend of the worker terminated in the middle of a batch ----
# a tenant large enough that its COPY lasts a while
my $whale_from = $dir->safe_psql('postgres', "SELECT chash_route('orgs', 'whale')");
my $whale_to = $whale_from eq 's1' ? 's2' : 's1';
$shard{$whale_from}->safe_psql('postgres',
	q{INSERT INTO accounts SELECT 'whale', i, repeat('x', 200) FROM generate_series(1, 300000) i});
my $seeded = $shard{s1}->safe_psql('postgres', 'SELECT count(*) FROM accounts')
  + $shard{s2}->safe_psql('postgres', 'SELECT count(*) FROM accounts');
$dir->safe_psql('postgres', "SELECT chash_migration_move_tenant('orgs', 'whale', '$whale_to')");
$dir->safe_psql('postgres', q{SELECT chash_rebalance_start('orgs')});
my $killed = 0;
for (1 .. 300)
{
	for my $name (qw(s1 s2))
	{
		$killed += $shard{$name}->safe_psql('postgres', q{
            SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
              FROM pg_stat_activity
             WHERE application_name = 'chash_move' AND backend_type = 'client backend'
               AND pid <> pg_backend_pid() AND state = 'active' AND query ~* '^\s*copy'});
	}
	last if $killed > 0;
	usleep(20_000);
}
cmp_ok($killed, '>', 0, 'a COPY of the worker on a shard is terminated');
my $state = rebalance_end();
is($state, 'done', 'the batch is retried and the rebalance finishes');
is($dir->safe_psql('postgres', "SELECT chash_route('orgs', 'whale')"), $whale_to, 'the tenant is on its new shard');
note 'last error: ', $dir->safe_psql('postgres', q{SELECT coalesce(last_error, '') FROM chash_rebalance WHERE directory = 'orgs'});
is($shard{s1}->safe_psql('postgres', 'SELECT count(*) FROM accounts')
	  + $shard{s2}->safe_psql('postgres', 'SELECT count(*) FROM accounts'), $seeded, 'every row once');
is($open->query_safe('SELECT pg_backend_pid()'), $open_pid, 'the session open all along is still connected');

is($dir->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $started_at, 'the server never restarted');
ok(!$dir->log_contains(qr/terminating any other active server processes|was terminated by signal|exited with exit code [^0]/),
	'no process of the server crashed or exited with an error');

$open->quit;
$_->stop('fast') for $dir, values %shard;
done_testing();
