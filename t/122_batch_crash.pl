# Crash safety of batches (docs/shards.md, "Batches"): chash_move is
# killed (SIGKILL) again and again inside batches of several steps, at
# every point of a batch (CHASH_MOVE_CRASH_AT: in the middle of a COPY,
# fenced, copied, completed, the source's rows deleted, and online with
# the subscription streaming) and at random moments, while a client
# writes one row at a time through the guard and keeps a ledger of the
# writes the shards acknowledged; reruns then take over and finish.  For
# blocking batches (s3 is added) and online ones (s1 is drained), and a
# revert of a migration killed in the middle of a batch.  After each:
# every acknowledged write exactly once, with its last payload; every row
# (the initial ones too) exactly once, on its tenant's shard; no lease,
# no decoding filter and no replication object of the mover (slot,
# publication, subscription) left on any server.
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

my $tenants = 400;
my $per_tenant = 25;
my $conf = "max_replication_slots = 20\nmax_wal_senders = 20\n"
  . "max_logical_replication_workers = 8\nmax_worker_processes = 16\n";

my $dir = new_node('directory', logical => 1, conf => $conf);
my %shard = map { $_ => new_node($_, logical => 1, preload => 1, conf => $conf) } qw(s1 s2 s3);
$_->safe_psql('postgres', q{
    CREATE EXTENSION chash;
    CREATE TABLE accounts (org_id text, id bigint, payload text, PRIMARY KEY (org_id, id));
    CREATE INDEX ON accounts (chash_tenant_slot(org_id, 64));
}) for values %shard;
$dir->safe_psql('postgres', 'CREATE EXTENSION chash');
my $dirconn = publish_directory($dir);
$dir->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 64);
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
});
join_shards($dir, $dirconn, 'orgs', { map { $_ => $shard{$_} } qw(s1 s2) });
shard_applied($dir, $shard{$_}) or die "$_ did not apply the directory" for qw(s1 s2);
for my $name (qw(s1 s2))
{
	$shard{$name}->safe_psql('postgres', qq{
        INSERT INTO accounts SELECT t, i, 'initial'
          FROM (SELECT 'org-' || g AS t FROM generate_series(1, $tenants) g) a, generate_series(1, $per_tenant) i
         WHERE chash_route('orgs', t) = '$name';
        ANALYZE accounts;
    });
}
{
	my $c = $shard{s3}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_add_shard('orgs', 's3', server => \$\$$c\$\$)});
	$shard{s3}->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's3', '$dirconn')});
	shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
}

my $ledger = FailoverLedger->new(dir => $dir, shards => \%shard, tenants => [ map { "org-$_" } 1 .. $tenants ]);
my ($kills, $inside) = (0, 0);

# One run of chash_move while the client writes; killed at $point
# (CHASH_MOVE_CRASH_AT) or, with $delay, after that many seconds.
sub run_mover
{
	my ($args, $point, $delay) = @_;
	local $ENV{CHASH_MOVE_CRASH_AT} = $point // '';
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--lease', '2', @$args, $dir->connstr('postgres') ],
		'>', \$out, '2>', \$err);
	my $m = { h => $h, err => \$err };
	my $start = time;
	$ledger->write_until($m, sub {
		return 1 if !$h->pumpable;
		if (defined $delay && time - $start > $delay)
		{
			$h->signal('KILL');
			return 1;
		}
		return 0;
	}, 180);
	return FailoverLedger::mover_exit($m);
}

# Kills a run at each point, then reruns until the migration is done.
sub kill_and_finish
{
	my ($what, $m, $args, @points) = @_;
	my @runs;
	for my $point (@points)
	{
		my $random = $point eq 'random';
		my $status = run_mover($args, $random ? undef : $point, $random ? 0.3 + rand(1.5) : undef);
		push @runs, "$point: $status";
		last if $status eq '0';
		# the leases of the batch in flight: more than one step held
		my $held = $dir->safe_psql('postgres', "SELECT count(*) FROM chash_step_lease WHERE migration = $m");
		$kills++;
		$inside++ if $held > 1;
		$ledger->write(10);
	}
	my ($status, $reruns) = ('', 0);
	do { $status = run_mover($args); $reruns++ } until $status eq '0' || $reruns >= 10;
	note "$what: " . join(', ', @runs) . "; $reruns reruns";
	is($status, '0', "$what: reruns take over and finish ($reruns reruns after " . join(', ', @runs) . ')');
	is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', "$what: the migration is done");
	$ledger->write(20);
	check($what);
}

