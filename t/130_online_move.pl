# chash_move --online (docs/chash_move.md, "Online moves"; docs/shards.md): a whale
# of 200,000 rows changes shard while a client writes to it; the client
# measures the longest time any of its writes was refused (40001, or SH001
# and a route again), online and, for comparison, blocking.  The same for
# slot steps of every slot method ('pg_hash' with a slot of 200,000 rows,
# 'xxh64', 'jump', 'redis'), which stream through output plugin chash.  A
# mover killed while its subscription catches up is rerun: it takes over,
# finishes and drops what the dead run created.  Every acknowledged write
# ends exactly once on the new shard, and no replication object of the
# mover is left on any node.  A step whose changes the target cannot apply
# (a unique violation, DDL on the source mid-stream, a column dropped on
# the target) is given back once, with the target's error.
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

my $whale_rows = 200_000;
# the target's errors are read from its log (logging_collector)
my $replication = "max_replication_slots = 16\nmax_wal_senders = 16\n"
  . "max_logical_replication_workers = 8\nmax_worker_processes = 16\n"
  . "logging_collector = on\nlog_directory = 'log'\n";

# each directory's table: (table, tenant column, key type)
my %dirs = (
	orgs => [ 'accounts', 'org_id', 'text' ],
	items => [ 'items', 'tenant_id', 'bigint' ],
	jumps => [ 'things', 'tenant_id', 'bigint' ],
	reds => [ 'notes', 'org', 'text' ]);
my @dirs = sort keys %dirs;

my $dir = new_node('directory', logical => 1, conf => $replication);
my %shard = map { $_ => new_node($_, logical => 1, conf => $replication) } qw(s1 s2 s3);
# orgs with accounts on every shard, then the other directories' tables
my $dirconn = accounts_directory($dir, \%shard, on => [qw(s1 s2)], sql => q{
    SELECT chash_pin('orgs', 'whale', 's1');
    SELECT chash_create_directory('items', ARRAY['s1', 's2'], 8, 'pg_hash', key_type => 'bigint');
    SELECT chash_add_table('items', 'public.items', 'tenant_id');
    SELECT chash_create_directory('jumps', ARRAY['s1', 's2'], 32, 'jump', key_type => 'bigint');
    SELECT chash_add_table('jumps', 'public.things', 'tenant_id');
    SELECT chash_create_directory('reds', ARRAY['s1', 's2'], 16384, 'redis');
    SELECT chash_add_table('reds', 'public.notes', 'org');
});
$_->safe_psql('postgres', q{
    CREATE TABLE items (tenant_id bigint, id bigint, payload text, PRIMARY KEY (tenant_id, id));
    CREATE INDEX ON items (chash_tenant_slot(tenant_id, 8, 'pg_hash'));
    CREATE TABLE things (tenant_id bigint, id bigint, payload text, PRIMARY KEY (tenant_id, id));
    CREATE TABLE notes (org text, id bigint, payload text, PRIMARY KEY (org, id));
}) for values %shard;
for my $d (@dirs)
{
	for my $name (qw(s1 s2))
	{
		my $c = $shard{$name}->connstr('postgres');
		$dir->safe_psql('postgres', qq{SELECT chash_set_shard('$d', '$name', server => \$\$$c\$\$)});
	}
}

# Joins one directory at a time: a second join that reads chash_table
# before the replica's first copy has it leaves its tables unguarded.
sub join_shard
{
	my ($name) = @_;
	for my $d (@dirs)
	{
		$shard{$name}->safe_psql('postgres', qq{SELECT chash_shard_join('$d', '$name', '$dirconn')});
		wait_applied($shard{$name});
	}
	is($shard{$name}->safe_psql('postgres',
			q{SELECT string_agg(directory || ' ' || guarded_tables::text, ', ' ORDER BY directory) FROM chash_shard_status}),
		'items {public.items}, jumps {public.things}, orgs {public.accounts}, reds {public.notes}', "$name guards every table");
}

sub wait_applied
{
	my ($node) = @_;
	shard_applied($dir, $node) or die $node->name . ' did not apply the directory';
}
join_shard($_) for qw(s1 s2);

