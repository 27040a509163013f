# The directory database is promoted while chash_move --online streams a
# step (docs/shards.md, "Failover"): a directory primary with a caught-up
# standby, two shards, a whale moving online, a client writing through the
# directory with a ledger.  The primary dies while the mover's
# subscription streams; the mover is stopped, chash_directory_recover
# re-points the shards to the promoted standby, and a rerun against it takes the step over, drops
# the dead run's subscription and moves the whale.  Every acknowledged
# write ends exactly once on the shard its tenant routes to, no
# replication object of the mover is left, the replicas equal the
# directory.
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
use Time::HiRes qw(time);

my $replication = "max_replication_slots = 16\nmax_wal_senders = 16\n"
  . "max_logical_replication_workers = 8\nmax_worker_processes = 16\n";
my ($dir, $dirconn, $shards) = FailoverLedger::setup(dir => 'dir1', dir_conf => $replication,
	shard => { logical => 1, conf => $replication . "wal_receiver_timeout = '4s'" },
	sql => q{SELECT chash_pin('orgs', 'whale', 's1')});
my %shard = %$shards;
$shard{s1}->safe_psql('postgres', q{INSERT INTO accounts SELECT 'whale', i, repeat('w', 100) FROM generate_series(1, 200000) i});
my $ledger = FailoverLedger->new(dir => $dir, shards => \%shard, tenants => [ 'whale', FailoverLedger::tenants_of($dir, 's1', 2) ]);
$ledger->write(20);

$dir->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('dir2');
$standby->init_from_backup($dir, 'base', has_streaming => 1);
$standby->start;

sub start_mover
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'chash_move', '--online', '--verbose', '--lease', '3', '--directory', 'orgs', $dir->connstr('postgres') ],
		'>', \$out, '2>', \$err);
	return { h => $h, err => \$err };
}

my $movers = q{SELECT count(*) FROM pg_subscription WHERE subname LIKE 'chash_move%'};
my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'whale', 's2')});
# the mover copies the whale itself, then subscribes; it holds there so
# the promotion comes while the step streams, before its fence
my $mover = do { local $ENV{CHASH_MOVE_PAUSE_SUBSCRIBED} = 5; start_mover() };
ok($ledger->write_until($mover, sub { $shard{s2}->safe_psql('postgres', $movers) > 0 }), 'the mover streams the whale to s2');
$dir->wait_for_catchup($standby);
$dir->stop('immediate');
$standby->promote;
$dir = $ledger->{dir} = $standby;
$mover->{h}->signal('TERM');
FailoverLedger::mover_exit($mover);
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), 'copying',
	'the promoted standby has the step claimed');
$ledger->write(10);

# The documented recovery: one command (nothing to reconcile, the shards
# re-pointed, the directory unlocked), a rerun.
my $newconn = 'host=' . $dir->host . ' port=' . $dir->port . ' dbname=postgres user=chash_replicator';
is($dir->safe_psql('postgres', qq{CALL chash_directory_recover('$newconn');
    SELECT string_agg(concat_ws(' ', shards, action), ', ') FROM chash_directory_recovery}),
	'"s1" of "orgs" repointed, "s2" of "orgs" repointed, directory "orgs" unlocked',
	'chash_directory_recover: nothing to reconcile, both shards re-pointed, the directory unlocked');
$ledger->applied;
$mover = start_mover();
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 'a rerun against the promoted directory');
is(FailoverLedger::mover_exit($mover), 0, 'moves the whale');
is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', 'the migration is done');
$ledger->applied;
$ledger->write(20);

is(join(' ', map { $shard{$_}->safe_psql('postgres', q{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = 'whale' AND id <= 200000}) } qw(s1 s2)),
	'0 200000', 'the whale is on s2 only, every row of it');
$ledger->end_state('promoted mid-online stream', 200000);

done_testing();
