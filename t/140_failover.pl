# Failover of the directory database (docs/shards.md, "Failover"): a
# directory primary with a streaming standby and three shards.  The standby
# misses a version the shards applied, the primary dies, the standby is
# promoted.  A shard that cannot follow refuses writes (SH003); a shard
# re-pointed by hand meets the other history and says so; a shard leaves
# while the old server is gone; the new primary refuses a pin (55000) until
# forced by hand; chash_directory_reconcile() rolls the new
# primary forward from the newest replica and keeps what it changed itself;
# chash_shard_repoint() moves each shard to it without a gap and without
# unguarding.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;

my $primary = new_node('dir_primary', logical => 1);
$primary->safe_psql('postgres', 'CREATE EXTENSION chash');
my $old_conninfo = publish_directory($primary);
# The shards' apply workers ask for a keepalive every 2 s, so 10 s of
# silence means the directory database is gone.
my @shards = map {
	new_node("s$_", preload => 1,
		conf => "chash.replica_max_silence = 10\nwal_receiver_timeout = '4s'")
} (1, 2, 3);
create_sql_helpers($primary, @shards);
$primary->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2', 's3'], 16);
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
});
for my $i (0 .. 2)
{
	my $name = 's' . ($i + 1);
	$shards[$i]->safe_psql('postgres', qq{
        CREATE EXTENSION chash;
        CREATE TABLE accounts (org_id text, id int, PRIMARY KEY (org_id, id));
        SELECT chash_shard_join('orgs', '$name', '$old_conninfo');
    });
	ok(shard_applied($primary, $shards[$i]), "$name joined and applied the directory");
}
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('dir_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

# A tenant each shard owns, and what a write of it answers there.
my %tenant;
for my $shard (qw(s1 s2 s3))
{
	$tenant{$shard} = $primary->safe_psql('postgres', qq{
        SELECT 'org-' || i FROM generate_series(1, 1000) i WHERE chash_route('orgs', 'org-' || i) = '$shard' LIMIT 1});
}
my $n = 0;
sub write_state
{
	my ($node, $shard) = @_;
	$n++;
	return $node->safe_psql('postgres',
		qq{SELECT sqlstate_of(\$\$INSERT INTO accounts VALUES ('$tenant{$shard}', $n)\$\$)});
}
my $sysid = $primary->safe_psql('postgres', 'SELECT system_identifier FROM pg_control_system()');
is($shards[0]->safe_psql('postgres', q{
    SELECT concat_ws(' | ', directory_system_identifier, directory_timeline, diverged IS NULL, streaming, refusal IS NULL,
                     (SELECT subsynccommit FROM pg_subscription))
    FROM chash_shard_status}),
	"$sysid | 1 | t | t | t | on",
	'the join recorded the directory database, the replica can be vouched for, its apply commits synchronously');
is(write_state($shards[0], 's1'), 'no error', 'a write of its own tenant is admitted on s1');

# ---- the standby misses a version the shards apply ----
$standby->stop;
$primary->safe_psql('postgres', qq{SELECT chash_pin('orgs', 'moved', 's2')});
ok(shard_applied($primary, $_), $_->name . ' applied the version the standby missed') for @shards;
my $lost_version = $primary->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'});
$primary->stop('immediate');
$standby->start;
$standby->promote;
my $new_conninfo = 'host=' . $standby->host . ' port=' . $standby->port . ' dbname=postgres user=chash_replicator';
is($standby->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'}), $lost_version - 1,
	'the promoted standby lacks the last version');

# ---- a shard that cannot follow fails closed ----
ok($shards[0]->poll_query_until('postgres', q{SELECT refusal IS NOT NULL AND NOT streaming FROM chash_shard_status}),
	's1 sees that it no longer streams from its directory database');
like($shards[0]->safe_psql('postgres',
		qq{SELECT message_of(\$\$INSERT INTO accounts VALUES ('$tenant{s1}', 1000)\$\$)}),
	qr/^SH003: shard "s1" cannot vouch for tenant "org-\d+" of directory "orgs" \/ (No apply worker of subscription "chash_\d+_\d+" is running|Subscription "chash_\d+_\d+" has received nothing)/,
	'a guarded write on s1 is refused with SH003 (it ends once the replica follows again), saying why');
is($shards[0]->safe_psql('postgres', q{SELECT refusal_code || ' ' || chash_shard_refusal_code('orgs') FROM chash_shard_status}),
	'SH003 SH003', 'chash_shard_status and chash_shard_refusal_code give that code');
is($shards[0]->safe_psql('postgres', qq{SELECT count(*) FROM accounts WHERE id = 1000}), '0', 'and nothing was written');
# The application's role, with no rights on the replica, gets the same answer.
$shards[0]->safe_psql('postgres', q{CREATE ROLE app LOGIN; GRANT SELECT, INSERT ON accounts TO app});
is($shards[0]->safe_psql('postgres',
		qq{SET ROLE app; SELECT sqlstate_of(\$\$INSERT INTO accounts VALUES ('$tenant{s1}', 1001)\$\$)}),
	'SH003', 'an unprivileged role is refused with SH003 too');
is($shards[0]->safe_psql('postgres', q{SET ROLE app; SELECT sqlstate_of($$SELECT chash_shard_repoint('orgs', 'dbname=x')$$)}),
	'42501', 'only a superuser may re-point a shard');
is($shards[0]->safe_psql('postgres', qq{SELECT sqlstate_of(\$\$SELECT count(*) FROM accounts WHERE org_id = '$tenant{s1}'\$\$)}),
	'no error', 'reads go on');

# ---- leaving while the old directory server is gone ----
my ($ret, $stdout, $stderr) = $shards[2]->psql('postgres', q{SELECT chash_shard_leave('orgs')});
is($ret, 0, 's3 leaves while the old directory server is down');
like($stderr, qr/WARNING:  could not drop replication slot "chash_\d+_\d+" on the directory database/,
	'and says which slot it could not drop');
is($shards[2]->safe_psql('postgres', q{
    SELECT (SELECT count(*) FROM pg_subscription) || ' ' || (SELECT count(*) FROM chash_shard_member) || ' '
        || (SELECT count(*) FROM chash_directory) || ' '
        || (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'accounts'::regclass AND tgname LIKE 'chash_guard%')}),
	'0 0 0 0', 'what is local is gone: subscription, membership, replica and guards');

# ---- re-pointed by hand, a shard meets the other history ----
my $slot2 = $shards[1]->safe_psql('postgres', 'SELECT chash_shard_slot_name()');
$standby->safe_psql('postgres', qq{SELECT pg_create_logical_replication_slot('$slot2', 'pgoutput')});
$shards[1]->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$slot2" CONNECTION '$new_conninfo'});
# The new primary refuses ownership changes while its shards may follow
# the old one (docs/shards.md, "Failover").
like($standby->safe_psql('postgres', q{SELECT message_of($$SELECT chash_pin('orgs', 'late', 's1')$$)}),
	qr/^55000: directory "orgs" was last changed by another server \/ Version ${\($lost_version - 1)} of directory "orgs" was made by server $sysid:1; this server is $sysid:2: /,
	'a pin on the promoted directory is refused: its newest version was made by the old primary');
# Forced by hand (docs/shards.md says not to: it is what this part tests),
# the new primary's first version re-uses the lost version number.
$standby->safe_psql('postgres', q{UPDATE chash_directory SET version = version WHERE name = 'orgs'});
is($standby->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'}), $lost_version,
	'the new primary re-used the lost version number');
$standby->safe_psql('postgres', q{SELECT chash_pin('orgs', 'late', 's1')});
ok($shards[1]->poll_query_until('postgres', q{SELECT diverged IS NOT NULL FROM chash_shard_status}),
	's2 records that its directory database has another history');
like($shards[1]->safe_psql('postgres', q{SELECT diverged FROM chash_shard_status}),
	qr/^Version $lost_version of directory "orgs" arrived after version $lost_version\. .*Version $lost_version of directory "orgs" was made by server $sysid:2, but this shard replicates from server $sysid:1\./,
	'naming the re-used version, and the server and timeline that made it');
like($shards[1]->safe_psql('postgres', q{SELECT message_of($$INSERT INTO accounts VALUES ('x', 1)$$)}),
	qr/^SH002: .* \/ Its replica met another directory history: /, 'a write on s2 is refused with SH002: until a DBA mends it');
is($shards[1]->safe_psql('postgres', q{SELECT refusal_code FROM chash_shard_status}), 'SH002', 'its refusal code says so');
ok($shards[1]->poll_query_until('postgres', q{SELECT count(*) = 1 FROM chash_override WHERE tenant = 'late'}),
	'the apply did not stop at the re-used version');

# ---- s1 is ahead of the new primary: re-pointing it first would lose a version ----
like($shards[0]->safe_psql('postgres', qq{SELECT message_of(\$\$SELECT chash_shard_repoint('orgs', '$new_conninfo')\$\$)}),
	qr/^55000: the directory database ".*" does not hold the history of this shard's replica \/ Version $lost_version of directory "orgs" differs here and there\./,
	'chash_shard_repoint refuses while the new primary lacks a version of the replica');
is($standby->safe_psql('postgres', qq{SELECT count(*) FROM pg_replication_slots WHERE slot_name = (SELECT '$slot2')}), '1',
	'the refused re-point left no slot behind (only s2\'s, made by hand)');

# ---- reconcile: roll the new primary forward from the newest replica ----
# Where the shards are (a change of the new primary's own, to keep).
my @servers = map { "'host=" . $_->host . ' port=' . $_->port . " dbname=postgres'" } @shards[0, 1];
$standby->safe_psql('postgres', qq{
    UPDATE chash_shard SET server = CASE shard WHEN 's1' THEN $servers[0] WHEN 's2' THEN $servers[1] END
    WHERE directory = 'orgs'});
$standby->safe_psql('postgres', q{CREATE ROLE nobody LOGIN});
is($standby->safe_psql('postgres', q{SET ROLE nobody; SELECT sqlstate_of($$SELECT * FROM chash_directory_reconcile()$$)}),
	'42501', 'only a superuser may reconcile');
# A shard it cannot read might hold the newest replica: reconcile stops.
$standby->safe_psql('postgres', q{UPDATE chash_shard SET server = 'host=/nonexistent port=1 dbname=x' WHERE shard = 's3'});
like($standby->safe_psql('postgres', q{SELECT message_of($$SELECT * FROM chash_directory_reconcile()$$)}),
	qr{^08001: could not connect to the shard "host=/nonexistent port=1 dbname=x"}, 'reconcile needs every shard: 08001 naming it');
$standby->safe_psql('postgres', q{UPDATE chash_shard SET server = NULL WHERE shard = 's3'});
my $before = $standby->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'});
my $reconciled = $standby->safe_psql('postgres', q{
    SELECT concat_ws(' | ', directory, version_before, version_after, source_shard, reapplied) FROM chash_directory_reconcile()});
like($reconciled, qr/^orgs \| $before \| ${\($before + 1)} \| "s1" of "orgs" \| 4$/,
	'chash_directory_reconcile took the lost version from s1 and applied its own changes (a pin, three shards) again');
is($standby->safe_psql('postgres', q{SELECT string_agg(tenant || ' ' || shard, ', ' ORDER BY tenant) FROM chash_override}),
	'late s1, moved s2', 'the new primary has the lost pin and its own');
cmp_ok($standby->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'}), '>', $lost_version,
	'at a version above every version used before');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM chash_directory_reconcile()}), '0', 'a second run has nothing to do');

