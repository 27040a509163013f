# chash_move (docs/chash_move.md): a directory database and shard
# databases joined to it (docs/shards.md); two registered tables, one with a
# composite primary key; a few thousand tenants and a pinned whale.  A third
# shard is added, the mover rebalances onto it and moves the whale; then
# every row is exactly once on the shard its tenant routes to.  A
# verification that must fail releases the step.  Then the mover is killed
# at different points and rerun, a shard restarts, and clients write all
# along: every acknowledged write is there exactly once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use IPC::Run;
use Time::HiRes qw(time usleep);
use JSON::PP qw(decode_json);

my $tenants = 3000;

my $dir = new_node('directory', logical => 1, conf => "max_replication_slots = 20\nmax_wal_senders = 20\n");
# preload: the statement guard (a stale UPDATE or DELETE that finds no row)
my %shard = map { $_ => new_node($_, preload => 1) } qw(s1 s2 s3);

# The tables on every shard: accounts with a composite key and the slot
# index; profiles keyed by the tenant alone, without the index (the mover
# says so once).
my $tables = q{
    CREATE EXTENSION chash;
    CREATE TABLE accounts (org_id text, id bigint, payload text, PRIMARY KEY (org_id, id));
    CREATE INDEX ON accounts (chash_tenant_slot(org_id, 64));
    CREATE TABLE profiles (org_id text PRIMARY KEY, name text, created date);
};
$_->safe_psql('postgres', $tables) for values %shard;

$dir->safe_psql('postgres', 'CREATE EXTENSION chash');
my $dirconn = publish_directory($dir);
$dir->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 64);
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
    SELECT chash_add_table('orgs', 'public.profiles', 'org_id');
    SELECT chash_pin('orgs', 'whale', 's1');
});
for my $name (qw(s1 s2))
{
	my $c = $shard{$name}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', '$name', server => \$\$$c\$\$)});
}

# Waits until the shard has applied the directory's current version.
sub wait_applied
{
	my ($node) = @_;
	shard_applied($dir, $node) or die $node->name . ' did not apply the directory';
}

for my $name (qw(s1 s2))
{
	$shard{$name}->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', '$name', '$dirconn')});
	wait_applied($shard{$name});
}

# The load: each shard gets the rows of the tenants that route to it.
my $load = qq{
    INSERT INTO accounts
    SELECT t, i, repeat('x', 10 + i % 30)
      FROM (SELECT 'org-' || g AS t FROM generate_series(1, $tenants) g) a, generate_series(1, 3) i
     WHERE chash_route('orgs', t) = current_setting('chash_test.shard');
    INSERT INTO profiles
    SELECT t, 'name of ' || t, date '2020-01-01' + g
      FROM (SELECT g, 'org-' || g AS t FROM generate_series(1, $tenants) g) a
     WHERE chash_route('orgs', t) = current_setting('chash_test.shard');
    INSERT INTO accounts
    SELECT 'whale', i, 'whale payload ' || i FROM generate_series(1, 2000) i
     WHERE chash_route('orgs', 'whale') = current_setting('chash_test.shard');
    INSERT INTO profiles SELECT 'whale', 'the whale', date '2019-12-31'
     WHERE chash_route('orgs', 'whale') = current_setting('chash_test.shard');
};
for my $name (qw(s1 s2))
{
	$shard{$name}->safe_psql('postgres', "SET chash_test.shard = '$name'; $load");
}
my $accounts = 3 * $tenants + 2000;
my $profiles = $tenants + 1;

# The third shard joins.
{
	my $c = $shard{s3}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_add_shard('orgs', 's3', server => \$\$$c\$\$)});
	$shard{s3}->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's3', '$dirconn')});
	wait_applied($_) for values %shard;
}

# Runs chash_move; returns (exit status, stderr).
sub run_mover
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'chash_move', '--verbose', @args, $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
	my $status = $? & 127 ? 'signal ' . ($? & 127) : $? >> 8;
	note "chash_move @args: exit $status\n$err";
	return ($status, $err);
}

# Every row on the shard its tenant routes to, exactly once, and the counts.
sub check_placement
{
	my ($name, $want_accounts, $want_profiles) = @_;
	wait_applied($_) for values %shard;
	my ($total_a, $total_p, $misplaced, %keys) = (0, 0, 0);
	for my $s (sort keys %shard)
	{
		my $node = $shard{$s};
		$misplaced += $node->safe_psql('postgres', qq{
            SELECT (SELECT count(*) FROM accounts WHERE chash_route('orgs', org_id) <> '$s')
                 + (SELECT count(*) FROM profiles WHERE chash_route('orgs', org_id) <> '$s')});
		$total_a += $node->safe_psql('postgres', 'SELECT count(*) FROM accounts');
		$total_p += $node->safe_psql('postgres', 'SELECT count(*) FROM profiles');
		$keys{$_}++ for split /\n/, $node->safe_psql('postgres', q{SELECT org_id || '/' || id FROM accounts});
	}
	is($misplaced, 0, "$name: no row on a shard that does not own its tenant");
	is($total_a, $want_accounts, "$name: accounts rows");
	is($total_p, $want_profiles, "$name: profiles rows");
	is(scalar(grep { $keys{$_} > 1 } keys %keys), 0, "$name: every accounts row exactly once");
}

