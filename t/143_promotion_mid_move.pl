# The directory database is promoted while a move runs (docs/shards.md,
# "Failover"), a client writing through the directory with a ledger:
#  - before a fence, to a caught-up standby: the shards still follow the
#    dead server, so the promoted directory refuses the mover's claim
#    (55000) and the mover stops at once; chash_directory_recover and a
#    rerun finish the move;
#  - mid-copy, to a standby that missed the claim and the fence the shards
#    applied: chash_directory_reconcile takes them from the shards, the
#    shards re-pointed by hand follow, chash_directory_recover unlocks, the step the old primary's lease held is
#    released and a rerun finishes it;
#  - mid-batch, to a caught-up standby that comes up at the old primary's
#    address: the mover's connection string now leads to another server
#    (a new timeline); the mover stops naming it, deleting nothing; the
#    shards re-pointed by chash_directory_recover and a rerun finish the
#    move.
# Each ends with every acknowledged write exactly once on the shard its
# tenant routes to, no replication object left and the shards' replicas
# equal to the directory.
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

# 10 s of silence: the directory database is gone (docs/shards.md, "Failover")
my ($dir, $dirconn, $shards) = FailoverLedger::setup(dir => 'dir1',
	shard => { preload => 1, conf => "chash.replica_max_silence = 10\nwal_receiver_timeout = '4s'" });
my %shard = %$shards;
my @tenants = FailoverLedger::tenants_of($dir, 's1', 3);
# The second moving tenant is big, so that its copy takes a while.
FailoverLedger::load($dir, \%shard, 100);
$shard{s1}->safe_psql('postgres', qq{INSERT INTO accounts SELECT '$tenants[1]', i, repeat('x', 200) FROM generate_series(6, 300000) i});
my $loaded = $shard{s1}->safe_psql('postgres', 'SELECT count(*) FROM accounts') + $shard{s2}->safe_psql('postgres', 'SELECT count(*) FROM accounts');
my $ledger = FailoverLedger->new(dir => $dir, shards => \%shard, tenants => [ @tenants[0, 2] ]);
$ledger->write(20);

# A streaming standby of the current directory database.
my $standbys = 0;
sub new_standby
{
	$dir->backup('b' . ++$standbys);
	my $s = PostgreSQL::Test::Cluster->new('dir' . ($standbys + 1));
	$s->init_from_backup($dir, 'b' . $standbys, has_streaming => 1);
	$s->start;
	return $s;
}

sub start_mover
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--lease', '3', @args, '--directory', 'orgs', $dir->connstr('postgres') ],
		'>', \$out, '2>', \$err);
	return { h => $h, err => \$err };
}



# The directory database dies (unless it is down already) and the standby is promoted.
sub promote
{
	my ($standby) = @_;
	$dir->stop('immediate') if defined $dir->{_pid};
	$standby->start unless defined $standby->{_pid};
	$standby->promote;
	$dir = $ledger->{dir} = $standby;
	return 'host=' . $dir->host . ' port=' . $dir->port . ' dbname=postgres user=chash_replicator';
}

# The end state: the ledger, placement, replicas, replication objects.
sub check_end
{
	my ($what) = @_;
	$ledger->applied;
	$ledger->write(10);
	$ledger->end_state($what, $loaded);
	return;
}

# ---- before a fence, to a caught-up standby ----
my $standby = new_standby();
my $m1 = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$tenants[0]', 's2')});
$dir->wait_for_catchup($standby);
my $newconn = promote($standby);
$ledger->write(10);
my $mover = start_mover('--fence-timeout', '3');
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 'the mover on the promoted directory stops');
is(FailoverLedger::mover_exit($mover), 1, 'with an error');
like(${ $mover->{err} }, qr/directory "orgs" was last changed by another server.*hint: .*chash_directory_recover\(/s,
	'its claim is refused: the shards do not follow the promoted directory yet; it names the recovery');
unlike(${ $mover->{err} }, qr/giving up after/, 'it is not retried');
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m1"), 'pending', 'nothing was claimed');
is($dir->safe_psql('postgres', qq{CALL chash_directory_recover('$newconn');
    SELECT string_agg(concat_ws(' ', shards, action), ', ') FROM chash_directory_recovery}),
	'"s1" of "orgs" repointed, "s2" of "orgs" repointed, directory "orgs" unlocked',
	'one chash_directory_recover: nothing to reconcile, both shards re-pointed, the directory unlocked');
$ledger->applied;
$mover = start_mover();
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 'a rerun after the re-points');
is(FailoverLedger::mover_exit($mover), 0, 'finishes the move');
check_end('promoted before a fence');

