# The replication objects of online moves are recorded before they are
# created, and a cleaner drops those of steps given back or finished that
# no mover holds (docs/shards.md, "Background rebalancing").  A mover is
# killed once the subscription of a tenant step streams; its publication,
# slot and subscription are recorded.  The step is given back by hand
# (chash_step_release) once its lease has expired: a run that moves
# nothing (--max-steps 0) drops them on both shards and forgets them, and
# no slot is left holding WAL.  Then a run moves the tenant, and nothing
# is left.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use IPC::Run;

my $replication = "max_replication_slots = 16\nmax_wal_senders = 16\n"
  . "max_logical_replication_workers = 8\nmax_worker_processes = 16\n";
my $dir = new_node('directory', logical => 1, conf => $replication);
my %shard = map { $_ => new_node($_, logical => 1, preload => 1, conf => $replication) } qw(s1 s2);
accounts_directory($dir, \%shard, sql => q{SELECT chash_pin('orgs', 'whale', 's1')}, join => 1);
$shard{s1}->safe_psql('postgres', q{
    SET chash.bypass_guard = on;
    INSERT INTO accounts SELECT 'whale', i, 'p' || i FROM generate_series(1, 20000) i});

# The mover's objects on the shards ("chash_move_..."): slots, publications, subscriptions.
sub objects
{
	join ' ', map {
		my $n = $shard{$_};
		"$_:" . $n->safe_psql('postgres', q{
            SELECT coalesce(string_agg(x, ','), '') FROM (
                SELECT 'slot' AS x FROM pg_replication_slots WHERE slot_name LIKE 'chash\_move\_%'
                UNION ALL SELECT 'publication' FROM pg_publication WHERE pubname LIKE 'chash\_move\_%'
                UNION ALL SELECT 'subscription' FROM pg_subscription WHERE subname LIKE 'chash\_move\_%') o})
	} qw(s1 s2);
}

sub run_mover
{
	my ($crash_at, @args) = @_;
	my ($out, $err) = ('', '');
	local $ENV{CHASH_MOVE_CRASH_AT} = $crash_at // '';
	@args = ('--online', '--directory', 'orgs', @args) unless grep { /^--(migration|blocking)$/ } @args;
	@args = grep { $_ ne '--blocking' } @args;
	IPC::Run::run([ 'chash_move', '--verbose', '--lease', '1', @args,
					$dir->connstr('postgres') ], '>', \$out, '2>', \$err);
	my $status = $? & 127 ? 'signal ' . ($? & 127) : $? >> 8;
	note "chash_move @args: $status\n$err";
	return ($status, $err);
}

my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'whale', 's2')});
my ($status) = run_mover('subscribed');
is($status, 'signal 9', 'the mover is killed once the subscription streams');
is($dir->safe_psql('postgres', "SELECT string_agg(kind || ':' || shard, ',' ORDER BY kind) FROM chash_replication_object WHERE migration = $m"),
	'publication:s1,slot:s1,subscription:s2', 'its publication, slot and subscription were recorded');
is(objects(), 's1:slot,publication s2:subscription', 'and are there');

# the step given back by hand once its lease has expired
sleep 2;
$dir->safe_psql('postgres', "SELECT chash_step_release($m, 1)");
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), 'pending', 'the step is given back');
my $err;
($status, $err) = run_mover(undef, '--max-steps', '0');
is($status, '0', 'a run that moves nothing exits 0');
like($err, qr/step 1: dropped the replication objects it had left on shards "s1" and "s2"/, 'it says what it dropped');
is(objects(), 's1: s2:', 'no slot, publication or subscription is left on the shards');
is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_replication_object WHERE migration = $m"), '0', 'their records are gone');

($status) = run_mover();
is($status, '0', 'a run moves the tenant');
is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', 'the migration is done');
is(objects(), 's1: s2:', 'nothing is left on the shards');
is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_replication_object'), '0', 'nor in the record');
is($shard{s2}->safe_psql('postgres', q{SELECT count(*) FROM accounts WHERE org_id = 'whale'}), '20000', 'the whale is on s2');
is($shard{s1}->safe_psql('postgres', q{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = 'whale'}), '0', 'and gone from s1');

# ---- a cancelled online batch ----
# The whale moves back online; the mover is killed once the subscription
# streams, and the migration is cancelled: its step keeps its lease, and
# its subscription on s1 goes on applying what s2 publishes of the whale.
# A new migration of the same tenant must not be claimed then: moved
# blocking, its deletion on s2 would reach s1 through that subscription
# and take the rows it had just copied.  It is refused, naming the
# cancelled migration; a mover of that one takes its copy off s1 and drops
# its objects; then the new one moves the whale with every row.
my $a = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'whale', 's1')});
($status) = run_mover('subscribed', '--online', '--migration', $a);
is($status, 'signal 9', 'cancelled batch: the mover is killed once the subscription streams');
$dir->safe_psql('postgres', "SELECT chash_migration_cancel($a)");
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $a")
	. ' ' . $dir->safe_psql('postgres', "SELECT count(*) FROM chash_step_lease WHERE migration = $a"),
	'cancelled 1', 'the step is cancelled and keeps its lease');
is(objects(), 's1:subscription s2:slot,publication', 'its objects are left streaming');
$shard{s2}->safe_psql('postgres', q{INSERT INTO accounts SELECT 'whale', i, 'late' FROM generate_series(20001, 20100) i});
my $b = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'whale', 's1')});
($status, $err) = run_mover(undef, '--blocking', '--migration', $b);
is($status, '1', 'the new migration is not moved while the cancelled one holds its step');
like($err, qr/migration $a of directory "orgs" still has steps in flight.*hint: Finish them first with chash_move --migration $a/s,
	'it names the cancelled migration and what to run');
is($shard{s2}->safe_psql('postgres', q{SELECT count(*) FROM accounts WHERE org_id = 'whale'}), '20100', 'every row is still on s2');
sleep 2;
($status, $err) = run_mover(undef, '--migration', $a);
is($status, '0', 'a mover of the cancelled migration finishes its step');
is(objects(), 's1: s2:', 'its objects are dropped');
is($shard{s1}->safe_psql('postgres', q{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = 'whale'}), '0',
	'and its copy is off s1');
($status) = run_mover(undef, '--blocking', '--migration', $b);
is($status, '0', 'then the new migration moves the whale');
is($shard{s1}->safe_psql('postgres', q{SELECT count(*) FROM accounts WHERE org_id = 'whale'}), '20100', 'with every row on s1');
is($shard{s2}->safe_psql('postgres', q{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = 'whale'}), '0',
	'and none left on s2');
is(objects(), 's1: s2:', 'nothing is left on the shards');

# A fast shutdown, as systemd's stop: one that hangs fails the test.
stop_fast($dir, map { $shard{$_} } sort keys %shard);

done_testing();
