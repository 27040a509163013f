# An online background rebalance (chash.rebalance_online = on,
# docs/shards.md, "Background rebalancing"): while a rebalance onto a third
# shard moves batches by logical replication, a client writes one row at a
# time to the tenants that move, routing through the directory and
# retrying a refused write.  After: every acknowledged write exactly once,
# with its last payload, on its tenant's shard; no replication object left
# on any server; and the client's longest refusal (from a write's first
# refusal to its acknowledgement) reported and bounded.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use Time::HiRes qw(time usleep);

my $slots = 256;
my $tenants = 400;
my $replication = "max_replication_slots = 16\nmax_wal_senders = 16\n"
  . "max_logical_replication_workers = 8\nmax_worker_processes = 16\n";
my $dir = new_node('directory', logical => 1, preload => 1, conf => $replication . qq{
chash.rebalance_online = on
chash.rebalance_batch_rows = 300
chash.rebalance_lease = 5
});
my %shard = map { $_ => new_node($_, logical => 1, preload => 1, conf => $replication) } qw(s1 s2 s3);
my $dirconn = accounts_directory($dir, \%shard, on => [qw(s1 s2)], slots => $slots, index => 1,
	join => 1);
for my $name (qw(s1 s2))
{
	$shard{$name}->safe_psql('postgres', qq{
        INSERT INTO accounts SELECT 'org-' || g, i, 'seed'
          FROM generate_series(1, $tenants) g, generate_series(1, 100) i
         WHERE chash_route('orgs', 'org-' || g) = '$name'});
}
my $seeded = 100 * $tenants;
{
	my $c = $shard{s3}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_add_shard('orgs', 's3', server => \$\$$c\$\$)});
	$shard{s3}->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's3', '$dirconn')});
}
sub wait_applied { shard_applied($dir, $shard{$_}) or die "$_ did not apply the directory" for sort keys %shard }
wait_applied();

sub replication_objects
{
	join "\n", map {
		my $n = $_;
		$n->name . ': ' . $n->safe_psql('postgres', q{
            SELECT coalesce((SELECT string_agg(slot_name, ',' ORDER BY slot_name) FROM pg_replication_slots), '') || ' / '
                || coalesce((SELECT string_agg(pubname, ',' ORDER BY pubname) FROM pg_publication), '') || ' / '
                || coalesce((SELECT string_agg(subname, ',' ORDER BY subname) FROM pg_subscription), '')})
	} ($dir, map { $shard{$_} } sort keys %shard);
}
my $objects_before = replication_objects();

# The tenants the rebalance moves, from the plan it will carry out.
my @moving = split /\n/, $dir->safe_psql('postgres', qq{
    SELECT t FROM (SELECT 'org-' || g AS t FROM generate_series(1, $tenants) g) a
     WHERE chash_tenant_slot(t, $slots) IN (SELECT slot FROM chash_plan_rebalance('orgs'))});
cmp_ok(scalar(@moving), '>', 50, scalar(@moving) . ' tenants move');

# ---- the client ----
my %ledger;    # "tenant/id" => payload
my ($acked, $refused, $rerouted, $longest) = (0, 0, 0, 0);
my $next_id = 1_000_000;

# One write, routed and retried until acknowledged; returns the time it was refused for.
sub write_one
{
	my ($tenant, $id, $sql, $payload) = @_;
	my $first_refusal;
	for (my $try = 0;; $try++)
	{
		die "a write of $tenant was refused 2000 times" if $try > 2000;
		my $route = $dir->safe_psql('postgres', "SELECT chash_route('orgs', '$tenant')");
		my ($out, $err) = ('', '');
		my $rc = $shard{$route}->psql('postgres', "\\set VERBOSITY verbose\n$sql", stdout => \$out, stderr => \$err);
		if ($rc == 0)
		{
			die "the write of $tenant/$id found no row" if $out ne '1';
			$ledger{"$tenant/$id"} = $payload;
			$acked++;
			my $waited = defined $first_refusal ? time - $first_refusal : 0;
			$longest = $waited if $waited > $longest;
			return;
		}
		$first_refusal //= time;
		if ($err =~ /ERROR:  40001:/) { $refused++; usleep(5_000); next; }
		if ($err =~ /ERROR:  SH001:/) { $rerouted++; next; }
		die "write on $route failed: $err";
	}
}

sub write_once
{
	my $tenant = $moving[ int(rand(@moving)) ];
	my @mine = grep { m{^\Q$tenant\E/} } keys %ledger;
	my $payload = "w$acked";
	if (@mine && rand() < 0.4)
	{
		my (undef, $id) = split m{/}, $mine[ int(rand(@mine)) ];
		write_one($tenant, $id, "UPDATE accounts SET payload = '$payload' WHERE org_id = '$tenant' AND id = $id RETURNING 1", $payload);
	}
	else
	{
		my $id = $next_id++;
		write_one($tenant, $id, "INSERT INTO accounts VALUES ('$tenant', $id, '$payload') RETURNING 1", $payload);
	}
}

my $m = $dir->safe_psql('postgres', q{SELECT chash_rebalance_start('orgs', max_parallel => 2)});
my $state = '';
my $start = time;
while (time - $start < 300)
{
	write_once() for 1 .. 3;
	$state = $dir->safe_psql('postgres', q{SELECT state FROM chash_rebalance_status WHERE directory = 'orgs'});
	last if $state !~ /^(running|stopping)$/;
}
is($state, 'done', 'the online rebalance finishes while the client writes');
write_once() for 1 .. 10;
note sprintf('%d writes acknowledged, %d refusals (40001), %d re-routes (SH001); the longest refusal %.3f s',
	$acked, $refused, $rerouted, $longest);
cmp_ok($acked, '>', 50, "the client wrote all along ($acked writes)");
ok($shard{s3}->log_contains(qr/apply worker for subscription "chash_move_/), 'the batches moved online (by subscriptions on s3)');
is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration = $m AND state <> 'done'"), '0',
	'every step is done');
ok($longest < 5, sprintf('the client\'s longest refusal is %.3f s', $longest));

# every acknowledged write exactly once, with its last payload, on its tenant's shard
wait_applied();
my ($found, $seed, $misplaced_seed) = accounts_rows(\%shard);
my %found = %$found;
my ($lost, $twice, $stale, $misplaced) = (0, 0, 0, 0);
for my $key (keys %ledger)
{
	my $rows = $found{$key} // [];
	if (!@$rows) { $lost++; next; }
	$twice++ if @$rows > 1;
	my ($s, $payload, $route) = @{ $rows->[0] };
	$stale++ if $payload ne $ledger{$key};
	$misplaced++ if $s ne $route;
}
my $unacked = grep { !exists $ledger{$_} } keys %found;
is($lost, 0, 'no acknowledged write is lost');
is($twice, 0, 'no written row is there twice');
is($stale, 0, 'every row has its last acknowledged payload');
is($unacked, 0, 'no row that was never acknowledged is there');
is($misplaced, 0, 'every written row is on its tenant\'s shard');
is($seed, $seeded, 'the seed rows are there exactly once');
is($misplaced_seed, 0, 'every seed row is on its tenant\'s shard');
cmp_ok($shard{s3}->safe_psql('postgres', 'SELECT count(*) FROM accounts'), '>', 0, 's3 has its rows');
is(replication_objects(), $objects_before, 'no replication object is left on any server');
is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_replication_object'), '0', 'and none is recorded');


# A fast shutdown, as systemd's stop: one that hangs fails the test.
stop_fast($dir, map { $shard{$_} } sort keys %shard);

done_testing();
