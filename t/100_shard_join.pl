# Joining a shard (docs/shards.md): two shard databases replicate the directory
# tables from a directory database by logical replication; routing on each
# shard answers like the directory database, before and after changes and
# restarts, in new sessions and in a session whose cache was warm; the
# replica is read-only; leaving removes the subscription, its slot and the
# replica; failed joins leave nothing behind.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use Time::HiRes qw(time);

my $t0 = time;
my $dir = new_node('directory', logical => 1);
my @shards = map { new_node("shard$_") } (1, 2);
$_->safe_psql('postgres', 'CREATE EXTENSION chash') for ($dir, @shards);
create_sql_helpers($dir, @shards);

# The directory database as docs/shards.md sets it up: a replication role
# that may read the directory tables, and the publication.
my $conninfo = publish_directory($dir);
$dir->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2', 's3'], 64);
    SELECT chash_create_directory('ids', ARRAY['a', 'b'], 64, 'pg_hash', key_type => 'bigint');
    SELECT chash_pin('orgs', 'tenant-7', 's1');
    SELECT chash_pin('orgs', 'tenant-8', 's2');
    SELECT chash_add_shard('orgs', 's4');
});
# A running migration with a step done, one fenced, one copying.
my $mig = $dir->safe_psql('postgres', q{SELECT chash_migration_start('orgs')});
$dir->safe_psql('postgres', qq{
    SELECT chash_step_claim($mig); SELECT chash_step_complete($mig, 1);
    SELECT chash_step_claim($mig); SELECT chash_step_fence($mig, 2);
    SELECT chash_step_claim($mig);
});

my $routes = q{
    SELECT string_agg(concat_ws(' ', r.shard, r.source, r.slot_state, r.moving_to, chash_route('ids', i::bigint)), ','
                      ORDER BY i)
    FROM generate_series(1, 400) AS i, chash_route_explain('orgs', 'tenant-' || i) AS r};

# Waits until every directory the shard joined is synced at the directory's version.
sub wait_applied
{
	my ($node, $name) = @_;
	ok(shard_applied($dir, $node), "$name: " . $node->name . ' has applied the directory');
}

sub routes_match
{
	my ($name, @sessions) = @_;
	my $want = $dir->safe_psql('postgres', $routes);
	for my $node (@shards)
	{
		is($node->safe_psql('postgres', $routes), $want, "$name: " . $node->name . ' routes like the directory');
	}
	for my $session (@sessions)
	{
		is($session->query_safe($routes), $want, "$name: a shard session with a warm cache routes like the directory");
	}
	return $want;
}

# ---- joining ----
$shards[0]->safe_psql('postgres', qq{
    SELECT chash_shard_join('orgs', 's1', '$conninfo');
    SELECT chash_shard_join('ids', 'a', '$conninfo');
});
$shards[1]->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's2', '$conninfo')});
is($shards[0]->safe_psql('postgres', 'SELECT count(*) FROM pg_subscription'), '1',
	'one subscription serves both directories joined from the directory database');