# ---- re-point both shards: no gap, guards on throughout ----
$standby->safe_psql('postgres', q{SELECT chash_pin('orgs', 'before-repoint', 's2')});
# The slot made by hand goes first (docs/shards.md, "Failover").
$shards[1]->safe_psql('postgres', qq{ALTER SUBSCRIPTION "$slot2" DISABLE});
ok($standby->poll_query_until('postgres', qq{SELECT NOT active FROM pg_replication_slots WHERE slot_name = '$slot2'}),
	'the hand-made slot is released');
$standby->safe_psql('postgres', qq{SELECT pg_drop_replication_slot('$slot2')});
for my $i (0 .. 1)
{
	my ($r, $out, $err) = $shards[$i]->psql('postgres', qq{SELECT chash_shard_repoint('orgs', '$new_conninfo')},
		on_error_stop => 1);
	is($r, 0, 's' . ($i + 1) . ' re-pointed to the new primary') or diag($err);
	like($err, qr/NOTICE:  replication slot "chash_\d+_\d+" on the former directory database "host=\S+ port=\d+ dbname=postgres" was not dropped/,
		'it says the old slot stays') if $i == 0;
	unlike($err, qr/WARNING/, 's' . ($i + 1) . ': a re-point warns of nothing') or diag($err);
}
$standby->safe_psql('postgres', q{SELECT chash_pin('orgs', 'after-repoint', 's1')});
my $dir_state = q{SELECT (SELECT version FROM chash_directory WHERE name = 'orgs') || ': '
    || (SELECT string_agg(tenant || ' ' || shard, ', ' ORDER BY tenant) FROM chash_override) || ' / '
    || (SELECT md5(string_agg(slot || shard, ',' ORDER BY slot)) FROM chash_slot)};
