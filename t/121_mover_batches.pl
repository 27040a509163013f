# chash_move's batches at scale (docs/chash_move.md; docs/shards.md,
# "Verification"): a directory of 256 slots on s1 and s2, many tenants in
# each slot and a pinned one; s3 is added.  --dry-run prints the batches
# and moves nothing; a verification failure inside a batch of many steps
# releases every step and keeps every row on its source; --max-rate holds
# the rows a second; --jobs 2 moves the two shard pairs at once; at the end
# every row is exactly once on its tenant's shard and the pinned tenant
# stayed.  One job claims its next batch while a batch copies, and a stop
# gives it back.  A revert, whose target's column changes between two batches of
# one run, stops at the check the pair runs again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use IPC::Run;
use Time::HiRes qw(time);

my $tenants = 4000;

my $dir = new_node('directory', logical => 1, conf => "max_replication_slots = 20\nmax_wal_senders = 20\n");
my %shard = map { $_ => new_node($_, preload => 1) } qw(s1 s2 s3);
my $dirconn = accounts_directory($dir, \%shard, on => [qw(s1 s2)], slots => 256, index => 1,
	sql => q{SELECT chash_pin('orgs', 'pinned', 's1')}, join => 1);
for my $name (qw(s1 s2))
{
	$shard{$name}->safe_psql('postgres', qq{
        INSERT INTO accounts
        SELECT t, i, repeat('x', i % 20)
          FROM (SELECT 'org-' || g AS t FROM generate_series(1, $tenants) g) a, generate_series(1, 3) i
         WHERE chash_route('orgs', t) = '$name';
        INSERT INTO accounts SELECT 'pinned', i, 'pinned ' || i FROM generate_series(1, 100) i
         WHERE chash_route('orgs', 'pinned') = '$name';
    });
}
my $total = 3 * $tenants + 100;
{
	my $c = $shard{s3}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_add_shard('orgs', 's3', server => \$\$$c\$\$)});
	$shard{s3}->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's3', '$dirconn')});
	shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
}

sub run_mover
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'chash_move', @args, $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
	my $status = $? & 127 ? 'signal ' . ($? & 127) : $? >> 8;
	note "chash_move @args: exit $status\n$out$err";
	return ($status, $out, $err);
}

sub count_on
{
	my ($s, $where) = @_;
	return $shard{$s}->safe_psql('postgres', "SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE $where");
}

sub states
{
	my ($m) = @_;
	return $dir->safe_psql('postgres',
		"SELECT string_agg(state || ' ' || n, ', ' ORDER BY state) FROM (SELECT state, count(*) n FROM chash_migration_step WHERE migration = $m GROUP BY 1) x");
}

my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_start('orgs')});
my $steps = $dir->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration = $m");
my $slots = $dir->safe_psql('postgres', "SELECT string_agg(slot::text, ',') FROM chash_migration_step WHERE migration = $m");
my $moving = 0;
$moving += count_on($_, "chash_tenant_slot(org_id, 256) = ANY ('{$slots}') AND org_id <> 'pinned'") for qw(s1 s2);
note "migration $m: $steps slot steps, $moving rows to move";

# ---- --dry-run ----
{
	my ($rc, $out, $err) = run_mover('--dry-run', '--batch-steps', '20', '--migration', $m);
	is($rc, 0, '--dry-run exits 0');
	my @batches = $out =~ /^batch \d+: steps (\d+)-(\d+), (\d+) slots? (s\d) -> s3: (\d+) rows, [\d.]+ kB, about [\d.]+ s$/mg;
	my ($nsteps, $nrows, $over) = (0, 0, 0);
	for (my $i = 0; $i < @batches; $i += 5)
	{
		$nsteps += $batches[ $i + 2 ];
		$nrows += $batches[ $i + 4 ];
		$over++ if $batches[ $i + 2 ] > 20;
	}
	is($nsteps, $steps, 'its batches hold every pending step');
	is($over, 0, 'no batch has more than --batch-steps steps');
	is($nrows, $moving, 'its rows are the rows to move (the pinned tenant\'s stay)');
	like($out, qr/^\d+ batches, $moving rows, [\d.]+ MB, about [\d.]+ s of copying with one job/m, 'it sums them up');
	like($out, qr/^nothing was moved$/m, 'it says it moved nothing');
	is(states($m), "pending $steps", 'every step is still pending');
	is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'no lease was taken');
	is(count_on('s3', 'true'), '0', 'no row reached s3');
}