my @slots = map { $_->safe_psql('postgres', 'SELECT chash_shard_slot_name()') } @shards;
isnt($slots[0], $slots[1], 'slot names differ per shard database');
is($dir->safe_psql('postgres', q{SELECT string_agg(slot_name || ' ' || plugin, ',' ORDER BY slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'chash%'}),
	join(',', map { "$_ pgoutput" } sort @slots), 'each shard has its pgoutput slot on the directory database');
wait_applied($_, 'after join') for @shards;
my $session = $shards[0]->background_psql('postgres');
my $before = routes_match('after join', $session);
like($before, qr/fenced s4/, 'the routes show the fenced step');
is($shards[0]->safe_psql('postgres', q{SELECT sqlstate_of($$SELECT chash_route_for_write('orgs', (SELECT 'tenant-' || i FROM generate_series(1, 400) i, chash_route_explain('orgs', 'tenant-' || i) r WHERE r.slot_state = 'fenced' LIMIT 1))$$)}),
	'40001', 'a fenced tenant gets 40001 on the shard');

# ---- changes on the directory database ----
$dir->safe_psql('postgres', qq{
    SELECT chash_pin('orgs', 'tenant-9', 's3');
    SELECT chash_unpin('orgs', 'tenant-7');
    SELECT chash_step_complete($mig, 2);
    SELECT chash_add_shard('orgs', 's5');
    UPDATE chash_slot SET shard = 'b' WHERE directory = 'ids' AND slot % 2 = 0;
});
wait_applied($_, 'after changes') for @shards;
my $after = routes_match('after changes', $session);
isnt($after, $before, 'the changes changed some routes');
is($shards[1]->safe_psql('postgres', q{SELECT count(*) FROM chash_shard WHERE directory = 'orgs'}), '5',
	'the added shard is replicated');

# ---- the replica is read-only ----
for my $statement (
	q{SELECT chash_pin('orgs', 'tenant-1', 's1')},
	q{INSERT INTO chash_override (directory, tenant, shard) VALUES ('orgs', 'x', 's1')},
	q{UPDATE chash_slot SET shard = 's1' WHERE directory = 'orgs' AND slot = 1},
	q{DELETE FROM chash_migration_step},
	q{TRUNCATE chash_override},
	q{SELECT chash_add_table('orgs', 'public.t', 'org_id')})
{
	is($shards[0]->safe_psql('postgres', qq{SELECT sqlstate_of(\$q\$$statement\$q\$)}), '25006',
		"refused on a shard: $statement");
}
like($shards[0]->safe_psql('postgres', q{SELECT message_of($$SELECT chash_unpin('orgs', 'tenant-8')$$)}),
	qr/^25006: cannot change chash_override on a shard \/ .*read-only/, 'the refusal says why');

# ---- restarts ----
$session->quit;
$dir->restart;
$shards[0]->restart;
$session = $shards[0]->background_psql('postgres');
routes_match('after restarts', $session);
$dir->safe_psql('postgres', qq{
    SELECT chash_step_complete($mig, 3);
    SELECT chash_pin('orgs', 'tenant-10', 's5');
});
wait_applied($_, 'after restarts and changes') for @shards;
my $restarted = routes_match('after restarts and changes', $session);
isnt($restarted, $after, 'the changes after the restarts changed some routes');

# ---- status ----
$dir->safe_psql('postgres', q{
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
    SELECT chash_add_table('orgs', 'public.invoices', 'org_id');
});
$shards[0]->safe_psql('postgres', q{CREATE TABLE public.accounts (org_id text, id int, PRIMARY KEY (org_id, id))});
wait_applied($_, 'after registering tables') for @shards;
my $dir_version = $dir->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'});
is($shards[0]->safe_psql('postgres', q{
    SELECT concat_ws(' | ', shard, subscription = chash_shard_slot_name(), replicated_version, synced,
                     lag >= interval '0' AND lag < interval '2 minutes', present_tables, missing_tables)
    FROM chash_shard_status WHERE directory = 'orgs'}),
	"s1 | t | $dir_version | t | t | {public.accounts} | {public.invoices}",
	'chash_shard_status: shard, subscription, version, synced, lag, tables present and missing');
is($shards[1]->safe_psql('postgres', q{SELECT missing_tables FROM chash_shard_status}),
	'{public.accounts,public.invoices}', 'the other shard lacks both tables');

# The directory database as a shard of its own directory: no subscription.
$dir->safe_psql('postgres', q{SELECT chash_shard_join('orgs', 's3', NULL)});
is($dir->safe_psql('postgres', q{SELECT concat_ws(' | ', shard, subscription IS NULL, replicated_version, synced, lag) FROM chash_shard_status}),
	"s3 | t | $dir_version | t | 00:00:00", 'the directory database joined itself without a subscription');
is($dir->safe_psql('postgres', q{SELECT sqlstate_of($$SELECT chash_pin('orgs', 'tenant-11', 's3')$$)}),
	'no error', 'the directory database still writes its directory');
wait_applied($_, 'after a write on the directory database') for @shards;
routes_match('after a write on the directory database', $session);

# ---- errors ----
my %fails = (
	"SELECT chash_shard_join('orgs', 's1', '$conninfo')" => '42710',
	"SELECT chash_shard_leave('nope')" => '42704',
);
while (my ($statement, $code) = each %fails)
{
	is($shards[0]->safe_psql('postgres', qq{SELECT sqlstate_of(\$q\$$statement\$q\$)}), $code,
		"shard1: $statement fails with $code");
}

# ---- leaving ----
$shards[0]->safe_psql('postgres', q{SELECT chash_shard_leave('ids')});
is($shards[0]->safe_psql('postgres', 'SELECT count(*) FROM pg_subscription'), '1',
	'leaving one of two directories keeps the subscription');
is($shards[0]->safe_psql('postgres', q{SELECT sqlstate_of($$SELECT chash_shard_join('ids', 'a', NULL)$$)}), '55000',
	'a shard cannot join as the directory database');
$shards[1]->safe_psql('postgres', q{SELECT chash_shard_leave('orgs')});
is($shards[1]->safe_psql('postgres', q{
    SELECT (SELECT count(*) FROM pg_subscription) || ' ' || (SELECT count(*) FROM chash_shard_member) || ' '
        || (SELECT count(*) FROM chash_directory) || ' ' || (SELECT count(*) FROM chash_slot) || ' '
        || (SELECT count(*) FROM chash_migration_step) || ' ' || (SELECT count(*) FROM chash_table)}),
	'0 0 0 0 0 0', 'leave removes the subscription, the membership and the replica');
my $slots_on_dir = q{SELECT coalesce(string_agg(slot_name, ',' ORDER BY slot_name), 'none') FROM pg_replication_slots};
is($dir->safe_psql('postgres', $slots_on_dir), $slots[0], "leave dropped the shard's slot on the directory database");
is($shards[1]->safe_psql('postgres', q{SELECT sqlstate_of($$SELECT chash_create_directory('local', ARRAY['x'], 4)$$)}),
	'no error', 'the tables are writable again after leaving');

# Failed joins leave nothing behind (shard2 holds a directory of its own now).
my $nothing_left = sub {
	my ($name) = @_;
	is($dir->safe_psql('postgres', $slots_on_dir), $slots[0], "$name: no slot left on the directory database");
	is($shards[1]->safe_psql('postgres', q{SELECT count(*) FROM pg_subscription}) . ' '
		  . $shards[1]->safe_psql('postgres', q{SELECT count(*) FROM chash_shard_member}),
		'0 0', "$name: no subscription and no membership left");
};
my $bad = 'host=/nonexistent/socket port=1 dbname=nowhere password=s3cret';
my $message = $shards[1]->safe_psql('postgres', qq{SELECT message_of(\$q\$SELECT chash_shard_join('orgs', 's2', '$bad')\$q\$)});
like($message, qr/^08001: could not connect to the directory database "host=\/nonexistent\/socket port=1 dbname=nowhere"/,
	'a bad conninfo: 08001 naming host, port and database');
unlike($message, qr/s3cret/, 'the message does not show the password');
$nothing_left->('bad conninfo');
like($shards[1]->safe_psql('postgres', qq{SELECT message_of(\$q\$SELECT chash_shard_join('nope', 's2', '$conninfo')\$q\$)}),
	qr/^42704: directory "nope" does not exist on the directory database/, 'an unknown directory: 42704');
$nothing_left->('unknown directory');
like($shards[1]->safe_psql('postgres', qq{SELECT message_of(\$q\$SELECT chash_shard_join('orgs', 'nope', '$conninfo')\$q\$)}),
	qr/^42704: shard "nope" does not exist in directory "orgs"/, 'an unknown shard: 42704');
$nothing_left->('unknown shard');
like($shards[1]->safe_psql('postgres', qq{SELECT message_of(\$q\$SELECT chash_shard_join('orgs', 's2', '$conninfo')\$q\$)}),
	qr/^55006: this database holds directories of its own/, 'a shard with directories of its own: 55006');
$nothing_left->('directories of its own');
$shards[1]->safe_psql('postgres', q{SELECT chash_drop_directory('local')});

# A join rolled back (after its slot was made) drops the slot again.
$shards[1]->safe_psql('postgres', qq{
    BEGIN;
    SELECT chash_shard_join('orgs', 's2', '$conninfo');
    ROLLBACK;
});
$nothing_left->('rolled back join');
$shards[1]->safe_psql('postgres', qq{
    CREATE FUNCTION join_then_fail() RETURNS void LANGUAGE plpgsql AS \$\$
    BEGIN
        BEGIN
            PERFORM chash_shard_join('orgs', 's2', '$conninfo');
            RAISE EXCEPTION 'changed my mind';
        EXCEPTION WHEN raise_exception THEN
            NULL;
        END;
    END
    \$\$;
    SELECT join_then_fail();
});
$nothing_left->('join in a rolled back subtransaction');

# Joining again works, and so does leaving the last directory of shard1.
$shards[1]->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's2', '$conninfo')});
wait_applied($shards[1], 'after joining again');
routes_match('after joining again');
$shards[0]->safe_psql('postgres', q{SELECT chash_shard_leave('orgs')});
$shards[1]->safe_psql('postgres', q{SELECT chash_shard_leave('orgs')});
is($dir->safe_psql('postgres', $slots_on_dir), 'none', 'no slot left once both shards left');
is($shards[0]->safe_psql('postgres', q{SELECT count(*) FROM chash_directory}), '0', 'shard1 dropped its replica');

# A directory database that does not publish (safe now: nobody subscribes).
$dir->safe_psql('postgres', q{DROP PUBLICATION chash_directory});
like($shards[1]->safe_psql('postgres', qq{SELECT message_of(\$q\$SELECT chash_shard_join('orgs', 's2', '$conninfo')\$q\$)}),
	qr/^55000: the directory database "host=\S+ port=\d+ dbname=postgres" does not publish the directory tables/,
	'a directory database without the publication: 55000');
is($dir->safe_psql('postgres', $slots_on_dir), 'none', 'no publication: no slot left on the directory database');
$dir->safe_psql('postgres', q{SELECT chash_directory_publish(); SELECT chash_directory_publish()});
is($dir->safe_psql('postgres', q{SELECT count(*) FROM pg_publication_tables WHERE pubname = 'chash_directory'}), '8',
	'chash_directory_publish() publishes the eight tables, also when run twice');

$session->quit;
note(sprintf('100_shard_join took %.1f s', time - $t0));
done_testing();
