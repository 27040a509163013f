# The directory database is promoted while a move runs (docs/shards.md,
# "Failover"), a client writing through the directory with a ledger:
#  - before a fence, to a caught-up standby: the shards still follow the
#    dead server, so the mover's fence never reaches the source; the mover
#    says so within --fence-timeout and gives the step back, SIGTERM ends
#    it; chash_shard_repoint and a rerun finish the move;
#  - mid-copy, to a standby that missed the claim and the fence the shards
#    applied: chash_directory_reconcile takes them from the shards, the
#    re-pointed shards follow, the step the old primary's lease held is
#    released and a rerun finishes it.
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

my $dir = new_node('dir1', logical => 1);
$dir->safe_psql('postgres', 'CREATE EXTENSION chash');
my $dirconn = publish_directory($dir);
# 10 s of silence: the directory database is gone (docs/shards.md, "Failover")
my %shard = map {
	$_ => new_node($_, preload => 1, conf => "chash.replica_max_silence = 10\nwal_receiver_timeout = '4s'")
} qw(s1 s2);
$dir->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 16);
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
});
for my $name (sort keys %shard)
{
	my $c = $shard{$name}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', '$name', server => \$\$$c\$\$)});
	$shard{$name}->safe_psql('postgres', qq{
        CREATE EXTENSION chash;
        CREATE TABLE accounts (org_id text, id bigint, payload text, PRIMARY KEY (org_id, id));
        SELECT chash_shard_join('orgs', '$name', '$dirconn');
    });
}
sub applied { shard_applied($dir, $_) or die $_->name . ' did not apply the directory' for values %shard }
applied();
my @tenants = split /\n/, $dir->safe_psql('postgres',
	q{SELECT 'org-' || g FROM generate_series(1, 100) g WHERE chash_route('orgs', 'org-' || g) = 's1' LIMIT 3});
# The second moving tenant is big, so that its copy takes a while.
$shard{$_}->safe_psql('postgres', qq{
    INSERT INTO accounts SELECT 'org-' || g, i, 'base'
      FROM generate_series(1, 100) g, generate_series(1, 5) i WHERE chash_route('orgs', 'org-' || g) = '$_';
    INSERT INTO accounts SELECT '$tenants[1]', i, repeat('x', 200) FROM generate_series(6, 300000) i WHERE '$_' = 's1'})
  for sort keys %shard;
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
	applied();
	$ledger->write(10);
	$ledger->check($what);
	my $misplaced = 0;
	$misplaced += $shard{$_}->safe_psql('postgres', qq{SELECT count(*) FROM accounts WHERE chash_route('orgs', org_id) <> '$_'})
	  for qw(s1 s2);
	is($misplaced, 0, "$what: every row is on the shard its tenant routes to");
	is($shard{s1}->safe_psql('postgres', 'SELECT count(*) FROM accounts WHERE id < 1000000')
		  + $shard{s2}->safe_psql('postgres', 'SELECT count(*) FROM accounts WHERE id < 1000000'),
		$loaded, "$what: every loaded row exactly once");
	my $state = q{SELECT (SELECT version FROM chash_directory WHERE name = 'orgs') || ': '
        || (SELECT string_agg(tenant || ' ' || shard, ', ' ORDER BY tenant) FROM chash_override) || ' / '
        || (SELECT string_agg(migration || ':' || step || ' ' || state, ', ' ORDER BY migration, step) FROM chash_migration_step)};
	my $want = $dir->safe_psql('postgres', $state);
	is($shard{$_}->safe_psql('postgres', $state), $want, "$what: ${_}'s replica equals the directory") for qw(s1 s2);
	is($dir->safe_psql('postgres', q{SELECT count(*) || ' ' || count(*) FILTER (WHERE active) FROM pg_replication_slots
                                      WHERE slot_type = 'logical'}),
		'2 2', "$what: the directory database has the shards' two slots in use, and no other");
	is(join(' ', map { $shard{$_}->safe_psql('postgres',
					q{SELECT (SELECT count(*) FROM pg_subscription) || '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_replication_slots)}) } qw(s1 s2)),
		'1/0/0 1/0/0', "$what: each shard has its directory subscription only");
	is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', "$what: no lease is left");
	return;
}

# ---- before a fence, to a caught-up standby ----
my $standby = new_standby();
my $m1 = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$tenants[0]', 's2')});
$dir->wait_for_catchup($standby);
my $newconn = promote($standby);
$ledger->write(10);
my $mover = start_mover('--fence-timeout', '3');
ok($ledger->write_until($mover, sub { ${ $mover->{err} } =~ /did not apply the fence/ }),
	'the mover on the promoted directory does not wait for the fence without bound');
like(${ $mover->{err} }, qr/error: shard "s1" did not apply the fence of step 1 of migration $m1 within 3 s \(--fence-timeout\)\n.*detail: Its replica of directory "orgs" is at version \d+, the directory database at version \d+\.( No apply worker of subscription "chash_\d+_\d+" is running\.| Subscription "chash_\d+_\d+" has received nothing from the directory database)?/,
	'it says what the shard lacks');
like(${ $mover->{err} }, qr/hint: .*chash_shard_repoint\(\)/, 'and names the re-point');
$mover->{h}->signal('TERM');
is(FailoverLedger::mover_exit($mover), 1, 'SIGTERM ends it');
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m1"), 'pending', 'the step was given back');
is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_directory_reconcile()'), '0', 'a caught-up standby has nothing to reconcile');
$shard{$_}->safe_psql('postgres', qq{SELECT chash_shard_repoint('orgs', '$newconn')}) for qw(s1 s2);
applied();
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
applied();
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

done_testing();
