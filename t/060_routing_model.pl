# A randomized model test of routing while directories change (docs/directory.md,
# "Routing cache" and "Changes"), with a fixed seed.  Three sessions make
# random changes -- through the functions (pins, shards, migrations and
# their steps) and by direct DML -- in transactions of READ COMMITTED or
# REPEATABLE READ, with savepoints rolled back or released, open cursors,
# commits and rollbacks.  After every statement each session checks, in
# one statement (one snapshot), that chash_route and chash_route_explain
# answer for a sample of tenants what the SQL lookup below answers from
# the tables.  An observer keeps the snapshot of every committed version
# and checks that chash_directory_changes(d, v) applied to the snapshot at
# v gives the current snapshot.  Most of these statements find their
# cached state older than the tables and catch up from the history
# (src/directory_apply.c); a session that changed a directory in its
# transaction loads it whole.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $seed = $ENV{CHASH_MODEL_SEED} // 20261201;
my $ticks = $ENV{CHASH_MODEL_TICKS} // 4000;
srand($seed);

my $node = PostgreSQL::Test::Cluster->new('model');
$node->init;
# JIT would compile the checks' queries (their estimates are large) for
# longer than they run
$node->append_conf('postgresql.conf', "max_connections = 20\njit = off\n");
$node->start;
$node->safe_psql('postgres', q{
    CREATE EXTENSION chash;
    SELECT chash_create_directory('m', ARRAY['s1', 's2', 's3', 's4'], 64);
    SELECT chash_create_directory('n', ARRAY['a', 'b'], 32, 'jump');
    SELECT chash_pin('m', 't1', 's2');
    SELECT chash_pin('n', 't2', 'b');

    -- The rules of SPEC 3 written as a SELECT: an override beats the slot's
    -- owner; the step in flight that moves a tenant is its tenant step if
    -- it has one, else (unless pinned) its slot's step; of several, the
    -- lowest migration, then the lowest step.  The answer of route and
    -- route_explain is compared column by column; NULL: they agree.
    CREATE FUNCTION route_mismatches() RETURNS text LANGUAGE sql STABLE AS $$
        WITH ten AS (
            SELECT d.name AS dir, 't' || g AS tenant,
                   chash_tenant_slot('t' || g, d.slot_count, d.slot_method) AS slot
              FROM chash_directory d, generate_series(0, 29) g
             WHERE d.name IN ('m', 'n')),
        want AS (
            SELECT x.dir, x.tenant, x.slot, coalesce(o.shard, s.shard) AS shard,
                   CASE WHEN o.shard IS NULL THEN 'slot' ELSE 'override' END AS source,
                   st.state AS slot_state, st.to_shard AS moving_to, st.migration
              FROM ten x
              LEFT JOIN chash_override o ON o.directory = x.dir AND o.tenant = x.tenant
              LEFT JOIN chash_slot s ON s.directory = x.dir AND s.slot = x.slot
              LEFT JOIN LATERAL (
                  SELECT ms.state, ms.to_shard, ms.migration
                    FROM chash_migration_step ms
                    JOIN chash_migration mg ON mg.id = ms.migration
                   WHERE mg.directory = x.dir AND mg.status = 'running'
                     AND ms.state IN ('copying', 'fenced')
                     AND (ms.tenant = x.tenant OR (ms.slot = x.slot AND o.shard IS NULL))
                   ORDER BY ms.tenant IS NULL, ms.migration, ms.step
                   LIMIT 1) st ON true),
        got AS (
            SELECT x.dir, x.tenant, chash_route(x.dir, x.tenant) AS route, e.slot, e.shard, e.source,
                   e.slot_state, e.moving_to, e.migration
              FROM ten x, LATERAL chash_route_explain(x.dir, x.tenant) e)
        SELECT count(*) || ' tenants' || coalesce(': ' || string_agg(
                   format('%s/%s routes %s (%s %s %s %s %s), the tables say %s (%s %s %s %s %s)',
                          w.dir, w.tenant, g.route, g.shard, g.source, g.slot_state, g.moving_to,
                          g.migration, w.shard, w.shard, w.source, w.slot_state, w.moving_to,
                          w.migration), '; ')
                   FILTER (WHERE (g.route, g.shard, g.source, g.slot, g.slot_state, g.moving_to, g.migration)
                       IS DISTINCT FROM (w.shard, w.shard, w.source, w.slot, w.slot_state, w.moving_to,
                                         w.migration)), '')
          FROM want w JOIN got g ON g.dir = w.dir AND g.tenant = w.tenant
    $$;

    -- Applies a changes document to a snapshot, as a client would.
    CREATE FUNCTION apply_changes(snap jsonb, ch jsonb) RETURNS jsonb LANGUAGE sql AS $$
        WITH old AS (SELECT g AS slot, r ->> 2 AS shard
                       FROM jsonb_array_elements(snap -> 'slots') r,
                            generate_series((r ->> 0)::int, (r ->> 1)::int) g),
             new AS (SELECT g AS slot, r ->> 2 AS shard
                       FROM jsonb_array_elements(ch -> 'slots') r,
                            generate_series((r ->> 0)::int, (r ->> 1)::int) g),
             merged AS (SELECT o.slot, coalesce(n.shard, o.shard) AS shard
                          FROM old o LEFT JOIN new n USING (slot)),
             runs AS (SELECT min(slot) AS first, max(slot) AS last, shard
                        FROM (SELECT slot, shard, slot - row_number() OVER (PARTITION BY shard ORDER BY slot) AS run
                                FROM merged) x
                       GROUP BY shard, run)
        SELECT snap || jsonb_build_object(
            'version', ch -> 'version',
            'shards', coalesce(ch -> 'shards', snap -> 'shards'),
            'steps', coalesce(ch -> 'steps', snap -> 'steps'),
            'slots', (SELECT coalesce(jsonb_agg(jsonb_build_array(first, last, shard) ORDER BY first), '[]') FROM runs),
            'overrides', (SELECT coalesce(jsonb_object_agg(key, value), '{}')
                            FROM (SELECT key, value FROM jsonb_each(snap -> 'overrides')
                                   WHERE NOT (ch -> 'overrides') ? key
                                  UNION ALL
                                  SELECT key, value FROM jsonb_each(ch -> 'overrides')
                                   WHERE value <> 'null') o))
    $$;
    CREATE TABLE seen (dir text, version bigint, snap jsonb, PRIMARY KEY (dir, version));
});

