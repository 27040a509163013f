# The online write block verifies only the rows changed since the copy
# (docs/shards.md, "The write block"): output plugin chash's tally (a
# temporary copy of the step's slot, read with option tally) names them by
# key, and they are compared on both shards.  The tally itself: a line per
# change of the filter's rows, with its key; an update that moves a row's
# key is a delete and an insert.  Then moves of a batch of 'xxh64' slots
# while a client writes to its tenants: an insert the target's apply loses
# and a deletion it does not apply each fail the verification, the steps
# given back with nothing left on the target; a changed row fails it too;
# without a fault the batch moves, its changed rows verified by key, every
# row once on its tenant's shard.
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

my $conf = "max_replication_slots = 16\nmax_wal_senders = 16\n"
  . "max_logical_replication_workers = 8\nmax_worker_processes = 16\n";
my $dir = new_node('directory', logical => 1, conf => $conf);
my %shard = map { $_ => new_node($_, logical => 1, preload => 1, conf => $conf) } qw(s1 s2);
$_->safe_psql('postgres', q{
    CREATE EXTENSION chash;
    CREATE TABLE accounts (org_id text, id bigint, payload text, PRIMARY KEY (org_id, id));
}) for values %shard;
$dir->safe_psql('postgres', 'CREATE EXTENSION chash');
my $dirconn = publish_directory($dir);
$dir->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1'], 16);
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
});
join_shards($dir, $dirconn, 'orgs', { s1 => $shard{s1} });
shard_applied($dir, $shard{s1}) or die 's1 did not apply the directory';
$shard{s1}->safe_psql('postgres', q{
    INSERT INTO accounts SELECT 'org-' || g, i, 'initial' FROM generate_series(1, 400) g, generate_series(1, 50) i;
    ANALYZE accounts;
});
my $total = 400 * 50;

# ---- the tally, read by hand ----
{
	my $s1 = $shard{s1};
	$s1->safe_psql('postgres', q{
        CREATE TABLE other (org_id text PRIMARY KEY);
        SELECT chash_decoding_filter_create('t131', 'orgs', tenants => ARRAY['org-1', 'org-2']);
        SELECT pg_create_logical_replication_slot('t131', 'chash');
    });
	my $lines = $s1->safe_psql('postgres', q{
        SELECT FROM pg_copy_logical_replication_slot('t131', 't131_tally', true);
        INSERT INTO accounts VALUES ('org-1', 900, 'a'), ('org-3', 900, 'not in the filter');
        UPDATE accounts SET payload = 'b' WHERE org_id = 'org-1' AND id = 900;
        UPDATE accounts SET id = 901 WHERE org_id = 'org-2' AND id = 1;
        UPDATE accounts SET org_id = 'org-3', id = 902 WHERE org_id = 'org-2' AND id = 2;
        DELETE FROM accounts WHERE org_id = 'org-1' AND id = 1;
        INSERT INTO other VALUES ('org-1');
        SELECT data FROM pg_logical_slot_get_changes('t131_tally', NULL, NULL, 'tally', 't131');
    });
	my $oid = $s1->safe_psql('postgres', "SELECT 'public.accounts'::regclass::oid");
	is($lines, join("\n",
			qq(I $oid {"org_id":"org-1","id":"900"}),
			qq(U $oid {"org_id":"org-1","id":"900"}),
			qq(D $oid {"org_id":"org-2","id":"1"}),
			qq(I $oid {"org_id":"org-2","id":"901"}),
			qq(D $oid {"org_id":"org-2","id":"2"}),
			qq(D $oid {"org_id":"org-1","id":"1"})),
		'the tally: a line per change of the filter\'s rows with its key, a moved key as a delete and an insert');
	my ($rc, $out, $err) = $s1->psql('postgres',
		q{SELECT data FROM pg_logical_slot_get_changes('t131', NULL, NULL, 'tally', 't131', 'proto_version', '1')});
	like($err, qr/option "proto_version" of plugin "chash" cannot be used with option "tally"/, 'tally takes no pgoutput option');
	$s1->safe_psql('postgres', q{
        SELECT pg_drop_replication_slot('t131');
        SELECT chash_decoding_filter_drop('t131');
        DELETE FROM accounts WHERE id >= 900;
        INSERT INTO accounts VALUES ('org-1', 1, 'initial'), ('org-2', 1, 'initial'), ('org-2', 2, 'initial');
        DROP TABLE other;
    });
	is($s1->safe_psql('postgres', 'SELECT count(*) FROM accounts'), $total, 'the rows are as before');
}