# The pg_hash directory's step, known before the load: the slot that the
# first step of a rebalance onto s3 moves gets 200,000 rows too, and a
# pinned tenant whose rows must stay.
{
	my $c = $shard{s3}->connstr('postgres');
	$dir->safe_psql('postgres', qq{SELECT chash_add_shard('$_', 's3', server => \$\$$c\$\$)}) for @dirs;
	join_shard('s3');
}
my ($hash_slot, $hash_from) = split /\|/,
  $dir->safe_psql('postgres', q{SELECT slot, from_shard FROM chash_plan_rebalance('items', 'slots', 1)});
my @slot_tenants = split /\n/, $dir->safe_psql('postgres', qq{
    SELECT g FROM generate_series(-40000, 40000) g
     WHERE chash_tenant_slot(g::bigint, 8, 'pg_hash') = $hash_slot ORDER BY g});
my $pinned = $slot_tenants[0];
$dir->safe_psql('postgres', qq{SELECT chash_pin('items', '$pinned', '$hash_from')});
wait_applied($_) for values %shard;
ok(@slot_tenants > 5000, "slot $hash_slot of the 'pg_hash' directory has " . scalar(@slot_tenants) . ' tenants');

# The load, each row on the shard its tenant routes to.
my $per_tenant = int($whale_rows / (@slot_tenants - 1)) + 1;
for my $name (qw(s1 s2))
{
	$shard{$name}->safe_psql('postgres', qq{
        SET chash_test.shard = '$name';
        INSERT INTO accounts SELECT 'whale', i, 'initial' FROM generate_series(1, $whale_rows) i
         WHERE chash_route('orgs', 'whale') = current_setting('chash_test.shard');
        INSERT INTO accounts SELECT 'org-' || g, 1, 'initial' FROM generate_series(1, 500) g
         WHERE chash_route('orgs', 'org-' || g) = current_setting('chash_test.shard');
        INSERT INTO items SELECT t, i, 'initial'
          FROM generate_series(-40000, 40000) t, generate_series(1, $per_tenant) i
         WHERE chash_tenant_slot(t, 8, 'pg_hash') = $hash_slot
           AND chash_route('items', t) = current_setting('chash_test.shard');
        INSERT INTO items SELECT t, 1, 'initial' FROM generate_series(-3000, 3000) t
         WHERE chash_tenant_slot(t, 8, 'pg_hash') <> $hash_slot
           AND chash_route('items', t) = current_setting('chash_test.shard');
        INSERT INTO things SELECT t * 7919, i, 'initial' FROM generate_series(1, 400) t, generate_series(1, 5) i
         WHERE chash_route('jumps', t * 7919) = current_setting('chash_test.shard');
        INSERT INTO notes SELECT 'n' || t, i, 'initial' FROM generate_series(1, 400) t, generate_series(1, 5) i
         WHERE chash_route('reds', 'n' || t) = current_setting('chash_test.shard');
        ANALYZE;});
}
my $slot_rows = $shard{$hash_from}->safe_psql('postgres', qq{
    SELECT count(*) FROM items WHERE chash_tenant_slot(tenant_id, 8, 'pg_hash') = $hash_slot AND tenant_id <> $pinned});
ok($slot_rows >= 200_000, "the slot has $slot_rows rows besides the pinned tenant's");

# ---- a client of its own: psql sessions that report SQLSTATEs ----
my $timeout = IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default);
my %session;
sub session
{
	my ($node) = @_;
	return $session{ $node->name } //= do
	{
		my $s = { in => '', out => '', err => '', n => 0 };
		$s->{h} = IPC::Run::start(
			[ 'psql', '-XAtq', '-v', 'VERBOSITY=sqlstate', '-d', $node->connstr('postgres') ],
			'<', \$s->{in}, '>', \$s->{out}, '2>', \$s->{err}, $timeout);
		$s;
	};
}

