# Every SQL example of the README and of docs/*.md, pasted in order into
# one psql session as a new user would: each file on a server of its own
# (the examples create roles), its ```sql blocks one after another with
# ON_ERROR_STOP.  A block meant to fail carries a line "-- fails: SQLSTATE"
# and must fail with exactly that code.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename;

my $top = dirname(__FILE__) . '/..';
my @files = ("$top/README.md", sort glob("$top/docs/*.md"));
my $found = 0;

foreach my $file (@files)
{
	my $name = basename($file);
	my @blocks = slurp_file($file) =~ /^```sql\n(.*?)^```/msg;
	next unless @blocks;
	$found++;

	my $script = "\\set VERBOSITY verbose\n";
	my @expect;
	for my $i (1 .. @blocks)
	{
		my $block = $blocks[$i - 1];
		$script .= "\\echo example $i\n";
		if ($block =~ /^-- fails: ([0-9A-Z]{5})/m)
		{
			push @expect, [ $i, $1 ];
			$script .= "\\set ON_ERROR_STOP 0\n$block\n\\set ON_ERROR_STOP 1\n"
			  . "\\echo failed $i with :LAST_ERROR_SQLSTATE\n";
		}
		else
		{
			$script .= "$block\n";
		}
	}
	$script .= "\\echo all examples ran\n";

	(my $nodename = $name) =~ s/\W/_/g;
	my $node = PostgreSQL::Test::Cluster->new($nodename);
	$node->init;
	# as a shard is set up: the load statistics' examples need the preload
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'chash'");
	$node->start;
	my ($out, $err) = ('', '');
	$node->psql('postgres', $script, on_error_stop => 1, stdout => \$out, stderr => \$err);
	my @ran = $out =~ /^example (\d+)$/mg;
	ok($out =~ /^all examples ran$/m, "$name: all " . scalar(@blocks) . " examples run in order")
	  or diag("$name stopped in example " . ($ran[-1] // '?') . ":\n"
		  . ($blocks[($ran[-1] // 1) - 1]) . "\n$err");
	foreach my $e (@expect)
	{
		my ($i, $code) = @$e;
		my ($got) = $out =~ /^failed $i with (\S+)$/m;
		is($got // 'nothing', $code, "$name: example $i fails with $code");
	}
	$node->stop;
}
cmp_ok($found, '>=', 3, 'examples were found in the README and the docs');
done_testing();
