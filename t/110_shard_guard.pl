# The guard on shards (docs/shards.md, "The guard"): a directory database
# and two shards; writes of a tenant the shard does not own are refused
# with the owner in the detail (INSERT, COPY, an UPDATE that changes the
# tenant), and so are statements whose WHERE clause names such a tenant;
# fenced tenants get 40001 on source and target; chash_shard_wait_fence
# waits for an open writer on the source; the guard stays right across
# restarts, follows tables registered or created after the join, is
# bypassed only by chash_mover members (and only by the session that
# asked for it, not through SECURITY DEFINER code), and is removed by leave.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use Time::HiRes qw(sleep);

my $dir = new_node('directory', logical => 1);
# the statement check needs the library in every session (docs/shards.md)
my @shards = map { new_node("guard$_", preload => 1) } (1, 2);
$_->safe_psql('postgres', 'CREATE EXTENSION chash') for ($dir, @shards);
create_sql_helpers($dir, @shards);

my $conninfo = publish_directory($dir);
$dir->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 64);
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
    SELECT chash_add_table('orgs', 'public.later', 'org_id');
    SELECT chash_create_directory('teams', ARRAY['s1', 's2'], 16);
    SELECT chash_add_table('teams', 'public.team_items', 'team_id');
});
for my $node (@shards)
{
	$node->safe_psql('postgres', q{
        CREATE TABLE accounts (org_id text, id bigint, v text, PRIMARY KEY (org_id, id));
        CREATE ROLE app LOGIN;
        CREATE ROLE mover LOGIN IN ROLE chash_mover;   -- CREATE EXTENSION made chash_mover
        GRANT ALL ON accounts TO app, mover;
    });
}
$shards[0]->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's1', '$conninfo')});
$shards[1]->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's2', '$conninfo')});

sub wait_applied
{
	my ($name) = @_;
	for my $node (@shards)
	{
		next unless $node->safe_psql('postgres', 'SELECT count(*) FROM chash_shard_member') > 0;
		ok(shard_applied($dir, $node), "$name: " . $node->name . ' has applied the directory');
	}
}

sub state_of
{
	my ($node, $statement, $role) = @_;
	my $set = defined $role ? "SET ROLE $role;" : '';
	return $node->safe_psql('postgres', qq{$set SELECT sqlstate_of(\$q\$$statement\$q\$)});
}

sub message
{
	my ($node, $statement) = @_;
	return $node->safe_psql('postgres', qq{SELECT message_of(\$q\$$statement\$q\$)});
}

wait_applied('after join');
is($shards[0]->safe_psql('postgres', q{SELECT guarded_tables, missing_tables FROM chash_shard_status WHERE directory = 'orgs'}),
	'{public.accounts}|{public.later}', 'the joined shard guards the registered table it has and lists the one it lacks');

# A join while the initial copy of an earlier one is applying the
# registrations: in a new shard database the first join (directory
# "blockers") is held in its initial copy, after the registration of
# "teams" was applied and before the copy commits, by a session that locks
# the table the copy must guard.  Meanwhile "teams" is joined.  Neither
# may miss the other: the join waits for the copy.
{
	$shards[0]->safe_psql('postgres', 'CREATE DATABASE race');
	$shards[0]->safe_psql('race', q{
        CREATE EXTENSION chash;
        CREATE TABLE team_items (team_id text, id bigint, PRIMARY KEY (team_id, id));
        CREATE TABLE blocker (org_id text PRIMARY KEY);
    });
	$dir->safe_psql('postgres', q{
        SELECT chash_create_directory('blockers', ARRAY['s1'], 4);
        SELECT chash_add_table('blockers', 'public.blocker', 'org_id');
    });
	my $holder = $shards[0]->background_psql('race');
	$holder->query_safe('BEGIN; LOCK blocker IN ACCESS EXCLUSIVE MODE;');
	$shards[0]->safe_psql('race', qq{SELECT chash_shard_join('blockers', 's1', '$conninfo')});
	ok($shards[0]->poll_query_until('race', q{SELECT count(*) > 0 FROM pg_locks WHERE NOT granted AND relation = 'blocker'::regclass}),
		'the initial copy waits to guard the blocked table');
	my $joiner = $shards[0]->background_psql('race');
	$joiner->query_until(qr/joining/, qq{\\echo joining\nSELECT chash_shard_join('teams', 's1', '$conninfo');\n});
	sleep(0.5);
	$holder->query_safe('COMMIT');
	$holder->quit;
	ok($shards[0]->poll_query_until('race', q{SELECT count(*) = 2 AND bool_and(synced) FROM chash_shard_status}),
		'both directories are joined and applied');
	$joiner->quit;
	is($shards[0]->safe_psql('race', q{SELECT string_agg(directory || ' ' || guarded_tables::text, ', ' ORDER BY directory) FROM chash_shard_status}),
		'blockers {public.blocker}, teams {public.team_items}',
		'a directory joined while the initial copy applies its registration guards its table');
}

