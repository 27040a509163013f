# A promoted directory database makes no ownership change until every
# shard follows it (docs/shards.md, "Failover"), with chash's default
# settings (no chash.replica_max_silence).  A directory primary with a
# caught-up streaming standby and two shards; a migration waits for its
# mover.  The primary stops and the standby is promoted: a pin there is
# refused (55000, naming the recovery), so a client that routed before it
# and writes on the shard that still follows the dead primary writes
# where the directory routes the tenant; chash_move stops at once.  One
# CALL chash_directory_recover(...) brings every shard: with one shard
# down it reports it and the directory stays locked, and once the shard is
# back a second call re-points it and unlocks; then the pin is admitted,
# the shards follow it, a third call changes nothing, and the migration
# finishes.
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

my $primary = new_node('dir_primary', logical => 1);
my %shard = map { $_ => new_node($_, preload => 1) } qw(s1 s2);
accounts_directory($primary, \%shard, slots => 16, join => 1);
create_sql_helpers($primary, values %shard);
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('dir_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

my @on_s1 = split /\n/, $primary->safe_psql('postgres', q{
    SELECT t FROM (SELECT 'org-' || i AS t FROM generate_series(1, 1000) i) x
     WHERE chash_route('orgs', t) = 's1' LIMIT 3});
my ($whale, $moving, $fresh) = @on_s1;
$shard{s1}->safe_psql('postgres', qq{INSERT INTO accounts SELECT '$moving', i, 'base' FROM generate_series(1, 5) i});
my $m = $primary->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$moving', 's2')});
ok(shard_applied($primary, $_), $_->name . ' applied the directory') for values %shard;
$primary->wait_for_catchup($standby);

# ---- the primary stops; the caught-up standby is promoted ----
$primary->stop('fast');
$standby->promote;
my $newconn = 'host=' . $standby->host . ' port=' . $standby->port . ' dbname=postgres user=chash_replicator';
my $me = $standby->safe_psql('postgres', 'SELECT chash_server_identity()');
like($me, qr/^\d+:2$/, 'the promoted standby is on timeline 2');

my ($rc, $out, $err) = $standby->psql('postgres', qq{SELECT chash_pin('orgs', '$whale', 's2')});
like($err, qr/ERROR:  directory "orgs" was last changed by another server\nDETAIL:  Version \d+ of directory "orgs" was made by server \d+:1; this server is \Q$me\E: it was promoted or restored since, and its shards may still follow the other one\.\nHINT:  Run CALL chash_directory_recover\(/,
	'a pin on the promoted directory is refused, naming both servers and the recovery');
for my $change (qq{SELECT chash_set_shard('orgs', 's2', weight => 2)},
	q{UPDATE chash_slot SET shard = 's2' WHERE directory = 'orgs' AND slot = 0},
	q{SELECT chash_add_shard('orgs', 's3')},
	qq{SELECT chash_migration_cancel($m)},
	q{SELECT chash_drop_table('orgs', 'public.accounts')},
	q{TRUNCATE chash_override})
{
	is($standby->safe_psql('postgres', qq{SELECT sqlstate_of(\$\$$change\$\$)}), '55000', "refused with 55000: $change");
}
is($standby->safe_psql('postgres', qq{SELECT chash_route('orgs', '$whale')}), 's1', 'routing goes on: the tenant routes to s1');

# The client that routed before the pin writes the tenant on s1, which
# still follows the dead primary and admits it (no bound on its silence):
# the row is where the directory routes it.
is($shard{s1}->safe_psql('postgres', qq{SELECT sqlstate_of(\$\$INSERT INTO accounts VALUES ('$whale', 1, 'stale')\$\$)}),
	'no error', 's1 admits the stale client\'s write');

# ---- the mover stops at once against the locked directory ----
sub mover
{
	my ($out, $err) = ('', '');
	my $t0 = time;
	IPC::Run::run([ 'chash_move', '--lease', '2', '--directory', 'orgs', $standby->connstr('postgres') ],
		'>', \$out, '2>', \$err);
	my $status = $? & 127 ? 'signal ' . ($? & 127) : $? >> 8;
	note "chash_move: $status\n$err";
	return ($status, $err, time - $t0);
}
my ($status, $merr, $took) = mover();
is($status, 1, 'chash_move on the locked directory fails');
like($merr, qr/directory "orgs" was last changed by another server.*chash_directory_recover/s, 'saying why and what to do');
unlike($merr, qr/giving up after/, 'without retrying');
ok($took < 10, sprintf('at once (%.1f s)', $took));
is($standby->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), 'pending', 'nothing was claimed');

# ---- recovery with s2 down: reported, still locked ----
my $shardconn = 'host=' . $shard{s2}->host . ' port=' . $shard{s2}->port . ' dbname=postgres';
$standby->safe_psql('postgres', q{CREATE ROLE chash_nobody LOGIN});
my $nobody = password_role($standby, 'chash_nobody');
($rc, $out, $err) = as_role($standby, $nobody, qq{CALL chash_directory_recover('$newconn')});
like($err, qr/ERROR:  permission denied to recover a directory/, 'only a superuser may recover a directory');

$shard{s2}->stop('fast');
my $report = q{SELECT concat_ws(' | ', shards, action) FROM chash_directory_recovery
                 ORDER BY action IN ('unlocked', 'locked'), shards NULLS FIRST};
# the report is a temporary table: read in the session that made it
my $recover = sub { $standby->safe_psql('postgres', qq{CALL chash_directory_recover('$newconn'); $report; @{[ $_[0] // "" ]}}) };
my @first = split /\n/, $recover->(q{SELECT detail FROM chash_directory_recovery WHERE action = 'not reconciled'});
is(join("\n", @first[0 .. 3]), join("\n",
		'not reconciled',
		'"s1" of "orgs" | repointed',
		'"s2" of "orgs" | unreachable',
		'locked'),
	'with s2 down: s1 re-pointed, s2 unreachable, the directory still locked');
like($first[4], qr/^chash_directory_reconcile failed: 08001: could not connect to the shard "\Q$shardconn\E"/,
	'the reconcile says which shard it could not read');
is($standby->safe_psql('postgres', qq{SELECT sqlstate_of(\$\$SELECT chash_pin('orgs', '$whale', 's2')\$\$)}), '55000',
	'the pin is still refused');
ok($shard{s1}->poll_query_until('postgres', q{SELECT directory_timeline = 2 AND streaming AND refusal IS NULL FROM chash_shard_status}),
	's1 follows the promoted directory');

# ---- s2 is back: a second call re-points it and unlocks ----
$shard{s2}->start;
is($recover->(), join("\n",
		'"s1" of "orgs" | follows',
		'"s2" of "orgs" | repointed',
		'directory "orgs" | unlocked'),
	'once s2 is back: s1 follows, s2 re-pointed, the directory unlocked');
is($standby->safe_psql('postgres', qq{SELECT sqlstate_of(\$\$SELECT chash_pin('orgs', '$fresh', 's2')\$\$)}), 'no error',
	'a pin is admitted now');
my $version = $standby->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'});
ok(shard_applied($standby, $_), $_->name . ' applied the pin') for values %shard;
is($shard{s1}->safe_psql('postgres', qq{SELECT sqlstate_of(\$\$INSERT INTO accounts VALUES ('$fresh', 1, 'late')\$\$)}),
	'SH001', 's1 refuses the pinned tenant: it follows the new primary');
is($shard{s2}->safe_psql('postgres', qq{SELECT sqlstate_of(\$\$INSERT INTO accounts VALUES ('$fresh', 1, 'new')\$\$)}),
	'no error', 's2 admits it');
is($standby->safe_psql('postgres', qq{SELECT chash_route('orgs', '$whale')}) . ' '
	. $shard{s1}->safe_psql('postgres', qq{SELECT string_agg(payload, ',') FROM accounts WHERE org_id = '$whale'}),
	's1 stale', 'the stale client\'s row is on the shard the directory routes its tenant to');

# ---- a third call changes nothing ----
is($recover->(), join("\n", '"s1" of "orgs" | follows', '"s2" of "orgs" | follows'),
	'a third call: every shard follows, nothing else');
is($standby->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'}), $version,
	'and the directory is at the same version');

# ---- the migration finishes on the new primary ----
($status, $merr) = mover();
is($status, 0, 'chash_move finishes the migration');
is($standby->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', 'the migration is done');
is(join(' ', map { $shard{$_}->safe_psql('postgres', qq{SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = '$moving'}) } qw(s1 s2)),
	'0 5', 'the moved tenant\'s rows are on s2 only');

$_->stop('fast') for $standby, values %shard;
done_testing();
