# docs/tutorial.md's "Running on several servers", run as printed: its shell
# blocks marked <!-- recipe: NODE --> run on four servers of their own
# (dir, pg1, pg2 and later pg3), each listening on 127.0.0.1 with its own
# port and letting in only what the recipe's pg_hba.conf lines let in, with
# password (scram) logins whose passwords the recipe's own lines put into
# a .pgpass file (PGPASSFILE).  Only what differs between those machines
# and this one is replaced: host names and ports, the configuration files'
# paths, the restart, su postgres -c, the bindir.  Then the outcome: the
# routed write goes through, the misrouted one is refused with SH001,
# chash_move (as the recipe's non-superuser mover) moves slots onto pg3 and
# a whale onto another shard, and a background rebalance (the directory
# server preloading chash, its workers connecting as the mover) gives pg1
# twice the share; every row is on its tenant's shard.  A recipe line
# removed or broken makes this test fail.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;

my $tutorial = slurp_file("$FindBin::RealBin/../docs/tutorial.md");
my ($section) = $tutorial =~ /^## Running on several servers\n(.*?)(?=^## |\z)/ms
  or BAIL_OUT('docs/tutorial.md has no section "Running on several servers"');

# The blocks in order, each with its marker; every shell block but the
# installation's must be marked, so that none is left out of this test.
my @blocks;
while ($section =~ /(?:^<!-- recipe: ([\w -]+) -->\n)?^```sh\n(.*?)^```/msg)
{
	my ($where, $text) = ($1, $2);
	if (!defined $where)
	{
		like($text, qr/^make && make install$/m, 'the unmarked block is the installation');
		next;
	}
	push @blocks, [ $where, $text ];
}
is(join(', ', map { $_->[0] } @blocks), 'dir, shard pg1, app, dir, dir, shard-online pg1, dir, dir',
	'the recipe: the directory server, a shard, the application, adding pg3, the move, online, in the background');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $pgpass = "$tmp/pgpass";
# PGPASSFILE is what the recipe's ~/.pgpass and ~postgres/.pgpass become:
# for psql, chash_move, and the servers (a shard's subscription connects
# as its server, which inherits this environment).
open my $fh, '>', $pgpass or die;
close $fh;
chmod 0600, $pgpass;
$ENV{PGPASSFILE} = $pgpass;
# psql shows the SQLSTATE (SH001) of the recipe's refused write
$ENV{PSQLRC} = "$tmp/psqlrc";
PostgreSQL::Test::Utils::append_to_file($ENV{PSQLRC}, "\\set VERBOSITY verbose\n");
delete @ENV{qw(PGUSER PGDATABASE PGSERVICE PGPASSWORD)};

my %node;
foreach my $name (qw(dir pg1 pg2 pg3))
{
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	# A server as Debian's package makes it: PostgreSQL's defaults where
	# PostgreSQL::Test::Cluster departs from them (wal_level minimal, no
	# walsenders), so that what the recipe sets is what it needs.
	$node->append_conf('postgresql.conf', "wal_level = replica\nmax_wal_senders = 10\n");
	# The test's own sessions come through the socket; TCP (what the
	# recipe's roles use) is let in by the recipe's lines alone.
	open my $hba, '>', $node->data_dir . '/pg_hba.conf' or die;
	print $hba "local all all trust\n";
	close $hba;
	$node->start;
	$node{$name} = $node;
}
my $bindir = $node{dir}->config_data('--bindir');
my $port_of = join(' ', map { "$_) echo " . $node{$_}->port . ' ;;' } sort keys %node);