my $want = $standby->safe_psql('postgres', $dir_state);
for my $i (0 .. 1)
{
	my $name = 's' . ($i + 1);
	ok($shards[$i]->poll_query_until('postgres', $dir_state, $want), "$name: the replica equals the new primary, before and after the re-point");
	is($shards[$i]->safe_psql('postgres', q{
        SELECT concat_ws(' | ', directory_timeline, diverged IS NULL, streaming, refusal IS NULL, synced, guarded_tables)
        FROM chash_shard_status}),
		'2 | t | t | t | t | {public.accounts}', "$name: the new identity recorded, streaming, vouched for, guarded");
	is(write_state($shards[$i], $name), 'no error', "$name admits writes of its tenants again");
	is($shards[$i]->safe_psql('postgres', qq{SELECT sqlstate_of(\$\$INSERT INTO accounts VALUES ('moved', 1)\$\$)}),
		$name eq 's2' ? 'no error' : 'SH001', "$name: the tenant the lost version moved routes by it");
}
is($standby->safe_psql('postgres', q{SELECT string_agg(slot_name || ' ' || active, ', ' ORDER BY slot_name) FROM pg_replication_slots}),
	join(", ", map { "$_ true" } sort map { $_->safe_psql('postgres', 'SELECT chash_shard_slot_name()') } @shards[0, 1]),
	'one active slot per shard on the new primary');

# After the re-points by hand, chash_directory_recover finds both shards
# following; the directory's newest version is the new primary's (the
# reconcile made it), so nothing is left to unlock; s3 has no server.
is($standby->safe_psql('postgres', qq{CALL chash_directory_recover('$new_conninfo');
    SELECT string_agg(concat_ws(' ', shards, action), ', ') FROM chash_directory_recovery}),
	'"s1" of "orgs" follows, "s2" of "orgs" follows, "s3" of "orgs" not checked',
	'chash_directory_recover after the re-points by hand: both follow, nothing else to do');

done_testing();
