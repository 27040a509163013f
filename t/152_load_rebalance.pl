# The load statistics end to end (docs/load.md): a directory database and
# three shards run a skewed workload, one shard hot and a planted whale on
# it.  chash_collect brings the figures home; the 'load' plan moves slots
# off the hot shard only, and chash_suggest_pins names the whale.  The
# real mover (chash_move) carries the plan out; the statistics are reset,
# the same workload runs again where the tenants now are, and collected
# again, every shard's load is within chash.load_tolerance of its share.
# Then the collection as docs/load.md promises it: a role with only the
# documented privileges (on the directory database and on the shards)
# collects, and a cancel stops a collection that waits for a shard, on
# the shard too.
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

# The directory server's password file (what ~postgres/.pgpass is on a
# real server): the collector connects to the shards as itself, with its
# own password (docs/shards.md, "Server-side connections").
my $pgpass = PostgreSQL::Test::Utils::tempdir . '/pgpass';
append_to_file($pgpass, "*:*:*:collector:collector-pw\n");
chmod 0600, $pgpass;
$ENV{PGPASSFILE} = $pgpass;

my $dir = new_node('directory', logical => 1, conf => "max_replication_slots = 20\nmax_wal_senders = 20\n");
my %shard = map { ($_ => new_node("rebalance_$_", preload => 1)) } qw(s1 s2 s3);
my $dirconn = accounts_directory($dir, \%shard, index => 1);
create_sql_helpers($dir);
join_shards($dir, $dirconn, 'orgs', \%shard);
ok(shard_applied($dir, $shard{$_}), "$_ has applied the directory") for sort keys %shard;

# 240 tenants of 2 rows and the whale of 100 rows.  The workload: each
# tenant's rows updated once (a write per row) and read by SELECTs, 6 for
# the tenants of s1 (the hot shard), 1 for the others, 300 for the whale
# (on s1): reads + writes 8 a tenant of s1, 3 elsewhere, 400 the whale.
my @tenants = ((map { "org-$_" } 1 .. 240), 'whale');
my %owner;
sub owners
{
	%owner = split /[|\n]/, $dir->safe_psql('postgres', q{
        SELECT t || '|' || chash_route('orgs', t)
        FROM unnest(string_to_array('} . join(',', @tenants) . q{', ',')) t});
}
owners();
is($owner{whale}, 's1', 'the whale routes to s1');
my %reads = map { ($_ => $owner{$_} eq 's1' ? 6 : 1) } @tenants;
$reads{whale} = 300;
my %rows = map { ($_ => $_ eq 'whale' ? 100 : 2) } @tenants;
my %load = map { ($_ => $reads{$_} + $rows{$_}) } @tenants;
for my $s (sort keys %shard)
{
	$shard{$s}->safe_psql('postgres', join '', map {
		"INSERT INTO accounts SELECT '$_', g, 'x' FROM generate_series(1, $rows{$_}) g;\n"
	} grep { $owner{$_} eq $s } @tenants);
}

# Runs the workload where each tenant routes now, from a reset.
sub workload
{
	for my $s (sort keys %shard)
	{
		$shard{$s}->safe_psql('postgres', "SELECT chash_stats_reset('orgs');\n" . join '', map {
			"UPDATE accounts SET payload = payload WHERE org_id = '$_';\n"
			  . "SELECT count(*) FROM accounts WHERE org_id = '$_';\n" x $reads{$_}
		} grep { $owner{$_} eq $s } @tenants);
	}
}
workload();

# Every shard's load as collected, and as the tenants on it add up.
sub collected_loads
{
	return split /[|\n]/, $dir->safe_psql('postgres', q{
        SELECT shard || '|' || sum(reads + writes) FROM chash_load WHERE directory = 'orgs' GROUP BY shard ORDER BY shard});
}
sub expected_loads
{
	my %sum = map { ($_ => 0) } keys %shard;
	$sum{ $owner{$_} } += $load{$_} for @tenants;
	return %sum;
}
is($dir->safe_psql('postgres', q{
    SELECT string_agg(shard || ':' || ok, ',' ORDER BY shard) FROM chash_collect('orgs')}),
	's1:true,s2:true,s3:true', 'chash_collect reads every shard');