# A tenant of each shard.
my ($t1, $t2) = map {
	$dir->safe_psql('postgres', qq{SELECT t FROM (SELECT 'org-' || i AS t FROM generate_series(1, 1000) i) x
                                   WHERE chash_route('orgs', t) = '$_' ORDER BY t LIMIT 1})
} ('s1', 's2');
my $version = $dir->safe_psql('postgres', q{SELECT version FROM chash_directory WHERE name = 'orgs'});

# ---- misrouted writes ----
is(state_of($shards[0], qq{INSERT INTO accounts VALUES ('$t1', 1, 'a')}, 'app'), 'no error',
	'a tenant of this shard is written (by a role without rights on the directory tables)');
like(message($shards[0], qq{INSERT INTO accounts VALUES ('$t2', 1, 'a')}),
	qr/^SH001: tenant "$t2" of directory "orgs" is not on this shard \/ It belongs to shard "s2" at directory version $version; this database is shard "s1"\.$/,
	'a misrouted INSERT is refused with the owner and the version');
is(state_of($shards[0], qq{COPY accounts FROM PROGRAM 'printf "$t2\\t2\\tb\\n"'}), 'SH001', 'a misrouted COPY is refused');
is(state_of($shards[0], qq{COPY accounts FROM PROGRAM 'printf "$t1\\t2\\tb\\n"'}), 'no error', 'a routed COPY writes');
is(state_of($shards[0], qq{UPDATE accounts SET org_id = '$t2' WHERE id = 1}), 'SH001',
	'an UPDATE that moves a row to a tenant of another shard is refused');
is(state_of($shards[0], qq{UPDATE accounts SET v = 'b' WHERE id = 1}), 'no error', 'an UPDATE of a routed row writes');
is(state_of($shards[1], qq{INSERT INTO accounts VALUES ('$t2', 1, 'a')}), 'no error', 'the other shard writes its tenant');
is(state_of($shards[1], qq{DELETE FROM accounts WHERE org_id = '$t2'}), 'no error', 'and deletes it');
$shards[1]->safe_psql('postgres', qq{INSERT INTO accounts VALUES ('$t2', 1, 'a')});
# A row left behind (as by a crash of the mover) cannot be deleted by a stale client.
$shards[1]->safe_psql('postgres', qq{SET chash.bypass_guard = on; INSERT INTO accounts VALUES ('$t1', 9, 'stray')});
is(state_of($shards[1], qq{DELETE FROM accounts WHERE id = 9}), 'SH001', 'a DELETE of a row of another shard is refused');
is(state_of($shards[0], qq{INSERT INTO accounts VALUES (NULL, 3, 'a')}), '23502', 'a NULL tenant is refused');

# ---- stale statements that match no row ----
for my $case (
	[ 'UPDATE with a constant', qq{UPDATE accounts SET v = 'x' WHERE org_id = '$t2' AND id = 5} ],
	[ 'DELETE with a constant', qq{DELETE FROM accounts WHERE id = 5 AND org_id = '$t2'} ],
	[ 'SELECT with a constant', qq{SELECT count(*) FROM accounts WHERE org_id = '$t2'} ],
	[ 'SELECT with the constant on the left', qq{SELECT count(*) FROM accounts WHERE '$t2' = org_id} ])
{
	is(state_of($shards[0], $case->[1]), 'SH001', "stale $case->[0] is refused");
}
is(state_of($shards[0], qq{SELECT count(*) FROM accounts WHERE org_id = '$t1'}), 'no error', 'a routed SELECT runs');
is(state_of($shards[0], qq{SELECT count(*) FROM accounts WHERE org_id = '$t2' OR id = 5}), 'no error',
	'a statement that fixes no tenant is not checked');
is($shards[0]->psql('postgres', qq{PREPARE u(text) AS UPDATE accounts SET v = 'x' WHERE org_id = \$1 AND id = 5;
    SET plan_cache_mode = force_generic_plan; EXECUTE u('$t1'); EXECUTE u('$t2');}), 3,
	'a prepared UPDATE with the tenant as a parameter is refused (generic plan)');
my ($rc, $out, $err) = $shards[0]->psql('postgres', qq{PREPARE s(text) AS SELECT count(*) FROM accounts WHERE org_id = \$1;
    EXECUTE s('$t1'); EXECUTE s('$t2');});
