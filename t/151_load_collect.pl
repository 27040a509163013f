# Collecting the load statistics (docs/load.md, "Collecting"): a directory
# database and three shards with a skewed workload (a whale tenant and many
# small ones); chash_collect brings every shard's figures home into
# chash_load and chash_tenant_size; a shard that cannot be reached and a
# shard that does not answer in time are reported and do not fail the rest.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;

my $dir = new_node('directory', logical => 1);
my %shard = map { ($_ => new_node("load_$_", preload => 1)) } qw(s1 s2 s3);
my $dirconn = accounts_directory($dir, \%shard);
create_sql_helpers($dir);
join_shards($dir, $dirconn, 'orgs', \%shard);
ok(shard_applied($dir, $shard{$_}), "$_ has applied the directory") for sort keys %shard;

# 90 small tenants, 3 rows each, one SELECT each; the whale: 600 rows and
# 200 SELECTs, on its shard.
my %owner = split /[|\n]/, $dir->safe_psql('postgres', q{
    SELECT t || '|' || chash_route('orgs', t)
    FROM (SELECT 'org-' || g AS t FROM generate_series(1, 90) g UNION ALL SELECT 'whale') x});
my $hot = $owner{whale};
my %work;
for my $t (sort keys %owner)
{
	my $n = $t eq 'whale' ? 600 : 3;
	my $reads = $t eq 'whale' ? 200 : 1;
	$work{ $owner{$t} } .= "INSERT INTO accounts SELECT '$t', g, repeat('x', 100) FROM generate_series(1, $n) g;\n";
	$work{ $owner{$t} } .= "SELECT count(*) FROM accounts WHERE org_id = '$t';\n" x $reads;
}
$shard{$_}->safe_psql('postgres', $work{$_}) for sort keys %work;

is($dir->safe_psql('postgres', q{
    SELECT string_agg(shard || ':' || ok, ',' ORDER BY shard) FROM chash_collect('orgs')}),
	's1:true,s2:true,s3:true', 'chash_collect reads every shard');
is($dir->safe_psql('postgres', qq{
    SELECT sum(writes) || '|' || sum(reads) || '|' || sum(tenants) || '|' || sum(stored_rows)
    FROM chash_load WHERE directory = 'orgs' AND shard = '$hot'}),
	(600 + 3 * (grep { $owner{$_} eq $hot } keys %owner) - 3) . '|'
	  . (200 + (grep { $owner{$_} eq $hot } keys %owner) - 1) . '|'
	  . (grep { $owner{$_} eq $hot } keys %owner) . '|'
	  . (600 + 3 * (grep { $owner{$_} eq $hot } keys %owner) - 3),
	'chash_load: the hot shard\'s writes, reads, tenants and rows, as the shard counted them');
is($dir->safe_psql('postgres', q{
    SELECT shard FROM chash_load WHERE directory = 'orgs'
    GROUP BY shard ORDER BY sum(reads + writes) DESC LIMIT 1}),
	$hot, 'the whale\'s shard is the hottest');
is($dir->safe_psql('postgres', q{
    SELECT count(*) || '|' || sum(rows) FROM chash_tenant_size WHERE directory = 'orgs'}),
	'91|870', 'chash_tenant_size holds every tenant the shards hold');
is($dir->safe_psql('postgres', q{
    SELECT rows || '|' || (bytes > 600 * 100) FROM chash_tenant_size WHERE directory = 'orgs' AND tenant = 'whale'}),
	'600|true', 'the whale\'s size is what its shard holds');
is($dir->safe_psql('postgres', qq{
    SELECT shard || ':' || slot || ':' || reads || ':' || writes FROM chash_load_tenant
    WHERE directory = 'orgs' AND tenant = 'whale'}),
	"$hot:" . $dir->safe_psql('postgres', q{SELECT chash_slot('orgs', 'whale')}) . ':200:600',
	'the whale\'s statistics come home with its slot');

# The whale alone carries more than half a fair shard's load: the one
# suggestion, to the least loaded other shard.
my $whale_load = 200 + 600;
my $least = $dir->safe_psql('postgres', qq{
    SELECT shard FROM chash_load WHERE directory = 'orgs' AND shard <> '$hot'
    GROUP BY shard ORDER BY sum(reads + writes), shard COLLATE "C" LIMIT 1});
