# The background rebalance's processes (docs/shards.md, "Background
# rebalancing", "Who its processes act as"), attacked and shut down, with
# pg_hba.conf as Debian ships it (debian_hba: the superuser by peer, every
# other role by password).
#
# - A database owner that is no superuser sets its database's search_path
#   to a schema with its own = operator on text, whose function makes the
#   owner a superuser when a superuser runs it.  The rebalance's worker,
#   its resumer after a restart and its launcher take the database's
#   settings at their connection: the owner must stay what it is, and the
#   worker's session is the role that started the rebalance.
# - Two databases of the server each have a rebalance running: after a
#   fast restart both resume, and the next fast shutdown finishes (the
#   launcher once read a directory listing that a transaction's end had
#   closed, and hung the shutdown; the second database never resumed).
# - A mover that has lost chash_mover by the next restart does not get its
#   rebalance resumed: it fails, and says why.
# - A standby of the directory server cloned before the first rebalance
#   resumes the rebalances once promoted: the launcher finds them from
#   pg_database and the databases' tables, which are WAL-logged (it once
#   read files of the data directory that a clone did not have).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use Time::HiRes qw(time usleep);

my $slots = 64;
my $tenants = 300;
my $pw = 'moverpw';

# The movers' passwords, for the connections the rebalance's workers make
# (to the directory database and to the shards, whose chash_shard.server
# holds none): the directory server's password file, as docs/shards.md
# says (PGPASSFILE in the server's environment).
my $passfile = PostgreSQL::Test::Utils::tempdir() . '/pgpass';
open my $fh, '>', $passfile or die "$passfile: $!";
print $fh "*:*:*:mover:$pw\n*:*:*:mover2:$pw\n";
close $fh;
chmod 0600, $passfile;
$ENV{PGPASSFILE} = $passfile;

my $dir = new_node('directory', logical => 1, preload => 1, conf => qq{
max_worker_processes = 16
max_replication_slots = 20
max_wal_senders = 20
chash.rebalance_lease = 2
});
my %shard = map { $_ => new_node($_, preload => 1) } qw(s1 s2);
my @all = ($dir, map { $shard{$_} } sort keys %shard);
debian_hba(@all);

# The roles.  On the directory server: the database owner (no superuser),
# the replication role, and one mover for each database; on the shards the
# movers (roles are per server).
password_role($dir, 'owner');
my $replconn = password_role($dir, 'chash_replicator', options => 'REPLICATION');
$dir->safe_psql('postgres', q{
    CREATE DATABASE app OWNER owner;
    CREATE DATABASE app2;
});
$_->safe_psql('postgres', 'CREATE DATABASE app; CREATE DATABASE app2;') for values %shard;