my %before = collected_loads();
my %want = expected_loads();
is(join(',', map { "$_:$before{$_}" } sort keys %before), join(',', map { "$_:$want{$_}" } sort keys %want),
	'the collected load of every shard is what the workload did');
my $total = 0;
$total += $_ for values %before;
my $cap = $total / 3 * 1.1;
ok($before{s1} > $cap, "s1 is hot: $before{s1} of $total, over its cap of $cap");

# The whale alone is more than half a fair shard's load: the one suggestion.
is($dir->safe_psql('postgres', q{SELECT string_agg(tenant || ':' || shard, ',') FROM chash_suggest_pins('orgs')}),
	'whale:s1', 'chash_suggest_pins names the whale on s1');

# The 'load' plan moves slots off the hot shard only, and the loads it
# leaves are within the tolerance.
my $plan = $dir->safe_psql('postgres', q{
    SELECT count(*) || '|' || count(*) FILTER (WHERE from_shard = 's1') FROM chash_plan_rebalance('orgs', 'load')});
my ($steps, $from_hot) = split /\|/, $plan;
ok($steps > 0 && $steps == $from_hot, "the 'load' plan moves $steps slots, all off s1");
my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_start('orgs', 'load')});
is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration = $m"), $steps,
	'the migration saves the plan');

