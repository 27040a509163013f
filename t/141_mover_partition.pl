# A partition during a fence (docs/shards.md, "Failover"): the source
# shard cannot see the directory database (its subscription disabled, or
# its walsender killed again and again) while chash_move fences a step.
# The mover waits at most --fence-timeout, says what it waits for, gives
# the step back and resumes once the partition heals; SIGTERM ends the
# wait at once; a client writes through the directory all along and every
# acknowledged write ends exactly once on the shard its tenant routes to.
# A role that may not claim steps stops the mover at once (42501).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use FailoverLedger;
use IPC::Run;
use Time::HiRes qw(time usleep);

my ($dir, $dirconn, $shards) = FailoverLedger::setup(shard => { preload => 1 });
my %shard = %$shards;
FailoverLedger::load($dir, \%shard, 200);
my @tenants = FailoverLedger::tenants_of($dir, 's1', 3, 200);
my $ledger = FailoverLedger->new(dir => $dir, shards => \%shard, tenants => \@tenants);
$ledger->write(20);

my $sub = $shard{s1}->safe_psql('postgres', 'SELECT subscription FROM chash_shard_member');

# Starts chash_move in the background with a 3 s bound.
sub start_mover
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--lease', '4', '--fence-timeout', '3', @args,
							  '--directory', 'orgs', $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
	return { h => $h, err => \$err };
}

# ---- the source cannot see the fence: bounded, said, given back, resumed ----
my $m1 = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$tenants[0]', 's2')});
$shard{s1}->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$sub" DISABLE});
my $mover = start_mover();
ok($ledger->write_until($mover, sub { ${ $mover->{err} } =~ /did not apply the fence/ }),
	'the mover ends its wait for the fence at the bound');
like(${ $mover->{err} }, qr/chash_move: waiting \d+ s for shard "s1" to apply the fence of step 1: its replica of directory "orgs" is at version \d+, the directory database at version \d+; Its subscription "\Q$sub\E" is disabled\./,
	'while it waits it says for what, where each side is, and why the shard cannot follow');
like(${ $mover->{err} }, qr/error: shard "s1" did not apply the fence of step 1 of migration $m1 within 3 s \(--fence-timeout\)\n.*detail: Its replica of directory "orgs" is at version \d+, the directory database at version \d+\. Its subscription "\Q$sub\E" is disabled\.\n/,
	'the bound is named');