# Each database of the directory server: the extension, the directory
# database's publication, directory orgs of s1 and s2 whose server strings
# name the database's mover, the mover's grants.
my %mover = (app => 'mover', app2 => 'mover2');
for my $db (sort keys %mover)
{
	my $m = $mover{$db};
	for my $s (values %shard)
	{
		$s->safe_psql($db, qq{
            CREATE EXTENSION chash;
            CREATE TABLE accounts (org_id text, id bigint, payload text, PRIMARY KEY (org_id, id));
            CREATE INDEX ON accounts (chash_tenant_slot(org_id, $slots));
        });
		password_role($s, $m, password => $pw);
		$s->safe_psql($db, qq{
            GRANT chash_mover TO $m;
            GRANT SELECT, INSERT, DELETE ON accounts TO $m;
            GRANT SELECT ON chash_shard_member, chash_directory, chash_shard, chash_slot, chash_override,
                chash_migration, chash_migration_step TO $m;
        });
	}
	password_role($dir, $m, password => $pw);
	$dir->safe_psql($db, qq{
        CREATE EXTENSION chash;
        GRANT SELECT ON chash_directory, chash_shard, chash_slot, chash_override,
            chash_migration, chash_migration_step, chash_table, chash_directory_change TO chash_replicator;
        SELECT chash_directory_publish();
        GRANT chash_mover TO $m;
        GRANT SELECT ON chash_table, chash_tenant_size, chash_migration_progress TO $m;
        GRANT SELECT, UPDATE ON chash_directory, chash_shard, chash_slot, chash_migration, chash_migration_step TO $m;
        GRANT SELECT, INSERT, UPDATE, DELETE ON chash_override, chash_step_lease TO $m;
        GRANT INSERT ON chash_migration, chash_migration_step TO $m;
        GRANT USAGE ON SEQUENCE chash_migration_id_seq TO $m;
        GRANT SELECT ON chash_rebalance, chash_rebalance_status TO $m;
        SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], $slots);
        SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
    });
	my $dirconn = "$replconn" =~ s/dbname='?postgres'?/dbname=$db/r;
	for my $name (sort keys %shard)
	{
		my $c = $shard{$name}->connstr($db) . " user=$m";
		$dir->safe_psql($db, qq{SELECT chash_set_shard('orgs', '$name', server => \$\$$c\$\$)});
		$shard{$name}->safe_psql($db, qq{SELECT chash_shard_join('orgs', '$name', \$\$$dirconn\$\$)});
	}
	for my $name (sort keys %shard)
	{
		$shard{$name}->poll_query_until($db, q{SELECT bool_and(synced) FROM chash_shard_status})
		  or die "$name did not apply the directory of $db";
		$shard{$name}->safe_psql($db, qq{
            INSERT INTO accounts
            SELECT t, i, 'seed'
              FROM (SELECT 'org-' || g AS t FROM generate_series(1, $tenants) g) a, generate_series(1, 3) i
             WHERE chash_route('orgs', t) = '$name'});
	}
	$dir->safe_psql($db, q{SELECT chash_set_shard('orgs', 's1', weight => 3)});
}

# The standby, cloned before any rebalance has started.
$dir->backup('before_rebalances');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($dir, 'before_rebalances', has_streaming => 1);
$standby->start;

# SQL on a database of the directory server as its superuser, under a
# search_path of its own: app's setting is the owner's trap.
sub dir_sql
{
	my ($db, $sql) = @_;
	return $dir->safe_psql($db, "SET search_path = public, pg_catalog;\n$sql");
}

# ---- the database owner's trap ----
my $ownerconn = password_role($dir, 'owner') =~ s/dbname='?postgres'?/dbname=app/r;
my ($rc, $out, $err) = as_role($dir, $ownerconn, q{
    CREATE SCHEMA evil;
    CREATE TABLE evil.log (who name, session name, super bool, at timestamptz DEFAULT now());
    GRANT USAGE ON SCHEMA evil TO PUBLIC;
    GRANT INSERT ON evil.log TO PUBLIC;
    CREATE FUNCTION evil.eq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$
    BEGIN
        BEGIN
            INSERT INTO evil.log (who, session, super)
            SELECT current_user, session_user, rolsuper FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) current_user;
        EXCEPTION WHEN others THEN NULL;
        END;
        BEGIN
            EXECUTE 'ALTER ROLE owner SUPERUSER';
        EXCEPTION WHEN others THEN NULL;
        END;
        RETURN pg_catalog.texteq(a, b);
    END
    $$;
    CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.eq);
    ALTER DATABASE app SET search_path = evil, pg_catalog;
});
is($rc, 0, 'the owner of database app plants an operator = and sets the database\'s search_path to find it first')
  or diag $err;

sub owner_is_superuser
{
	return $dir->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'owner'});
}
# Who ran the trap's function, and whether any was a superuser.
sub trap_log
{
	return dir_sql('app', q{SELECT coalesce(string_agg(DISTINCT who || '/' || session || '/' || super, ', '), 'nobody') FROM evil.log});
}
sub trap_ran_as_superuser
{
	return dir_sql('app', q{SELECT count(*) FROM evil.log WHERE super});
}

# The rebalances, started by their movers (each in a session with a
# search_path of its own: the start is not what is attacked here).
# max_rate keeps them running across the restarts.
for my $db (sort keys %mover)
{
	my $conn = $dir->connstr($db) . " user=$mover{$db} password=$pw";
	my ($rc, $out, $err) = as_role($dir, $conn,
		q{SET search_path = public, pg_catalog; SELECT chash_rebalance_start('orgs', max_rate => 3)});
	is($rc, 0, "$mover{$db} starts a rebalance in $db") or diag $err;
}