# ---- a verification failure inside a batch of many steps ----
{
	# drops one row of each tenant on its way into s3: COPY FROM takes fewer
	# rows than the source sent
	$shard{s3}->safe_psql('postgres', q{
        CREATE FUNCTION lose() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
        CREATE TRIGGER lose BEFORE INSERT ON accounts FOR EACH ROW WHEN (NEW.id = 2) EXECUTE FUNCTION lose();
        -- a superuser mover writes as replication does: only such a trigger fires
        ALTER TABLE accounts ENABLE ALWAYS TRIGGER lose;
    });
	my $before = count_on('s1', 'true') + count_on('s2', 'true');
	my ($rc, $out, $err) = run_mover('--verbose', '--batch-steps', '12', '--migration', $m);
	is($rc, 1, 'a verification failure exits 1');
	like($err, qr/error: verification failed for steps \d+-\d+ \(a batch of 12\) of migration $m: table "public.accounts" differs between shard "s\d" and shard "s3"/,
		'it names the batch and the table');
	like($err, qr/detail: The source sent (\d+) rows .*, the target took (?!\1 )\d+ and has/, 'the target took fewer rows than were sent');
	is(states($m), "pending $steps", 'every step of the batch is released');
	is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'no lease is left');
	is(count_on('s3', 'true'), '0', 'nothing is left on s3');
	is(count_on('s1', 'true') + count_on('s2', 'true'), $before, 'every row is still on its source');
	is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_slot WHERE directory = 'orgs' AND shard = 's3'"), '0',
		'no slot moved');

	# a changed row: the same count, another checksum
	$shard{s3}->safe_psql('postgres', q{
        DROP TRIGGER lose ON accounts;
        CREATE FUNCTION tamper() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.payload := NEW.payload || '!'; RETURN NEW; END $$;
        CREATE TRIGGER tamper BEFORE INSERT ON accounts FOR EACH ROW WHEN (NEW.id = 3) EXECUTE FUNCTION tamper();
        ALTER TABLE accounts ENABLE ALWAYS TRIGGER tamper;
    });
	($rc, $out, $err) = run_mover('--verbose', '--batch-steps', '12', '--migration', $m);
	is($rc, 1, 'a changed row fails the verification');
	like($err, qr/detail: The source sent (\d+) rows \(checksum \d+\), the target took \1 and has \1 rows \(checksum \d+\)/,
		'with the same count');
	is(states($m), "pending $steps", 'every step is released again');
	is(count_on('s3', 'true'), '0', 'nothing is left on s3');
	$shard{s3}->safe_psql('postgres', 'DROP TRIGGER tamper ON accounts');
}

# ---- the next batch claimed while one copies; a stop gives it back ----
# Once the first batch has measured the pace, one job copying with writes
# blocked claims its next batch as a copy begins (fenced with its claim
# when its shard pair was checked in the run: the first batch's pair is).
# Held at the second batch's "copied", the third is claimed and fenced;
# SIGTERM then gives both back: nothing is left fenced, leased or on s3
# but the first batch's rows.
{
	my ($out, $err) = ('', '');
	my $h = do
	{
		local $ENV{CHASH_MOVE_PAUSE_AT} = 'copied:90';
		IPC::Run::start([ 'chash_move', '--verbose', '--batch-steps', '6', '--migration', $m, $dir->connstr('postgres') ],
			'>', \$out, '2>', \$err);
	};
	my ($fenced, $leases) = (0, 0);
	my $deadline = time + 120;
	while (time < $deadline)
	{
		$h->pump_nb;
		my $paused = () = $err =~ /paused at "copied"/g;
		if ($paused >= 2)
		{
			($fenced, $leases) = split /\|/, $dir->safe_psql('postgres', qq{
                SELECT count(*) FILTER (WHERE state = 'fenced'),
                       (SELECT count(*) FROM chash_step_lease WHERE migration = $m)
                  FROM chash_migration_step WHERE migration = $m});
			last if $fenced >= 12;
		}
		select(undef, undef, undef, 0.2);
	}
	is($fenced, 12, 'held after its second batch\'s copy, the mover has claimed and fenced the third');
	is($leases, 12, 'and holds the leases of both');
	like($err, qr/steps \d+-\d+ \(a batch of 6\): 6 slots s\d -> s3, .* fence [\d.]+ s, /,
		'the first batch was fenced after its claim');
	$h->signal('TERM');
	$h->finish;
	note "chash_move (stopped with a batch claimed beside the copy): exit $?\n$err";
	is($? >> 8, 1, 'SIGTERM stops it');
	is(states($m), 'done 6, pending ' . ($steps - 6), 'both batches in flight went back to pending');
	is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'no lease is left');
	my $first = count_on('s3', 'true');
	ok($first > 0, "s3 holds the first batch's $first rows");
	my ($rc, $out2, $err2) = run_mover('--verbose', '--batch-steps', '6', '--max-steps', '18', '--migration', $m);
	is($rc, 0, 'a rerun moves three more batches');
	like($err2, qr/steps \d+-\d+ \(a batch of 6\): .* fenced with its claim during the last batch's copy, /,
		'a batch claimed and fenced during the last batch\'s copy moves');
	is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration = $m AND state = 'done'"),
		'24', 'its steps are done');
	is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'no lease is left');
}

