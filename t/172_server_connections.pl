# Connections the server makes on a role's behalf (docs/shards.md,
# "Server-side connections"; SPEC section 8): collection (chash_collect,
# chash_shard_fetch) and reconcile (chash_directory_read_replica) act for
# the role that calls them.  pg_hba.conf as Debian ships it on every node:
# the bootstrap superuser by peer on the socket, every other role by
# password.  The directory server has a password file (PGPASSFILE, what
# ~postgres/.pgpass is on a real server) with the collector's and the
# mover's passwords.
#
# Attacked: a collector whose shard server string (written by a mover or
# an operator) names the superuser, or the mover, or no role at all (libpq
# then logs in as the server's own user, the superuser, by peer); a remote
# that does not ask for a password; connection options that change who
# connects or what the session runs; a remote role whose search_path puts
# a schema with a planted operator first.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;

my $pgpass = PostgreSQL::Test::Utils::tempdir . '/pgpass';
append_to_file($pgpass, "*:*:*:collector:collector-pw\n*:*:*:mover:mover-pw\n");
chmod 0600, $pgpass;
# the servers' environment: the directory server reads it when it connects
$ENV{PGPASSFILE} = $pgpass;

my $dir = new_node('directory', logical => 1);
my $shard = new_node('conn_s1', preload => 1, conf => 'log_connections = on');
accounts_directory($dir, { s1 => $shard }, join => 1);
create_sql_helpers($dir);
my $su = $shard->safe_psql('postgres', 'SELECT current_user');

# the collector as docs/load.md has it, with a password on both sides
my $collector = password_role($dir, 'collector', password => 'collector-pw');
$dir->safe_psql('postgres', q{
    GRANT SELECT ON chash_directory, chash_shard, chash_slot, chash_override,
        chash_migration, chash_migration_step TO collector;
    GRANT SELECT, INSERT, DELETE ON chash_load_slot, chash_load_tenant TO collector;
    GRANT SELECT, INSERT, UPDATE ON chash_tenant_size TO collector;
    GRANT EXECUTE ON FUNCTION chash_shard_fetch(text, text) TO collector;
    CREATE ROLE trustme;
    GRANT EXECUTE ON FUNCTION chash_shard_fetch(text, text) TO trustme;
});
my $collector_shard = password_role($shard, 'collector', password => 'collector-pw');
password_role($shard, 'mover', password => 'mover-pw');
$shard->safe_psql('postgres', q{CREATE ROLE trustme LOGIN; GRANT CREATE ON DATABASE postgres TO collector});
# chash_shard_sizes reads the tenant tables with the collector's own rights (docs/load.md)
$shard->safe_psql('postgres', q{GRANT SELECT ON chash_directory, chash_table, accounts TO collector, mover, trustme});
debian_hba($dir, $shard);
# a remote that lets one role in without a password
my $hba = slurp_file($shard->data_dir . '/pg_hba.conf');
open my $fh, '>', $shard->data_dir . '/pg_hba.conf' or die;
print $fh "local all trustme trust\n$hba";
close $fh;
$shard->reload;

my $base = $shard->connstr('postgres');
my $log = $shard->logfile;

# Runs $sql on the directory database as the collector (a password login)
# and returns the shard's log lines of the logins it caused (chash's:
# application_name=chash), with the output.
sub as_collector
{
	my ($sql) = @_;
	my $offset = -s $log;
	my ($rc, $out, $err) = as_role($dir, $collector, $sql);
	die "as collector: $err" if $rc != 0;
	my $logins = join("\n", grep { /connection authorized: .*application_name=chash/ }
		  split /\n/, slurp_file($log, $offset));
	return ($out, $logins);
}

sub set_server
{
	my ($server) = @_;
	$dir->safe_psql('postgres', qq{SELECT chash_set_shard('orgs', 's1', server => \$\$$server\$\$)});
}

sub collect_row
{
	my ($out, $logins) = as_collector(q{SELECT ok || ':' || detail FROM chash_collect('orgs')});
	return ($out, $logins);
}

# ---- superusers are exempt: the collection by peer works as before ----
is($dir->safe_psql('postgres', q{SELECT ok FROM chash_collect('orgs')}), 't',
	'a superuser collects through a server string without a user, by peer');

# ---- the collector, a string without a user: it connects as itself ----
my ($out, $logins) = collect_row();
like($out, qr/^true:/, 'the collector collects with a server string naming no role') or diag($out);
like($logins, qr/user=collector /, 'the shard saw a login of role collector (its password from the password file)');
unlike($logins, qr/user=\Q$su\E /, 'and no login of the server\'s own user, the superuser');

