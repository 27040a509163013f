# A move's source shard is replaced by its synchronous standby while
# chash_move --online moves a step from it (docs/shards.md, "Failover"):
# a whale moving online from s1, a client writing through the directory
# with a ledger.  The mover holds at one point of the online step
# (CHASH_MOVE_PAUSE_AT; CHASH_T146_POINTS selects, default all): its
# subscription streaming (before the fence), fenced, copied (the rows
# changed since the copy verified), completed (before the source's rows
# are deleted).  s1 dies there; its standby is promoted and
# chash_shard.server set to it; a rerun takes the step over, drops what
# the dead run left (the slot died with s1) and finishes the move from
# the promoted shard.  Every acknowledged write ends exactly once on the
# shard its tenant routes to, no replication object of the mover is left,
# the replicas equal the directory.
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

my $replication = "max_replication_slots = 16\nmax_wal_senders = 16\n"
  . "max_logical_replication_workers = 8\nmax_worker_processes = 16\n";
my %state_at = (subscribed => 'copying', fenced => 'fenced', copied => 'fenced', completed => 'done');

sub promoted_at
{
	my ($point) = @_;
	my ($dir, $dirconn, $shard) = FailoverLedger::setup(suffix => "_$point", dir_conf => $replication,
		shard => { logical => 1, conf => $replication . "wal_receiver_timeout = '4s'" },
		sql => q{SELECT chash_pin('orgs', 'whale', 's1')});
	$shard->{s1}->safe_psql('postgres', q{INSERT INTO accounts SELECT 'whale', i, repeat('w', 100) FROM generate_series(1, 200000) i});
	my $ledger = FailoverLedger->new(dir => $dir, shards => $shard,
		tenants => [ 'whale', FailoverLedger::tenants_of($dir, 's1', 2) ]);
	$ledger->write(20);

	$shard->{s1}->append_conf('postgresql.conf', "synchronous_standby_names = '*'");
	$shard->{s1}->reload;
	$shard->{s1}->backup('base');
	my $standby = PostgreSQL::Test::Cluster->new("s1_standby_$point");
	$standby->init_from_backup($shard->{s1}, 'base', has_streaming => 1);
	$standby->start;
	$shard->{s1}->wait_for_catchup($standby);

	my $start_mover = sub {
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start([ 'chash_move', '--online', '--verbose', '--lease', '3', '--directory', 'orgs', $dir->connstr('postgres') ],
			'>', \$out, '2>', \$err);
		return { h => $h, err => \$err };
	};
	my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'whale', 's2')});
	my $mover = do { local $ENV{CHASH_MOVE_PAUSE_AT} = "$point:120"; $start_mover->() };
	ok($ledger->write_until($mover, sub { ${ $mover->{err} } =~ /paused at "$point"/ }), "$point: the mover holds there");
	is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), $state_at{$point},
		"$point: the step is $state_at{$point}");
	$ledger->write(10);
	$shard->{s1}->stop('immediate');
	$standby->promote;
	# It has no standby of its own yet: its commits must not wait for one.
	$standby->safe_psql('postgres', q{ALTER SYSTEM SET synchronous_standby_names = ''; SELECT pg_reload_conf()});
	$shard->{s1} = $standby;
	my $c = $standby->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', 's1', server => \$\$$c\$\$)});
	$mover->{h}->signal('TERM');
	FailoverLedger::mover_exit($mover);
	ok($standby->poll_query_until('postgres', q{SELECT streaming AND refusal IS NULL FROM chash_shard_status}),
		"$point: the promoted shard streams the directory: its subscription took the slot over");
	$ledger->applied;
	$ledger->write(10);
	$mover = $start_mover->();
	ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), "$point: a rerun against the promoted source");
	is(FailoverLedger::mover_exit($mover), 0, "$point: moves the whale");
	is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', "$point: the migration is done");
	$ledger->applied;
	$ledger->write(20);

	is(join(' ', map { $shard->{$_}->safe_psql('postgres', q{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = 'whale' AND id <= 200000}) } qw(s1 s2)),
		'0 200000', "$point: the whale is on s2 only, every row of it");
	$ledger->end_state("source promoted at $point", 200000);
	$_->stop for values %$shard, $dir;
	return;
}

promoted_at($_) for split ' ', $ENV{CHASH_T146_POINTS} // 'subscribed fenced copied completed';

done_testing();