is($dir->safe_psql('postgres', qq{
    SELECT string_agg(tenant || ':' || shard || ':' || round(load_share::numeric, 3) || ':' || suggested_shard, ',')
    FROM chash_suggest_pins('orgs')}),
	"whale:$hot:" . $dir->safe_psql('postgres', qq{
        SELECT round($whale_load / sum(reads + writes)::numeric, 3) FROM chash_load
        WHERE directory = 'orgs' AND shard = '$hot'}) . ":$least",
	'chash_suggest_pins names the whale, its share of its shard and where to pin it');
is($dir->safe_psql('postgres', q{SELECT sqlstate_of('SELECT * FROM chash_suggest_pins(''orgs'', 0)')}),
	'22023', 'n below 1 is refused');

# A bulky tenant without load on another shard (written with the
# statistics off): by bytes its shard is the heavy one, by load the
# whale's.  The 'load' plan moves slots off the hot shard only, and each
# move lowers the load there; the 'bytes' plan starts from the bulky
# shard; the 'slots' plan of the evenly sliced directory is empty.
my ($bulk) = grep { $owner{$_} ne $hot } sort keys %owner;
$shard{ $owner{$bulk} }->safe_psql('postgres', qq{
    SET chash.track_stats = off;
    INSERT INTO accounts SELECT '$bulk', g, repeat('x', 100) FROM generate_series(100, 3099) g});
$dir->safe_psql('postgres', q{SELECT * FROM chash_collect('orgs')});
is($dir->safe_psql('postgres', q{SELECT count(*) FROM chash_plan_rebalance('orgs', 'slots')}),
	'0', 'the slots are balanced');
is($dir->safe_psql('postgres', q{SELECT from_shard FROM chash_plan_rebalance('orgs', 'bytes') WHERE step = 1}),
	$owner{$bulk}, "the 'bytes' plan starts from the bulky shard");
my $plan = $dir->safe_psql('postgres', q{
    SELECT count(*) || '|' || count(*) FILTER (WHERE from_shard = } . "'$hot'" . q{)
    FROM chash_plan_rebalance('orgs', 'load')});
my ($steps, $from_hot) = split /\|/, $plan;
ok($steps > 0 && $steps == $from_hot, "the 'load' plan moves slots off the hot shard only ($plan)");
is($dir->safe_psql('postgres', qq{
    WITH moved AS (SELECT slot FROM chash_plan_rebalance('orgs', 'load'))
    SELECT sum(reads + writes) FILTER (WHERE slot NOT IN (SELECT slot FROM moved))
           < sum(reads + writes)
    FROM chash_load WHERE directory = 'orgs' AND shard = '$hot'}),
	't', 'the hot shard carries less load after the plan');
my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_start('orgs', 'load')});
is($dir->safe_psql('postgres', qq{SELECT count(*) FROM chash_migration_step WHERE migration = $m}),
	$steps, "chash_migration_start saves the 'load' plan");
$dir->safe_psql('postgres', qq{SELECT chash_migration_cancel($m)});

# A second collection replaces the first (no row twice).
$dir->safe_psql('postgres', q{SELECT * FROM chash_collect('orgs')});
is($dir->safe_psql('postgres', q{
    SELECT count(*) FROM chash_load_tenant WHERE directory = 'orgs' AND tenant = 'whale'}),
	'1', 'collecting again replaces what was collected');

# A shard whose server is down, and one that holds a lock the sizes wait for.
my $down = $shard{s3}->connstr('postgres');
$shard{s3}->stop;
my $locker = $shard{s2}->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE accounts');
my $result = $dir->safe_psql('postgres', q{
    SET chash.collect_timeout = '2s';
    SELECT string_agg(shard || ':' || ok || ':' || detail, E'\n' ORDER BY shard) FROM chash_collect('orgs')});
like($result, qr/^s1:true:/m, 'the shard that answers is collected');
like($result, qr/^s2:false:.*(timeout|time)/m, 'a shard that does not answer in time is reported');
like($result, qr/^s3:false:could not connect to shard server/m, 'an unreachable shard is reported');
$locker->quit;
is($dir->safe_psql('postgres', q{
    SELECT count(DISTINCT shard) FROM chash_load_slot WHERE directory = 'orgs'}),
	'3', 'a failed shard keeps what was collected before');

done_testing();