# ---- a planted server string naming the superuser ----
set_server("$base user=$su");
($out, $logins) = collect_row();
like($out, qr/^false:password is required to connect to shard server .*: Non-superuser "collector" cannot connect as role "\Q$su\E" without that role's password in the connection string/,
	'a server string naming the superuser is refused for the collector') or diag($out);
is($logins, '', 'no session was opened on the shard');

# ---- a planted server string naming the mover, whose password the server's file has ----
set_server("$base user=mover");
($out, $logins) = collect_row();
like($out, qr/^false:password is required .*cannot connect as role "mover"/,
	'a server string naming the mover is refused: the server\'s password for the mover is not the collector\'s')
  or diag($out);
is($logins, '', 'no session as the mover');
is($dir->safe_psql('postgres', q{SELECT ok FROM chash_collect('orgs')}), 't',
	'a superuser\'s collection uses the same string');

# ---- another role with that role's password in the string: the password proves it ----
($out, $logins) = as_collector(qq{SELECT count(*) >= 0 FROM chash_shard_fetch(\$\$$base user=mover password=mover-pw\$\$, 'orgs')});
is($out, 't', 'with the other role\'s password in the string the collector may connect as it');
like($logins, qr/user=mover /, 'the session is the mover\'s');

# ---- a remote that asks no password ----
is($dir->safe_psql('postgres', qq{
    SET ROLE trustme;
    SELECT message_of(\$m\$SELECT * FROM chash_shard_fetch(\$\$$base\$\$, 'orgs')\$m\$)}),
	qq{2F003: password is required to connect to shard server "} . join(' ', "host=" . $shard->host, "port=" . $shard->port, 'dbname=postgres')
	  . q{" / Non-superuser cannot connect if the server does not request a password.},
	'a connection the remote server let in without a password is refused for a role that is no superuser');

# ---- keywords that change who connects or what the session runs ----
for my $kw (q{options='-c search_path=evil'}, 'service=s1', "passfile=$pgpass", 'sslkey=/etc/ssl/private/x.key',
	'sslrootcert=/etc/ssl/certs/x.pem', 'krbsrvname=x', 'replication=database')
{
	my ($name) = $kw =~ /^(\w+)=/;
	($out) = as_collector(qq{SELECT message_of(\$m\$SELECT * FROM chash_shard_fetch(\$\$$base $kw\$\$, 'orgs')\$m\$)});
	like($out, qr/^22023: connection option "$name" is not allowed in a connection the server makes/,
		"$name is refused for the collector") or diag($out);
}
is($dir->safe_psql('postgres', qq{
    SELECT sqlstate_of(\$m\$SELECT * FROM chash_shard_fetch(\$\$$base options='-c session_preload_libraries=x'\$\$, 'orgs')\$m\$)}),
	'22023', 'options is refused for a superuser too: the string may be one a mover wrote');
is($dir->safe_psql('postgres', qq{
    SELECT sqlstate_of(\$m\$SELECT chash_directory_read_replica(\$\$$base options='-c search_path=evil'\$\$, 'public')\$m\$)}),
	'22023', 'and in the connections of reconcile');
set_server("$base options='-c search_path=evil'");
($out) = collect_row();
like($out, qr/^false:connection option "options" is not allowed/, 'a planted options in a shard\'s server fails its collection')
  or diag($out);

# ---- the remote search_path is pinned ----
# The collector's role on the shard puts a schema of its own first, with an
# operator = (name, name) that the collection's catalog query would call.
set_server($base);
my ($rc, $o, $err) = as_role($shard, $collector_shard, q{
    CREATE SCHEMA evil;
    CREATE FUNCTION evil.eq(name, name) RETURNS boolean LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'captured by %', current_user;
    END $$;
    CREATE OPERATOR evil.= (LEFTARG = name, RIGHTARG = name, FUNCTION = evil.eq);
    ALTER ROLE collector SET search_path = evil, pg_catalog;
});
is($rc, 0, 'the collector plants an operator on the shard') or diag($err);
($rc, $o, $err) = as_role($shard, $collector_shard, q{SELECT count(*) FROM pg_extension WHERE extname = 'chash'});
like($o . $err, qr/captured by collector/, 'its own sessions there call it');
($out) = collect_row();
like($out, qr/^true:/, 'the collection\'s session does not: its search_path is pinned') or diag($out);

$shard->stop('fast');
$dir->stop('fast');
done_testing();
