# What runs with raised rights runs no code of an ordinary role's
# (SPEC 8, docs/directory.md "Privileges"): each attack below is made by a
# role with a password and no superuser, on a server authenticated as
# Debian ships it (debian_hba), and gains nothing.
#
# 1. chash_shard_sizes: the owner of a registered table replaces it with
#    a view calling a function of its own and calls chash_shard_sizes;
#    the function runs as that owner, not as the extension's.  A role with
#    no grant gets no tenant's counts; one under row-level security only
#    the rows its policy shows.
# 3. The rebalance: a chash_mover member sets search_path = mover,
#    pg_catalog with its own "=" and calls the internal stop function
#    (gone) or chash_rebalance_stop stripped of its SET search_path (the
#    helper that raises rights pins it itself).
# 8. A trigger named chash_guard_* of another function on a TEMP table is
#    no guard: no routing answer, nothing counted; and a guarded table the
#    role may not read tells it nothing either.
# 9. Two databases of one server with a directory of one name count apart,
#    each sees its own figures, and a role without the privilege cannot
#    reset them (42501).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;

my $node = new_node('sec', preload => 1);
debian_hba($node);
my $su = $node->safe_psql('postgres', 'SELECT current_user');

# Each of two databases is its own directory database and only shard s1 of
# orgs (s2 exists, elsewhere), with a guarded table accounts.
$node->safe_psql('postgres', 'CREATE DATABASE db2');
for my $db ('postgres', 'db2')
{
	$node->safe_psql($db, q{
        CREATE EXTENSION chash;
        CREATE TABLE accounts (org_id text, id bigint, PRIMARY KEY (org_id, id));
        SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 16);
        SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
        SELECT chash_shard_join('orgs', 's1', NULL);
    });
}
my ($t1, $t2) = map {
	$node->safe_psql('postgres', qq{
        SELECT t FROM generate_series(1, 1000) g, LATERAL (SELECT 'org-' || g AS t) x
         WHERE chash_route('orgs', t) = '$_' ORDER BY g LIMIT 1})
} ('s1', 's2');
for my $db ('postgres', 'db2')
{
	$node->safe_psql($db, qq{INSERT INTO accounts SELECT '$t1', g FROM generate_series(1, 3) g});
}

my $attacker = password_role($node, 'attacker');
my $nobody = password_role($node, 'nobody');
my $reader = password_role($node, 'reader');
my $mover = password_role($node, 'mover');
my $opr = password_role($node, 'opr');
$node->safe_psql('postgres', q{
    GRANT chash_mover TO mover;
    GRANT chash_operator TO opr;
    CREATE SCHEMA att AUTHORIZATION attacker;
    CREATE SCHEMA mover AUTHORIZATION mover;
});
is($node->safe_psql('postgres', q{
    SELECT string_agg(rolname || ':' || rolsuper, ',' ORDER BY rolname) FROM pg_roles
     WHERE rolname IN ('attacker', 'nobody', 'reader', 'mover', 'opr')}),
	'attacker:false,mover:false,nobody:false,opr:false,reader:false', 'no attacker is a superuser');

sub superuser_of
{
	my ($role) = @_;
	return $node->safe_psql('postgres', qq{SELECT rolsuper FROM pg_roles WHERE rolname = '$role'});
}

# ---- 1. chash_shard_sizes over a table its owner turned into a view ----
my ($rc, $out, $err) = as_role($node, $attacker, q{
    CREATE TABLE att.acc (org_id text PRIMARY KEY);
    CREATE TABLE att.seen (who name);
    CREATE FUNCTION att.pwn() RETURNS text LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO att.seen VALUES (current_user);
        BEGIN
            ALTER ROLE attacker SUPERUSER;
        EXCEPTION WHEN insufficient_privilege THEN NULL;
        END;
        RETURN 'org-x';
    END
    $$;
});
is($rc, 0, 'the attacker makes its table and function') or diag($err);
$node->safe_psql('postgres', q{
    SELECT chash_create_directory('att', ARRAY['s1'], 16);
    SELECT chash_add_table('att', 'att.acc', 'org_id');
    -- the attacker may read what chash_shard_sizes reads of chash's, so
    -- that the call reaches its view
    GRANT SELECT ON chash_directory, chash_table TO attacker, reader;
});
($rc, $out, $err) = as_role($node, $attacker, q{
    DROP TABLE att.acc;
    CREATE VIEW att.acc AS SELECT att.pwn() AS org_id;
    SELECT tenant || ':' || rows FROM chash_shard_sizes('att');
});
is($rc, 0, 'chash_shard_sizes reads the view') or diag($err);
is(superuser_of('attacker'), 'f', 'the table owner is no superuser after chash_shard_sizes');
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT who::text, ',') FROM att.seen}),
	'attacker', "the view's function ran as the table's owner, never as the extension's");