{
	my $c = $shard{s2}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_add_shard('orgs', 's2', server => \$\$$c\$\$)});
	$shard{s2}->safe_psql('postgres', qq{SELECT chash_shard_join('orgs', 's2', '$dirconn')});
	shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
}
my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_start('orgs')});
my %ledger;    # "tenant/id" => payload of the rows written
my %deleted;   # "tenant/id" of the initial rows deleted
my $next_id = 1_000_000;
my $round = 0;

sub count_on
{
	my ($s, $where) = @_;
	return $shard{$s}->safe_psql('postgres', "SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE $where");
}

# Moves a batch of 4 slots online while writing to its tenants once its
# subscription streams: inserts, updates and the deletes of @delete.
# Returns (exit status, stderr).
sub move_writing
{
	my (%o) = @_;
	my ($out, $err) = ('', '');
	local $ENV{CHASH_MOVE_PAUSE_SUBSCRIBED} = 3;
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--online', '--lease', '2', '--batch-steps', '4',
							  '--max-steps', '4', '--migration', $m, $dir->connstr('postgres') ],
		'>', \$out, '2>', \$err);
	my $wrote = 0;
	my $delete = 4 + $round++;
	while ($h->pumpable)
	{
		$h->pump_nb;
		next if $wrote;
		next unless $shard{s2}->safe_psql('postgres',
			q{SELECT count(*) FROM pg_subscription WHERE subname LIKE 'chash\_move\_%'});
		my @tenants = split /\n/, $dir->safe_psql('postgres', qq{
            SELECT t FROM (SELECT 'org-' || g AS t FROM generate_series(1, 400) g) x
             WHERE chash_slot('orgs', t) IN (SELECT slot FROM chash_migration_step WHERE migration = $m AND state = 'copying')
             ORDER BY t LIMIT 20});
		my $sql = '';
		for my $t (@tenants)
		{
			my $id = $next_id++;
			$sql .= qq{
                INSERT INTO accounts VALUES ('$t', $id, 'new');
                UPDATE accounts SET payload = 'changed' WHERE org_id = '$t' AND id IN (3, $id);
                DELETE FROM accounts WHERE org_id = '$t' AND id = $delete;};
			$ledger{"$t/$id"} = 'changed';
			$deleted{"$t/$delete"} = 1;
		}
		$shard{s1}->safe_psql('postgres', $sql);
		$o{also}->($tenants[0]) if $o{also};
		$wrote = @tenants;
	}
	$h->finish;
	my $rc = $h->full_result;
	my $status = $rc & 127 ? 'signal ' . ($rc & 127) : $rc >> 8;
	note "chash_move: exit $status, $wrote tenants written\n$err";
	return ($status, $err, $wrote);
}

# On s2, a trigger that fires for the subscription's apply only (the
# mover's own writes run with session_replication_role = replica too).
sub apply_trigger
{
	my ($name, $when, $body) = @_;
	$shard{s2}->safe_psql('postgres', qq{
        CREATE FUNCTION $name() RETURNS trigger LANGUAGE plpgsql AS \$\$
        BEGIN
            IF (SELECT backend_type FROM pg_catalog.pg_stat_activity WHERE pid = pg_catalog.pg_backend_pid())
               = 'logical replication worker' THEN $body END IF;
            RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
        END \$\$;
        CREATE TRIGGER $name BEFORE $when ON accounts FOR EACH ROW EXECUTE FUNCTION $name();
        ALTER TABLE accounts ENABLE ALWAYS TRIGGER $name;
    });
}

sub given_back
{
	my ($what, $status, $err, $wrote) = @_;
	ok($wrote > 0, "$what: the client wrote to $wrote tenants of the batch while it streamed");
	is($status, 1, "$what: the mover stops");
	like($err, qr/error: verification failed for steps \d+-\d+ \(a batch of 4\) of migration $m: table "public.accounts" differs between shard "s1" and shard "s2"\n.*detail: Of the \d+ rows changed since the copy, the source has/,
		"$what: the verification by key fails");
	is($dir->safe_psql('postgres', "SELECT count(*) FROM chash_migration_step WHERE migration = $m AND state <> 'pending'"), '0',
		"$what: the steps are given back");
	is(count_on('s2', 'true'), '0', "$what: nothing is left on s2");
}

# an insert the apply loses
apply_trigger('lose', 'INSERT', q{IF NEW.payload = 'new' THEN RETURN NULL; END IF;});
given_back('a lost insert', move_writing());
$shard{s2}->safe_psql('postgres', 'DROP TRIGGER lose ON accounts');

# a deletion the apply does not make: a row too many on the target
apply_trigger('keep', 'DELETE', 'RETURN NULL;');
given_back('a deletion not applied', move_writing());
$shard{s2}->safe_psql('postgres', 'DROP TRIGGER keep ON accounts');