# ---- a rebalance onto the new shard, and the whale moved ----
my $m1 = $dir->safe_psql('postgres', q{SELECT chash_migration_start('orgs')});
my $steps = $dir->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration = $m1");
ok($steps > 10, "the rebalance has $steps steps");
my ($rc, $err) = run_mover('--directory', 'orgs', '--jobs', '2', '--batch-steps', '5');
is($rc, 0, 'chash_move exits 0 when the rebalance is done');
my $said = () = $err =~ /table "public.profiles" on shard "s\d" has no index on chash_tenant_slot/g;
ok($said >= 1 && $said <= 3, 'the missing index is said once per shard');
unlike($err, qr/accounts" on shard "s\d" has no index/, 'the indexed table is not mentioned');
ok($err =~ /steps \d+-\d+ \(a batch of \d+\): \d+ slots s\d -> s3, \d+ rows/, 'the rebalance moved batches of slot steps');
my @sizes = $err =~ /\(a batch of (\d+)\)/g;
is(scalar(grep { $_ > 5 } @sizes), 0, 'no batch has more steps than --batch-steps');
ok(scalar(grep { $_ == 5 } @sizes) > 0, 'batches of --batch-steps steps (' . join(' ', @sizes) . ')');
is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m1"), 'done', 'the rebalance is done');
is($dir->safe_psql('postgres', q{SELECT count(*) FROM chash_plan_rebalance('orgs')}), '0', 'the plan is empty');
is($dir->safe_psql('postgres', q{SELECT chash_route('orgs', 'whale')}), 's1', 'the whale stayed pinned to s1');
is($shard{s1}->safe_psql('postgres', q{SELECT count(*) FROM accounts WHERE org_id = 'whale'}), '2000',
	'the whale\'s rows stayed with it (not moved with its slot)');
check_placement('after the rebalance', $accounts, $profiles);

my $m2 = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'whale', 's3')});
($rc, $err) = run_mover('--migration', $m2);
is($rc, 0, 'chash_move exits 0 when the whale has moved');
is($dir->safe_psql('postgres', q{SELECT chash_route('orgs', 'whale')}), 's3', 'the whale routes to s3');
is($shard{s3}->safe_psql('postgres', q{SELECT count(*) FROM accounts WHERE org_id = 'whale'}), '2000',
	'the whale\'s rows are on s3');
check_placement('after the whale moved', $accounts, $profiles);
is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'no lease is left');
for my $s (sort keys %shard)
{
	is($shard{$s}->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relpersistence = 't'}), '0',
		"no temporary table on $s");
}

# ---- verification that must fail: a row changed behind the mover's back ----
{
	my $from = $dir->safe_psql('postgres', q{SELECT chash_route('orgs', 'org-5')});
	my ($to) = grep { $_ ne $from } sort keys %shard;
	$shard{$to}->safe_psql('postgres', q{
        CREATE FUNCTION tamper() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.payload := NEW.payload || ' changed';
            RETURN NEW;
        END $$;
        CREATE TRIGGER tamper BEFORE INSERT ON accounts FOR EACH ROW
            WHEN (NEW.org_id = 'org-5' AND NEW.id = 2) EXECUTE FUNCTION tamper();
        -- a superuser mover writes as replication does: only such a trigger fires
        ALTER TABLE accounts ENABLE ALWAYS TRIGGER tamper;
    });
	my $m3 = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', 'org-5', '$to')});
	($rc, $err) = run_mover('--migration', $m3);
	is($rc, 1, 'a verification failure exits 1');
	like($err, qr/error: verification failed for step 1 of migration $m3: table "public.accounts" differs between shard "$from" and shard "$to"/,
		'it says which table differs where');
	is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m3"), 'pending',
		'the step is released, not completed');
	is($dir->safe_psql('postgres', q{SELECT chash_route('orgs', 'org-5')}), $from, 'the source still owns the tenant');
	is($shard{$to}->safe_psql('postgres', q{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = 'org-5'}), '0',
		'nothing is left on the target');
	is($shard{$from}->safe_psql('postgres', q{SELECT count(*) FROM accounts WHERE org_id = 'org-5'}), '3',
		'the rows are on the source');
	is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'the lease is gone');
	$shard{$to}->safe_psql('postgres', 'DROP TRIGGER tamper ON accounts');
	($rc, $err) = run_mover('--migration', $m3);
	is($rc, 0, 'without the change behind its back the move succeeds');
	is($dir->safe_psql('postgres', q{SELECT chash_route('orgs', 'org-5')}), $to, 'the tenant moved');
	check_placement('after the tenant moved', $accounts, $profiles);
}