# Sessions: errors are part of the game (a step in the wrong state, a
# lock held by another session), so psql goes on after them, rolling back
# only the failed statement inside a transaction; lock_timeout keeps one
# session from waiting for another, which this driver would never let go.
my @sessions;
for my $i (0 .. 2)
{
	my $s = $node->background_psql('postgres', on_error_stop => 0);
	$s->set_query_timer_restart;
	$s->query_safe(q{\set ON_ERROR_ROLLBACK on});
	$s->query_safe(q{SET client_min_messages = warning; SET lock_timeout = '30ms'});
	push @sessions, { psql => $s, name => "s$i", in_xact => 0, iso => '',
		cursors => [], savepoints => 0, wrote => 0 };
}
my $observer = $node->background_psql('postgres', on_error_stop => 0);
$observer->set_query_timer_restart;
$observer->query_safe(q{SET client_min_messages = warning; SELECT setseed(0.5)});

# Runs a statement; returns (output, ok) and forgets the error text.
sub run
{
	my ($psql, $sql) = @_;
	my ($out, $err) = $psql->query($sql);
	my $stderr = $psql->{stderr};
	$psql->{stderr} = '';
	return ($out, !$err, $stderr);
}

sub pick { return $_[ int(rand(@_)) ] }

my @tenants = map { "t$_" } 0 .. 29;

