# What the failover tests (t/14x) share: the system they fail over
# (setup, load, end_state) and a client that writes through the
# directory and keeps a ledger of the writes the shards acknowledged: each
# write asks the directory database where its tenant routes, then inserts
# or updates a row of the table accounts (org_id text, id bigint, payload
# text) there.  A refused write (SH001, 40001, SH002, SH003, a shard or the
# directory down) is not acknowledged and not in the ledger.  check()
# then says whether every acknowledged write is on the shards exactly
# once, with its last payload, on the shard its tenant routes to.
package FailoverLedger;

use strict;
use warnings;
use Test::More;
use ChashTest;

# The system: a directory database (node $opt{dir}, default 'directory',
# settings $opt{dir_conf}) with directory "orgs" of shards s1 and s2 (16
# slots) and the table public.accounts (org_id text, id bigint, payload
# text) registered, $opt{sql} run there after; shard nodes s1 and s2
# (new_node options $opt{shard}, and $opt{s1} or $opt{s2} for one of
# them) joined to it.  Node names end in $opt{suffix} (several systems
# in one test).  Returns the directory's node, the conninfo the shards
# joined with, and name => shard node, once both applied the directory.
sub setup
{
	my (%opt) = @_;
	my $sfx = $opt{suffix} // '';
	my $dir = new_node(($opt{dir} // 'directory') . $sfx, logical => 1, conf => $opt{dir_conf});
	$dir->safe_psql('postgres', 'CREATE EXTENSION chash');
	my $dirconn = publish_directory($dir);
	my %shard = map { $_ => new_node("$_$sfx", %{ $opt{shard} // {} }, %{ $opt{$_} // {} }) } qw(s1 s2);
	$dir->safe_psql('postgres', q{
        SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 16);
        SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
    } . ($opt{sql} // ''));
	for my $name (sort keys %shard)
	{
		my $c = $shard{$name}->connstr('postgres');
		$dir->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', '$name', server => \$\$$c\$\$)});
		$shard{$name}->safe_psql('postgres', qq{
            CREATE EXTENSION chash;
            CREATE TABLE accounts (org_id text, id bigint, payload text, PRIMARY KEY (org_id, id));
            SELECT chash_shard_join('orgs', '$name', '$dirconn');
        });
	}
	shard_applied($dir, $_) or die $_->name . ' did not apply the directory' for values %shard;
	return ($dir, $dirconn, \%shard);
}

# Loads five rows (ids 1-5, payload 'base') of each tenant org-1 to
# org-$orgs on the shard it routes to; returns how many rows that is.
sub load
{
	my ($dir, $shards, $orgs) = @_;
	$shards->{$_}->safe_psql('postgres', qq{
        INSERT INTO accounts SELECT 'org-' || g, i, 'base'
          FROM generate_series(1, $orgs) g, generate_series(1, 5) i WHERE chash_route('orgs', 'org-' || g) = '$_'})
	  for sort keys %$shards;
	return 5 * $orgs;
}

# The first $n tenants org-1 to org-$orgs that route to $shard.
sub tenants_of
{
	my ($dir, $shard, $n, $orgs) = @_;
	$orgs //= 100;
	return split /\n/, $dir->safe_psql('postgres', qq{
        SELECT 'org-' || g FROM generate_series(1, $orgs) g WHERE chash_route('orgs', 'org-' || g) = '$shard' LIMIT $n});
}

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
	# a shard that is down may end psql before it reads the statement
	my $rc = eval { $node->psql('postgres', "\\set VERBOSITY verbose\n$sql", stdout => \$out, stderr => \$err) };
	return ('down') if !defined $rc && $@ =~ /Broken pipe/;
	die $@ if !defined $rc;
	return ('ok', $out) if $rc == 0;
	return ('moved') if $err =~ /ERROR:  SH001:/;
	return ('fenced') if $err =~ /ERROR:  40001:/;
	return ('refused') if $err =~ /ERROR:  SH00[23]:/;
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

# Waits until every shard applied the directory database (dies if one does not).
sub applied
{
	my ($self) = @_;
	shard_applied($self->{dir}, $_) or die $_->name . ' did not apply the directory' for values %{ $self->{shards} };
	return;
}

# The end state, after a recovery: the shards applied the directory, every
# acknowledged write exactly once on the shard its tenant routes to (check),
# every row there, each shard's replica equal to the directory, the
# directory database's logical slots the shards' two (in use), on each
# shard its directory subscription only, no lease.  $loaded: how many rows
# below id 1000000 the shards hold together (undef: not checked).
sub end_state
{
	my ($self, $what, $loaded) = @_;
	my ($dir, $shards) = ($self->{dir}, $self->{shards});
	my @names = sort keys %$shards;
	$self->applied;
	$self->check($what);
	my ($misplaced, $rows) = (0, 0);
	for (@names)
	{
		$misplaced += $shards->{$_}->safe_psql('postgres', qq{SELECT count(*) FROM accounts WHERE chash_route('orgs', org_id) <> '$_'});
		$rows += $shards->{$_}->safe_psql('postgres', 'SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE id < 1000000');
	}
	is($misplaced, 0, "$what: every row is on the shard its tenant routes to");
	is($rows, $loaded, "$what: every loaded row exactly once") if defined $loaded;
	my $state = q{SELECT (SELECT version FROM chash_directory WHERE name = 'orgs') || ': '
        || (SELECT string_agg(tenant || ' ' || shard, ', ' ORDER BY tenant) FROM chash_override) || ' / '
        || (SELECT string_agg(migration || ':' || step || ' ' || state, ', ' ORDER BY migration, step) FROM chash_migration_step)};
	my $want = $dir->safe_psql('postgres', $state);
	is($shards->{$_}->safe_psql('postgres', $state), $want, "$what: ${_}'s replica equals the directory") for @names;
	is($dir->safe_psql('postgres', q{SELECT count(*) || ' ' || count(*) FILTER (WHERE active) FROM pg_replication_slots
                                      WHERE slot_type = 'logical'}),
		'2 2', "$what: the directory database has the shards' two slots in use, and no other");
	is(join(' ', map { $shards->{$_}->safe_psql('postgres',
					q{SELECT (SELECT count(*) FROM pg_subscription) || '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_replication_slots)}) } @names),
		join(' ', map { '1/0/0' } @names), "$what: each shard has its directory subscription only, no replication object of the mover");
	is($dir->safe_psql('postgres', 'SELECT count(*) FROM chash_step_lease'), '0', "$what: no lease is left");
	return;
}

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