# (output, SQLSTATE or undef, stderr) of one statement
sub sql
{
	my ($node, $sql) = @_;
	my $s = session($node);
	my $mark = 'done ' . ++$s->{n};
	$s->{out} = $s->{err} = '';
	$timeout->start;
	$s->{in} .= "$sql;\n\\echo '$mark'\n\\warn '$mark'\n";
	$s->{h}->pump until $s->{out} =~ /\Q$mark\E\n/ && $s->{err} =~ /\Q$mark\E\n/;
	my ($out, $err) = ($s->{out}, $s->{err});
	$out =~ s/\Q$mark\E\n//;
	$err =~ s/\Q$mark\E\n//;
	chomp $out;
	my ($code) = $err =~ /ERROR:\s+(\w{5})/;
	return ($out, $code, $err);
}

# The ledger of acknowledged writes: "directory/tenant/id" => payload (undef:
# deleted), and when each was acknowledged.
my (%ledger, @acked, %route);
my ($longest, $refusals, $writes) = (0, 0, 0);
my $next_id = 1_000_000;

# One write, retried until acknowledged: refused while fenced (40001),
# routed again when the shard says the tenant is not its own (SH001).
sub write_one
{
	my ($d, $tenant) = @_;
	my ($table, $column, $type) = @{ $dirs{$d} };
	my $literal = $type eq 'text' ? "'$tenant'" : $tenant;
	my $r = rand();
	my ($kind, $id) = $r < 0.6 ? ('insert', $next_id++) : $r < 0.9 ? ('update', 1 + int(rand(5))) : ('delete', undef);
	if ($kind eq 'delete')
	{
		my @live = grep { defined $ledger{$_} } keys %ledger;
		@live = grep { m{^\Q$d/$tenant/\E} } @live;
		return if !@live;
		(undef, undef, $id) = split m{/}, $live[ int(rand(@live)) ];
	}
	my $payload = 'w' . $writes;
	my $stmt = $kind eq 'insert' ? "INSERT INTO $table VALUES ($literal, $id, '$payload') RETURNING 1"
	  : $kind eq 'update' ? "UPDATE $table SET payload = '$payload' WHERE $column = $literal AND id = $id RETURNING 1"
	  : "DELETE FROM $table WHERE $column = $literal AND id = $id RETURNING 1";
	my $first;
	for (;;)
	{
		my $to = $route{$d}{$tenant} //= (sql($dir, "SELECT chash_route('$d', $literal)"))[0];
		my ($out, $code, $err) = sql($shard{$to}, $stmt);
		if (!defined $code)
		{
			my $now = time;
			if (defined $first)
			{
				$refusals++;
				$longest = $now - $first if $now - $first > $longest;
			}
			$writes++;
			my $key = "$d/$tenant/$id";
			# an update or delete of a row that is not there acknowledges nothing
			if ($out eq '1' || $kind eq 'insert')
			{
				$ledger{$key} = $kind eq 'delete' ? undef : $payload;
				push @acked, [ $now, $key ];
			}
			elsif (exists $ledger{$key} && defined $ledger{$key})
			{
				fail("$kind of $key on $to found no row");
			}
			return;
		}
		$first //= time;
		if ($code eq '40001') { usleep(2_000); next; }
		if ($code eq 'SH001') { delete $route{$d}{$tenant}; next; }
		die "unexpected error on $to: $err";
	}
}

# Runs chash_move while writing; $pick gives each write's tenant, $watch is
# called every 20 writes.  Returns (exit status, stderr, longest refusal).
sub move_while_writing
{
	my ($args, $pick, %o) = @_;
	my ($out, $err) = ('', '');
	local $ENV{CHASH_MOVE_CRASH_AT} = $o{crash_at} // '';
	my $started = time;
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--lease', '2', @$args, $dir->connstr('postgres') ],
		'>', \$out, '2>', \$err);
	($longest, $refusals) = (0, 0);
	my $n = 0;
	while ($h->pumpable)
	{
		write_one($pick->());
		$o{watch}->() if $o{watch} && ++$n % 20 == 0;
		$h->pump_nb;
	}
	$h->finish;
	my $rc = $h->full_result;
	my $status = $rc & 127 ? 'signal ' . ($rc & 127) : $rc >> 8;
	note sprintf("chash_move @$args: %s after %.1f s, %d writes refused, longest refusal %.3f s\n%s",
		$status, time - $started, $refusals, $longest, $err);
	write_one($pick->()) for 1 .. 20;    # after the move too
	return ($status, $err, $longest);
}

