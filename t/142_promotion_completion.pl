# The directory database is promoted between a move's completion on the
# old primary and its arrival on the standby (docs/shards.md, "Failover"):
# a directory primary with an asynchronous standby, two shards, a client
# writing through the directory with a ledger.  The mover is killed after
# copying a step (the standby has the fence), the standby stops, a rerun
# completes the step (the shards apply it, the standby does not) and is
# killed, the primary dies, the standby is promoted.  chash_move run
# against it stops at once, naming the disagreement (the shards ahead of
# the directory; then the step done on the shards, fenced in the
# directory), and deletes nothing on either side.  The documented
# recovery (chash_directory_reconcile, chash_shard_repoint, chash_move
# again) ends with every acknowledged write exactly once on the shard its
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

my $primary = new_node('dir_primary', logical => 1);
$primary->safe_psql('postgres', 'CREATE EXTENSION chash');
my $dirconn = publish_directory($primary);
my %shard = map { $_ => new_node($_, preload => 1) } qw(s1 s2);
$primary->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 16);
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
});
for my $name (sort keys %shard)
{
	my $c = $shard{$name}->connstr('postgres');
	$primary->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', '$name', server => \$\$$c\$\$)});
	$shard{$name}->safe_psql('postgres', qq{
        CREATE EXTENSION chash;
        CREATE TABLE accounts (org_id text, id bigint, payload text, PRIMARY KEY (org_id, id));
        SELECT chash_shard_join('orgs', '$name', '$dirconn');
    });
}
my $dir = $primary;		# the directory database the clients and the mover use
sub applied { shard_applied($dir, $_) or die $_->name . ' did not apply the directory' for values %shard }
applied();
$shard{$_}->safe_psql('postgres', qq{
    INSERT INTO accounts SELECT 'org-' || g, i, 'base'
      FROM generate_series(1, 100) g, generate_series(1, 5) i WHERE chash_route('orgs', 'org-' || g) = '$_'})
  for sort keys %shard;

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('dir_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

my @tenants = split /\n/, $primary->safe_psql('postgres',
	q{SELECT 'org-' || g FROM generate_series(1, 100) g WHERE chash_route('orgs', 'org-' || g) = 's1' LIMIT 4});
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
like($err, qr/error: shard "s[12]" is ahead of the directory database: its replica of directory "orgs" is at version $lost, the directory database at version $v0\n.*detail: The directory database lacks versions the shard applied.*\n.*hint: .*chash_directory_reconcile\(\)/,
	'naming the versions on each side and what to do');
unlike($err, qr/giving up after/, 'it is not retried');
ok($took < 10, sprintf('it stops at once (%.1f s)', $took));
is($version->(), $v0, 'it changed nothing in the directory (no claim)');
is($rows_state->(), $rows_before, 'and deleted nothing on the shards');

# The new primary makes a version of its own (a pin, which reconcile keeps):
# now at the shards' version number, it is not behind by number, but the step
# is done on the shards and fenced here.
$standby->safe_psql('postgres', qq{SELECT chash_pin('orgs', '$tenants[3]', 's1')});
is($version->(), $lost, 'the new primary re-used the lost version number');
($status, $err, $took) = mover();
is($status, 1, 'chash_move fails again');
like($err, qr/error: the directory database and shard "s[12]" disagree about step 1 of migration $m: the directory database says "fenced", the shard's replica says "done"\n.*detail: .*Nothing was deleted, and the steps were not given back\./,
	'naming the step and what each side says');
unlike($err, qr/verification failed|giving up after/, 'without a verification or a retry');
ok($took < 10, sprintf('at once (%.1f s)', $took));
is($version->(), $lost, 'the directory is unchanged');
is($rows_state->(), $rows_before, 'no row was deleted');

# ---- the documented recovery ----
my $reconciled = $standby->safe_psql('postgres',
	q{SELECT concat_ws(' | ', directory, version_before, version_after, reapplied) FROM chash_directory_reconcile()});
like($reconciled, qr/^orgs \| $lost \| \d+ \| 1$/, 'chash_directory_reconcile rolls the new primary forward, keeping its pin');
is($standby->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), 'done',
	'the step is done in the directory too');
my $newconn = 'host=' . $standby->host . ' port=' . $standby->port . ' dbname=postgres user=chash_replicator';
$shard{$_}->safe_psql('postgres', qq{SELECT chash_shard_repoint('orgs', '$newconn')}) for qw(s1 s2);
applied();
$ledger->write(20);
($status, $err) = mover();
is($status, 0, 'chash_move finishes the migration on the new primary');
is($standby->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', 'the migration is done');
applied();
$ledger->write(20);

# ---- the end state ----
$ledger->check('after the promotion between a completion and its arrival on the standby');
is($shard{s1}->safe_psql('postgres', qq{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = '$moving'}), '0',
	'the moved tenant has no row left on the source');
my $misplaced = 0;
$misplaced += $shard{$_}->safe_psql('postgres', qq{SELECT count(*) FROM accounts WHERE chash_route('orgs', org_id) <> '$_'})
  for qw(s1 s2);
is($misplaced, 0, 'every row is on the shard its tenant routes to');
is(join(' ', map { $shard{$_}->safe_psql('postgres', q{SELECT count(*) FROM accounts WHERE id <= 5}) } qw(s1 s2)),
	join(' ', map {
			my $s = $_;
			$standby->safe_psql('postgres',
				qq{SELECT count(*) * 5 FROM generate_series(1, 100) g WHERE chash_route('orgs', 'org-' || g) = '$s'})
		} qw(s1 s2)),
	'every loaded row exactly once');
my $dir_state = q{SELECT (SELECT version FROM chash_directory WHERE name = 'orgs') || ': '
    || (SELECT string_agg(tenant || ' ' || shard, ', ' ORDER BY tenant) FROM chash_override) || ' / '
    || (SELECT string_agg(migration || ':' || step || ' ' || state, ', ' ORDER BY migration, step) FROM chash_migration_step)};
my $want = $standby->safe_psql('postgres', $dir_state);
is($shard{$_}->safe_psql('postgres', $dir_state), $want, "$_: the replica equals the directory") for qw(s1 s2);
is($standby->safe_psql('postgres', q{SELECT count(*) || ' ' || count(*) FILTER (WHERE active) FROM pg_replication_slots}), '2 2',
	'the new primary has the shards\' two slots, both in use, and nothing else');
is(join(' ', map { $shard{$_}->safe_psql('postgres',
				q{SELECT (SELECT count(*) FROM pg_subscription) || '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_replication_slots)}) } qw(s1 s2)),
	'1/0/0 1/0/0', 'each shard has its directory subscription only');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'no lease is left');

done_testing();