# The mover carries it out.
my ($out, $err) = ('', '');
IPC::Run::run([ 'chash_move', '--directory', 'orgs', $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
is($? >> 8, 0, 'chash_move exits 0') or diag($err);
is($dir->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', 'the migration is done');
ok(shard_applied($dir, $shard{$_}), "$_ has applied the moves") for sort keys %shard;
owners();
my $misplaced = 0;
for my $s (sort keys %shard)
{
	$misplaced += $shard{$s}->safe_psql('postgres',
		qq{SELECT count(*) FROM accounts WHERE chash_route('orgs', org_id) <> '$s'});
}
is($misplaced, 0, 'every row is on the shard its tenant routes to');

# The same workload again, measured and collected again.
workload();
is($dir->safe_psql('postgres', q{
    SELECT string_agg(shard || ':' || ok, ',' ORDER BY shard) FROM chash_collect('orgs')}),
	's1:true,s2:true,s3:true', 'collected again');
my %after = collected_loads();
%want = expected_loads();
is(join(',', map { "$_:$after{$_}" } sort keys %after), join(',', map { "$_:$want{$_}" } sort keys %want),
	'the load measured again is what the workload did where the tenants are now');
my $after_total = 0;
$after_total += $_ for values %after;
is($after_total, $total, 'the same load in all');
for my $s (sort keys %after)
{
	ok($after{$s} <= $cap, "after the move $s carries $after{$s}, within its cap of $cap");
}
ok($after{s1} < $before{s1}, "s1 carries less ($after{s1}, was $before{s1})");
is($dir->safe_psql('postgres', q{SELECT count(*) FROM chash_plan_rebalance('orgs', 'load')}), '0',
	"the 'load' plan is empty now");

# ---- collecting with the documented privileges only ----
# The collecting role connects to each shard as itself, by password: there
# it needs EXECUTE on chash_slot_stats, chash_tenant_stats and
# chash_shard_sizes (PUBLIC has it) and, as chash_shard_sizes reads with
# its rights, SELECT on chash_directory, chash_table and the tenant tables;
# on the directory database it needs what docs/load.md, "Privileges",
# lists.
for my $s (sort keys %shard)
{
	$shard{$s}->safe_psql('postgres', q{
        CREATE ROLE collector LOGIN PASSWORD 'collector-pw';
        GRANT EXECUTE ON FUNCTION chash_slot_stats(text), chash_tenant_stats(text, int),
            chash_shard_sizes(text) TO collector;
        GRANT SELECT ON chash_directory, chash_table, accounts TO collector});
	is($shard{$s}->safe_psql('postgres', q{SELECT has_table_privilege('collector', 'accounts', 'INSERT')}),
		'f', "the collector may not write the tenant table on $s");
	# the shard asks the collector for its password (a role that is no
	# superuser may not use a login the server asks no password for)
	my $hba = slurp_file($shard{$s}->data_dir . '/pg_hba.conf');
	open my $fh, '>', $shard{$s}->data_dir . '/pg_hba.conf' or die;
	print $fh "local all collector scram-sha-256\n$hba";
	close $fh;
	$shard{$s}->reload;
	my $c = $shard{$s}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', '$s', server => \$\$$c\$\$)});
}
$dir->safe_psql('postgres', q{
    CREATE ROLE collector LOGIN;
    GRANT SELECT ON chash_directory, chash_shard, chash_slot, chash_override,
        chash_migration, chash_migration_step TO collector;
    GRANT SELECT, INSERT, DELETE ON chash_load_slot, chash_load_tenant TO collector;
    GRANT SELECT, INSERT, UPDATE ON chash_tenant_size TO collector;
    GRANT EXECUTE ON FUNCTION chash_shard_fetch(text, text) TO collector;
});
my ($rc, $collect_out, $collect_err) = $dir->psql('postgres',
	q{SELECT string_agg(shard || ':' || ok || ':' || detail, E'\n' ORDER BY shard) FROM chash_collect('orgs')},
	extra_params => [ '-U', 'collector' ]);
is($rc, 0, 'a role with the documented privileges runs chash_collect') or diag($collect_err);
like($collect_out, qr/\As1:true:.*\ns2:true:.*\ns3:true:/, 'it collects every shard') or diag($collect_out);
my %as_collector = collected_loads();
is(join(',', map { "$_:$as_collector{$_}" } sort keys %as_collector),
	join(',', map { "$_:$after{$_}" } sort keys %after), 'with the same figures');
is($dir->safe_psql('postgres', q{SELECT count(*) || '|' || sum(rows) FROM chash_tenant_size WHERE directory = 'orgs'}),
	'241|580', 'and fills chash_tenant_size');
$dir->safe_psql('postgres', q{REVOKE EXECUTE ON FUNCTION chash_shard_fetch(text, text) FROM collector});
is($dir->safe_psql('postgres', q{
    SET ROLE collector;
    SELECT string_agg(DISTINCT ok || ':' || detail, ',') FROM chash_collect('orgs')}),
	'false:permission denied for function chash_shard_fetch',
	'without EXECUTE on chash_shard_fetch every shard is reported, none read');
is($dir->safe_psql('postgres', q{
    SELECT count(*) FROM chash_load_slot WHERE directory = 'orgs' AND shard = 's1'}) > 0 ? 1 : 0,
	1, 'and what was collected stays');

# ---- a cancel stops a collection that waits for a shard ----
# s2 holds a lock that the sizes wait for; without a timeout the collection
# waits until it is cancelled, and the shard's query stops with it.
$dir->safe_psql('postgres', q{GRANT EXECUTE ON FUNCTION chash_shard_fetch(text, text) TO collector});
my $locker = $shard{s2}->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE accounts');
my ($cout, $cerr) = ('', '');
my $collect = IPC::Run::start(
	[ 'psql', '-X', '-At', '-d', $dir->connstr('postgres'), '-c',
		q{SET chash.collect_timeout = 0; SET application_name = 'collect_cancel'; SELECT * FROM chash_collect('orgs')} ],
	'>', \$cout, '2>', \$cerr);
ok($shard{s2}->poll_query_until('postgres', q{
    SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'chash' AND wait_event_type = 'Lock'}),
	'the collection waits for the lock on s2');
my $t0 = time;
is($dir->safe_psql('postgres', q{
    SELECT bool_and(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE application_name = 'collect_cancel'}),
	't', 'cancelled');
$collect->finish;
my $took = time - $t0;
like($cerr, qr/canceling statement due to user request/, 'the collection stops with the cancel');
ok($took < 10, sprintf('at once (%.1f s)', $took));
my $waiting = 1;
for (1 .. 50)
{
	$waiting = $shard{s2}->safe_psql('postgres', q{
        SELECT count(*) FROM pg_stat_activity WHERE application_name = 'chash' AND wait_event_type = 'Lock'});
	last if $waiting == 0;
	usleep(100_000);
}
is($waiting, '0', 'and the shard\'s query stops too (it no longer waits for the lock)');
$locker->quit;
is($dir->safe_psql('postgres', q{SELECT count(DISTINCT shard) FROM chash_load_slot WHERE directory = 'orgs'}),
	'3', 'a cancelled collection changes nothing');

done_testing();