# an update applied with another payload
apply_trigger('tamper', 'UPDATE', q{NEW.payload := NEW.payload || '!';});
given_back('a changed row', move_writing());
$shard{s2}->safe_psql('postgres', 'DROP TRIGGER tamper ON accounts');

# no fault: the batch moves, its changed rows verified by key
{
	my ($status, $err, $wrote) = move_writing();
	is($status, 0, 'without a fault the batch moves');
	like($err, qr/4 slots s1 -> s2 online .*last catch-up and verification \((\d+) changed since the copy\)/,
		'its changed rows were verified by the tally');
	my ($changed) = $err =~ /\((\d+) changed since the copy\)/;
	ok(defined $changed && $changed >= 3 * $wrote, "the tally named the rows written ($changed for $wrote tenants)");
	is($shard{s1}->safe_psql('postgres', q{SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'chash\_move\_%'}),
		'0', 'no slot is left on the source, the tally\'s neither');
}

# two tables, the first by name verified by a scan (REPLICA IDENTITY FULL:
# the tally has no key for its rows), the second by key: the line counts
# the keyed table's changed rows and says the other's were found by a scan
{
	$_->safe_psql('postgres', q{
        CREATE TABLE ab_full (org_id text, note text);
        ALTER TABLE ab_full REPLICA IDENTITY FULL;
    }) for values %shard;
	$dir->safe_psql('postgres', q{SELECT chash_add_table('orgs', 'public.ab_full', 'org_id')});
	shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
	$shard{s1}->safe_psql('postgres', q{
        INSERT INTO ab_full SELECT 'org-' || g, 'initial' FROM generate_series(1, 400) g
         WHERE chash_route('orgs', 'org-' || g) = 's1'});
	my $ab_rows = $shard{s1}->safe_psql('postgres', 'SELECT count(*) FROM ab_full');
	my ($status, $err, $wrote) = move_writing(also => sub {
		my ($t) = @_;
		$shard{s1}->safe_psql('postgres', qq{
            INSERT INTO ab_full VALUES ('$t', 'new');
            UPDATE ab_full SET note = 'changed' WHERE org_id = '$t' AND note = 'initial'});
	});
	is($status, 0, 'two tables, the scanned one first: the batch moves');
	like($err, qr/4 slots s1 -> s2 online .*last catch-up and verification \((\d+) changed since the copy in 1 table by key, the changes of 1 table found by a scan\)/,
		'its line counts the keyed table\'s changed rows and says the other table was scanned');
	my ($changed) = $err =~ /\((\d+) changed since the copy in 1 table by key/;
	ok(defined $changed && $changed >= 3 * $wrote, "the count is the keyed table's alone (" . ($changed // 'none') . " for $wrote tenants)");
	my ($rows, $misplaced) = (0, 0);
	for my $s (sort keys %shard)
	{
		my ($n, $away) = split /\|/, $shard{$s}->safe_psql('postgres', qq{
            SET chash.bypass_guard = on;
            SELECT count(*), count(*) FILTER (WHERE chash_route('orgs', org_id) <> '$s') FROM ab_full});
		$rows += $n;
		$misplaced += $away;
	}
	is($rows, $ab_rows + 1, 'the scanned table\'s rows are there once, the one inserted too');
	is($misplaced, 0, 'each on its tenant\'s shard');
}

# every row once, on its tenant's shard, the client's with their last payload
{
	shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
	my (%found, $misplaced);
	for my $s (sort keys %shard)
	{
		for my $row (split /\n/, $shard{$s}->safe_psql('postgres', q{
                SET chash.bypass_guard = on;
                SELECT org_id || '/' || id || ' ' || payload || ' ' || chash_route('orgs', org_id) FROM accounts}))
		{
			my ($key, $payload, $route) = split / /, $row;
			push @{ $found{$key} }, $payload;
			$misplaced++ if $route ne $s;
		}
	}
	my $initial = grep { (split m{/}, $_)[1] < 1_000_000 } keys %found;
	is($initial, $total - keys %deleted, 'every initial row is there, but the deleted ones');
	is(scalar(grep { $found{$_} } keys %deleted), 0, 'the deleted rows are gone');
	is(scalar(grep { @{ $found{$_} } > 1 } keys %found), 0, 'no row is there twice');
	is(scalar(grep { !$found{$_} || $found{$_}[0] ne $ledger{$_} } keys %ledger), 0,
		'every written row is there with its last payload');
	is($misplaced // 0, 0, 'every row is on its tenant\'s shard');
}

done_testing();
