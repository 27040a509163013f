# Load statistics on a shard (docs/load.md): a server that preloads chash
# and is its own directory database and only shard counts what a session
# did, exactly (reads, rows written, rows, executor time per slot and per
# tenant); eight pgbench clients lose no count, and on a Zipf(1.1)
# workload over 100,000 tenants the top-K holds every tenant above 1 %
# with its figures within 1 %; chash.track_stats off
# counts nothing; resets; a directory of more slots than are kept folds
# them; without the preload the functions say why and
# chash_shard_status says the statistics are off.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;

# A node that is its own directory database and only shard of 'orgs'.
sub own_shard
{
	my ($name, $slots, %opt) = @_;
	my $node = new_node($name, %opt);
	$node->safe_psql('postgres', qq{
        CREATE EXTENSION chash;
        CREATE TABLE accounts (org_id text, id bigint, v int, PRIMARY KEY (org_id, id));
        SELECT chash_create_directory('orgs', ARRAY['s1'], $slots);
        SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
        SELECT chash_shard_join('orgs', 's1', NULL);
    });
	create_sql_helpers($node);
	return $node;
}

my $node = own_shard('stats', 16384, preload => 1);
is($node->safe_psql('postgres', 'SELECT stats_tracked FROM chash_shard_status'), 't',
	'chash_shard_status: statistics are counted');

my $slot_a = $node->safe_psql('postgres', q{SELECT chash_slot('orgs', 'org-a')});
my $slot_b = $node->safe_psql('postgres', q{SELECT chash_slot('orgs', 'org-b')});
isnt($slot_a, $slot_b, 'the two tenants are in different slots');

# One session: 10 single-row INSERTs of org-a, one 5-row INSERT of org-b,
# 3 SELECTs of org-a (one through a prepared statement), one UPDATE of
# org-b's 5 rows, one DELETE of 2 rows of org-a, a SELECT of no tenant
# (not counted), and a failed statement.
$node->safe_psql('postgres', q{
    SELECT chash_stats_reset();
    INSERT INTO accounts VALUES ('org-a', 1, 0);
    INSERT INTO accounts VALUES ('org-a', 2, 0);
    INSERT INTO accounts VALUES ('org-a', 3, 0);
    INSERT INTO accounts VALUES ('org-a', 4, 0);
    INSERT INTO accounts VALUES ('org-a', 5, 0);
    INSERT INTO accounts VALUES ('org-a', 6, 0);
    INSERT INTO accounts VALUES ('org-a', 7, 0);
    INSERT INTO accounts VALUES ('org-a', 8, 0);
    INSERT INTO accounts VALUES ('org-a', 9, 0);
    INSERT INTO accounts VALUES ('org-a', 10, 0);
    INSERT INTO accounts SELECT 'org-b', g, 0 FROM generate_series(1, 5) g;
    SELECT count(*) FROM accounts WHERE org_id = 'org-a';
    SELECT * FROM accounts WHERE org_id = 'org-a' AND id <= 4;
    PREPARE q(text) AS SELECT * FROM accounts WHERE org_id = $1;
    EXECUTE q('org-a');
    UPDATE accounts SET v = v + 1 WHERE org_id = 'org-b';
    DELETE FROM accounts WHERE org_id = 'org-a' AND id > 8;
    SELECT count(*) FROM accounts;
    SELECT sqlstate_of($$INSERT INTO accounts VALUES ('org-a', 1, 0)$$);
});
# org-a: writes 10 + 2 deleted + 1 refused by the key = 13; reads 3; rows
# 10 inserted + 1 counted + 4 + 10 selected + 2 deleted = 27 (the failed
# INSERT never ends).  org-b: writes 5 inserted + 5 updated; rows 5 + 5.
my %want = ($slot_a => '3|13|27', $slot_b => '0|10|10');
my $slots = $node->safe_psql('postgres', q{
    SELECT slot || ':' || reads || '|' || writes || '|' || rows FROM chash_slot_stats('orgs') ORDER BY slot});
is($slots, join("\n", map { "$_:$want{$_}" } sort { $a <=> $b } keys %want),
	'slot counts are exact for one session');