like($err, qr/ERROR:  tenant "$t2" of directory "orgs" is not on this shard/, 'a prepared SELECT with a stale tenant parameter is refused');
is($out, '2', 'the same prepared SELECT of a routed tenant ran');
is($shards[0]->safe_psql('postgres', qq{SET chash.tenant = '$t2'; SELECT sqlstate_of('SELECT count(*) FROM accounts')}),
	'SH001', 'with chash.tenant declared, every statement on a guarded table is checked');
is($shards[0]->safe_psql('postgres', qq{SET chash.tenant = '$t1'; SELECT sqlstate_of('SELECT count(*) FROM accounts')}),
	'no error', 'a declared tenant of this shard runs');

# ---- bypass ----
is($shards[0]->safe_psql('postgres', qq{SET ROLE mover; SET chash.bypass_guard = on;
    SELECT sqlstate_of(\$\$INSERT INTO accounts VALUES ('$t2', 7, 'moved')\$\$)}), 'no error',
	'a chash_mover member bypasses the guard');
like($shards[0]->safe_psql('postgres', qq{SET ROLE app; SET chash.bypass_guard = on;
    SELECT message_of(\$\$INSERT INTO accounts VALUES ('$t1', 8, 'x')\$\$)}),
	qr/^42501: permission denied to bypass the guard/, 'anybody else who sets chash.bypass_guard is refused');
$shards[0]->safe_psql('postgres', qq{SET chash.bypass_guard = on; DELETE FROM accounts WHERE org_id = '$t2'});

# The bypass belongs to the session that asked for it: a role that may not
# bypass gains nothing from a superuser's SECURITY DEFINER function,
# trigger or procedure, nor from a function's own SET clause; and the
# mover's session does not lend it to another role's code.
$shards[0]->safe_psql('postgres', qq{
    CREATE FUNCTION definer_insert(id bigint) RETURNS void LANGUAGE sql SECURITY DEFINER
        SET search_path = public, pg_temp
        AS \$\$ INSERT INTO accounts VALUES ('$t2', id, 'definer') \$\$;
    CREATE FUNCTION definer_set_insert(id bigint) RETURNS void LANGUAGE sql SECURITY DEFINER
        SET search_path = public, pg_temp SET chash.bypass_guard = on
        AS \$\$ INSERT INTO accounts VALUES ('$t2', id, 'definer') \$\$;
    CREATE PROCEDURE definer_proc(id bigint) LANGUAGE sql SECURITY DEFINER
        SET search_path = public, pg_temp
        AS \$\$ INSERT INTO accounts VALUES ('$t2', id, 'procedure') \$\$;
    CREATE TABLE journal (id bigint);
    GRANT ALL ON journal TO app, mover;
    CREATE FUNCTION journal_copy() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = public, pg_temp
        AS \$\$ BEGIN INSERT INTO accounts VALUES ('$t2', NEW.id, 'trigger'); RETURN NEW; END \$\$;
    CREATE TRIGGER journal_copy AFTER INSERT ON journal FOR EACH ROW EXECUTE FUNCTION journal_copy();
    CREATE FUNCTION app_insert(id bigint) RETURNS void LANGUAGE sql SECURITY DEFINER
        SET search_path = public, pg_temp
        AS \$\$ INSERT INTO accounts VALUES ('$t2', id, 'app') \$\$;
    ALTER FUNCTION app_insert(bigint) OWNER TO app;
});
sub bypass_state
{
	my ($connect_as, $setup, $statement) = @_;
	return $shards[0]->safe_psql('postgres', qq{$setup; SELECT message_of(\$\$$statement\$\$)},
		extra_params => [ '-U', $connect_as ]);
}
for my $case (
	[ 'a superuser\'s SECURITY DEFINER function', 'SELECT definer_insert(20)' ],
	[ 'a superuser\'s SECURITY DEFINER procedure', 'CALL definer_proc(21)' ],
	[ 'a superuser\'s SECURITY DEFINER trigger', 'INSERT INTO journal VALUES (22)' ])
{
	like(bypass_state('app', 'SET chash.bypass_guard = on', $case->[1]),
		qr/^42501: permission denied to bypass the guard \/ Role "app" is neither a superuser nor a member of role "chash_mover"/,
		"a role logged in without the privilege, bypass set, gains nothing from $case->[0]");
	like(bypass_state('postgres', 'SET ROLE app; SET chash.bypass_guard = on', $case->[1]),
		qr/^42501: .* Role "app"/, "nor does a role that set it after SET ROLE, through $case->[0]");
}
like(bypass_state('app', 'SET chash.bypass_guard = off', 'SELECT definer_set_insert(23)'),
	qr/^42501: .* Role "app"/, 'a superuser\'s function that sets the bypass itself does not lend it to its caller');
