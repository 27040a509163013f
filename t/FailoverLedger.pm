# A client that writes through the directory and keeps a ledger of the
# writes the shards acknowledged, for the failover tests (t/14x): each
# write asks the directory database where its tenant routes, then inserts
# or updates a row of the table accounts (org_id text, id bigint, payload
# text) there.  A refused write (SH001, 40001, SH002, a shard or the
# directory down) is not acknowledged and not in the ledger.  check()
# then says whether every acknowledged write is on the shards exactly
# once, with its last payload, on the shard its tenant routes to.
package FailoverLedger;

use strict;
use warnings;
use Test::More;

# dir: the directory database's node (changed by a failover: set {dir});
# shards: name => node; tenants: the tenants written to.
sub new
{
	my ($class, %opt) = @_;
	return bless { %opt, ledger => {}, next_id => 1_000_000, count => {} }, $class;
}

# One statement on a shard: ('ok', output) or the reason it was refused.
sub shard_write
{
	my ($node, $sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql", stdout => \$out, stderr => \$err);
	return ('ok', $out) if $rc == 0;
	return ('moved') if $err =~ /ERROR:  SH001:/;
	return ('fenced') if $err =~ /ERROR:  40001:/;
	return ('refused') if $err =~ /ERROR:  SH002:/;
	die "write failed: $err" if $err =~ /ERROR:/ && $err !~ /terminat|shut|connect|recovery/i;
	return ('down');
}

# $n writes, each an insert (or an update of a row written before).
sub write
{
	my ($self, $n) = @_;
	for (1 .. $n // 1)
	{
		my $tenant = $self->{tenants}[ int(rand(@{ $self->{tenants} })) ];
		my @mine = grep { m{^\Q$tenant\E/} } keys %{ $self->{ledger} };
		my ($key, $sql);
		my $payload = 'p' . ($self->{count}{ok} // 0);
		if (@mine && rand() < 0.4)
		{
			$key = $mine[ int(rand(@mine)) ];
			my (undef, $id) = split m{/}, $key;
			$sql = "UPDATE accounts SET payload = '$payload' WHERE org_id = '$tenant' AND id = $id RETURNING 1";
		}
		else
		{
			my $id = $self->{next_id}++;
			$key = "$tenant/$id";
			$sql = "INSERT INTO accounts VALUES ('$tenant', $id, '$payload') RETURNING 1";
		}
		my ($ret, $route, $err) = $self->{dir}->psql('postgres', "SELECT chash_route('orgs', '$tenant')");
		if ($ret != 0 || !exists $self->{shards}{$route})
		{
			$self->{count}{'directory down'}++;
			next;
		}
		my ($result, $out) = shard_write($self->{shards}{$route}, $sql);
		$self->{count}{$result}++;
		next if $result ne 'ok';
		fail("$key: the acknowledged write found no row") if $out ne '1';
		$self->{ledger}{$key} = $payload;
	}
	return;
}

# Writes one at a time while the mover (an IPC::Run harness in {h}, its
# stderr in {err}) runs, until $until says so: false after $seconds
# (default 120).
sub write_until
{
	my ($self, $m, $until, $seconds) = @_;
	my $start = time;
	while (time - $start < ($seconds // 120))
	{
		$self->write(1);
		$m->{h}->pump_nb if $m->{h}->pumpable;
		return 1 if $until->();
	}
	return 0;
}

# Waits for the mover to end: its exit status, or "signal N".
sub mover_exit
{
	my ($m) = @_;
	$m->{h}->finish;
	my $rc = $m->{h}->full_result;
	note "chash_move: exit " . ($rc >> 8) . "\n${$m->{err}}";
	return $rc & 127 ? 'signal ' . ($rc & 127) : $rc >> 8;
}

sub acknowledged { return scalar keys %{ $_[0]{ledger} } }

sub counts
{
	my ($self) = @_;
	return join(', ', map { "$self->{count}{$_} $_" } sort keys %{ $self->{count} });
}

# Every acknowledged write exactly once, with its last payload, on the
# shard its tenant routes to there (each shard's replica must equal the
# directory first).
sub check
{
	my ($self, $what) = @_;
	my %found;
	for my $s (sort keys %{ $self->{shards} })
	{
		for my $row (split /\n/, $self->{shards}{$s}->safe_psql('postgres',
				q{SELECT org_id || '/' || id || ' ' || payload || ' ' || chash_route('orgs', org_id)
                    FROM accounts WHERE id >= 1000000}))
		{
			my ($key, $payload, $route) = split / /, $row;
			push @{ $found{$key} }, [ $s, $payload, $route ];
		}
	}
	my ($lost, $twice, $stale, $misplaced) = (0, 0, 0, 0);
	for my $key (keys %{ $self->{ledger} })
	{
		my $rows = $found{$key} // [];
		if (!@$rows) { $lost++; diag("lost: $key"); next; }
		$twice++ if @$rows > 1;
		$stale++ if $rows->[0][1] ne $self->{ledger}{$key};
		$misplaced++ if $rows->[0][0] ne $rows->[0][2];
	}
	my $unknown = grep { !exists $self->{ledger}{$_} } keys %found;
	is("$lost $twice $stale $misplaced $unknown", '0 0 0 0 0',
		"$what: every acknowledged write exactly once, with its last payload, on the shard its tenant routes to "
		  . '(lost, twice, stale, misplaced, unacknowledged: ' . $self->acknowledged . ' acknowledged; ' . $self->counts . ')');
	return;
}

1;
