# The lag gate (docs/shards.md, "The lag gate"): no batch is fenced while
# its source's or its target's replica of the directory lags behind the
# directory database by more than a bound.  A shard is made to lag by
# disabling its subscription and writing 3 MB of WAL on the directory.
# chash_move --max-lag 1MB claims the step and waits, saying so, and the
# step stays unfenced while writes to its tenant go on; SIGTERM gives it
# back.  A rerun fences only once the subscription is enabled again and
# has caught up.  Then the same for a background rebalance under
# chash.rebalance_max_lag, which chash_rebalance_stop stops while it waits.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use IPC::Run;
use Time::HiRes qw(time usleep);

my $dir = new_node('directory', logical => 1, preload => 1, conf => qq{
chash.rebalance_max_lag = '1MB'
chash.rebalance_lease = 2
max_worker_processes = 16
});
my %shard = map { $_ => new_node($_, preload => 1) } qw(s1 s2 s3);
my $dirconn = accounts_directory($dir, \%shard, on => [qw(s1 s2)], slots => 256, join => 1);
for my $name (qw(s1 s2))
{
	$shard{$name}->safe_psql('postgres', qq{
        INSERT INTO accounts SELECT 'org-' || g, i, 'seed'
          FROM generate_series(1, 400) g, generate_series(1, 5) i
         WHERE chash_route('orgs', 'org-' || g) = '$name'});
}
my $seeded = 400 * 5;

sub subscription_of
{
	my ($name) = @_;
	return $shard{$name}->safe_psql('postgres', q{SELECT subscription FROM chash_shard_member WHERE directory = 'orgs'});
}

# The shard's lag in bytes, as the gate reads it on the directory.
sub lag_of
{
	my ($name) = @_;
	my $slot = $shard{$name}->safe_psql('postgres', q{
        SELECT s.subslotname FROM chash_shard_member m JOIN pg_subscription s ON s.subname = m.subscription
         WHERE m.directory = 'orgs'});
	return $dir->safe_psql('postgres', qq{
        SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn) FROM pg_replication_slots WHERE slot_name = '$slot'});
}

# The shard stops applying the directory, and the directory writes 3 MB of WAL.
sub make_lag
{
	my ($name) = @_;
	my $sub = subscription_of($name);
	$shard{$name}->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$sub" DISABLE});
	$shard{$name}->poll_query_until('postgres', qq{
        SELECT NOT EXISTS (SELECT FROM pg_stat_subscription WHERE subname = '$sub' AND pid IS NOT NULL)})
	  or die "the apply worker of $name did not stop";
	$dir->safe_psql('postgres', q{SELECT pg_logical_emit_message(false, 'lag', repeat('x', 3000000))});
	cmp_ok(lag_of($name), '>', 2 * 1024 * 1024, "$name lags by more than 2 MB");
}

sub end_lag
{
	my ($name) = @_;
	my $sub = subscription_of($name);
	$shard{$name}->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$sub" ENABLE});
}

# Polls for $seconds: the states of the migration's steps never include fenced or done.
sub never_fenced
{
	my ($m, $seconds) = @_;
	my $end = time + $seconds;
	my $seen = '';
	while (time < $end)
	{
		$seen .= $dir->safe_psql('postgres', qq{
            SELECT string_agg(DISTINCT state, ',') FROM chash_migration_step WHERE migration = $m AND state IN ('fenced', 'done')});
		usleep(100_000);
	}
	return $seen eq '';
}

sub wait_for
{
	my ($h, $err, $re, $seconds) = @_;
	my $end = time + $seconds;
	while (time < $end)
	{
		$h->pump_nb;
		return 1 if $$err =~ $re;
		usleep(100_000);
	}
	return 0;
}

# ---- chash_move --max-lag ----
# A size it cannot read is refused before anything is claimed: exit 2.
for my $bad ('lots', '-1MB', '16mb', '1.5MB', '9999999999GB', '')
{
	my ($o, $e) = ('', '');
	IPC::Run::run([ 'chash_move', '--max-lag', $bad, '--directory', 'orgs', $dir->connstr('postgres') ], '>', \$o, '2>', \$e);
	is($? >> 8, 2, "--max-lag '$bad': exit 2");
	like($e, qr/invalid value "\Q$bad\E" for option --max-lag/, "--max-lag '$bad': says why");
}
my $tenant = $dir->safe_psql('postgres', q{
    SELECT t FROM (SELECT 'org-' || g AS t FROM generate_series(1, 400) g) a WHERE chash_route('orgs', t) = 's1' LIMIT 1});