# Every row exactly once on its tenant's shard: the initial ones, and the
# client's acknowledged writes with their last payload; nothing of the
# mover left.
sub check
{
	my ($what) = @_;
	shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
	my (%found, $initial);
	for my $s (sort keys %shard)
	{
		for my $row (split /\n/, $shard{$s}->safe_psql('postgres', q{
                SET chash.bypass_guard = on;
                SELECT org_id || '/' || id || ' ' || payload || ' ' || chash_route('orgs', org_id) FROM accounts}))
		{
			my ($key, $payload, $route) = split / /, $row;
			push @{ $found{$key} }, [ $s, $payload, $route ];
		}
	}
	my ($lost, $twice, $stale, $misplaced, $unknown) = (0, 0, 0, 0, 0);
	for my $key (keys %found)
	{
		my $rows = $found{$key};
		my (undef, $id) = split m{/}, $key;
		$twice++ if @$rows > 1;
		$misplaced++ if grep { $_->[0] ne $_->[2] } @$rows;
		if ($id >= 1_000_000)
		{
			$unknown++ if !exists $ledger->{ledger}{$key};
			$stale++ if exists $ledger->{ledger}{$key} && $rows->[0][1] ne $ledger->{ledger}{$key};
		}
		else
		{
			$initial++;
			$stale++ if $rows->[0][1] ne 'initial';
		}
	}
	for my $key (keys %{ $ledger->{ledger} })
	{
		next if $found{$key};
		$lost++;
		diag("lost: $key");
	}
	$lost += $tenants * $per_tenant - ($initial // 0);
	is("$lost $twice $stale $misplaced $unknown", '0 0 0 0 0',
		"$what: every row exactly once, with its last payload, on its tenant's shard (lost, twice, stale, misplaced, "
		  . 'unacknowledged; ' . $ledger->acknowledged . ' acknowledged writes: ' . $ledger->counts . ')');
	is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', "$what: no lease is left");
	my $left = join ', ', grep { $_ ne '' } map {
		my $n = $_;
		map { $n->name . " $_" } grep { $_ ne '' } split /\n/, $n->safe_psql('postgres', q{
            SELECT 'publication ' || pubname FROM pg_publication WHERE pubname LIKE 'chash\_move\_%'
            UNION ALL SELECT 'subscription ' || subname FROM pg_subscription WHERE subname LIKE 'chash\_move\_%'
            UNION ALL SELECT 'slot ' || slot_name FROM pg_replication_slots WHERE slot_name LIKE 'chash\_move\_%'
                                                                       OR slot_name LIKE 'pg\_%\_sync\_%'
            UNION ALL SELECT 'decoding filter ' || slot_name FROM chash_decoding_filter})
	} ($dir, map { $shard{$_} } sort keys %shard);
	is($left, '', "$what: no replication object of the mover is left");
	return;
}

$ledger->write(30);

# ---- blocking batches: s3 is added ----
my $m1 = $dir->safe_psql('postgres', q{SELECT chash_migration_start('orgs')});
kill_and_finish('blocking batches', $m1, [ '--batch-steps', '3', '--max-rate', '1000', '--migration', $m1 ],
	qw(copying fenced copied completed deleted random random random));

# ---- online batches: s1 is drained ----
my $m2 = $dir->safe_psql('postgres', q{
    SELECT chash_set_shard('orgs', 's1', state => 'draining');
    SELECT chash_migration_start('orgs');
});
$m2 = (split /\n/, $m2)[-1];
kill_and_finish('online batches', $m2, [ '--online', '--batch-steps', '3', '--migration', $m2 ],
	qw(copying subscribed fenced copied completed deleted random random));
ok($kills >= 10 && $inside >= 8, "the mover was killed $kills times, $inside of them inside a batch of several steps");

# ---- a revert in the middle of a batch ----
{
	my $m3 = $dir->safe_psql('postgres', q{
        SELECT chash_set_shard('orgs', 's1', state => 'active');
        SELECT chash_migration_start('orgs');
    });
	$m3 = (split /\n/, $m3)[-1];
	# one batch done, the next killed with its steps copied, their rows on the target
	my $status = run_mover([ '--batch-steps', '3', '--migration', $m3 ], 'copied');
	is($status, 'signal 9', 'the migration to revert is killed inside a batch');
	my $held = $dir->safe_psql('postgres', "SELECT count(*) FROM chash_step_lease WHERE migration = $m3 AND progress = 'copied'");
	ok($held > 1, "$held steps of the batch were copied when it was killed");
	$ledger->write(10);
	my $r = $dir->safe_psql('postgres', "SELECT chash_migration_revert($m3)");
	# the oldest first: the cancelled batch's copy off the target, then the revert
	my $reruns = 0;
	for my $id ($m3, $r)
	{
		do { $status = run_mover([ '--batch-steps', '3', '--migration', $id ]); $reruns++ }
		  until $status eq '0' || $reruns >= 10;
	}
	is($status, '0', "the cancelled batch is cleaned up and the revert finished ($reruns runs)");
	is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id IN ($m3, $r) ORDER BY id"),
		"cancelled\ndone", 'the migration is cancelled and its revert done');
	is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration IN ($m3, $r) AND state IN ('copying', 'fenced')"),
		'0', 'no step is left in flight');
	$ledger->write(20);
	check('revert in the middle of a batch');
	is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_slot WHERE directory = 'orgs' AND shard = 's1'"), '0',
		'the revert left s1 with no slot again');
}

done_testing();
