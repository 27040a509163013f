# Every tenant column type the guard takes, moved online and blocking
# while a client writes: text, varchar(20), char(8) and a domain over text
# (a 'text' directory), int and bigint (a 'bigint' one), uuid (a 'uuid'
# one).  Each directory moves its whale (a tenant step) from s1 to s2
# online, then back blocking, while a client inserts into every table of
# the directory, routing each write and retrying it when the shard refuses
# it (40001 while fenced, SH001 once moved).  The ledger: every
# acknowledged write once, on its tenant's shard.  The output plugin reads
# a char(n) tenant without its padding, as the guard does: the writes
# streamed during the online copy are passed on and tallied, not deleted
# with the source's rows (docs/shards.md, "Online moves of every slot
# method").
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

# directory => [key type, whale, { table => tenant column type }]
my %dirs = (
	txt => [ 'text', 'whale', { t_text => 'text', t_varchar => 'varchar(20)', t_char => 'char(8)', t_domain => 'tenant_name' } ],
	num => [ 'bigint', '42', { t_int => 'int', t_bigint => 'bigint' } ],
	ids => [ 'uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', { t_uuid => 'uuid' } ]);
my $seed = 2000;

$_->safe_psql('postgres', 'CREATE EXTENSION chash; CREATE DOMAIN tenant_name AS text CHECK (VALUE <> \'\')')
  for values %shard;
$dir->safe_psql('postgres', 'CREATE EXTENSION chash');
my $dirconn = publish_directory($dir);
for my $d (sort keys %dirs)
{
	my ($ktype, $whale, $tables) = @{ $dirs{$d} };
	$dir->safe_psql('postgres', qq{
        SELECT chash_create_directory('$d', ARRAY['s1', 's2'], 16, key_type => '$ktype');
        SELECT chash_pin('$d', '$whale', 's1');});
	for my $t (sort keys %$tables)
	{
		$_->safe_psql('postgres', qq{
            CREATE TABLE $t (tenant $tables->{$t}, id bigint, payload text, PRIMARY KEY (tenant, id));})
		  for values %shard;
		$dir->safe_psql('postgres', qq{SELECT chash_add_table('$d', 'public.$t', 'tenant')});
	}
}
# one directory at a time: a second join that reads chash_table before the
# replica's first copy has it leaves its tables unguarded
for my $d (sort keys %dirs)
{
	join_shards($dir, $dirconn, $d, \%shard);
	shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
}
for my $d (sort keys %dirs)
{
	my ($ktype, $whale, $tables) = @{ $dirs{$d} };
	is($shard{s1}->safe_psql('postgres', "SELECT guarded_tables FROM chash_shard_status WHERE directory = '$d'"),
		'{' . join(',', map { "public.$_" } sort keys %$tables) . '}', "$d: s1 guards its tables");
	$shard{s1}->safe_psql('postgres', "INSERT INTO $_ SELECT '$whale', i, 'initial' FROM generate_series(1, $seed) i")
	  for sort keys %$tables;
}

# ---- the client: one psql session a node, each write retried until acknowledged ----
my $timeout = IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default);
my %session;