$node->safe_psql('postgres', 'ALTER ROLE attacker NOSUPERUSER');

# Row-level security: reader sees tenant a only; nobody has no grant.
$node->safe_psql('postgres', q{
    CREATE TABLE docs (org_id text, id int, PRIMARY KEY (org_id, id));
    INSERT INTO docs VALUES ('a', 1), ('a', 2), ('a', 3), ('b', 1), ('b', 2);
    ALTER TABLE docs ENABLE ROW LEVEL SECURITY;
    CREATE POLICY only_a ON docs FOR SELECT TO reader USING (org_id = 'a');
    GRANT SELECT ON docs TO reader;
    SELECT chash_create_directory('rls', ARRAY['s1'], 16);
    SELECT chash_add_table('rls', 'public.docs', 'org_id');
});
($rc, $out, $err) = as_role($node, $reader,
	q{SELECT string_agg(tenant || ':' || rows, ',' ORDER BY tenant) FROM chash_shard_sizes('rls')});
is($rc, 0, 'a reader under row-level security reads sizes') or diag($err);
is($out, 'a:3', 'only of the rows its policy shows');
($rc, $out, $err) = as_role($node, $nobody,
	q{SELECT string_agg(tenant || ':' || rows, ',' ORDER BY tenant) FROM chash_shard_sizes('rls')});
isnt($rc, 0, 'a role with no grant reads no sizes');
unlike($out, qr/b:2/, 'and no tenant count');
like($err, qr/permission denied/, 'it is told permission denied') or diag($err);

# ---- 3. the rebalance's raised rights and a chash_mover's own "=" ----
$node->safe_psql('postgres', q{
    SELECT chash_create_directory('rb', ARRAY['s1'], 16);
    INSERT INTO chash_migration (directory, kind, status) VALUES ('rb', 'rebalance', 'cancelled');
    INSERT INTO chash_rebalance (directory, migration, max_parallel, role, state)
    SELECT 'rb', max(id), 1, 'mover', 'running' FROM chash_migration WHERE directory = 'rb';
});
($rc, $out, $err) = as_role($node, $mover, q{
    CREATE TABLE mover.seen (who name);
    CREATE FUNCTION mover.texteq(text, text) RETURNS boolean LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO mover.seen VALUES (current_user);
        BEGIN
            ALTER ROLE mover SUPERUSER;
        EXCEPTION WHEN insufficient_privilege THEN NULL;
        END;
        RETURN pg_catalog.texteq($1, $2);
    END
    $$;
    CREATE OPERATOR mover.= (LEFTARG = text, RIGHTARG = text, FUNCTION = mover.texteq);
});
is($rc, 0, 'the mover makes its operator') or diag($err);
($rc, $out, $err) = as_role($node, $mover, q{
    SET search_path = mover, pg_catalog;
    SELECT public.chash_rebalance_request_stop('rb');
});
isnt($rc, 0, 'the internal stop function is not the mover\'s to call');
is(superuser_of('mover'), 'f', 'the mover is no superuser after calling it');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mover.seen WHERE who <> 'mover'}), '0',
	'its operator never ran as another role');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = 'public' AND p.proname IN ('chash_rebalance_launch', 'chash_rebalance_request_stop')}),
	'0', 'no internal launch or stop function exists');

# The API as the extension's owner would have it called, with its own SET
# search_path removed: what raises rights pins search_path itself.
$node->safe_psql('postgres', q{
    ALTER ROLE mover NOSUPERUSER;
    TRUNCATE mover.seen;
    UPDATE chash_rebalance SET state = 'running', worker_pid = NULL WHERE directory = 'rb';
    ALTER FUNCTION chash_rebalance_stop(text) RESET search_path;
});
($rc, $out, $err) = as_role($node, $mover, q{
    SET search_path = mover, pg_catalog;
    SELECT public.chash_rebalance_stop('rb');
});
is($rc, 0, 'the mover stops the rebalance') or diag($err);
is($node->safe_psql('postgres', q{SELECT state FROM chash_rebalance WHERE directory = 'rb'}), 'stopped',
	'it is recorded stopped');
