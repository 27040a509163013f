# The setup the multi-node TAP tests share: nodes, the directory database
# as docs/shards.md sets it up, the SQL helpers sqlstate_of and message_of,
# and waiting until a shard has applied the directory.  A test loads it with
#
#     use FindBin;
#     use lib $FindBin::RealBin;
#     use ChashTest;
#
# (prove runs the tests as t/*.pl only, so this module is no test itself).
package ChashTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(new_node publish_directory create_sql_helpers shard_applied join_shards allow_chash_plugin
  accounts_directory shard_write_on accounts_rows debian_hba password_role as_role stop_fast);

# A started node named $name.  Options: logical => 1 (wal_level logical: a
# directory database, or a shard the mover's online moves read from, whose
# slots may decode with plugin chash);
# preload => 1 (shared_preload_libraries = 'chash': the guard's statement
# check needs the library in every session, docs/shards.md); conf => text
# for postgresql.conf.
sub new_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init($opt{logical} ? (allows_streaming => 'logical') : ());
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'chash'") if $opt{preload};
	$node->append_conf('postgresql.conf', $opt{conf}) if defined $opt{conf};
	$node->start;
	allow_chash_plugin($node) if $opt{logical};
	return $node;
}

# Makes $dir (which has the extension) a directory database as
# docs/shards.md does: the replication role chash_replicator may read the
# directory tables, and chash_directory_publish() publishes them.  Returns
# the conninfo shards join with.
sub publish_directory
{
	my ($dir) = @_;
	$dir->safe_psql('postgres', q{
        CREATE ROLE chash_replicator LOGIN REPLICATION;
        GRANT SELECT ON chash_directory, chash_shard, chash_slot, chash_override,
            chash_migration, chash_migration_step, chash_table, chash_directory_change TO chash_replicator;
        SELECT chash_directory_publish();
    });
	return 'host=' . $dir->host . ' port=' . $dir->port . ' dbname=postgres user=chash_replicator';
}

# Creates in the postgres database of each node the SQL functions
# sqlstate_of(statement), the SQLSTATE the statement fails with or 'no
# error', and message_of(statement), 'SQLSTATE: message / detail' or 'no
# error'; every role may run them.
sub create_sql_helpers
{
	my (@nodes) = @_;
	$_->safe_psql('postgres', q{
        CREATE FUNCTION sqlstate_of(statement text) RETURNS text LANGUAGE plpgsql AS $$
        BEGIN
            EXECUTE statement;
            RETURN 'no error';
        EXCEPTION WHEN others THEN
            RETURN SQLSTATE;
        END
        $$;
        CREATE FUNCTION message_of(statement text) RETURNS text LANGUAGE plpgsql AS $$
        DECLARE
            m text; d text;
        BEGIN
            EXECUTE statement;
            RETURN 'no error';
        EXCEPTION WHEN others THEN
            GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL;
            RETURN SQLSTATE || ': ' || m || ' / ' || coalesce(d, '');
        END
        $$;
        GRANT EXECUTE ON FUNCTION sqlstate_of(text), message_of(text) TO PUBLIC;
    }) for @nodes;
	return;
}

# Joins each shard of %$shards (name => node) to $directory on $dir, in
# name order, after setting its server (chash_shard.server) to the node's
# postgres database.  $dirconn is what publish_directory returned.
sub join_shards
{
	my ($dir, $dirconn, $directory, $shards) = @_;
	for my $name (sort keys %$shards)
	{
		my $c = $shards->{$name}->connstr('postgres');
		$dir->safe_psql('postgres', qq{SELECT chash_set_shard('$directory', '$name', server => \$\$$c\$\$)});
		$shards->{$name}->safe_psql('postgres', qq{SELECT chash_shard_join('$directory', '$name', '$dirconn')});
	}
	return;
}