# (output, SQLSTATE or undef, stderr) of one statement on $node
sub sql
{
	my ($node, $sql) = @_;
	my $s = $session{ $node->name } //= do
	{
		my $n = { in => '', out => '', err => '', n => 0 };
		$n->{h} = IPC::Run::start([ 'psql', '-XAtq', '-v', 'VERBOSITY=sqlstate', '-d', $node->connstr('postgres') ],
			'<', \$n->{in}, '>', \$n->{out}, '2>', \$n->{err}, $timeout);
		$n;
	};
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

my %ledger;    # table => { id => 1 } of the acknowledged inserts
my %route;     # directory => the whale's shard, as the client last routed it
my $next_id = 1_000_000;
my %refused;   # directory => writes refused (40001 or SH001) and retried

# Inserts one row of the whale into $table of $d, routed, retried until acknowledged.
sub write_one
{
	my ($d, $table) = @_;
	my $whale = $dirs{$d}[1];
	my $id = $next_id++;
	for (;;)
	{
		my $to = $route{$d} //= (sql($dir, "SELECT chash_route('$d', '$whale')"))[0];
		my ($out, $code, $err) = sql($shard{$to}, "INSERT INTO $table VALUES ('$whale', $id, 'w') RETURNING 1");
		if (!defined $code)
		{
			$ledger{$table}{$id} = 1;
			return;
		}
		$refused{$d}++;
		if ($code eq '40001') { usleep(2_000); next; }
		if ($code eq 'SH001') { delete $route{$d}; next; }
		die "unexpected error on $to: $err";
	}
}

# Moves $d's whale to $to (online with @args = ('--online')) while the
# client writes to each of its tables in turn; returns (exit status,
# stderr, writes while the mover ran).
sub move_writing
{
	my ($d, $to, @args) = @_;
	my @tables = sort keys %{ $dirs{$d}[2] };
	my $m = $dir->safe_psql('postgres', "SELECT chash_migration_move_tenant('$d', '$dirs{$d}[1]', '$to')");
	my ($out, $err) = ('', '');
	# the online copy waits a little once it streams: writes land in the stream
	local $ENV{CHASH_MOVE_PAUSE_SUBSCRIBED} = 2;
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--lease', '2', @args, '--migration', $m,
							  $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
	my $n = 0;
	while ($h->pumpable)
	{
		write_one($d, $tables[ $n++ % @tables ]);
		$h->pump_nb;
	}
	$h->finish;
	my $rc = $h->full_result;
	note "chash_move @args ($d -> $to): exit " . ($rc >> 8) . ", $n writes\n$err";
	write_one($d, $_) for @tables;    # after the move too
	return ($rc >> 8, $err, $n);
}

# Every acknowledged write of $d's tables once, on the whale's shard; the seed rows too.
sub ledger_holds
{
	my ($d, $name) = @_;
	my ($whale, $tables) = @{ $dirs{$d} }[ 1, 2 ];
	shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
	my $owner = $dir->safe_psql('postgres', "SELECT chash_route('$d', '$whale')");
	for my $t (sort keys %$tables)
	{
		my (%found, $elsewhere);
		for my $s (sort keys %shard)
		{
			my @ids = split /\n/, $shard{$s}->safe_psql('postgres',
				"SET chash.bypass_guard = on; SELECT id FROM $t WHERE tenant = '$whale'");
			$found{$_}++ for @ids;
			$elsewhere += @ids if $s ne $owner;
		}
		my @lost = grep { !$found{$_} } keys %{ $ledger{$t} };
		my $seed_found = grep { $_ <= $seed } keys %found;
		is(scalar(@lost), 0, "$name, $t ($tables->{$t}): no acknowledged write is lost ("
			  . scalar(keys %{ $ledger{$t} }) . ' written)');
		is(scalar(grep { $found{$_} > 1 } keys %found), 0, "$name, $t: no row is there twice");
		is($seed_found, $seed, "$name, $t: the seed rows are there");
		is($elsewhere // 0, 0, "$name, $t: every row is on $owner, where the whale routes");
	}
}

for my $d (sort keys %dirs)
{
	my ($rc, $err, $n) = move_writing($d, 's2', '--online');
	is($rc, 0, "$d: the whale moves to s2 online");
	like($err, qr/tenant '[^']+' s1 -> s2 online/, "$d: it moved online");
	my ($changed) = $err =~ /\((\d+) changed since the copy/;
	ok(defined $changed && $changed > 0, "$d: the tally names the rows written since the copy (" . ($changed // 'none') . ')');
	ledger_holds($d, "$d online");

	($rc, $err, $n) = move_writing($d, 's1');
	is($rc, 0, "$d: the whale moves back to s1 blocking");
	ok($refused{$d} > 0, "$d: writes were refused while the whale moved, and retried ($refused{$d})");
	ledger_holds($d, "$d blocking");
}

$_->{h}->finish for values %session;
$_->stop('fast') for $dir, values %shard;
done_testing();