is(superuser_of('mover'), 'f', 'the mover is no superuser after chash_rebalance_stop');
is($node->safe_psql('postgres', q{SELECT count(*) FROM mover.seen WHERE who <> 'mover'}), '0',
	'its operator never ran as the extension\'s owner');
$node->safe_psql('postgres', q{
    ALTER ROLE mover NOSUPERUSER;
    ALTER FUNCTION chash_rebalance_stop(text) SET search_path = pg_catalog, pg_temp;
});

# ---- 8. a fake guard on a TEMP table, and a guarded table not granted ----
$node->safe_psql('postgres', q{SELECT chash_stats_reset()});
($rc, $out, $err) = as_role($node, $nobody, qq{
    CREATE TEMP TABLE t (org_id text);
    CREATE TRIGGER chash_guard_fake BEFORE INSERT OR UPDATE OR DELETE ON t
        FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger('orgs', 'org_id', 's1');
    SELECT count(*) FROM t WHERE org_id = '$t1';
    SELECT count(*) FROM t WHERE org_id = '$t1';
    SELECT count(*) FROM t WHERE org_id = '$t2';
});
is($rc, 0, 'a fake guard routes nothing: no SH001 for a tenant of another shard') or diag($err);
unlike($err, qr/s2/, 'nothing names the shard that owns the tenant');
is($node->safe_psql('postgres', qq{SELECT count(*) FROM chash_tenant_stats('orgs', 1000)}), '0',
	'nothing is counted for the reads of its table');
($rc, $out, $err) = as_role($node, $nobody, qq{SELECT count(*) FROM accounts WHERE org_id = '$t2'});
isnt($rc, 0, 'a role that may not read a guarded table reads nothing of it');
unlike($err, qr/s2|SH001|moved/, 'nor learns which shard owns the tenant') or diag($err);
like($err, qr/permission denied for table accounts/, 'it is told permission denied') or diag($err);
is($node->safe_psql('postgres', qq{SELECT count(*) FROM chash_tenant_stats('orgs', 1000)}), '0',
	'and nothing is counted');

# ---- 9. two databases count apart; the reset is a privilege ----
$node->safe_psql('db2', q{SELECT chash_stats_reset()});
$node->safe_psql('postgres', join('', map { qq{SELECT count(*) FROM accounts WHERE org_id = '$t1';\n} } 1 .. 5));
$node->safe_psql('db2', join('', map { qq{SELECT count(*) FROM accounts WHERE org_id = '$t1';\n} } 1 .. 2));
my $reads_sql = qq{SELECT coalesce(sum(reads), 0) FROM chash_tenant_stats('orgs', 1000) WHERE tenant = '$t1'};
my $slot_sql = q{SELECT coalesce(sum(reads), 0) FROM chash_slot_stats('orgs')};
is($node->safe_psql('postgres', $reads_sql), '5', 'postgres counts its own 5 reads of the tenant');
is($node->safe_psql('db2', $reads_sql), '2', 'db2 its own 2');
is($node->safe_psql('postgres', $slot_sql) . '/' . $node->safe_psql('db2', $slot_sql), '5/2',
	'and so do the slots');
($rc, $out, $err) = as_role($node, $nobody, $reads_sql, db => 'db2');
is($out, '2', 'an ordinary role of db2 sees db2\'s figures only') or diag($err);

($rc, $out, $err) = as_role($node, $nobody, q{SELECT chash_stats_reset()});
isnt($rc, 0, 'a role without the privilege cannot reset the statistics');
like($err, qr/permission denied for function chash_stats_reset/, '42501') or diag($err);
($rc, $out, $err) = as_role($node, $nobody, q{SELECT chash_stats_reset('orgs')}, db => 'db2');
isnt($rc, 0, 'nor one directory\'s, in either database');
is($node->safe_psql('postgres', $reads_sql) . '/' . $node->safe_psql('db2', $reads_sql), '5/2',
	'the figures stay');
# chash_operator may; a reset of every directory frees this database's only
($rc, $out, $err) = as_role($node, $opr, q{SELECT chash_stats_reset()}, db => 'db2');
is($rc, 0, 'a member of chash_operator resets db2\'s statistics') or diag($err);
is($node->safe_psql('postgres', $reads_sql) . '/' . $node->safe_psql('db2', $reads_sql), '5/0',
	'postgres keeps its figures');

$node->stop('fast');
done_testing();