# Every row of a set of tenants ($where on the shards, $mine on a tenant)
# exactly once, on the shard its tenant routes to, with its last
# acknowledged payload, row by row; the initial rows all there, but for
# those deleted.  Returns the number of rows.
sub check_rows
{
	my ($name, $d, $where, $mine, $initial) = @_;
	wait_applied($_) for values %shard;
	my ($table, $column) = @{ $dirs{$d} };
	my %found;
	for my $s (sort keys %shard)
	{
		for my $row (split /\n/, $shard{$s}->safe_psql('postgres',
				# past the guard: a shard refuses reads of tenants it does not own
				"SET chash.bypass_guard = on; SELECT $column || '/' || id || ' ' || payload || ' ' || chash_route('$d', $column) FROM $table WHERE $where"))
		{
			my ($key, $payload, $route) = split / /, $row;
			push @{ $found{"$d/$key"} }, [ $s, $payload, $route ];
		}
	}
	my %expect;
	for my $key (keys %found)
	{
		my (undef, undef, $id) = split m{/}, $key;
		$expect{$key} = 'initial' if $id < 1_000_000;
	}
	for my $key (keys %ledger)
	{
		my ($ld, $tenant) = split m{/}, $key;
		$expect{$key} = $ledger{$key} if $ld eq $d && $mine->($tenant);
	}
	my ($lost, $twice, $stale, $misplaced, $extra) = (0, 0, 0, 0, 0);
	my $initial_seen = 0;
	for my $key (keys %expect)
	{
		my (undef, $tenant, $id) = split m{/}, $key;
		my $rows = $found{$key} // [];
		$initial_seen++ if $id < 1_000_000;
		if (!defined $expect{$key}) { $extra++ if @$rows; next; }
		if (!@$rows) { $lost++; next; }
		$twice++ if @$rows > 1;
		$stale++ if $rows->[0][1] ne $expect{$key};
		$misplaced++ if $rows->[0][0] ne $rows->[0][2];
	}
	is($lost, 0, "$name: no acknowledged write is lost");
	is($initial_seen, $initial, "$name: the $initial initial rows are there, or deleted");
	is($twice + $extra, 0, "$name: no row is there twice, deleted rows are gone");
	is($stale, 0, "$name: every row has its last acknowledged payload");
	is($misplaced, 0, "$name: every row is on the shard its tenant routes to");
	return scalar grep { defined $expect{$_} } keys %expect;
}

# No publication, subscription or slot of the mover anywhere.
sub check_no_replication_objects
{
	my ($name) = @_;
	my $left = '';
	for my $node ($dir, map { $shard{$_} } sort keys %shard)
	{
		$left .= $node->safe_psql('postgres', q{
            SELECT string_agg(what, ' ') FROM (
                SELECT 'publication ' || pubname FROM pg_publication WHERE pubname LIKE 'chash\_move\_%'
                UNION ALL SELECT 'subscription ' || subname FROM pg_subscription WHERE subname LIKE 'chash\_move\_%'
                UNION ALL SELECT 'slot ' || slot_name FROM pg_replication_slots
                           WHERE slot_name LIKE 'chash\_move\_%' OR slot_name LIKE 'pg\_%\_sync\_%') o(what)});
	}
	is($left, '', "$name: no replication object is left");
}

my $whale_at = sub { 'whale' };
my $whale_or_small = sub { rand() < 0.8 ? ('orgs', 'whale') : ('orgs', 'org-' . (1 + int(rand(500)))) };
my $route_orgs = sub { $dir->safe_psql('postgres', "SELECT chash_route('orgs', '$_[0]')") };

