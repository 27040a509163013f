# A move's source shard is replaced by its synchronous standby while
# chash_move --online streams a step from it (docs/shards.md, "Failover"):
# a whale moving online from s1, a client writing through the directory
# with a ledger.  s1 dies while the mover's subscription streams; its
# standby is promoted and chash_shard.server set to it; a rerun takes the
# step over, drops what the dead run left (the slot died with s1) and
# moves the whale from the promoted shard.  Every acknowledged write ends
# exactly once on the shard its tenant routes to, no replication object
# of the mover is left, the replicas equal the directory.
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
my $dir = new_node('directory', logical => 1, conf => $replication);
$dir->safe_psql('postgres', 'CREATE EXTENSION chash');
my $dirconn = publish_directory($dir);
my %shard = map { $_ => new_node($_, logical => 1, conf => $replication . "wal_receiver_timeout = '4s'") } qw(s1 s2);
$dir->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 16);
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
    SELECT chash_pin('orgs', 'whale', 's1');
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
$shard{s1}->safe_psql('postgres', q{INSERT INTO accounts SELECT 'whale', i, repeat('w', 100) FROM generate_series(1, 200000) i});
my @tenants = ('whale', split /\n/, $dir->safe_psql('postgres',
		q{SELECT 'org-' || g FROM generate_series(1, 100) g WHERE chash_route('orgs', 'org-' || g) = 's1' LIMIT 2}));
my $ledger = FailoverLedger->new(dir => $dir, shards => \%shard, tenants => \@tenants);
$ledger->write(20);

$shard{s1}->append_conf('postgresql.conf', "synchronous_standby_names = '*'");
$shard{s1}->reload;
$shard{s1}->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('s1_standby');
$standby->init_from_backup($shard{s1}, 'base', has_streaming => 1);
$standby->start;
$shard{s1}->wait_for_catchup($standby);

sub start_mover
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'chash_move', '--online', '--verbose', '--lease', '3', '--directory', 'orgs', $dir->connstr('postgres') ],
		'>', \$out, '2>', \$err);
	return { h => $h, err => \$err };
}



my $movers = q{SELECT count(*) FROM pg_subscription WHERE subname LIKE 'chash_move%'};
my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'whale', 's2')});
my $mover = start_mover();
ok($ledger->write_until($mover, sub { $shard{s2}->safe_psql('postgres', $movers) > 0 }), 'the mover streams the whale from s1 to s2');
$ledger->write(10);
$shard{s1}->stop('immediate');
$standby->promote;
# It has no standby of its own yet: its commits must not wait for one.
$standby->safe_psql('postgres', q{ALTER SYSTEM SET synchronous_standby_names = ''; SELECT pg_reload_conf()});
$shard{s1} = $standby;
my $c = $standby->connstr('postgres');
$dir->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', 's1', server => \$\$$c\$\$)});
$mover->{h}->signal('TERM');
FailoverLedger::mover_exit($mover);
ok($standby->poll_query_until('postgres', q{SELECT streaming AND refusal IS NULL FROM chash_shard_status}),
	'the promoted shard streams the directory: its subscription took the slot over');
applied();
$ledger->write(10);
$mover = start_mover();
ok($ledger->write_until($mover, sub { !$mover->{h}->pumpable }), 'a rerun against the promoted source');
is(FailoverLedger::mover_exit($mover), 0, 'moves the whale');
is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', 'the migration is done');
applied();
$ledger->write(20);

$ledger->check('after the source was promoted mid-online stream');
is(join(' ', map { $shard{$_}->safe_psql('postgres', q{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = 'whale' AND id <= 200000}) } qw(s1 s2)),
	'0 200000', 'the whale is on s2 only, every row of it');
my $misplaced = 0;
$misplaced += $shard{$_}->safe_psql('postgres', qq{SELECT count(*) FROM accounts WHERE chash_route('orgs', org_id) <> '$_'})
  for qw(s1 s2);
is($misplaced, 0, 'every row is on the shard its tenant routes to');
my $state = q{SELECT (SELECT version FROM chash_directory WHERE name = 'orgs') || ': '
    || (SELECT string_agg(tenant || ' ' || shard, ', ' ORDER BY tenant) FROM chash_override) || ' / '
    || (SELECT string_agg(migration || ':' || step || ' ' || state, ', ' ORDER BY migration, step) FROM chash_migration_step)};
my $want = $dir->safe_psql('postgres', $state);
is($shard{$_}->safe_psql('postgres', $state), $want, "${_}'s replica equals the directory") for qw(s1 s2);
is($dir->safe_psql('postgres', q{SELECT count(*) || ' ' || count(*) FILTER (WHERE active) FROM pg_replication_slots}), '2 2',
	'the directory database has the shards\' two slots in use, and no other');
is(join(' ', map { $shard{$_}->safe_psql('postgres',
				q{SELECT (SELECT count(*) FROM pg_subscription) || '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_replication_slots)}) } qw(s1 s2)),
	'1/0/0 1/0/0', 'each shard has its directory subscription only: no replication object of the mover is left');
is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'no lease is left');

done_testing();
