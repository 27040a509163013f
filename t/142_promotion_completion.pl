# The directory database is promoted between a move's completion on the
# old primary and its arrival on the standby (docs/shards.md, "Failover"):
# a directory primary with an asynchronous standby, two shards, a client
# writing through the directory with a ledger.  The mover is killed after
# copying a step (the standby has the fence), the standby stops, a rerun
# completes the step (the shards apply it, the standby does not) and is
# killed, the primary dies, the standby is promoted.  chash_move run
# against it stops at once, naming the disagreement (the shards ahead of
# the directory), and deletes nothing on either side; a pin there is refused
# (55000: its shards do not follow it yet).  The documented recovery
# (CALL chash_directory_recover, chash_move again) ends with every acknowledged write exactly once on the shard its
# tenant routes to, no replication object left, and the shards' replicas
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
use Time::HiRes qw(time);

my ($primary, $dirconn, $shards) = FailoverLedger::setup(dir => 'dir_primary', shard => { preload => 1 });
my %shard = %$shards;
my $dir = $primary;		# the directory database the clients and the mover use
my $loaded = FailoverLedger::load($dir, \%shard, 100);

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('dir_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

my @tenants = FailoverLedger::tenants_of($primary, 's1', 4);
my $moving = $tenants[0];
my $ledger = FailoverLedger->new(dir => $primary, shards => \%shard, tenants => \@tenants);
$ledger->write(20);

sub mover
{
	my ($crash_at) = @_;
	my ($out, $err) = ('', '');
	local $ENV{CHASH_MOVE_CRASH_AT} = $crash_at // '';
	my $t0 = time;
	IPC::Run::run([ 'chash_move', '--verbose', '--lease', '2', '--directory', 'orgs', $dir->connstr('postgres') ],
		'>', \$out, '2>', \$err);
	my $status = $? & 127 ? 'signal ' . ($? & 127) : $? >> 8;
	note "chash_move: $status\n$err";
	return ($status, $err, time - $t0);
}

# ---- the standby has the fence and the copy; the shards get the completion ----
my $m = $primary->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$moving', 's2')});
is((mover('copied'))[0], 'signal 9', 'the mover is killed after copying the step');
$ledger->write(10);
$primary->wait_for_catchup($standby);
$standby->stop;
sleep 2;				# the lease runs out
is((mover('completed'))[0], 'signal 9', 'a rerun completes the step and is killed');
ok($shard{$_}->poll_query_until('postgres', "SELECT state = 'done' FROM chash_migration_step WHERE migration = $m"),
	"$_ applied the completion") for qw(s1 s2);
$ledger->write(20);
my $lost = $primary->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'});
$primary->stop('immediate');
$standby->start;
$standby->promote;
$dir = $ledger->{dir} = $standby;
is($standby->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), 'fenced',
	'the promoted standby has the step fenced');
$ledger->write(20);

# What the shards hold, and the directory's version: the mover must change neither.
my $rows_state = sub {
	join ' ', map { $shard{$_}->safe_psql('postgres', qq{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = '$moving'}) } qw(s1 s2);
};
my $rows_before = $rows_state->();
like($rows_before, qr/^[1-9]\d* [1-9]\d*$/, "the moving tenant's rows are on both shards ($rows_before)");
my $version = sub { $standby->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'}) };
my $v0 = $version->();

# ---- the mover against the promoted directory stops at once ----
my ($status, $err, $took) = mover();
is($status, 1, 'chash_move on the promoted directory fails');
like($err, qr/error: shard "s[12]" is ahead of the directory database: its replica of directory "orgs" is at version $lost, the directory database at version $v0\n.*detail: The directory database lacks versions the shard applied.*\n.*hint: .*chash_directory_recover\(/,
	'naming the versions on each side and what to do');
unlike($err, qr/giving up after/, 'it is not retried');
ok($took < 10, sprintf('it stops at once (%.1f s)', $took));
is($version->(), $v0, 'it changed nothing in the directory (no claim)');
is($rows_state->(), $rows_before, 'and deleted nothing on the shards');

# The new primary makes no version of its own before its shards follow it:
# a pin is refused (it would re-use the lost version number, and the shards
# that follow the old primary would go on admitting writes by its state).
my (undef, undef, $pin_err) = $standby->psql('postgres', qq{SELECT chash_pin('orgs', '$tenants[3]', 's1')});
like($pin_err, qr/ERROR:  directory "orgs" was last changed by another server\nDETAIL:  Version $v0 of directory "orgs" was made by server \d+:1; this server is \d+:2/,
	'a pin on the promoted directory is refused until the shards follow it');
is($version->(), $v0, 'the directory is unchanged');
is($rows_state->(), $rows_before, 'no row was deleted');

# ---- the documented recovery: one command on the new primary ----
my $newconn = 'host=' . $standby->host . ' port=' . $standby->port . ' dbname=postgres user=chash_replicator';
# (the report is a temporary table: read in the session that made it)
my @report = split /\n/, $standby->safe_psql('postgres', qq{CALL chash_directory_recover('$newconn');
    SELECT concat_ws(' | ', shards, action) FROM chash_directory_recovery;
    SELECT detail FROM chash_directory_recovery WHERE action = 'reconciled'});
is(join("\n", @report[0 .. 3]),
	join("\n", 'directory "orgs" | reconciled', '"s1" of "orgs" | repointed', '"s2" of "orgs" | repointed',
		'directory "orgs" | unlocked'),
	'chash_directory_recover rolls the new primary forward, re-points both shards and unlocks the directory');
like($report[4],
	qr/^Version $v0 to $lost: the versions it lacked from the replica of "s[12]" of "orgs", 0 changes of its own applied again\.$/,
	'the reconcile took the lost versions from a shard');
is($standby->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), 'done',
	'the step is done in the directory too');
$ledger->applied;
$ledger->write(20);
($status, $err) = mover();
is($status, 0, 'chash_move finishes the migration on the new primary');
is($standby->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', 'the migration is done');
$ledger->applied;
$ledger->write(20);

# ---- the end state ----
is($shard{s1}->safe_psql('postgres', qq{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = '$moving'}), '0',
	'the moved tenant has no row left on the source');
$ledger->end_state('promoted between a completion and its arrival on the standby', $loaded);

done_testing();