# ---- the whale moves online, s1 -> s3 ----
my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'whale', 's3')});
my ($rc, $err, $online) = move_while_writing([ '--online', '--migration', $m ], $whale_or_small);
is($rc, 0, 'the online move exits 0');
like($err, qr/step 1: tenant 'whale' s1 -> s3 online \(replication slot "chash_move_[0-9a-f]{8}_${m}_1"\), \d+ rows/, 'it moved the whale online');
is($route_orgs->('whale'), 's3', 'the whale routes to s3');
ok($online <= 1, sprintf('online: the longest refusal of a write was %.3f s (at most 1 s)', $online));
my $is_whale = sub { $_[0] eq 'whale' };
my $is_small = sub { $_[0] ne 'whale' };
my $live = check_rows('online tenant move', 'orgs', q{org_id = 'whale'}, $is_whale, $whale_rows);
ok($live >= $whale_rows, "the whale has its $live rows on s3");
check_no_replication_objects('after the online move');

# ---- the same move blocking, s3 -> s2, for comparison ----
$m = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'whale', 's2')});
my $blocking;
($rc, $err, $blocking) = move_while_writing([ '--migration', $m ], $whale_or_small);
is($rc, 0, 'the blocking move exits 0');
check_rows('blocking tenant move', 'orgs', q{org_id = 'whale'}, $is_whale, $whale_rows);
diag sprintf('longest refusal of a write to a whale of %d rows: online %.3f s, blocking %.3f s',
	$whale_rows, $online, $blocking);

# ---- killed while the subscription catches up, then rerun: s2 -> s1 ----
$m = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'whale', 's1')});
($rc) = move_while_writing([ '--online', '--migration', $m ], $whale_or_small, crash_at => 'subscribed');
is($rc, 'signal 9', 'the mover is killed once the subscription exists');
is($dir->safe_psql('postgres', "SELECT progress FROM chash_step_lease WHERE migration = $m"), 'subscribed',
	'its lease records the subscription');
# the objects' names carry the directory database's identity (a short hash of its system identifier and oid)
my $name = $dir->safe_psql('postgres', qq{
    SELECT 'chash_move_' || substr(md5(s.system_identifier || '/' || d.oid), 1, 8) || '_${m}_1'
      FROM pg_control_system() s, pg_database d WHERE d.datname = current_database()});