is($node->safe_psql('postgres', q{
    SELECT bool_and(exec_time > 0 AND since <= now()) FROM chash_slot_stats('orgs')}),
	't', 'executor time is counted, since the reset');
is($node->safe_psql('postgres', q{
    SELECT string_agg(tenant || ':' || slot || ':' || reads || '|' || writes || '|' || rows, ',' ORDER BY tenant)
    FROM chash_tenant_stats('orgs')}),
	"org-a:$slot_a:3|13|27,org-b:$slot_b:0|10|10", 'tenant counts are exact for one session');
# the score is reads plus rows written, decayed by seconds at most
is($node->safe_psql('postgres', q{
    SELECT string_agg(tenant || ':' || (score BETWEEN (reads + writes) * 0.99 AND reads + writes), ',' ORDER BY score DESC)
    FROM chash_tenant_stats('orgs')}),
	'org-a:true,org-b:true', 'the score is the decayed reads and writes, highest first');
is($node->safe_psql('postgres', q{SELECT tenant FROM chash_tenant_stats('orgs', 1)}),
	'org-a', 'top limits the tenants');
is($node->safe_psql('postgres', q{SELECT sqlstate_of('SELECT chash_tenant_stats(''orgs'', 0)')}),
	'22023', 'top below 1 is refused');
is($node->safe_psql('postgres', q{SELECT count(*) FROM chash_tenant_stats('nothing')}),
	'0', 'a directory with nothing counted has no rows');

# chash.track_stats off: nothing counted
$node->safe_psql('postgres', q{
    SET chash.track_stats = off;
    INSERT INTO accounts VALUES ('org-a', 100, 0);
    SELECT * FROM accounts WHERE org_id = 'org-a';
});
is($node->safe_psql('postgres', qq{SELECT reads || '|' || writes FROM chash_slot_stats('orgs') WHERE slot = $slot_a}),
	'3|13', 'with chash.track_stats off nothing is counted');
is($node->safe_psql('postgres', q{SET chash.track_stats = off; SELECT stats_tracked FROM chash_shard_status}),
	'f', 'chash_shard_status says so');

# Eight clients, 250 transactions each, of 100 tenants: no count lost.
# (The tenant is a parameter: the guard routes "column = parameter", not
# an expression of one, in a generic plan.)
$node->safe_psql('postgres', q{SELECT chash_stats_reset('orgs'); CREATE SEQUENCE ids});
$node->pgbench('-n -M prepared -c 8 -j 2 -t 250', 0, [qr/processed: 2000\/2000/], [qr/^$/],
	'8 clients', {
		'150_insert' => q{\set t random(1, 100)
INSERT INTO accounts VALUES (:t, nextval('ids'), 0);
SELECT * FROM accounts WHERE org_id = :t LIMIT 1;
}});
is($node->safe_psql('postgres', q{SELECT sum(writes) || '|' || sum(reads) FROM chash_slot_stats('orgs')}),
	'2000|2000', '8 clients: slot counts are exact');
is($node->safe_psql('postgres', q{
    SELECT count(*) || '|' || sum(writes) || '|' || sum(reads) FROM chash_tenant_stats('orgs', 1000)}),
	'100|2000|2000', '8 clients: tenant counts are exact');

# Eight clients, a Zipf(1.1) workload over 100,000 tenants (pgbench's
# random_zipfian), 20,000 single-row INSERTs: many more tenants than the
# sketch's 1,024 entries, so it evicts.  Slot counts stay exact; every
# tenant above 1 % of the load is in the top-K, its writes within 1 % of
# what the table holds for it (space-saving counts a tenant from the
# moment it took its entry, never more than it did).
$node->safe_psql('postgres', q{
    CREATE TABLE zipf (org_id text, id bigint, PRIMARY KEY (org_id, id));
    SELECT chash_add_table('orgs', 'public.zipf', 'org_id');
    SELECT chash_stats_reset('orgs');
});
$node->pgbench('-n -M prepared -c 8 -j 2 -t 2500', 0, [qr/processed: 20000\/20000/], [qr/^$/],
	'8 clients, Zipf(1.1) over 100,000 tenants', {
		'150_zipf' => q{\set t random_zipfian(1, 100000, 1.1)
INSERT INTO zipf VALUES (:t, nextval('ids'));
}});
is($node->safe_psql('postgres', q{SELECT sum(writes) FROM chash_slot_stats('orgs')}),
	'20000', 'Zipf, 8 clients: slot counts are exact');