ok($ledger->write_until($mover, sub {
			$dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m1") eq 'pending' }),
	'the step was given back');
ok($ledger->write_until($mover, sub { my @n = ${ $mover->{err} } =~ /did not apply the fence/g; @n >= 2 }), 'and is tried again');
$shard{s1}->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$sub" ENABLE});
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 'the partition heals: the mover finishes');
is(FailoverLedger::mover_exit($mover), 0, 'with success');
is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m1"), 'done', 'the migration is done');
$ledger->applied;
$ledger->write(10);
$ledger->check('after a partition during a fence');

# ---- SIGTERM during the wait ----
my $m2 = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$tenants[1]', 's2')});
$shard{s1}->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$sub" DISABLE});
$mover = start_mover('--fence-timeout', '600');
ok($ledger->write_until($mover, sub { ${ $mover->{err} } =~ /waiting \d+ s for shard "s1" to apply the fence/ }),
	'the mover waits for the fence');
my $t0 = time;
$mover->{h}->signal('TERM');
my $status = FailoverLedger::mover_exit($mover);
my $took = time - $t0;
is($status, 1, 'SIGTERM ends it (exit 1)');
ok($took < 10, sprintf('at once (%.1f s)', $took));
like(${ $mover->{err} }, qr/interrupted: the steps in flight were released/, 'it says so');
is($dir->safe_psql('postgres', "SELECT state || ' ' || (SELECT count(*) FROM chash_step_lease WHERE migration = $m2)
    FROM chash_migration_step WHERE migration = $m2"), 'pending 0', 'the step was given back, no lease is left');
$shard{s1}->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$sub" ENABLE});
$mover = start_mover();
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 'a rerun after the partition');
is(FailoverLedger::mover_exit($mover), 0, 'finishes the migration');

# ---- the walsender to the source killed again and again during a move ----
my $m3 = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$tenants[2]', 's2')});
my $kill = qq{SELECT count(pg_terminate_backend(pid)) FROM pg_stat_replication WHERE application_name = '$sub'};
$mover = start_mover();
my ($kills, $last_kill) = ($dir->safe_psql('postgres', $kill), time);
ok($ledger->write_until($mover, sub {
			if (time - $last_kill > 0.3)
			{
				$kills += $dir->safe_psql('postgres', $kill);
				$last_kill = time;
			}
			!$mover->{h}->pumpable }),
	"the mover finishes while the walsender to s1 is killed at its start and every 0.3 s ($kills kills)");
is(FailoverLedger::mover_exit($mover), 0, 'with success');
ok($kills >= 1, 'the walsender was killed during the move');
$ledger->applied;
$ledger->write(10);
is($dir->safe_psql('postgres', q{SELECT count(*) FROM chash_migration WHERE status <> 'done'}), '0', 'every migration is done');
$ledger->check('after the walsender was killed again and again');
is($shard{s1}->safe_psql('postgres', qq{SELECT count(*) FROM accounts WHERE org_id IN ('$tenants[0]', '$tenants[1]', '$tenants[2]')}),
	'0', 'the moved tenants\' rows are gone from the source');
is($shard{s2}->safe_psql('postgres', qq{SELECT count(*) FROM accounts WHERE org_id IN ('$tenants[0]', '$tenants[1]', '$tenants[2]') AND id <= 5}),
	'15', 'and on the target');

# ---- a shard that cannot vouch for its replica stops the mover at once ----
# (A divergence recorded as the replica's triggers record one.)
my $sub2 = $shard{s2}->safe_psql('postgres', 'SELECT subscription FROM chash_shard_member');
sub diverge { $shard{s2}->safe_psql('postgres', q{SET client_min_messages = error; SELECT chash_replica_note_divergence('Version 9 of directory "orgs" arrived a second time.')}) }
sub mend { $shard{s2}->safe_psql('postgres', q{UPDATE chash_shard_origin SET diverged = NULL, diverged_at = NULL}) }
diverge();
my $m4 = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$tenants[1]', 's1')});
my $v4 = $dir->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'});
my ($out, $err) = ('', '');
my $t1 = time;
IPC::Run::run([ 'chash_move', '--directory', 'orgs', $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
$status = $? >> 8;
$took = time - $t1;
note $err;
is($status, 1, 'a shard whose replica met another history stops the mover');
like($err, qr/error: shard "s2" cannot vouch for its replica of directory "orgs"
.*detail: Its replica met another directory history: Version 9 of directory "orgs" arrived a second time\. Nothing was deleted\./,
	'with the shard\'s reason');
ok($took < 10, sprintf('at once (%.1f s), before it claims anything', $took));
is($dir->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'}), $v4, 'the directory is unchanged');
mend();
# ... and while it waits for the fence there
$shard{s2}->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$sub2" DISABLE});
$mover = start_mover('--fence-timeout', '600');
ok($ledger->write_until($mover, sub { ${ $mover->{err} } =~ /waiting \d+ s for shard "s2" to apply the fence/ }), 'the mover waits for s2');
diverge();
$t1 = time;
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 'the divergence ends the wait');
is(FailoverLedger::mover_exit($mover), 1, 'the mover stops');
ok(time - $t1 < 10, 'at once');
like(${ $mover->{err} }, qr/error: shard "s2" cannot vouch for its replica of directory "orgs"
.*detail: Its replica met another directory history: .* The mover waited for it to apply the fence of step 1\./,
	'saying why');
mend();
$shard{s2}->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$sub2" ENABLE});
$mover = start_mover();
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 'mended, a rerun');
is(FailoverLedger::mover_exit($mover), 0, 'finishes the migration');
$ledger->applied;
$ledger->check('after a shard refused its replica');

# ---- a role that may read but not claim stops at once ----
$dir->safe_psql('postgres', q{
    CREATE ROLE reader LOGIN;
    GRANT SELECT ON chash_directory, chash_shard, chash_migration, chash_migration_step, chash_step_lease TO reader});
my $m5 = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$tenants[0]', 's1')});
($out, $err) = ('', '');
$t0 = time;
IPC::Run::run([ 'chash_move', '--directory', 'orgs', $dir->connstr('postgres') . ' user=reader' ], '>', \$out, '2>', \$err);
$status = $? >> 8;
$took = time - $t0;
note $err;
is($status, 1, 'a role without chash_mover cannot move');
like($err, qr/error: query failed on directory: permission denied for function chash_steps_lease_claim/, 'the error is the server\'s');
unlike($err, qr/giving up after/, 'it is not retried');
ok($took < 10, sprintf('it stops at once (%.1f s)', $took));

# ---- a shard that cannot be reached: no claim of a step it is in; an unrelated one is skipped ----
# s3 owns nothing and no step needs it; its server is down.
$dir->safe_psql('postgres', q{SELECT chash_add_shard('orgs', 's3', server => 'host=/nonexistent port=1 dbname=postgres')});
$ledger->applied;
$shard{s2}->stop;
my $v5 = $dir->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'});
$mover = start_mover();
ok($ledger->write_until($mover, sub { ${ $mover->{err} } =~ /cannot be checked/ }), 'the mover cannot check s2, the target');
like(${ $mover->{err} }, qr/error: shard "s2" cannot be checked against the directory database: it cannot be reached
.*detail: Steps of migration $m5 move rows from or to it\. None is claimed until it is known that its replica of directory "orgs" is not ahead of the directory database\./,
	'it says so, naming the migration');
sleep 2;
is($dir->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'}) . ' '
	  . $dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m5"),
	"$v5 pending", 'and claims nothing: the directory is unchanged, the step pending');
$mover->{h}->signal('TERM');
FailoverLedger::mover_exit($mover);
$shard{s2}->start;
$ledger->applied;
$mover = start_mover();
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 's2 back, a rerun');
is(FailoverLedger::mover_exit($mover), 0, 'finishes the migration');
like(${ $mover->{err} }, qr/warning: shard "s3" was not checked against the directory database: it cannot be reached
.*detail: No step of migration $m5 moves rows from or to it\./, 'skipping s3, which no step needs, with a warning');
is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m5"), 'done', 'the migration is done');
$ledger->applied;
$ledger->check('after a shard could not be reached');

done_testing();