# ---- a fourth shard, while clients write; the mover killed and rerun ----
#
# Two clients write straight to the shards, each write acknowledged or
# refused by the guard there: the fresh client routes every write through
# the directory database; the stale client routes from a
# chash_directory_snapshot taken before the migration (overrides, then the
# slot runs, as a client library would) and takes a new snapshot only when
# a shard refuses it as misrouted (SH001).  A fenced write (40001) is
# counted and not retried.  Updates and deletes fix the tenant in their
# WHERE clause, so on a shard the tenant has left they must be refused
# (the statement guard), never find no row.
$shard{s4} = new_node('s4', preload => 1);
$shard{s4}->safe_psql('postgres', $tables);
{
	my $c = $shard{s4}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_add_shard('orgs', 's4', server => \$\$$c\$\$)});
	$shard{s4}->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's4', '$dirconn')});
	wait_applied($_) for values %shard;
}

# The stale client's routing: the slot of each tenant (fixed at creation)
# and a snapshot of the directory.
my %tenant_slot = map { split /\|/ } split /\n/, $dir->safe_psql('postgres',
	qq{SELECT 'org-' || g || '|' || chash_tenant_slot('org-' || g, 64) FROM generate_series(1, $tenants) g});
my ($snapshot, $snapshots);
sub take_snapshot
{
	$snapshot = decode_json($dir->safe_psql('postgres', q{SELECT chash_directory_snapshot('orgs')}));
	$snapshots++;
}
sub snapshot_route
{
	my ($tenant) = @_;
	return $snapshot->{overrides}{$tenant} if exists $snapshot->{overrides}{$tenant};
	my $slot = $tenant_slot{$tenant};
	for my $run (@{ $snapshot->{slots} })
	{
		return $run->[2] if $slot >= $run->[0] && $slot <= $run->[1];
	}
	die "slot $slot of $tenant is in no run of the snapshot";
}
take_snapshot();
my $stale_version = $snapshot->{version};

my $m4 = $dir->safe_psql('postgres', q{SELECT chash_migration_start('orgs')});

my %ledger;		# "tenant/id" => payload, or undef once deleted
my %count = map { $_ => 0 } qw(acked fenced moved misrouted down);
my %next_id = (fresh => 1_000_000, stale => 2_000_000);
my $client = $dir->background_psql('postgres');

# One write on a shard: 'ok' with its output, 'moved' (SH001), 'fenced'
# (40001) or 'down' (the shard restarting: not acknowledged).
sub shard_write
{
	my ($route, $sql) = @_;
	return shard_write_on($shard{$route}, $route, $sql);
}

sub write_once
{
	my ($who) = @_;
	my $tenant = 'org-' . (1 + int(rand($tenants)));
	my @mine = grep { defined $ledger{$_} } keys %ledger;
	my $kind = @mine < 20 || rand() < 0.6 ? 'insert' : rand() < 0.6 ? 'update' : 'delete';
	my $key;
	if ($kind eq 'insert')
	{
		$key = "$tenant/" . $next_id{$who}++;
	}
	else
	{
		$key = $mine[ int(rand(@mine)) ];
		($tenant) = split m{/}, $key;
	}
	my (undef, $id) = split m{/}, $key;
	my $payload = "$who$count{acked}";
	my $sql = $kind eq 'insert' ? "INSERT INTO accounts VALUES ('$tenant', $id, '$payload') RETURNING 1"
	  : $kind eq 'update' ? "UPDATE accounts SET payload = '$payload' WHERE org_id = '$tenant' AND id = $id RETURNING 1"
	  : "DELETE FROM accounts WHERE org_id = '$tenant' AND id = $id RETURNING 1";
	my ($result, $out);
	for my $try (1, 2)
	{
		my $route = $who eq 'stale' ? snapshot_route($tenant)
		  : $client->query_safe("SELECT chash_route('orgs', '$tenant')");
		($result, $out) = shard_write($route, $sql);
		last unless $result eq 'moved' && $who eq 'stale';
		$count{misrouted}++;
		take_snapshot();
	}
	if ($result ne 'ok')
	{
		$count{$result}++;
		return;
	}
	if ($out ne '1')
	{
		fail("$kind of $key by the $who client found no row");
		return;
	}
	$ledger{$key} = $kind eq 'delete' ? undef : $payload;
	$count{acked}++;
}