like(bypass_state('postgres', 'SET chash.bypass_guard = on; SET ROLE app', "INSERT INTO accounts VALUES ('$t2', 24, 'x')"),
	qr/^42501: .* Role "app"/, 'a bypass set by a superuser does not hold after SET ROLE to a role without the privilege');
like(bypass_state('mover', 'SET chash.bypass_guard = on', 'SELECT app_insert(25)'),
	qr/^42501: .* Role "app"/, 'the mover\'s bypass does not hold in another role\'s SECURITY DEFINER function');
is(bypass_state('mover', 'SET chash.bypass_guard = on', 'SELECT definer_insert(26)'), 'no error', 'the mover (logged in as itself) writes past the guard through a superuser\'s function');
is(bypass_state('mover', 'SET chash.bypass_guard = on', 'CALL definer_proc(27)'), 'no error',
	'and through a superuser\'s procedure');
is($shards[0]->safe_psql('postgres', qq{SET chash.bypass_guard = on; SELECT string_agg(id::text, ',' ORDER BY id) FROM accounts WHERE org_id = '$t2'}),
	'26,27', 'only the mover\'s writes got past the guard');
$shards[0]->safe_psql('postgres', qq{SET chash.bypass_guard = on; DELETE FROM accounts WHERE org_id = '$t2'});

# ---- a step in flight: copying, fenced, wait_fence ----
my $mig = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', '$t1', 's2')});
$dir->safe_psql('postgres', qq{SELECT chash_step_claim($mig)});
wait_applied('step copying');
is(state_of($shards[0], qq{INSERT INTO accounts VALUES ('$t1', 4, 'a')}), 'no error', 'copying: the source writes');
# A session that stays: its guard keeps the latest state across
# transactions and must hear of the fence the subscription applies.
my $steady = $shards[0]->background_psql('postgres');
is($steady->query_safe(qq{SELECT sqlstate_of(\$\$INSERT INTO accounts VALUES ('$t1', 40, 'a')\$\$)}), 'no error',
	'copying: a session that stays writes on the source');
like(message($shards[1], qq{INSERT INTO accounts VALUES ('$t1', 4, 'a')}),
	qr/^SH001: .* It belongs to shard "s1" at directory version \d+; step 1 of migration $mig is copying it to this shard "s2"\.$/,
	'copying: the target refuses, naming the owner');
is(state_of($shards[0], 'TRUNCATE accounts'), '55006', 'TRUNCATE of a guarded table while a step moves its rows: 55006');

my $writer = $shards[0]->background_psql('postgres');
$writer->query_safe(qq{BEGIN; INSERT INTO accounts VALUES ('$t1', 5, 'open')});
$dir->safe_psql('postgres', qq{SELECT chash_step_fence($mig, 1)});
my $waiter = $shards[0]->background_psql('postgres');
$waiter->query_until(qr/waiting/, qq{\\echo waiting\nSELECT 'wait_fence returned' FROM chash_shard_wait_fence('orgs', $mig, 1);\n});
# Polled for 30 s at most: the sessions' own timers must outlive a failure.
my $waiting = 0;
for (1 .. 300)
{
	$waiting = $shards[0]->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND query LIKE '%chash_shard_wait_fence%'});
	last if $waiting;
	sleep 0.1;
}
is($waiting, 1, 'chash_shard_wait_fence waits for the open writer on the source');
is(state_of($shards[0], qq{INSERT INTO accounts VALUES ('$t1', 6, 'a')}), '40001', 'fenced: the source refuses with 40001');
is($steady->query_safe(qq{SELECT sqlstate_of(\$\$INSERT INTO accounts VALUES ('$t1', 41, 'a')\$\$)}), '40001',
	'fenced: the session that stayed is refused too');
$steady->quit;
is(state_of($shards[1], qq{INSERT INTO accounts VALUES ('$t1', 6, 'a')}), '40001', 'fenced: the target refuses with 40001');
is(state_of($shards[0], qq{SELECT count(*) FROM accounts WHERE org_id = '$t1'}), 'no error', 'fenced: reads run on the source');
is(state_of($shards[0], qq{DELETE FROM accounts WHERE org_id = '$t1' AND id = 99}), '40001', 'fenced: a stale DELETE gets 40001');
$writer->query_safe('COMMIT');
like($waiter->query_safe(q{SELECT 'next'}), qr/wait_fence returned/, 'chash_shard_wait_fence returns when the writer ends');
$writer->quit;
$waiter->quit;
is($shards[0]->safe_psql('postgres', qq{SELECT count(*) FROM accounts WHERE org_id = '$t1' AND id = 5}), '1',
	'the open writer committed its row');