my ($tenants, $heavy, $found, $close) = split /\|/, $node->safe_psql('postgres', q{
    WITH truth AS (SELECT org_id, count(*) AS n FROM zipf GROUP BY 1),
         top AS (SELECT * FROM chash_tenant_stats('orgs', 1024))
    SELECT (SELECT count(*) FROM truth),
           count(*),
           count(top.tenant),
           count(*) FILTER (WHERE top.writes BETWEEN 0.99 * t.n AND t.n)
      FROM truth t LEFT JOIN top ON top.tenant = t.org_id
     WHERE t.n * 100 > 20000});
ok($tenants > 1024, "Zipf: $tenants tenants written, more than the sketch keeps");
ok($heavy >= 5, "Zipf: $heavy tenants above 1 % of the load");
is($found, $heavy, 'Zipf: the top-K has every tenant above 1 %');
is($close, $heavy, 'Zipf: each with its writes within 1 % of the truth');
is($node->safe_psql('postgres', q{
    SELECT bool_and(score >= writes * 0.99) FROM chash_tenant_stats('orgs', 1024)
     WHERE tenant IN (SELECT org_id FROM zipf GROUP BY 1 HAVING count(*) * 100 > 20000)}),
	't', 'Zipf: their scores are not below their writes (decayed by seconds at most)');

# chash_stats_reset(directory) zeroes that directory
$node->safe_psql('postgres', q{SELECT chash_stats_reset('orgs')});
is($node->safe_psql('postgres', q{
    SELECT (SELECT count(*) FROM chash_slot_stats('orgs')) + (SELECT count(*) FROM chash_tenant_stats('orgs'))}),
	'0', 'reset: nothing counted');

# A directory of 65,536 slots: slot s is counted as s modulo 16,384.
$node->safe_psql('postgres', q{
    CREATE TABLE wide (k text PRIMARY KEY);
    SELECT chash_create_directory('wide', ARRAY['s1'], 65536);
    SELECT chash_add_table('wide', 'public.wide', 'k');
    SELECT chash_shard_join('wide', 's1', NULL);
    INSERT INTO wide SELECT 'k' || g FROM generate_series(1, 200) g;
});
is($node->safe_psql('postgres', q{
    SELECT count(*) FILTER (WHERE s.writes IS DISTINCT FROM e.n)
    FROM (SELECT chash_slot('wide', 'k' || g) % 16384 AS slot, count(*) AS n
          FROM generate_series(1, 200) g GROUP BY 1) e
    FULL JOIN chash_slot_stats('wide') s ON s.slot = e.slot}),
	'0', 'a directory of more slots has them folded modulo 16,384');

# chash_stats_reset() frees every directory's room
$node->safe_psql('postgres', q{SELECT chash_stats_reset()});
is($node->safe_psql('postgres', q{SELECT count(*) FROM chash_slot_stats('wide')}), '0', 'reset all');
$node->safe_psql('postgres', q{INSERT INTO wide VALUES ('again')});
is($node->safe_psql('postgres', q{SELECT sum(writes) FROM chash_slot_stats('wide')}), '1',
	'counting starts again after a reset of all');

# Without the preload: no statistics, and chash_shard_status says so.
my $plain = own_shard('plain', 16);
is($plain->safe_psql('postgres', q{SELECT stats_tracked FROM chash_shard_status}), 'f',
	'not preloaded: chash_shard_status says statistics are off');
is($plain->safe_psql('postgres', q{SELECT message_of('SELECT chash_slot_stats(''orgs'')')}),
	'55000: load statistics are not available / They are counted only where chash is in shared_preload_libraries.',
	'not preloaded: chash_slot_stats says why');

done_testing();