# One random change of a directory table, as SQL.
sub random_change
{
	my ($alone) = @_;
	my $dir = rand() < 0.75 ? 'm' : 'n';
	my @shards = $dir eq 'm' ? qw(s1 s2 s3 s4 s5) : qw(a b c);
	my $t = pick(@tenants);
	my $sh = pick(@shards);
	my $running = "(SELECT id FROM chash_migration WHERE directory = '$dir' AND status = 'running')";
	my $r = rand();
	return "SELECT chash_pin('$dir', '$t', '$sh')" if $r < 0.12;
	return "SELECT chash_unpin('$dir', '$t')" if $r < 0.18;
	return "INSERT INTO chash_override (directory, tenant, shard) VALUES ('$dir', '$t', '$sh')
	        ON CONFLICT (directory, tenant) DO UPDATE SET shard = excluded.shard" if $r < 0.23;
	return "DELETE FROM chash_override WHERE directory = '$dir' AND tenant IN ('$t', '" . pick(@tenants) . "')"
	  if $r < 0.28;
	if ($r < 0.38)
	{
		my $a = int(rand($dir eq 'm' ? 64 : 32));
		my $b = $a + int(rand(4));
		return "UPDATE chash_slot SET shard = '$sh' WHERE directory = '$dir' AND slot BETWEEN $a AND $b";
	}
	return "SELECT chash_set_shard('$dir', '$sh', weight => " . (1 + int(rand(4))) . ")" if $r < 0.42;
	return "SELECT chash_set_shard('$dir', '$sh', state => '" . pick('active', 'draining') . "')"
	  if $r < 0.46;
	return "SELECT chash_add_shard('$dir', '$sh')" if $r < 0.49;
	return "DELETE FROM chash_shard WHERE directory = '$dir' AND shard = '$sh'" if $r < 0.51;
	return "SELECT chash_migration_start('$dir', 'slots', " . (2 + int(rand(6))) . ")" if $r < 0.57;
	return "SELECT chash_migration_move_tenant('$dir', '$t', '$sh')" if $r < 0.60;
	return "SELECT * FROM chash_step_claim($running)" if $r < 0.70;
	my $order = rand() < 0.5 ? 'ASC' : 'DESC';
	my $step = sub {
		my ($state) = @_;
		return "FROM chash_migration_step WHERE migration = $running AND state = '$state'
		        ORDER BY step $order LIMIT 1";
	};
	return "SELECT chash_step_fence(migration, step) " . $step->('copying') if $r < 0.78;
	return "SELECT chash_step_complete(migration, step) " . $step->(pick('fenced', 'copying')) if $r < 0.88;
	return "SELECT chash_step_release(migration, step) " . $step->('copying') if $r < 0.91;
	return "UPDATE chash_migration_step SET state = 'fenced' WHERE (migration, step) IN (SELECT migration, step "
	  . $step->('copying') . ")" if $r < 0.94;
	return "SELECT chash_migration_cancel($running)" if $r < 0.96;
	# a version written by hand, onto a hundred: the history is pruned
	return "UPDATE chash_directory SET version = (version / 100 + 6) * 100 WHERE name = '$dir'"
	  if $r < 0.97;
	# recorded as "full" for every directory; only when no other session
	# is in a transaction (it would wait for their locks, they for it)
	return "TRUNCATE chash_override" if $r < 0.975 && $alone;
	return "UPDATE chash_shard SET zone = 'z" . int(rand(3)) . "' WHERE directory = '$dir'";
}

my %count = map { $_ => 0 } qw(changes changes_ok commits rollbacks savepoints rollback_to cursors
  fetched checks rr feed_checked feed_full);
my @failures;

sub fail_once
{
	my ($what) = @_;
	push @failures, $what;
	diag($what) if @failures <= 5;
}

# The check, in the session's current snapshot.
sub check
{
	my ($s, $tick, $after) = @_;
	my ($out, $ok, $err) = run($s->{psql}, 'SELECT route_mismatches()');
	$count{checks}++;
	if (!$ok || $out !~ /^\d+ tenants$/ || $out =~ /^0 tenants/)
	{
		fail_once("tick $tick, $s->{name} ($s->{iso}) after $after: "
			  . ($ok ? $out : "error: $err"));
	}
}

# The observer, after each commit: keep the snapshot of each version, and
# bring three random older ones up to date with the feed.
sub check_feed
{
	my ($tick) = @_;
	my ($out, $ok, $err) = run($observer, q{
        WITH cur AS (SELECT d.name AS dir, chash_directory_snapshot(d.name) AS snap
                       FROM chash_directory d WHERE d.name IN ('m', 'n')),
             ins AS (INSERT INTO seen SELECT dir, (snap ->> 'version')::bigint, snap FROM cur
                     ON CONFLICT DO NOTHING),
             old AS (SELECT s.*, chash_directory_changes(s.dir, s.version) AS ch
                       FROM (SELECT * FROM seen ORDER BY random() LIMIT 3) s
                       JOIN chash_directory d ON d.name = s.dir)
        SELECT count(*) FILTER (WHERE (ch ->> 'full')::bool) || ' '
            || count(*) FILTER (WHERE NOT (ch ->> 'full')::bool) || ' '
            || coalesce(string_agg(format('%s %s', o.dir, o.version), ', ')
                        FILTER (WHERE NOT (ch ->> 'full')::bool
                                  AND apply_changes(o.snap, o.ch) IS DISTINCT FROM c.snap), '')
          FROM old o JOIN cur c ON c.dir = o.dir});
	if (!$ok || $out !~ /^(\d+) (\d+) (.*)$/)
	{
		fail_once("tick $tick, feed: " . ($ok ? $out : "error: $err"));
		return;
	}
	$count{feed_full} += $1;
	$count{feed_checked} += $2;
	fail_once("tick $tick: changes applied to the snapshot at $3 differ from the snapshot now")
	  if $3 ne '';
}