# The setup most mover and rebalance tests share: on every node of
# %$shards (name => node) the extension and a table accounts (org_id text,
# id bigint, payload text, keyed by both); on $dir the extension, the
# directory database (publish_directory) and directory orgs of the shards
# of $opt{on} (default: all, by name) over $opt{slots} slots (default 64)
# with accounts in it.  Options: index => 1 (accounts gets the index on
# chash_tenant_slot(org_id, slots) the mover's slot predicate uses);
# sql => more SQL to run on $dir after that (pins, say); join => 1 (the
# shards of $opt{on} join orgs, join_shards, and this waits until they
# have applied it).  Returns the conninfo publish_directory returned.
sub accounts_directory
{
	my ($dir, $shards, %opt) = @_;
	my $slots = $opt{slots} // 64;
	my @on = @{ $opt{on} // [ sort keys %$shards ] };
	my $index = $opt{index} ? "CREATE INDEX ON accounts (chash_tenant_slot(org_id, $slots));" : '';
	$_->safe_psql('postgres', qq{
        CREATE EXTENSION chash;
        CREATE TABLE accounts (org_id text, id bigint, payload text, PRIMARY KEY (org_id, id));
        $index
    }) for values %$shards;
	$dir->safe_psql('postgres', 'CREATE EXTENSION chash');
	my $dirconn = publish_directory($dir);
	my $names = join(', ', map { "'$_'" } @on);
	$dir->safe_psql('postgres', qq{
        SELECT chash_create_directory('orgs', ARRAY[$names], $slots);
        SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
    });
	$dir->safe_psql('postgres', $opt{sql}) if defined $opt{sql};
	if ($opt{join})
	{
		join_shards($dir, $dirconn, 'orgs', { map { $_ => $shards->{$_} } @on });
		shard_applied($dir, $shards->{$_}) or die "$_ did not apply the directory" for @on;
	}
	return $dirconn;
}

# One write ($sql) on shard $name (node $node), as a client that routes
# by the directory sees it: ('ok', its output), 'moved' (SH001: the
# tenant has moved away), 'fenced' (40001: its move is completing) or
# 'down' (the shard restarting: not acknowledged); any other error dies.
sub shard_write_on
{
	my ($node, $name, $sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql", stdout => \$out, stderr => \$err);
	return ('ok', $out) if $rc == 0;
	return ('moved') if $err =~ /ERROR:  SH001:/;
	return ('fenced') if $err =~ /ERROR:  40001:/;
	die "write on $name failed: $err" if $err =~ /ERROR:/ && $err !~ /terminat|shut|connect/i;
	return ('down');
}

# The rows of accounts on the shards of %$shards (name => node), as the
# write-ledger checks read them: the written rows (id >= 1000000) as
# { 'tenant/id' => [ [shard, payload, the tenant's route], ... ] }, then
# how many seed rows (id < 1000000) there are and how many of them are on
# a shard their tenant does not route to.
sub accounts_rows
{
	my ($shards) = @_;
	my %found;
	my ($seed, $misplaced_seed) = (0, 0);
	for my $s (sort keys %$shards)
	{
		for my $row (split /\n/, $shards->{$s}->safe_psql('postgres',
				q{SELECT org_id || '/' || id || ' ' || payload || ' ' || chash_route('orgs', org_id) FROM accounts WHERE id >= 1000000}))
		{
			my ($key, $payload, $route) = split / /, $row;
			push @{ $found{$key} }, [ $s, $payload, $route ];
		}
		my ($n, $bad) = split /\|/, $shards->{$s}->safe_psql('postgres',
			qq{SELECT count(*), count(*) FILTER (WHERE chash_route('orgs', org_id) <> '$s') FROM accounts WHERE id < 1000000});
		$seed += $n;
		$misplaced_seed += $bad;
	}
	return (\%found, $seed, $misplaced_seed);
}

# Waits until $shard (its postgres database, which has joined at least one
# directory) has applied the directory database $dir: every directory it
# joined is synced, at the version the directory has on $dir now.  Returns
# true once it has, false when poll_query_until gives up.
sub shard_applied
{
	my ($dir, $shard) = @_;
	my $joined = $shard->safe_psql('postgres',
		q{SELECT string_agg(quote_literal(directory), ',') FROM chash_shard_member});
	my $want = $dir->safe_psql('postgres',
		qq{SELECT string_agg(name || ':' || version, ',' ORDER BY name) FROM chash_directory WHERE name IN ($joined)});
	return $shard->poll_query_until('postgres', qq{
        SELECT bool_and(synced) AND string_agg(directory || ':' || replicated_version, ',' ORDER BY directory) = '$want'
        FROM chash_shard_status});
}

# Lets logical slots of the nodes decode with output plugin chash (online
# moves, docs/shards.md): servers whose PostgreSQL lists the libraries a
# slot may use (output_plugin_libraries) must name chash there.
sub allow_chash_plugin
{
	my (@nodes) = @_;
	for my $node (@nodes)
	{
		next unless $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_settings WHERE name = 'output_plugin_libraries'");
		my $libraries = $node->safe_psql('postgres', "SELECT current_setting('output_plugin_libraries')");
		$node->append_conf('postgresql.conf', "output_plugin_libraries = '$libraries, chash'");
		$node->reload;
	}
	return;
}

# Authenticates as Debian ships pg_hba.conf: the bootstrap superuser (the
# operating-system user running the test) by peer on the socket, every
# other role by password (scram-sha-256), locally and over TCP.  A
# connection the server makes with its own identity therefore gets a
# superuser session only when it asks for the superuser by name, exactly
# the hole the postgres_fdw rule closes (docs/security.md).
sub debian_hba
{
	my (@nodes) = @_;
	for my $node (@nodes)
	{
		my $su = $node->safe_psql('postgres', 'SELECT current_user');
		$node->append_conf('postgresql.conf', "password_encryption = 'scram-sha-256'");
		open my $fh, '>', $node->data_dir . '/pg_hba.conf' or die "pg_hba.conf: $!";
		print $fh <<"HBA";
local   all          $su                 peer
local   all          all                 scram-sha-256
host    all          all  127.0.0.1/32   scram-sha-256
host    all          all  ::1/128        scram-sha-256
local   replication  $su                 peer
local   replication  all                 scram-sha-256
host    replication  all  127.0.0.1/32   scram-sha-256
HBA
		close $fh;
		$node->reload;
	}
	return;
}

# Creates (or alters) login role $role with password $password (default:
# the role's name) on $node, plus any role options in $opt{options} (say
# 'REPLICATION' or 'IN ROLE chash_operator').  Returns the conninfo of
# $node's postgres database as that role, with its password.
sub password_role
{
	my ($node, $role, %opt) = @_;
	my $password = $opt{password} // $role;
	my $options = $opt{options} // '';
	$node->safe_psql('postgres', qq{
        DO \$\$BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$role') THEN
                CREATE ROLE "$role" LOGIN;
            END IF;
        END\$\$;
        ALTER ROLE "$role" LOGIN PASSWORD '$password' $options;
    });
	return $node->connstr('postgres') . " user=$role password=$password";
}

# Runs $sql on $node's $opt{db} (default postgres) as the conninfo $conn
# gives (password_role's answer): returns (exit code, stdout, stderr), as
# PostgreSQL::Test::Cluster::psql does.
sub as_role
{
	my ($node, $conn, $sql, %opt) = @_;
	my ($out, $err) = ('', '');
	my $c = $conn;
	$c =~ s/dbname='[^']*'/dbname='$opt{db}'/ if defined $opt{db};
	my $rc = $node->psql('postgres', $sql, connstr => $c, stdout => \$out, stderr => \$err,
		on_error_stop => 1);
	return ($rc, $out, $err);
}

# Stops each node in fast mode, as systemd's stop does, and fails the test
# when one has not stopped after $timeout seconds (default 60): a shutdown
# that hangs is a failure, not a test that hangs.  Such a node is left to
# the test's end, which stops it in immediate mode.  Returns whether all
# stopped.
sub stop_fast
{
	my ($timeout, @nodes) = ref $_[0] ? (60, @_) : @_;
	my $all = 1;
	for my $node (@nodes)
	{
		next unless defined $node->{_pid};
		local %ENV = $node->_get_env();
		my $ret = PostgreSQL::Test::Utils::system_log('pg_ctl', '-D', $node->data_dir, '-m', 'fast',
			'-t', $timeout, 'stop');
		Test::More::ok($ret == 0, $node->name . " stops in fast mode within $timeout s");
		$node->_update_pid($ret == 0 ? 0 : -1);
		$all &&= $ret == 0;
	}
	return $all;
}

1;
