# chash_move's command line: bad usage exits 2 with getopt's message and a
# pointer to --help, so that a typo in automation never reports success;
# --help and --version exit 0.  No server is needed: every case here is
# refused (or answered) before the mover connects anywhere.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

sub mover
{
	my ($o, $e) = ('', '');
	IPC::Run::run([ 'chash_move', @_ ], '<', \undef, '>', \$o, '2>', \$e);
	return ($? >> 8, $o, $e);
}

for my $bad ([ '--onlien', 'host=nowhere' ], [ '--online', '--jobs' ], [ '-x', 'host=nowhere' ],
	[ '--verbose=yes', 'host=nowhere' ], [ '--dry-run', '--frobnicate', 'host=nowhere' ])
{
	my ($rc, $o, $e) = mover(@$bad);
	is($rc, 2, "@$bad: exit 2");
	like($e, qr/(unrecognized|invalid|requires|doesn't allow).*\n.*Try "chash_move --help" for more information\./s,
		"@$bad: says what is wrong and where help is");
	is($o, '', "@$bad: prints no help on standard output");
}

for my $help ([ '--help' ], [ '-?' ], [ '--dry-run', '--help' ], [ '-v', '-?' ])
{
	my ($rc, $o, $e) = mover(@$help);
	is($rc, 0, "@$help: exit 0");
	like($o, qr/^Usage:/m, "@$help: prints the usage");
}

use FindBin;
my ($version) = slurp_file("$FindBin::RealBin/../chash.control") =~ /^default_version = '([^']+)'/m;
for my $args ([ '--version' ], [ '-V' ], [ '--verbose', '--version' ])
{
	my ($rc, $o, $e) = mover(@$args);
	is($rc, 0, "@$args: exit 0");
	is($o, "chash_move (chash) $version\n", "@$args: prints the extension's version");
}

done_testing();