for my $tick (1 .. $ticks)
{
	my $s = pick(@sessions);
	my $p = $s->{psql};
	my $r = rand();
	my $what;

	if (!$s->{in_xact})
	{
		if ($r < 0.6)
		{
			$s->{iso} = rand() < 0.5 ? 'REPEATABLE READ' : 'READ COMMITTED';
			$count{rr}++ if $s->{iso} eq 'REPEATABLE READ';
			run($p, "BEGIN ISOLATION LEVEL $s->{iso}");
			$s->{in_xact} = 1;
			$what = "BEGIN $s->{iso}";
			if (rand() < 0.3)
			{
				# a cursor: its rows are checked in its snapshot, later
				my $c = "c" . scalar(@{ $s->{cursors} });
				run($p, "DECLARE $c CURSOR FOR SELECT route_mismatches() FROM generate_series(1, 4)");
				push @{ $s->{cursors} }, $c;
				$count{cursors}++;
			}
		}
		else
		{
			$what = random_change(!grep { $_->{in_xact} } @sessions);
			$count{changes}++;
			my (undef, $ok) = run($p, $what);
			$count{changes_ok}++ if $ok;
			$s->{iso} = 'autocommit';
			check_feed($tick) if $ok;
		}
	}
	elsif ($r < 0.55)
	{
		$what = random_change();
		$count{changes}++;
		my (undef, $ok) = run($p, $what);
		$count{changes_ok}++ if $ok;
	}
	elsif ($r < 0.63)
	{
		$s->{savepoints}++;
		$what = "SAVEPOINT sp$s->{savepoints}";
		run($p, $what);
		$count{savepoints}++;
	}
	elsif ($r < 0.71 && $s->{savepoints} > 0)
	{
		$what = (rand() < 0.6 ? 'ROLLBACK TO' : 'RELEASE') . " SAVEPOINT sp$s->{savepoints}";
		$count{rollback_to}++ if $what =~ /^ROLLBACK/;
		# a cursor opened after the savepoint is gone when it rolls back
		run($p, $what);
		$s->{savepoints}--;
		$s->{cursors} = [] if $what =~ /^ROLLBACK/;
	}
	elsif ($r < 0.80 && @{ $s->{cursors} })
	{
		my $c = pick(@{ $s->{cursors} });
		$what = "FETCH FROM $c";
		my ($out, $ok, $err) = run($p, $what);
		if ($ok && $out ne '')
		{
			$count{fetched}++;
			fail_once("tick $tick, $s->{name} cursor $c: $out") if $out !~ /^\d+ tenants$/;
		}
		elsif (!$ok)
		{
			fail_once("tick $tick, $s->{name} cursor $c: $err");
		}
	}
	else
	{
		my $commit = rand() < 0.75;
		$what = $commit ? 'COMMIT' : 'ROLLBACK';
		run($p, $what);
		$count{ $commit ? 'commits' : 'rollbacks' }++;
		@$s{qw(in_xact savepoints iso)} = (0, 0, 'autocommit');
		$s->{cursors} = [];
		check_feed($tick) if $commit;
	}
	check($_, $tick, "$s->{name}: $what") for @sessions;
	last if @failures > 20;
}
run($_->{psql}, 'ROLLBACK') for @sessions;
check($_, 'end', 'the end') for @sessions;

diag(join(', ', map { "$_ $count{$_}" } sort keys %count));
is(scalar(@failures), 0, "routing equals the SQL lookup after every statement, in every session ($count{checks} checks)");
cmp_ok($count{changes_ok}, ">", $ticks / 5, "over a thousand random changes took effect ($count{changes_ok} of $count{changes})");
cmp_ok($count{rollback_to}, '>', 20, 'savepoints were rolled back');
cmp_ok($count{rollbacks}, '>', 20, 'transactions were rolled back');
cmp_ok($count{fetched}, '>', 20, 'cursors were read in their older snapshots');
cmp_ok($count{feed_checked}, '>', 300, 'the changes feed was applied to older snapshots');
cmp_ok($count{feed_full}, '>', 0, 'and now and then said "full"');
my $versions = $node->safe_psql('postgres', "SELECT version FROM chash_directory WHERE name = 'm'");
cmp_ok($versions, '>', 500, "directory m reached version $versions");
# A newer version committed by another session is caught up from the
# history, not loaded in full (docs/directory.md, "Catching up instead of
# reloading"); most loads here are of a transaction's own changes, which
# load for each statement that routes after them.
my ($loads, $catch_ups) = (0, 0);
for my $s (@sessions)
{
	my ($out) = run($s->{psql}, "SELECT loads || ' ' || catch_ups FROM chash_routing_cache_stats()");
	my ($l, $c) = split / /, $out;
	$loads += $l;
	$catch_ups += $c;
}
cmp_ok($catch_ups, '>', 100, "the sessions' caches caught up from the history ($catch_ups catch-ups, $loads loads)");

$_->{psql}->quit for @sessions;
$observer->quit;
$node->stop;
done_testing();