# ---- --jobs 2: the two pairs at once, never both jobs on one pair ----
{
	# s2's moving tenants get many more rows, so its batches are slower and
	# a job that finished an s1 batch meets s2's pending steps first
	my $heavy = $shard{s2}->safe_psql('postgres', qq{
        INSERT INTO accounts SELECT org_id, 100 + i, repeat('y', 300)
          FROM (SELECT DISTINCT org_id FROM accounts WHERE chash_tenant_slot(org_id, 256) = ANY ('{$slots}') AND org_id <> 'pinned') t,
               generate_series(1, 20) i;
        SELECT count(*) FROM accounts WHERE id > 100});
	$moving += $heavy;
	$total += $heavy;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--jobs', '2', '--batch-steps', '4', '--max-steps', int($steps / 2),
							  '--migration', $m, $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
	my ($samples, $shared, $both) = (0, 0, 0);
	while ($h->pumpable)
	{
		# a pair whose steps in flight were claimed by two sessions (two jobs)
		my ($n, $pairs) = split /\|/, $dir->safe_psql('postgres', qq{
            SELECT count(*) FILTER (WHERE claimers > 1), count(*) FROM (
                SELECT from_shard, to_shard, count(DISTINCT claimed_by) AS claimers
                  FROM chash_migration_step WHERE migration = $m AND state IN ('copying', 'fenced')
                 GROUP BY 1, 2) x});
		$samples++;
		$shared++ if $n > 0;
		$both++ if $pairs > 1;
		$h->pump_nb;
	}
	$h->finish;
	note "chash_move --jobs 2: exit $?\n$err";
	is($? >> 8, 0, 'two jobs move half the steps');
	ok($err =~ /slots s1 -> s3/ && $err =~ /slots s2 -> s3/, 'both pairs were moved');
	is($shared, 0, "no two jobs moved one pair at once ($samples samples, $both with both pairs in flight)");
}

# ---- --max-rate ----
my $rate = 1000;
{
	my $start = time;
	my $before = count_on('s3', 'true');
	my ($rc, $out, $err) = run_mover('--verbose', '--max-rate', $rate, '--batch-rows', '0', '--migration', $m);
	my $took = time - $start;
	is($rc, 0, 'a throttled run finishes the migration');
	is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', 'the migration is done');
	my $rows = count_on('s3', 'true') - $before;
	ok($rows > 1000, "it moved $rows rows");
	ok($rows / $took <= 1.1 * $rate, sprintf('at most --max-rate (plus 10%%): %d rows in %.2f s, %.0f rows/s', $rows, $took, $rows / $took));
}

# every row once, on its tenant's shard; the pinned tenant stayed
{
	shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
	my ($all, $misplaced) = (0, 0);
	for my $s (sort keys %shard)
	{
		$all += count_on($s, 'true');
		$misplaced += count_on($s, "chash_route('orgs', org_id) <> '$s'");
	}
	is($all, $total, 'every row is there once');
	is($misplaced, 0, 'every row is on its tenant\'s shard');
	is(count_on('s1', "org_id = 'pinned'"), '100', 'the pinned tenant stayed on s1');
	is(count_on('s3', "org_id <> 'pinned'"), $moving, 'the moved rows are on s3');
	is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'no lease is left');
}

# ---- a column changed between two batches of one run: checked again ----
{
	my $r = $dir->safe_psql('postgres', "SELECT chash_migration_revert($m)");
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--max-rate', '2000', '--migration', $r,
							  $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
	my $done = 0;
	while ($h->pumpable && $done == 0)
	{
		$done = $dir->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration = $r AND state = 'done'");
		$h->pump_nb;
	}
	# same bytes in COPY's binary format, another type
	$shard{$_}->safe_psql('postgres', 'ALTER TABLE accounts ALTER payload TYPE varchar') for qw(s1 s2);
	$h->finish;
	note "chash_move (revert): exit $?\n$err";
	is($? >> 8, 1, 'the run stops once the columns changed under it');
	like($err, qr/error: table "public.accounts" has different columns on shard "s3" and shard "s\d"/,
		'the pair was checked again and the change found');
	is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration = $r AND state IN ('copying', 'fenced')"),
		'0', 'no step is left in flight');
	$shard{$_}->safe_psql('postgres', 'ALTER TABLE accounts ALTER payload TYPE text') for qw(s1 s2);
	my ($rc) = run_mover('--migration', $r);
	is($rc, 0, 'with the columns mended the revert finishes');
	shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
	my ($all, $misplaced) = (0, 0);
	for my $s (sort keys %shard)
	{
		$all += count_on($s, 'true');
		$misplaced += count_on($s, "chash_route('orgs', org_id) <> '$s'");
	}
	is($all, $total, 'after the revert every row is there once');
	is($misplaced, 0, 'after the revert every row is on its tenant\'s shard');
	is(count_on('s3', 'true'), '0', 's3 is empty again');
}

done_testing();
