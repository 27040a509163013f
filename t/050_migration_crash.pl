# A crash in the middle of a migration (docs/migrations.md): steps pending, copying,
# fenced and done, plus a complete whose transaction is still open, when
# the server stops with an immediate shutdown.  After restart every slot
# has exactly one owner, nothing half-applied survives, and the migration
# can be finished (and another one reverted).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION chash');

# 4 shards of 1,024 slots each gain a fifth: targets 820 / 819 x 4, so
# 204 + 205 + 205 + 205 = 819 moves.
my $m = $node->safe_psql('postgres', q{
	SELECT chash_create_directory('crash', ARRAY['s1', 's2', 's3', 's4'], 4096);
	SELECT chash_add_shard('crash', 's5');
	SELECT chash_migration_start('crash');
});
$m = (split /\n/, $m)[-1];
is($node->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration = $m"),
	'819', 'the plan has 819 steps');

# Claims $done + $fenced + $copying steps of migration $mig, one at a time
# in step order: the first $done are fenced and completed, the next $fenced
# fenced, the last $copying left copying.
sub claim_steps
{
	my ($mig, $done, $fenced, $copying) = @_;
	my $claimed = $done + $fenced + $copying;
	my $upto_fenced = $done + $fenced;
	$node->safe_psql('postgres', qq{
	DO \$\$
	DECLARE s record;
	BEGIN
		FOR i IN 1 .. $claimed LOOP
			SELECT * INTO s FROM chash_step_claim($mig);
			IF i <= $upto_fenced THEN
				PERFORM chash_step_fence($mig, s.step);
			END IF;
			IF i <= $done THEN
				PERFORM chash_step_complete($mig, s.step);
			END IF;
		END LOOP;
	END
	\$\$;
});
	return;
}

# 100 steps done, 5 fenced, 5 copying, the rest pending.
claim_steps($m, 100, 5, 5);
is($node->safe_psql('postgres',
	"SELECT string_agg(state || '=' || n, ',' ORDER BY state) FROM
	   (SELECT state, count(*) n FROM chash_migration_step WHERE migration = $m GROUP BY 1) x"),
	'copying=5,done=100,fenced=5,pending=709', 'steps in every state before the crash');

# A complete in flight: the ownership flip and the step's state are written
# but not committed when the server dies.
my $open = $node->background_psql('postgres');
$open->query_safe('BEGIN');
$open->query_safe("SELECT chash_step_complete($m, 101)");
is($open->query_safe("SELECT shard FROM chash_slot WHERE directory = 'crash'
	AND slot = (SELECT slot FROM chash_migration_step WHERE migration = $m AND step = 101)"),
	's5', 'the open transaction sees its flip');

my $owner_101 = $node->safe_psql('postgres', "SELECT from_shard FROM chash_migration_step WHERE migration = $m AND step = 101");
$node->stop('immediate');
eval { $open->{run}->kill_kill; };
$node->start;

# Every slot has exactly one owner; exactly the 100 done steps moved.
is($node->safe_psql('postgres',
	"SELECT count(*) = 4096 AND count(DISTINCT slot) = 4096 AND min(slot) = 0 AND max(slot) = 4095
	   FROM chash_slot WHERE directory = 'crash'"), 't', 'every slot has exactly one owner');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM chash_slot WHERE directory = 'crash' AND shard = 's5'"),
	'100', 'only the completed steps moved');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM chash_migration_step s JOIN chash_slot o ON o.directory = 'crash' AND o.slot = s.slot
	  WHERE s.migration = $m AND o.shard <> CASE WHEN s.state = 'done' THEN s.to_shard ELSE s.from_shard END"),
	'0', 'each slot is where its step state says');
is($node->safe_psql('postgres', "SELECT shard FROM chash_slot WHERE directory = 'crash'
	AND slot = (SELECT slot FROM chash_migration_step WHERE migration = $m AND step = 101)"),
	$owner_101, 'the uncommitted complete left no trace');
is($node->safe_psql('postgres',
	"SELECT string_agg(state || '=' || n, ',' ORDER BY state) FROM
	   (SELECT state, count(*) n FROM chash_migration_step WHERE migration = $m GROUP BY 1) x"),
	'copying=5,done=100,fenced=5,pending=709', 'step states survive the crash');
is($node->safe_psql('postgres', "SELECT summary FROM chash_migration_progress WHERE migration = $m"),
	'100 of 819 slots', 'progress after the crash');

# Routing works after the restart: fenced slots still refuse writes.
my $fenced_tenant = $node->safe_psql('postgres', qq{
	SELECT t FROM (SELECT 'tenant' || i AS t FROM generate_series(1, 100000) i) x
	 WHERE chash_slot('crash', t) = (SELECT slot FROM chash_migration_step WHERE migration = $m AND state = 'fenced' ORDER BY step LIMIT 1)
	 LIMIT 1});
my ($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nSELECT chash_route_for_write('crash', '$fenced_tenant')");
like($err, qr/40001/, 'a fenced slot still refuses writes after the restart');

# Claims and completes every step of migration $mig left, one at a time.
sub run_out
{
	my ($mig) = @_;
	$node->safe_psql('postgres', qq{
	DO \$\$
	DECLARE s record;
	BEGIN
		LOOP
			SELECT * INTO s FROM chash_step_claim($mig);
			EXIT WHEN NOT FOUND;
			PERFORM chash_step_complete($mig, s.step);
		END LOOP;
	END
	\$\$;
});
	return;
}

# The workers died with the server: release their steps and finish.
$node->safe_psql('postgres', qq{
	SELECT chash_step_release(migration, step) FROM chash_migration_step
	 WHERE migration = $m AND state IN ('copying', 'fenced');
});
run_out($m);
is($node->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id = $m"), 'done', 'the migration finishes');
is($node->safe_psql('postgres',
	"SELECT string_agg(shard || '=' || n, ',' ORDER BY shard) FROM
	   (SELECT shard, count(*) n FROM chash_slot WHERE directory = 'crash' GROUP BY 1) x"),
	's1=820,s2=819,s3=819,s4=819,s5=819', 'every shard at its target');
is($node->safe_psql('postgres', "SELECT count(*) FROM chash_plan_rebalance('crash')"), '0', 'nothing left to plan');

# Crash again in the middle of a second migration, then revert it instead.
my $d = $node->safe_psql('postgres', qq{
	SELECT chash_set_shard('crash', 's1', state => 'draining');
	SELECT chash_migration_start('crash');
});
$d = (split /\n/, $d)[-1];
claim_steps($d, 20, 5, 5);
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres',
	"SELECT count(*) = 4096 AND count(DISTINCT slot) = 4096 FROM chash_slot WHERE directory = 'crash'"),
	't', 'every slot has exactly one owner after the second crash');
my $r = $node->safe_psql('postgres', "SELECT chash_migration_revert($d)");
run_out($r);
is($node->safe_psql('postgres', "SELECT status FROM chash_migration WHERE id IN ($d, $r) ORDER BY id"),
	"cancelled\ndone", 'the second migration is cancelled and its revert done');
is($node->safe_psql('postgres',
	"SELECT string_agg(shard || '=' || n, ',' ORDER BY shard) FROM
	   (SELECT shard, count(*) n FROM chash_slot WHERE directory = 'crash' GROUP BY 1) x"),
	's1=820,s2=819,s3=819,s4=819,s5=819', 'the revert restored the layout before it');

$node->stop;
done_testing();
