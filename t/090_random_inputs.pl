# Random and awkward arguments to every placement and hash function.
#
# Each call either returns or fails with one of the argument-error
# SQLSTATEs of docs/reference.md's conventions; the backend never crashes, never runs out
# of memory, never hangs, and answers the same call the same way twice.
# The generator is seeded, so a failure names a reproducible call.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('fuzz');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION chash');

srand(20261129);
sub pick { return $_[ int(rand(@_)) ]; }

sub lit
{
	my ($v) = @_;
	return 'NULL' unless defined $v;
	$v =~ s/'/''/g;
	return "'$v'";
}

sub rand_name
{
	return pick('n', 'node-' . int(rand(100)), '10.0.0.' . int(rand(255)) . ':11211',
		"caf\xc3\xa9", '{tag}', '', 'x' x int(rand(300)), 'a,b', '"q"');
}

sub rand_text { return pick(undef, '', 'k', rand_name(), 'tenant-' . int(rand(1e9))); }

# A text[] literal: usually a list of distinct names, sometimes broken.
sub rand_nodes
{
	my $shape = int(rand(10));
	return 'NULL::text[]' if $shape == 0;
	return q('{}'::text[]) if $shape == 1;
	return q(ARRAY['a', NULL]) if $shape == 2;
	return q(ARRAY['a', 'a']) if $shape == 3;
	return q('{{a,b},{c,d}}'::text[]) if $shape == 4;
	my $n = pick(1, 2, 3, 5, 16, 50, 200);
	my %seen;
	my @names;
	while (@names < $n)
	{
		my $x = rand_name() . "-" . int(rand(1e6));
		next if $seen{$x}++;
		push @names, lit($x);
	}
	return 'ARRAY[' . join(', ', @names) . ']::text[]';
}

sub count_of
{
	my ($nodes) = @_;
	my $n = () = $nodes =~ /'(?:[^']|'')*'/g;
	return $n;
}

sub rand_weights
{
	my ($n) = @_;
	my $shape = int(rand(8));
	return 'NULL::float8[]' if $shape <= 2;
	$n = int(rand(5)) if $shape == 3;    # wrong length, usually
	my @w = map {
		pick(0, 1, 2, 0.5, 1e-300, 1e300, -1, "'NaN'", "'Infinity'", rand(10))
	} 1 .. ($n || 1);
	@w = (0) x scalar(@w) if $shape == 4;
	return 'ARRAY[' . join(', ', map { "$_" } @w) . ']::float8[]';
}

sub rand_int
{
	return pick('NULL', -2147483648, -1, 0, 1, 2, 3, 7, 160, 65536, 65537, 2147483647,
		int(rand(1000)));
}

sub rand_hash { return pick('NULL', "'xxh64'", "'md5'", "'MD5'", "''"); }

sub rand_call
{
	my $nodes = rand_nodes();
	my $n = count_of($nodes);
	my $w = rand_weights($n);
	my $key = lit(rand_text());
	my $k = rand_int();
	my $v = pick('NULL', -1, 0, 1, 40, 160, 1000, 2147483647);
	my $h = rand_hash();
	my $f = pick(0 .. 13);
	return "chash_rendezvous($key, $nodes, $w, $h)" if $f == 0;
	return "chash_rendezvous_top($key, $nodes, $k, $w, $h)" if $f == 1;
	return "chash_ring_lookup($key, $nodes, $v, $w, $h)" if $f == 2;
	return "chash_ring_replicas($key, $nodes, $k, $v, $w, "
	  . pick('NULL', $nodes, "ARRAY['z']") . ", $h)"
	  if $f == 3;
	return "(SELECT count(*) FROM chash_ring_points($nodes, $v, $w, $h))" if $f == 4;
	return "(SELECT sum(share) FROM chash_ring_shares($nodes, $v, $w, $h))" if $f == 5;
	return "chash_ketama($key, $nodes, $w)" if $f == 6;
	return "chash_maglev($key, $nodes, " . pick('NULL', $k, 65537, 251, 5) . ", $w, $h)"
	  if $f == 7;
	return "(SELECT count(*) FROM chash_maglev_table($nodes, "
	  . pick('NULL', $k, 251, 13) . ", $w, $h))"
	  if $f == 8;
	return "(SELECT count(*) FROM chash_bounded_assign("
	  . pick($nodes, 'NULL::text[]', q('{}'::text[])) . ", $nodes, "
	  . pick('NULL', -1, 0, 0.25, 1e-9, 1e300, "'NaN'") . ", $v, $w, $h))"
	  if $f == 9;
	return "chash_jump($key, $k)" if $f == 10;
	return "chash_redis_same_slot($nodes)" if $f == 11;
	return "chash_pg_partition($key, $k)" if $f == 12;
	return "chash_xxh64($key, " . pick('NULL', 0, -1, '9223372036854775807') . ")";
}

