# A move's target shard is replaced by its asynchronous standby mid-move
# (docs/shards.md, "Failover"), a client writing through the directory
# with a ledger.  The standby stopped before the mover copied, so the
# promoted shard lacks the copy the directory records as made, and its
# replica of the directory lacks changes its old primary confirmed.  The
# documented recovery (re-point the promoted shard on its own directory
# server, set chash_shard.server, rerun chash_move) keeps every row: the
# rerun's verification finds the copy missing and gives the step back
# with the rows on the source, the next run moves it.  The old primary,
# restarted, cannot take the directory slot from the promoted shard and
# refuses writes (SH003), saying why.
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

my $conf = "chash.replica_max_silence = 10\nwal_receiver_timeout = '4s'";
my ($dir, $dirconn, $shards) = FailoverLedger::setup(shard => { preload => 1, conf => $conf }, s2 => { logical => 1 });
my %shard = %$shards;
create_sql_helpers(values %shard);
my $loaded = FailoverLedger::load($dir, \%shard, 100);
# The client writes tenants of s1 only: no write acknowledged on s2 can be
# lost with its asynchronous standby (that loss would be the application's).
my @tenants = FailoverLedger::tenants_of($dir, 's1', 3);
my $moving = $tenants[0];
my $ledger = FailoverLedger->new(dir => $dir, shards => \%shard, tenants => \@tenants);
$ledger->write(20);

$shard{s2}->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('s2_standby');
$standby->init_from_backup($shard{s2}, 'base', has_streaming => 1);
$standby->start;
$shard{s2}->wait_for_catchup($standby);
$standby->stop;

sub mover
{
	my ($crash_at) = @_;
	my ($out, $err) = ('', '');
	local $ENV{CHASH_MOVE_CRASH_AT} = $crash_at // '';
	IPC::Run::run([ 'chash_move', '--verbose', '--lease', '2', '--directory', 'orgs', $dir->connstr('postgres') ],
		'>', \$out, '2>', \$err);
	my $status = $? & 127 ? 'signal ' . ($? & 127) : $? >> 8;
	note "chash_move: $status\n$err";
	return ($status, $err);
}
my $count = sub {
	my ($node) = @_;
	$node->safe_psql('postgres', qq{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = '$moving'});
};

my $m = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$moving', 's2')});
is((mover('copied'))[0], 'signal 9', 'the mover is killed after copying the step to s2');
my $on_source = $count->($shard{s1});
is($count->($shard{s2}), $on_source, "s2 has the copy ($on_source rows)");
$ledger->write(10);

# ---- s2 dies; its standby, which has neither the copy nor the fence, is promoted ----
$shard{s2}->stop('immediate');
$standby->start;
$standby->promote;
my $old_s2 = $shard{s2};
$shard{s2} = $standby;
is($count->($standby), '0', 'the promoted standby lacks the copy');

# Its replica may lack directory changes the old primary confirmed: it is
# re-pointed on the same directory server (docs/shards.md, "Failover").
my $sub = $standby->safe_psql('postgres', 'SELECT subscription FROM chash_shard_member');
$standby->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$sub" DISABLE});
ok($dir->poll_query_until('postgres', qq{SELECT NOT active FROM pg_replication_slots WHERE slot_name = '$sub'}),
	'the slot is free');
$dir->safe_psql('postgres', qq{SELECT pg_drop_replication_slot('$sub')});
$standby->safe_psql('postgres', qq{SELECT chash_shard_repoint('orgs', '$dirconn')});
my $c = $standby->connstr('postgres');
$dir->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', 's2', server => \$\$$c\$\$)});
$ledger->applied;
is($standby->safe_psql('postgres', q{SELECT concat_ws(' | ', streaming, refusal IS NULL, synced, guarded_tables) FROM chash_shard_status}),
	't | t | t | {public.accounts}', 'the promoted shard streams, is vouched for and guarded');
$ledger->write(10);

# ---- the rerun finds the copy missing: the rows stay on the source ----
my ($status, $err) = mover();
is($status, 1, 'the rerun stops');
like($err, qr/error: verification failed for step 1 of migration $m: table "public.accounts" differs between shard "s1" and shard "s2"\n.*detail: The source has $on_source rows \(checksum -?\d+\), the target 0 rows/,
	'its verification finds the copy missing on the promoted target');
is($count->($shard{s1}), $on_source, 'every row of the tenant is still on the source');
is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), 'pending', 'the step was given back');
($status, $err) = mover();
is($status, 0, 'the next run moves the step');
is($count->($standby), $on_source, 'to the promoted shard');
$ledger->applied;
$ledger->write(20);

# ---- the old primary comes back ----
$old_s2->start;
ok($old_s2->poll_query_until('postgres', q{SELECT refusal IS NOT NULL FROM chash_shard_status}),
	'the restarted old primary cannot vouch for its replica');
like($old_s2->safe_psql('postgres', qq{SELECT message_of(\$\$INSERT INTO accounts VALUES ('$moving', 1000, 'x')\$\$)}),
	qr/^SH003: shard "s2" cannot vouch for tenant "\Q$moving\E" of directory "orgs" \/ (No apply worker of subscription "\Q$sub\E" is running|Subscription "\Q$sub\E" has received nothing)/,
	'and refuses a write of the tenant it had (SH003), saying why');
like(slurp_file($old_s2->logfile), qr/replication slot "\Q$sub\E" is active for PID \d+/,
	'its subscription cannot take the slot: the promoted shard holds it');
ok($standby->poll_query_until('postgres', q{SELECT streaming AND refusal IS NULL FROM chash_shard_status}),
	'the promoted shard keeps streaming');
$dir->safe_psql('postgres', qq{SELECT chash_pin('orgs', 'late', 's2')});
$ledger->applied;
$ledger->write(10);
$old_s2->stop;

# ---- the end state ----
$ledger->end_state('the target promoted mid-move', $loaded);

done_testing();