# ---- restarts ----
$dir->restart;
$shards[0]->restart;
is(state_of($shards[0], qq{INSERT INTO accounts VALUES ('$t1', 6, 'a')}), '40001', 'after restarts: still fenced');
is(state_of($shards[0], qq{INSERT INTO accounts VALUES ('$t2', 6, 'a')}), 'SH001', 'after restarts: still misrouted');
$dir->safe_psql('postgres', qq{SELECT chash_step_complete($mig, 1)});
wait_applied('after restarts and the completion');
like(message($shards[0], qq{INSERT INTO accounts VALUES ('$t1', 6, 'a')}), qr/^SH001: .*belongs to shard "s2"/,
	'after the completion the source refuses the moved tenant');
is(state_of($shards[1], qq{INSERT INTO accounts VALUES ('$t1', 6, 'a')}), 'no error', 'and the target writes it');
is(state_of($shards[0], qq{UPDATE accounts SET v = 'x' WHERE org_id = '$t1'}), 'SH001',
	'a stale UPDATE of the moved tenant on the source is refused');

# ---- tables registered or created after the join ----
$shards[0]->safe_psql('postgres', q{CREATE TABLE later (org_id text PRIMARY KEY)});
is(state_of($shards[0], qq{INSERT INTO later VALUES ('$t2')}), 'SH001', 'a registered table created after the join is guarded');
$shards[1]->safe_psql('postgres', q{CREATE TABLE notes (org_id text, n int PRIMARY KEY)});
$dir->safe_psql('postgres', q{SELECT chash_add_table('orgs', 'public.notes', 'org_id')});
wait_applied('after a registration');
ok($shards[1]->poll_query_until('postgres', q{SELECT guarded_tables = '{public.accounts,public.notes}' FROM chash_shard_status WHERE directory = 'orgs'}),
	'a table registered after the join is guarded without a manual step');
is(state_of($shards[1], qq{INSERT INTO notes VALUES ('$t2', 1)}), 'no error', 'its tenant is written');
is($shards[0]->safe_psql('postgres', q{SELECT missing_tables FROM chash_shard_status WHERE directory = 'orgs'}), '{public.notes}',
	'the status view shows the registered table missing here');
$dir->safe_psql('postgres', q{SELECT chash_drop_table('orgs', 'public.notes')});
wait_applied('after unregistering');
ok($shards[1]->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pg_trigger WHERE tgrelid = 'notes'::regclass}),
	'unregistering a table removes its guard');
my $t3 = $dir->safe_psql('postgres', q{SELECT t FROM (SELECT 'org-' || i AS t FROM generate_series(1, 1000) i) x
                                         WHERE chash_route('orgs', t) = 's1' ORDER BY t LIMIT 1});
is(state_of($shards[1], qq{INSERT INTO notes VALUES ('$t3', 2)}), 'no error', 'and its writes are no longer checked');

# ---- removing a shard while shard databases replicate the directory ----
# The directory database cannot tell which shard a replicating database
# joined as (docs/directory.md, "Removing a shard"): while any does, only a
# retired shard is removed.
$dir->safe_psql('postgres', q{SELECT chash_add_shard('orgs', 's9')});
like($dir->safe_psql('postgres', q{SELECT message_of($$SELECT chash_remove_shard('orgs', 's9')$$)}),
	qr/^55006: shard "s9" of directory "orgs" may still be joined by a shard database \/ Shard databases replicating this directory database: 3\./,
	'a shard that is not retired is not removed while shard databases replicate the directory');
$dir->safe_psql('postgres', q{SELECT chash_set_shard('orgs', 's9', state => 'retired'); SELECT chash_remove_shard('orgs', 's9')});
is($dir->safe_psql('postgres', q{SELECT count(*) FROM chash_shard WHERE directory = 'orgs' AND shard = 's9'}), '0',
	'a retired shard is removed');

# ---- leave ----
$shards[1]->safe_psql('postgres', q{SELECT chash_shard_leave('orgs')});
is($shards[1]->safe_psql('postgres', q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'chash_guard%'}), '0',
	'leave removes the guards');
is(state_of($shards[1], qq{INSERT INTO accounts VALUES ('$t3', 77, 'a')}), 'no error', 'and writes are no longer checked');

done_testing();