# The argument errors of docs/reference.md's conventions, plus "value out of range" for literals.
my %allowed = map { $_ => 1 } qw(22023 22004 22P02 22003 2202E 54000);

my $calls = 1500;
my $script = <<'SQL';
SET statement_timeout = '20s';
CREATE TEMP TABLE outcome (n int, call text, result text, state text, message text);
CREATE FUNCTION pg_temp.try(n int, call text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    EXECUTE 'SELECT (' || call || ')::text' INTO r;
    INSERT INTO outcome VALUES (n, call, coalesce(r, '<null>'), 'ok', NULL);
EXCEPTION WHEN others THEN
    INSERT INTO outcome VALUES (n, call, NULL, SQLSTATE, SQLERRM);
END $$;
SQL
for my $i (1 .. $calls)
{
	my $call = rand_call();
	$script .= "SELECT pg_temp.try($i, " . lit($call) . ");\n";
	# every call twice: the answer must not change
	$script .= "SELECT pg_temp.try(-$i, " . lit($call) . ");\n";
}
$script .= <<'SQL';
SELECT count(*) FILTER (WHERE state = 'ok') || ' ok, ' || count(*) FILTER (WHERE state <> 'ok') || ' errors'
FROM outcome;
SELECT state || ' ' || count(*) FROM outcome GROUP BY state ORDER BY state;
SELECT 'unexpected ' || state || ': ' || message || ' <- ' || call FROM outcome
WHERE state <> 'ok' AND state NOT IN ('22023', '22004', '22P02', '22003', '2202E', '54000');
SELECT 'differs: ' || a.call FROM outcome a JOIN outcome b ON b.n = -a.n
WHERE a.n > 0 AND (a.state, coalesce(a.result, '')) IS DISTINCT FROM (b.state, coalesce(b.result, ''));
SQL

my ($ret, $stdout, $stderr) = $node->psql('postgres', $script, on_error_stop => 1);
is($ret, 0, 'the random calls ran to the end in one session');
note($stderr) if $ret;
my @lines = split /\n/, $stdout;
my ($summary) = grep { /ok, \d+ errors$/ } @lines;
ok(defined $summary, "outcomes recorded: " . ($summary // 'none'));
note($_) for grep { /^\S+ \d+$/ } @lines;
my @unexpected = grep { /^unexpected / } @lines;
is(scalar(@unexpected), 0, 'every error has an argument-error SQLSTATE')
  or diag(join("\n", @unexpected[ 0 .. ($#unexpected < 20 ? $#unexpected : 20) ]));
my @differs = grep { /^differs: / } @lines;
is(scalar(@differs), 0, 'the same call gives the same answer twice')
  or diag(join("\n", @differs[ 0 .. ($#differs < 20 ? $#differs : 20) ]));
my ($ok) = ($summary // '') =~ /^(\d+) ok/;
cmp_ok($ok // 0, '>', $calls / 4, 'a good share of the calls succeed');

is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is still up');
my $log = slurp_file($node->logfile);
unlike($log, qr/terminated by signal|server process .* was terminated/, 'no backend crashed');

$node->stop;
done_testing();