# Starts chash_move in the background; returns the handle.
sub start_mover
{
	my ($crash_at) = @_;
	my ($out, $err) = ('', '');
	local $ENV{CHASH_MOVE_CRASH_AT} = $crash_at // '';
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--lease', '2', '--directory', 'orgs',
							  $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
	return { h => $h, err => \$err, started => time };
}

# Writes while the mover runs; kills it after $kill_after seconds if given,
# restarts $restart after a second if given.  Returns the exit status.
sub write_while_moving
{
	my ($mover, $kill_after, $restart) = @_;
	while ($mover->{h}->pumpable)
	{
		write_once($_) for qw(fresh stale);
		$mover->{h}->pump_nb;
		if ($restart && time - $mover->{started} > 0.5)
		{
			$shard{$restart}->restart;
			note "restarted $restart";
			undef $restart;
		}
		if ($kill_after && time - $mover->{started} > $kill_after)
		{
			$mover->{h}->signal('KILL');
			undef $kill_after;
		}
	}
	$mover->{h}->finish;
	my $rc = $mover->{h}->full_result;
	my $status = $rc & 127 ? 'signal ' . ($rc & 127) : $rc >> 8;
	note "chash_move: $status\n${$mover->{err}}";
	return $status;
}

is(write_while_moving(start_mover('copied')), 'signal 9', 'the mover is killed after copying a step');
is($dir->safe_psql('postgres', "SELECT string_agg(DISTINCT progress, ',') FROM chash_step_lease WHERE migration = $m4"), 'copied',
	'its leases record how far the batch got');
ok($dir->safe_psql('postgres', "SELECT count(*) FROM chash_step_lease WHERE migration = $m4") > 1,
	'the mover was killed inside a batch of several steps');
write_once($_) for map { qw(fresh stale) } 1 .. 10;
is(write_while_moving(start_mover('completed')), 'signal 9', 'a rerun is killed after completing a step');
write_once($_) for map { qw(fresh stale) } 1 .. 10;
my $status = write_while_moving(start_mover(), 1, 's2');
note "third run (restart of s2, killed after 1 s): $status";
my $runs = 0;
do { $status = write_while_moving(start_mover()); $runs++ } until $status eq '0' || $runs >= 10;
is($status, '0', "reruns take over and finish the migration ($runs runs)");
write_once($_) for map { qw(fresh stale) } 1 .. 10;
is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m4"), 'done', 'the migration is done');
is($dir->safe_psql('postgres', q{SELECT count(*) FROM chash_plan_rebalance('orgs')}), '0', 'the plan is empty');
is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'no lease is left');
ok($count{acked} > 50, "the clients wrote all along ($count{acked} acknowledged writes, "
	  . "$count{fenced} refused while fenced, $count{moved} sent to a shard that had not applied the move yet, "
	  . "$count{down} while a shard restarted)");
ok($count{misrouted} > 0 && $snapshots > 1,
	"the stale client was refused $count{misrouted} times and took $snapshots snapshots (the first at version $stale_version)");
$client->quit;

# Every acknowledged write exactly once, on the shard its tenant routes to.
{
	wait_applied($_) for values %shard;
	my %found;
	for my $s (sort keys %shard)
	{
		for my $row (split /\n/, $shard{$s}->safe_psql('postgres',
				q{SELECT org_id || '/' || id || ' ' || payload || ' ' || chash_route('orgs', org_id) FROM accounts WHERE id >= 1000000}))
		{
			my ($key, $payload, $route) = split / /, $row;
			push @{ $found{$key} }, "$s $payload $route";
		}
	}
	my ($lost, $twice, $stale, $misplaced) = (0, 0, 0, 0);
	for my $key (keys %ledger)
	{
		my $rows = $found{$key} // [];
		if (!defined $ledger{$key})
		{
			$stale++ if @$rows;
			next;
		}
		if (!@$rows) { $lost++; next; }
		$twice++ if @$rows > 1;
		my ($s, $payload, $route) = split / /, $rows->[0];
		$stale++ if $payload ne $ledger{$key};
		$misplaced++ if $s ne $route;
	}
	$stale += grep { !exists $ledger{$_} } keys %found;
	is($lost, 0, 'no acknowledged write is lost');
	is($twice, 0, 'no row is there twice');
	is($stale, 0, 'every row has its last acknowledged payload, deleted rows are gone');
	is($misplaced, 0, 'every written row is on the shard its tenant routes to');
	check_placement('after the fourth shard', $accounts + scalar(grep { defined } values %ledger), $profiles);
}

done_testing();