# ---- mid-copy, to a standby that missed the claim and the fence ----
$standby = new_standby();
$dir->wait_for_catchup($standby);
my $m2 = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$tenants[1]', 's2')});
$dir->wait_for_catchup($standby);
$standby->stop;
$mover = start_mover();
ok($ledger->write_until($mover, sub {
			$shard{s1}->safe_psql('postgres', q{
                SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'COPY (SELECT%'}) > 0 }),
	'the mover copies');
is($shard{s1}->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m2"), 'fenced',
	'the source has applied the fence');
$dir->stop('immediate');
$newconn = promote($standby);
$mover->{h}->signal('TERM');
FailoverLedger::mover_exit($mover);
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m2"), 'pending',
	'the promoted standby missed the claim and the fence');
$ledger->write(10);
like($dir->safe_psql('postgres',
		q{SELECT concat_ws(' | ', directory, version_before < version_after, reapplied) FROM chash_directory_reconcile()}),
	qr/^orgs \| t \| 0$/, 'chash_directory_reconcile takes the claim and the fence from the shards');
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m2"), 'fenced', 'the step is fenced here too');
$shard{$_}->safe_psql('postgres', qq{SELECT chash_shard_repoint('orgs', '$newconn')}) for qw(s1 s2);
# the same by hand: reconciled, re-pointed, then the command only unlocks
is($dir->safe_psql('postgres', qq{CALL chash_directory_recover('$newconn');
    SELECT string_agg(concat_ws(' ', shards, action), ', ') FROM chash_directory_recovery}),
	'"s1" of "orgs" follows, "s2" of "orgs" follows, directory "orgs" unlocked',
	'after the reconcile and the re-points by hand, chash_directory_recover finds both shards following and unlocks');
$ledger->applied;
my ($out, $err) = ('', '');
IPC::Run::run([ 'chash_move', '--directory', 'orgs', $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
like($err, qr/error: steps of migration $m2 are in flight without a lease: 1 \(.* pid \d+\)/,
	'its lease was on the old primary only: the mover names the step instead of taking it');
$dir->safe_psql('postgres', "SELECT chash_step_release($m2, 1)");
$mover = start_mover();
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 'released, a rerun');
is(FailoverLedger::mover_exit($mover), 0, 'finishes the move');
is($shard{s1}->safe_psql('postgres', qq{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = '$tenants[1]'}),
	'0', 'the big tenant left the source');
check_end('promoted mid-copy');

# ---- mid-batch, the mover's directory connection string comes to lead to the promoted standby ----
$standby = new_standby();
my $m3 = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$tenants[2]', 's2')});
# the mover holds once it has copied the step; the swap comes meanwhile
$mover = do { local $ENV{CHASH_MOVE_PAUSE_AT} = 'copied:15'; start_mover() };
ok($ledger->write_until($mover, sub { ${ $mover->{err} } =~ /paused at "copied"/ }), 'the mover copied the step');
my $rows = sub {
	join ' ', map { $shard{$_}->safe_psql('postgres', qq{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = '$tenants[2]'}) } qw(s1 s2);
};
my $rows_copied = $rows->();
like($rows_copied, qr/^([1-9]\d*) \1$/, "the step's rows are on both shards ($rows_copied)");
$dir->wait_for_catchup($standby);
my $port = $dir->port;
$dir->stop('immediate');
$standby->promote;
$standby->stop;
$standby->append_conf('postgresql.conf', "port = $port");
$standby->{_port} = $port;
$standby->start;
$dir = $ledger->{dir} = $standby;
$newconn = 'host=' . $dir->host . ' port=' . $dir->port . ' dbname=postgres user=chash_replicator';
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 'the mover goes on, on the server its connection string now leads to');
is(FailoverLedger::mover_exit($mover), 1, 'and stops');
like(${ $mover->{err} }, qr/error: the directory database changed during (step 1 of )?migration $m3: it was server (\d+):(\d+) and is server \2:(\d+) now
.*detail: Its system identifier or timeline changed: a standby was promoted, or the connection string leads elsewhere\. Nothing was (deleted|claimed)/,
	'naming the change of server: another timeline');
is($rows->(), $rows_copied, 'nothing was deleted on either shard');
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m3"), 'fenced', 'the step is still fenced');
is($dir->safe_psql('postgres', qq{CALL chash_directory_recover('$newconn');
    SELECT string_agg(concat_ws(' ', shards, action), ', ') FROM chash_directory_recovery}),
	'"s1" of "orgs" repointed, "s2" of "orgs" repointed, directory "orgs" unlocked',
	'chash_directory_recover: nothing to reconcile, both shards re-pointed, unlocked');
$ledger->applied;
$mover = start_mover();
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 're-pointed, a rerun takes the step over');
is(FailoverLedger::mover_exit($mover), 0, 'and finishes the move');
like($rows->(), qr/^0 [1-9]\d*$/, 'the tenant left the source');
check_end('the directory connection led to a promoted standby mid-batch');

done_testing();