# The block as it runs on $name here.
sub localize
{
	my ($text, $name) = @_;
	my $node = $node{$name};
	my ($data, $log) = ($node->data_dir, $node->logfile);
	$text =~ s{/etc/postgresql/15/main/(postgresql|pg_hba)\.conf}{$data/$1.conf}g;
	$text =~ s{systemctl restart postgresql\@15-main}{pg_ctl -D '$data' -l '$log' -m fast -w restart}g;
	$text =~ s{su postgres -c "((?:[^"\\]|\\.)*)"}{$1 =~ s/\\(["\\\$`])/$1/gr}ge;
	$text =~ s{~(?:postgres)?/\.pgpass}{"\$PGPASSFILE"}g;
	$text =~ s{chown postgres: }{chown "\$(id -un)": }g;
	$text =~ s{10\.0\.0\.0/24}{127.0.0.1/32}g;
	$text =~ s{listen_addresses = '\*'}{listen_addresses = '127.0.0.1'}g;
	$text =~ s{host=(\w+)\.internal}{'host=127.0.0.1 port=' . $node{$1}->port}ge;
	$text =~ s{(\w+)\.internal:5432:}{'127.0.0.1:' . $node{$1}->port . ':'}ge;
	$text =~ s{-h (\S+)\.internal}{-h 127.0.0.1 -p \$(port_of $1)}g;
	$text =~ s{/usr/lib/postgresql/15/bin/}{$bindir/}g;
	# anything of those machines left would run against nothing here
	unlike($text, qr{\.internal|/etc/postgresql|systemctl|su postgres},
		"$name: the block has nothing of the recipe's machines left");
	return $text;
}

# Runs a block on $name with sh (stopping at the first failing command
# unless $keep_going); returns (exit status, stdout, stderr).
sub run_block
{
	my ($text, $name, $keep_going) = @_;
	my $script = ($keep_going ? '' : "set -e\n")
	  . "port_of() { case \$1 in $port_of esac; }\n"
	  . localize($text, $name);
	my ($out, $err) = ('', '');
	local %ENV = %ENV;
	$ENV{PGHOST} = $node{$name}->host;
	$ENV{PGPORT} = $node{$name}->port;
	$ENV{PATH}   = "$bindir:$ENV{PATH}";
	my $ok = eval {
		IPC::Run::run([ 'sh', '-c', $script ], '<', \'', '>', \$out, '2>', \$err,
			IPC::Run::timeout(240));
	};
	my $rc = defined $ok ? $? >> 8 : "timed out ($@)";
	note("$name:\n$out$err");
	return ($rc, $out, $err);
}

sub run_ok
{
	my ($text, $name, $what) = @_;
	my ($rc, $out, $err) = run_block($text, $name);
	is($rc, 0, "$name: $what") or diag("stdout:\n$out\nstderr:\n$err");
	return $out . $err;
}

my ($dir_setup, $shard_setup, $app, $add_pg3, $move, $shard_online, $move_online, $rebalance) = map { $_->[1] } @blocks;
(my $shard_name = $blocks[1][0]) =~ s/^shard //;
(my $online_name = $blocks[5][0]) =~ s/^shard-online //;

run_ok($dir_setup, 'dir', 'the directory server is set up');
foreach my $name (qw(pg1 pg2))
{
	(my $text = $shard_setup) =~ s/\b\Q$shard_name\E\b/$name/g;
	my $out = run_ok($text, $name, 'the shard is set up, joined and synced');
	like($out, qr/\{public\.accounts\}/, "$name guards accounts");
}

# The application: routes on the directory server as app, writes there.
my ($rc, $out, $err) = run_block($app, 'dir', 1);
my $owner = $node{dir}->safe_psql('app', q{SELECT chash_route('orgs', 'org-17')});
like($out, qr/^INSERT 0 1$/m, 'the routed write goes through');
like($err, qr/ERROR:  SH001: tenant "org-17" of directory "orgs" is not on this shard/,
	'the misrouted write is refused with SH001');
like($err, qr/It belongs to shard "$owner"/, 'naming the owner');
foreach my $name (qw(pg1 pg2))
{
	is($node{$name}->safe_psql('app', q{SELECT string_agg(id::text, ',') FROM accounts}),
		$name eq $owner ? '1' : '', "$name holds what the application wrote");
}
foreach my $role (qw(app mover))
{
	is($node{$_}->safe_psql('app', "SELECT rolsuper FROM pg_roles WHERE rolname = '$role'"),
		'f', "$_: $role is no superuser") for qw(dir pg1 pg2);
}

# Rows of 300 tenants, each on the shard it routes to (as in the demo).
foreach my $name (qw(pg1 pg2))
{
	$node{$name}->safe_psql('app', qq{
        INSERT INTO accounts
        SELECT t, i, 'row ' || i FROM (SELECT 'org-' || g AS t FROM generate_series(1000, 1299) g) a,
               generate_series(1, 5) i
         WHERE chash_route('orgs', t) = '$name'});
}

run_ok($add_pg3, 'dir', 'pg3 is added to the directory');
(my $pg3_setup = $shard_setup) =~ s/\b\Q$shard_name\E\b/pg3/g;
run_ok($pg3_setup, 'pg3', 'pg3 is set up, joined and synced');

my $moved = run_ok($move, 'dir', 'chash_move carries out the migration as the mover');
my $planned = 0;
$planned += $1 while $moved =~ /^\s*pg[12]\s*\|\s*pg3\s*\|\s*(\d+)\s*$/mg;
# a step line ("step 7: slot 12 pg1 -> pg3") or a batch's ("... 11 slots pg2 -> pg3")
my $steps = 0;
$steps += $1 // 1 while $moved =~ /^chash_move: steps? [\d-]+(?: \(a batch of \d+\))?: (?:(\d+) slots|slot\b.*?) pg[12] -> pg3, \d+ rows/mg;
cmp_ok($planned, '>', 0, 'the plan moves slots to pg3');
is($steps, $planned, 'chash_move moved every planned slot to pg3');

# Every shard has applied the migration's end, then holds only its own.
sub applied
{
	my $version = $node{dir}->safe_psql('app', q{SELECT version FROM chash_directory WHERE name = 'orgs'});
	foreach my $name (qw(pg1 pg2 pg3))
	{
		$node{$name}->poll_query_until('app',
			"SELECT bool_and(synced AND replicated_version >= $version) FROM chash_shard_status")
		  or die "$name did not apply version $version";
	}
}

sub misplaced_and_total
{
	my ($misplaced, $total) = (0, 0);
	foreach my $name (qw(pg1 pg2 pg3))
	{
		my ($m, $n) = split /\|/, $node{$name}->safe_psql('app', qq{
            SELECT count(*) FILTER (WHERE chash_route('orgs', org_id) <> '$name'), count(*) FROM accounts});
		$misplaced += $m;
		$total += $n;
	}
	return "$misplaced misplaced of $total";
}
applied();
is($node{dir}->safe_psql('app', q{SELECT status FROM chash_migration ORDER BY id DESC LIMIT 1}),
	'done', 'the migration is done');
my $loaded = 1 + $node{dir}->safe_psql('app',
	q{SELECT count(*) * 5 FROM generate_series(1000, 1299)});
is(misplaced_and_total(), "0 misplaced of $loaded", 'every row is on its tenant\'s shard, none lost');
cmp_ok($node{pg3}->safe_psql('app', 'SELECT count(*) FROM accounts'), '>', 0, 'pg3 holds the moved rows');

# A whale (a tenant step, which ends as a pin) moved by the same command
# line: the mover's grants cover it too.
my ($command) = $move =~ /^(\S*chash_move .*)$/m;
my $whale = 'org-1001';
my $from = $node{dir}->safe_psql('app', qq{SELECT chash_route('orgs', '$whale')});
my $to = $from eq 'pg3' ? 'pg1' : 'pg3';
$node{dir}->safe_psql('app', qq{SELECT chash_migration_move_tenant('orgs', '$whale', '$to')});
run_ok($command, 'dir', "the mover moves the whale $whale from $from to $to");
applied();
is($node{$to}->safe_psql('app', qq{SELECT count(*) FROM accounts WHERE org_id = '$whale'}),
	'5', "the whale's rows are on $to");
is(misplaced_and_total(), "0 misplaced of $loaded", 'after the whale too');

# Online: the shards made ready as the recipe says, then its whale moved
# with --online (a superuser mover on the shards, no fallback to blocking).
foreach my $name (qw(pg1 pg2 pg3))
{
	(my $text = $shard_online) =~ s/\b\Q$online_name\E\b/$name/g;
	run_ok($text, $name, 'the shard is ready for online moves');
}
$moved = run_ok($move_online, 'dir', 'chash_move --online moves the whale');
like($moved, qr/step \d+: tenant\b.* pg3 -> pg1 online\b.*, 1 rows/, 'online, not blocking');
unlike($moved, qr/blocking/, 'no step fell back to blocking');
applied();
is($node{pg1}->safe_psql('app', q{SELECT count(*) FROM accounts WHERE org_id = 'org-17'}),
	'1', "org-17's row is on pg1");
is(misplaced_and_total(), "0 misplaced of $loaded", 'after the online move too');

# In the background: the directory server restarted with chash preloaded,
# the rebalance started and waited for as the mover.
my $slots_before = $node{dir}->safe_psql('app', q{SELECT count(*) FROM chash_slot WHERE directory = 'orgs' AND shard = 'pg1'});
$moved = run_ok($rebalance, 'dir', 'the background rebalance moves the migration, started by the mover');
like($moved, qr/^\s*done\s*$/m, 'chash_rebalance_wait returns done');
is($node{dir}->safe_psql('app', q{SELECT state || ' ' || role FROM chash_rebalance WHERE directory = 'orgs'}), 'done mover',
	'its workers were the mover\'s');
cmp_ok($node{dir}->safe_psql('app', q{SELECT count(*) FROM chash_slot WHERE directory = 'orgs' AND shard = 'pg1'}), '>', $slots_before + 5,
	'pg1 has more slots');
applied();
is(misplaced_and_total(), "0 misplaced of $loaded", 'after the background rebalance too');

$_->stop for values %node;
done_testing();