my $m = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$tenant', 's2')});
shard_applied($dir, $shard{$_}) or die for qw(s1 s2);
make_lag('s2');
my @mover = ('chash_move', '--verbose', '--max-lag', '1MB', '--lease', '2', '--migration', $m, $dir->connstr('postgres'));
my ($out, $err) = ('', '');
my $h = IPC::Run::start(\@mover, '>', \$out, '2>', \$err);
ok(wait_for($h, \$err, qr/step \d+: waiting \d+ s for shard "s2" to apply the directory: its lag is \d+ kB, the bound 1024 kB; nothing is fenced until then/, 60),
	'chash_move waits for the lagging target, saying what it waits for');
is($dir->safe_psql('postgres', "SELECT s.state || '/' || l.progress FROM chash_migration_step s JOIN chash_step_lease l USING (migration, step) WHERE s.migration = $m"),
	'copying/claimed', 'the step is claimed');
ok(never_fenced($m, 3), 'and not fenced while the target lags');
is($shard{s1}->safe_psql('postgres', qq{INSERT INTO accounts VALUES ('$tenant', 1000001, 'gated') RETURNING 1}), '1',
	'writes to its tenant go on meanwhile');
$h->signal('TERM');
$h->finish;
is($h->full_result >> 8, 1, 'SIGTERM ends the wait: chash_move exits 1');
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), 'pending', 'and gives the step back');

# A rerun waits too, and fences once the subscription has caught up.
($out, $err) = ('', '');
$h = IPC::Run::start(\@mover, '>', \$out, '2>', \$err);
ok(wait_for($h, \$err, qr/waiting \d+ s for shard "s2"/, 60), 'a rerun waits too');
ok(never_fenced($m, 1), 'and fences nothing');
end_lag('s2');
$h->finish;
note $err;
is($h->full_result >> 8, 0, 'once s2 applies the directory again, chash_move moves the step');
like($err, qr/the shards keep up with the directory again \(lag \d+ kB\); fencing/, 'and says why it goes on');
cmp_ok(lag_of('s2'), '<=', 1024 * 1024, 's2 lags by at most the bound now');
shard_applied($dir, $shard{$_}) or die for qw(s1 s2);
is($shard{s2}->safe_psql('postgres', qq{SELECT count(*) FROM accounts WHERE org_id = '$tenant'}), '6',
	'the tenant\'s rows are on s2, the write made while the gate waited too');
is($shard{s1}->safe_psql('postgres', qq{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = '$tenant'}), '0', 'and none on s1');

# ---- a background rebalance under chash.rebalance_max_lag ----
{
	my $c = $shard{s3}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_add_shard('orgs', 's3', server => \$\$$c\$\$)});
	$shard{s3}->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's3', '$dirconn')});
}
shard_applied($dir, $shard{$_}) or die for qw(s1 s2 s3);
make_lag('s3');
my $logpos = -s $dir->logfile;
my $r = $dir->safe_psql('postgres', q{SELECT chash_rebalance_start('orgs')});
like($r, qr/^\d+$/, 'a rebalance onto the lagging s3 starts');
ok($dir->wait_for_log(qr/rebalance of directory "orgs": steps? [\d-]+ .*waiting \d+ s for shard "s3" to apply the directory/, $logpos),
	'its worker waits for s3, and says so in the log');
ok(never_fenced($r, 3), 'and fences nothing while s3 lags');
$dir->safe_psql('postgres', q{SELECT chash_rebalance_stop('orgs')});
is($dir->safe_psql('postgres', q{SELECT state FROM chash_rebalance_status WHERE directory = 'orgs'}), 'stopped',
	'chash_rebalance_stop stops it while it waits');
is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration = $r AND state <> 'pending'"), '0',
	'and every step is given back');
end_lag('s3');
shard_applied($dir, $shard{$_}) or die for qw(s1 s2 s3);
is($dir->safe_psql('postgres', q{SELECT chash_rebalance_start('orgs')}), $r, 'started again');
is($dir->safe_psql('postgres', q{SELECT chash_rebalance_wait('orgs', interval '120 seconds')}), 'done', 'it finishes once s3 keeps up');
shard_applied($dir, $shard{$_}) or die for qw(s1 s2 s3);
my ($rows, $misplaced) = (0, 0);
for my $name (sort keys %shard)
{
	my ($n, $bad) = split /\|/, $shard{$name}->safe_psql('postgres',
		qq{SELECT count(*), count(*) FILTER (WHERE chash_route('orgs', org_id) <> '$name') FROM accounts});
	$rows += $n;
	$misplaced += $bad;
}
is($rows, $seeded + 1, 'every row is there once');
is($misplaced, 0, 'and on its tenant\'s shard');
cmp_ok($shard{s3}->safe_psql('postgres', 'SELECT count(*) FROM accounts'), '>', 0, 's3 has its rows');


# A fast shutdown, as systemd's stop: one that hangs fails the test.
stop_fast($dir, map { $shard{$_} } sort keys %shard);

done_testing();