is($shard{s2}->safe_psql('postgres', qq{
    SELECT (SELECT count(*) FROM pg_publication WHERE pubname = '$name')
         + (SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$name')}), '2',
	'the dead run left its publication and slot on the source');
is($shard{s1}->safe_psql('postgres', "SELECT count(*) FROM pg_subscription WHERE subname = '$name'"), '1',
	'and its subscription on the target');

# The rerun meets a target that lags at the fence: the source applies the
# fence 0.3 s late, so it admits writes the target (which has the fence)
# applies late, and the first of those is held 0.5 s more there.  Only a
# mover that waits for the source's WAL position after the fence sees them.
$shard{s2}->safe_psql('postgres', q{
    CREATE FUNCTION slow_fence() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END $$;
    CREATE TRIGGER slow_fence BEFORE UPDATE ON chash_migration_step FOR EACH ROW
        WHEN (NEW.state = 'fenced' AND NEW.tenant = 'whale') EXECUTE FUNCTION slow_fence();
    ALTER TABLE chash_migration_step ENABLE REPLICA TRIGGER slow_fence;});
$shard{s1}->safe_psql('postgres', q{
    CREATE TABLE slept (at timestamptz);
    -- (the apply worker runs with an empty search_path)
    CREATE FUNCTION slow_apply() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT EXISTS (SELECT FROM public.slept)
           AND EXISTS (SELECT FROM public.chash_migration_step WHERE tenant = 'whale' AND state = 'fenced') THEN
            INSERT INTO public.slept VALUES (clock_timestamp());
            PERFORM pg_sleep(0.5);
        END IF;
        RETURN NEW;
    END $$;
    CREATE TRIGGER slow_apply BEFORE INSERT OR UPDATE ON accounts FOR EACH ROW
        WHEN (NEW.org_id = 'whale' AND NEW.id >= 1000000) EXECUTE FUNCTION slow_apply();
    ALTER TABLE accounts ENABLE REPLICA TRIGGER slow_apply;});
($rc, $err) = move_while_writing([ '--online', '--migration', $m ], $whale_or_small);
is($rc, 0, 'a rerun takes the step over and finishes');
is($shard{s1}->safe_psql('postgres', 'SELECT count(*) FROM slept'), '1',
	'the target applied a write admitted before the fence after it had the fence');
$shard{s2}->safe_psql('postgres', 'DROP TRIGGER slow_fence ON chash_migration_step');
$shard{s1}->safe_psql('postgres', 'DROP TRIGGER slow_apply ON accounts');
is($route_orgs->('whale'), 's1', 'the whale routes to s1');
check_rows('after the takeover', 'orgs', q{org_id = 'whale'}, $is_whale, $whale_rows);
check_rows('small tenants', 'orgs', q{org_id <> 'whale'}, $is_small, 500);
check_no_replication_objects('after the takeover');
is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', 'no lease is left');

# ---- slot steps of 'xxh64', 'jump' and 'redis' directories, online through plugin chash ----
# A client writes to the tenants of the moving slots (and a few others).
sub slot_steps_online
{
	my ($d, $nslots, $where, $mine, $initial) = @_;
	my ($table, $column, $type) = @{ $dirs{$d} };
	my $m = $dir->safe_psql('postgres', qq{SELECT chash_migration_start('$d', 'slots', $nslots)});
	my @all = $d eq 'orgs' ? map { "org-$_" } 1 .. 500 : $d eq 'jumps' ? map { $_ * 7919 } 1 .. 400 : map { "n$_" } 1 .. 400;
	my $list = join(',', map { $type eq 'text' ? "'$_'" : $_ } @all);
	my @moving = split /\n/, $dir->safe_psql('postgres', qq{
        SELECT t FROM unnest(ARRAY[$list]::$type\[]) t
         WHERE chash_slot('$d', t::text) IN (SELECT slot FROM chash_migration_step WHERE migration = $m)
           AND NOT EXISTS (SELECT FROM chash_override o WHERE o.directory = '$d' AND o.tenant = t::text)});
	ok(@moving > 0, "$d: the " . scalar(@moving) . " tenants of $nslots moving slots get writes");
	my $pick = sub { rand() < 0.9 && @moving ? ($d, $moving[ int(rand(@moving)) ]) : ($d, $all[ int(rand(@all)) ]) };
	my ($rc, $err, $longest) = move_while_writing([ '--online', '--migration', $m ], $pick);
	is($rc, 0, "$d: the online slot steps are moved");
	# one line a step, or a batch of slot steps of one shard pair in one round (one slot, one subscription)
	my $online = 0;
	$online += $1 // 1 while $err =~
	  /(?:step \d+: slot \d+|steps \d+-\d+ \(a batch of (\d+)\): \d+ slots) s\d -> s3 online \(replication slot "chash_move_[0-9a-f]{8}_${m}_\d+"\), \d+ rows/g;
	is($online, $nslots, "$d: every slot step moved online");
	my $pairs = $dir->safe_psql('postgres',
		"SELECT count(DISTINCT (from_shard, to_shard)) FROM chash_migration_step WHERE migration = $m");
	my $rounds = () = $err =~ / online \(replication slot /g;
	is($rounds, $pairs, "$d: one online round per shard pair ($pairs), its steps a batch");
	unlike($err, qr/moved with writes blocked/, "$d: none fell back to blocking");
	ok($longest <= 1, sprintf("$d: the longest refusal of a write was %.3f s (at most 1 s)", $longest));
	check_rows("$d slot steps", $d, $where, $mine, $initial);
	check_no_replication_objects("after the $d slot steps");
	is($shard{s1}->safe_psql('postgres', 'SELECT count(*) FROM chash_decoding_filter')
		  + $shard{s2}->safe_psql('postgres', 'SELECT count(*) FROM chash_decoding_filter'), 0,
		"$d: no decoding filter is left");
}
slot_steps_online('orgs', 3, q{org_id <> 'whale'}, $is_small, 500);
slot_steps_online('jumps', 3, 'true', sub { 1 }, 2000);
slot_steps_online('reds', 3, 'true', sub { 1 }, 2000);

# ---- a slot step of the 'pg_hash' directory, online ----
$m = $dir->safe_psql('postgres', q{SELECT chash_migration_start('items', 'slots', 1)});
is($dir->safe_psql('postgres', "SELECT slot || ' ' || from_shard || ' ' || to_shard FROM chash_migration_step WHERE migration = $m"),
	"$hash_slot $hash_from s3", 'the step moves the loaded slot to s3');
my @movers = @slot_tenants[ 1 .. 200 ];
my $slot_writes = sub { rand() < 0.1 ? ('items', $pinned) : ('items', $movers[ int(rand(@movers)) ]) };
my $hashed;
($rc, $err, $hashed) = move_while_writing([ '--online', '--directory', 'items' ], $slot_writes);
is($rc, 0, 'the online slot move exits 0');
like($err, qr/step 1: slot $hash_slot $hash_from -> s3 online \(replication slot "chash_move_[0-9a-f]{8}_${m}_1"\), \d+ rows/, 'it moved the slot online');
ok($hashed <= 1, sprintf("'pg_hash' slot step online: the longest refusal of a write was %.3f s (at most 1 s)", $hashed));
diag sprintf("longest refusal of a write to a 'pg_hash' slot of %d rows moved online: %.3f s", $slot_rows, $hashed);
my %in_slot = map { $_ => 1 } @slot_tenants;
check_rows("'pg_hash' slot move", 'items', "chash_tenant_slot(tenant_id, 8, 'pg_hash') = $hash_slot",
	sub { $in_slot{ $_[0] } }, $per_tenant * @slot_tenants);
is($dir->safe_psql('postgres', "SELECT chash_route('items', ${pinned}::bigint)"), $hash_from, 'the pinned tenant still routes to its shard');
is($shard{s3}->safe_psql('postgres', "SET chash.bypass_guard = on; SELECT count(*) FROM items WHERE tenant_id = $pinned"), '0',
	'none of the pinned tenant\'s rows moved with its slot');
check_no_replication_objects("after the 'pg_hash' slot move");

# ---- an online step whose changes the target cannot apply ----
# The tenant 'victim' moves online; once its subscription streams (the
# mover holds there 3 s) the source takes a change the target cannot
# apply.  The mover gives the step back once, with the target's error,
# and exits 1: no wait for ever, no second try, nothing left behind.
my $victim_rows = 2000;
{
	my $at = $route_orgs->('victim');
	$shard{$at}->safe_psql('postgres',
		"INSERT INTO accounts SELECT 'victim', i, 'initial' FROM generate_series(1, $victim_rows) i");
}
sub cannot_apply
{
	my ($label, $break, $mend, $expect) = @_;
	my $from = $route_orgs->('victim');
	my $to = $from eq 's3' ? 's2' : 's3';
	my $m = $dir->safe_psql('postgres', qq{SELECT chash_migration_move_tenant('orgs', 'victim', '$to')});
	my ($out, $err) = ('', '');
	local $ENV{CHASH_MOVE_PAUSE_SUBSCRIBED} = 3;
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--lease', '2', '--online', '--migration', $m, $dir->connstr('postgres') ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(180));
	$shard{$to}->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_subscription WHERE subname LIKE 'chash\\_move\\_%\\_${m}\\_1'")
	  or die "$label: no subscription";
	$break->($from, $to);
	$h->finish;
	my $rc = $h->full_result >> 8;
	note "chash_move ($label): $rc\n$err";
	is($rc, 1, "$label: the mover exits 1");
	$expect = qr/error: shard "$to" cannot apply the step's changes: $expect/ unless ref $expect eq 'CODE';
	$expect = $expect->($to) if ref $expect eq 'CODE';
	my $said = () = $err =~ /$expect/g;
	is($said, 1, "$label: the error is said once");
	my $errors = () = $err =~ /^chash_move: error:/mg;
	is($errors, 1, "$label: and nothing else fails: the step is not tried again");
	is($dir->safe_psql('postgres', "SELECT state FROM chash_migration_step WHERE migration = $m"), 'pending',
		"$label: the step is given back");
	is($route_orgs->('victim'), $from, "$label: the tenant still routes to its shard");
	check_no_replication_objects($label);
	is($shard{$to}->safe_psql('postgres', "SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = 'victim'"), '0',
		"$label: none of its rows is left on the target");
	is($shard{$from}->safe_psql('postgres', "SELECT count(*) >= $victim_rows FROM accounts WHERE org_id = 'victim'"), 't',
		"$label: its rows are on the source");
	$mend->($from, $to);
	$dir->safe_psql('postgres', "SELECT chash_migration_cancel($m)");
}

# a unique index of the target's that a row streamed after the copy breaks
cannot_apply('a unique violation in the apply',
	sub {
		my ($from, $to) = @_;
		$shard{$to}->safe_psql('postgres', q{CREATE UNIQUE INDEX accounts_once ON accounts (payload) WHERE payload = 'once'});
		$shard{$to}->safe_psql('postgres', q{SET chash.bypass_guard = on; INSERT INTO accounts VALUES ('other', 1, 'once')});
		$shard{$from}->safe_psql('postgres', q{INSERT INTO accounts VALUES ('victim', 5000000, 'once')});
	},
	sub {
		my ($from, $to) = @_;
		$shard{$to}->safe_psql('postgres', q{DROP INDEX accounts_once; SET chash.bypass_guard = on; DELETE FROM accounts WHERE org_id = 'other'});
		$shard{$from}->safe_psql('postgres', q{DELETE FROM accounts WHERE org_id = 'victim' AND id = 5000000});
	},
	qr/duplicate key value violates unique constraint "accounts_once"/);

# DDL on the source mid-stream: a column the target does not have
cannot_apply('DDL on the source mid-stream',
	sub {
		my ($from, $to) = @_;
		$shard{$from}->safe_psql('postgres', q{
            ALTER TABLE accounts ADD COLUMN note text;
            INSERT INTO accounts VALUES ('victim', 5000001, 'after the DDL', 'noted');});
	},
	sub {
		my ($from, $to) = @_;
		$shard{$from}->safe_psql('postgres', q{
            DELETE FROM accounts WHERE org_id = 'victim' AND id = 5000001;
            ALTER TABLE accounts DROP COLUMN note;});
	},
	qr/logical replication target relation "public.accounts" is missing replicated column: "note"/);

# rows changed on the target behind the mover's back while it streams:
# the verification of the rows changed since the copy sees a copied row
# gone, and a row there twice
cannot_apply('a copied row deleted on the target',
	sub {
		my ($from, $to) = @_;
		$shard{$to}->safe_psql('postgres', q{SET chash.bypass_guard = on; DELETE FROM accounts WHERE org_id = 'victim' AND id = 7});
	},
	sub { },
	sub { qr/error: verification failed for step 1 of migration \d+: table "public.accounts" differs between shard "s\d" and shard "$_[0]"/ });
cannot_apply('a row added on the target',
	sub {
		my ($from, $to) = @_;
		$shard{$to}->safe_psql('postgres', q{SET chash.bypass_guard = on; INSERT INTO accounts VALUES ('victim', 6000000, 'extra')});
	},
	sub { },
	sub { qr/error: verification failed for step 1 of migration \d+: table "public.accounts" differs between shard "s\d" and shard "$_[0]"/ });

# a column dropped on the target mid-stream
cannot_apply('a column missing on the target',
	sub {
		my ($from, $to) = @_;
		$shard{$to}->safe_psql('postgres', q{ALTER TABLE accounts DROP COLUMN payload});
		$shard{$from}->safe_psql('postgres', q{UPDATE accounts SET payload = 'changed' WHERE org_id = 'victim' AND id = 1});
	},
	sub {
		my ($from, $to) = @_;
		$shard{$to}->safe_psql('postgres', q{ALTER TABLE accounts ADD COLUMN payload text});
	},
	qr/logical replication target relation "public.accounts" is missing replicated column: "payload"/);

$_->{h}->kill_kill for values %session;
done_testing();