# Waits (at most $limit seconds) until each database of @dbs has a
# rebalance worker; returns their session users, "db:user" by database.
sub workers
{
	my ($limit, @dbs) = @_;
	my $want = scalar @dbs;
	my $names = join(', ', map { "'$_'" } @dbs);
	my $start = time;
	my $got = '';
	while (time - $start < $limit)
	{
		$got = $dir->safe_psql('postgres', qq{
            SELECT string_agg(datname || ':' || usename, ',' ORDER BY datname) FROM pg_stat_activity
             WHERE backend_type = 'chash rebalance' AND datname IN ($names)});
		return $got if scalar(split /,/, $got) == $want;
		usleep(200_000);
	}
	return $got;
}

is(workers(30, 'app', 'app2'), 'app:mover,app2:mover2',
	'each rebalance\'s worker runs as the role that started it');
is(owner_is_superuser(), 'f', 'the worker gave the owner nothing');

# ---- a fast restart: both databases resume, the owner gains nothing ----
stop_fast($dir) or BAIL_OUT('the directory server did not stop');
$dir->start;
is(workers(30, 'app', 'app2'), 'app:mover,app2:mover2',
	'after a restart both databases\' rebalances resumed, each as the role that started it');
ok($dir->log_contains(qr/resuming the rebalance of directory "orgs" as role "mover"/)
	  && $dir->log_contains(qr/resuming the rebalance of directory "orgs" as role "mover2"/),
	'the resumers said so');
is(owner_is_superuser(), 'f', 'the owner is no superuser after the resume');
is(trap_ran_as_superuser(), '0', 'the owner\'s operator never ran as a superuser');
note 'the trap ran as: ', trap_log();
is(dir_sql('app', q{SELECT state FROM chash_rebalance WHERE directory = 'orgs'}), 'running',
	'the rebalance of app runs');

# ---- the next fast shutdown finishes ----
ok(stop_fast($dir), 'the fast shutdown after the resume finishes');
$dir->start if !defined $dir->{_pid};

# ---- a mover revoked from chash_mover is not resumed ----
# (once both workers run: a worker checks its role too once connected)
is(workers(30, 'app', 'app2'), 'app:mover,app2:mover2', 'after the next start both resumed again');
$dir->safe_psql('postgres', 'REVOKE chash_mover FROM mover2');
stop_fast($dir) or BAIL_OUT('the directory server did not stop');
$dir->start;
my $start = time;
my $state = '';
while (time - $start < 30)
{
	$state = dir_sql('app2', q{SELECT state || ' / ' || coalesce(last_error, '') FROM chash_rebalance WHERE directory = 'orgs'});
	last if $state !~ /^running/;
	usleep(200_000);
}
is($state, 'failed / not resumed: role "mover2" is not a member of chash_mover',
	'the rebalance of a role that is no mover any more fails when it would resume, and says why');
ok($dir->log_contains(qr/WARNING:  rebalance of directory "orgs" not resumed/), 'and the log says so');
is(workers(30, 'app'), 'app:mover', 'the other database\'s rebalance resumed');
is(dir_sql('app2', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'chash rebalance' AND datname = 'app2'}), '0',
	'no worker runs for the refused one');
is(owner_is_superuser(), 'f', 'the owner is still no superuser');
is(trap_ran_as_superuser(), '0', 'and its operator never ran as a superuser');

# ---- the standby cloned before the first rebalance, promoted ----
$dir->wait_for_catchup($standby);
stop_fast($dir) or BAIL_OUT('the directory server did not stop');
$standby->promote;
$start = time;
my $resumed = 0;
while (!$resumed && time - $start < 30)
{
	$resumed = $standby->log_contains(qr/resuming the rebalance of directory "orgs" as role "mover"/);
	usleep(200_000) unless $resumed;
}
ok($resumed, 'the standby cloned before the first rebalance resumes it once promoted');
is($standby->safe_psql('app2', q{SET search_path = public, pg_catalog; SELECT state FROM chash_rebalance}), 'failed',
	'and leaves the refused one failed');
is($standby->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'owner'}), 'f',
	'the owner is no superuser there either');

ok(stop_fast(@all, $standby), 'every server stops in fast mode');
done_testing();
