# max_rate of a background rebalance (docs/shards.md, "Background
# rebalancing"): rows a second across the rebalance's jobs, within 10 %,
# measured from the step table (the first step's start to the last one's
# finish) and the rows that reached the new shard; and batches of half a
# second of rows at that rate, so that a batch's write block stays short
# (chash_move's rule without --batch-rows).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;

my $slots = 256;
my $rate = 3000;
my $dir = new_node('directory', logical => 1, preload => 1, conf => "max_worker_processes = 16\n");
my %shard = map { $_ => new_node($_, preload => 1) } qw(s1 s2 s3);
my $dirconn = accounts_directory($dir, \%shard, on => [qw(s1 s2)], slots => $slots, index => 1,
	join => 1);
for my $name (qw(s1 s2))
{
	$shard{$name}->safe_psql('postgres', qq{
        INSERT INTO accounts SELECT 'org-' || g, i, 'seed'
          FROM generate_series(1, 3600) g, generate_series(1, 20) i
         WHERE chash_route('orgs', 'org-' || g) = '$name'});
}
{
	my $c = $shard{s3}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_add_shard('orgs', 's3', server => \$\$$c\$\$)});
	$shard{s3}->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's3', '$dirconn')});
}
shard_applied($dir, $shard{$_}) or die for qw(s1 s2 s3);

my $m = $dir->safe_psql('postgres', qq{SELECT chash_rebalance_start('orgs', max_parallel => 2, max_rate => $rate)});
is($dir->safe_psql('postgres', q{SELECT chash_rebalance_wait('orgs', interval '300 seconds')}), 'done', 'the throttled rebalance finishes');
shard_applied($dir, $shard{$_}) or die for qw(s1 s2 s3);
my $rows = $shard{s3}->safe_psql('postgres', 'SELECT count(*) FROM accounts');
my $took = $dir->safe_psql('postgres', qq{
    SELECT extract(epoch FROM max(finished_at) - min(started_at)) FROM chash_migration_step WHERE migration = $m});
cmp_ok($rows, '>', 15 * $rate / 2, "it moved $rows rows");
my $measured = $rows / $took;
note sprintf('max_rate %d: %d rows in %.2f s, %.0f rows/s (%+.1f %%)', $rate, $rows, $took, $measured, 100 * ($measured / $rate - 1));
ok($measured <= 1.1 * $rate && $measured >= 0.9 * $rate,
	sprintf('max_rate holds within 10 %%: %.0f rows/s for %d', $measured, $rate));
is($dir->safe_psql('postgres', q{SELECT rows_moved FROM chash_rebalance WHERE directory = 'orgs'}), $rows,
	'the rebalance counted the rows that reached s3');

# A batch's steps are claimed in one transaction: rows per start time.
my %finished = map { split /\|/ } split /\n/, $dir->safe_psql('postgres', qq{
    SELECT slot, started_at FROM chash_migration_step WHERE migration = $m});
my %batch;
for (split /\n/, $shard{s3}->safe_psql('postgres', qq{SELECT chash_tenant_slot(org_id, $slots), count(*) FROM accounts GROUP BY 1}))
{
	my ($slot, $n) = split /\|/;
	$batch{ $finished{$slot} } += $n;
}
# each job's first batch is 16 steps, to measure the rows a step has (mover/run.c)
my @later = map { $batch{$_} } (sort keys %batch)[2 .. scalar(keys %batch) - 1];
my ($largest) = sort { $b <=> $a } @later;
my $step_rows = $rows / scalar(keys %finished);
note sprintf('%d batches, the largest after the first two %d rows, %.0f rows a step', scalar(keys %batch), $largest, $step_rows);
ok($largest <= $rate / 2 + 2 * $step_rows, "a batch holds about half a second of rows at max_rate ($largest rows)");


# A fast shutdown, as systemd's stop: one that hangs fails the test.
stop_fast($dir, map { $shard{$_} } sort keys %shard);

done_testing();
