# Who may switch the guard off (docs/shards.md, "Who may switch the guard
# off", "Uninstalling"): a directory database and one joined shard whose
# pg_hba.conf is Debian's.  The owner of the guarded tables, an ordinary
# role with a password and without chash_operator (in sessions that have
# not loaded chash's library), tries every way a table owner has to write
# past the guard: disabling a guard trigger (by name, ALL, USER, on a
# partition), making it fire only or also in replica sessions, dropping or
# renaming it, rewriting, renaming, dropping or adding the tenant column,
# and attaching a table that holds a foreign tenant's rows.  Each is
# refused with 42501 and the table still refuses a misplaced insert
# (SH001).  A member of chash_operator who owns the table may (one who does
# not own it may not), and chash_shard_status then lists the table in
# unenforced_tables, not guarded_tables.  DROP EXTENSION chash CASCADE (and
# DROP SCHEMA of its schema) is refused while the database is a shard,
# with a hint to leave first, and allowed after chash_shard_leave.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;

my $dir = new_node('directory', logical => 1);
my $shard = new_node('tamper');
$_->safe_psql('postgres', 'CREATE EXTENSION chash') for ($dir, $shard);
my $dirconn = publish_directory($dir);
$dir->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 64);
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
    SELECT chash_add_table('orgs', 'public.parts', 'org_id');
});
# a tenant of s1 (here) and one of s2 (elsewhere)
my ($mine, $foreign) = map {
	$dir->safe_psql('postgres', qq{
        SELECT t FROM generate_series(1, 1000) i, LATERAL (SELECT 'org-' || i AS t) x
         WHERE chash_route('orgs', t) = '$_' ORDER BY i LIMIT 1})
} ('s1', 's2');

debian_hba($shard);
my $owner = password_role($shard, 'tenant_owner');
my $op = password_role($shard, 'op');
$shard->safe_psql('postgres', q{
    GRANT chash_operator TO op;
    GRANT SELECT ON chash_table, chash_shard_member TO op;   -- chash_guard_sync reads them
    GRANT CREATE ON SCHEMA public TO tenant_owner, op;
    -- a session of the owner that has not loaded chash: the event trigger
    -- loads it
    ALTER ROLE tenant_owner SET session_preload_libraries = 'plpgsql';
});
my ($rc, $out, $err) = as_role($shard, $owner, q{
    CREATE TABLE accounts (org_id text, id bigint, v text, PRIMARY KEY (org_id, id));
    CREATE TABLE parts (org_id text NOT NULL, id bigint NOT NULL, v text) PARTITION BY RANGE (id);
    CREATE TABLE parts_low PARTITION OF parts FOR VALUES FROM (0) TO (1000);
});
is($rc, 0, 'the owner creates its tables') or diag($err);
join_shards($dir, $dirconn, 'orgs', { s1 => $shard });
ok(shard_applied($dir, $shard), 'the shard has applied the directory');

my $g = $shard->safe_psql('postgres', q{SELECT chash_guard_name('orgs')});
my $gt = $g =~ s/chash_guard_/chash_guard_truncate_/r;

sub status
{
	return $shard->safe_psql('postgres',
		q{SELECT guarded_tables::text || ' ' || unenforced_tables::text FROM chash_shard_status WHERE directory = 'orgs'});
}
is(status(), '{public.accounts,public.parts} {}', 'both tables are guarded and enforced');
($rc, $out, $err) = as_role($shard, $owner, qq{
    SELECT current_setting('chash.bypass_guard', true) IS NULL;
    INSERT INTO accounts VALUES ('$mine', 1, 'a');
    INSERT INTO parts VALUES ('$mine', 1, 'a');
});
is($rc, 0, 'the owner writes its own tenant') or diag($err);
is($out, 't', 'in a session that has not preloaded chash');

# Runs $sql as the role of $conn with the error's SQLSTATE in stderr.
sub attempt
{
	my ($conn, $sql) = @_;
	return as_role($shard, $conn, "\\set VERBOSITY verbose\n$sql");
}

sub misplaced_refused
{
	my ($name) = @_;
	my ($rc, $out, $err) = attempt($owner, qq{INSERT INTO accounts VALUES ('$foreign', 7, 'x')});
	like($err, qr/ERROR:  SH001:/, "$name: accounts still refuses a misplaced insert");
	($rc, $out, $err) = attempt($owner, qq{INSERT INTO parts VALUES ('$foreign', 7, 'x')});
	like($err, qr/ERROR:  SH001:/, "$name: parts still refuses a misplaced insert");
	return;
}

misplaced_refused('before');

my @tamper = (
	[ 'DISABLE TRIGGER (the guard)', qq{ALTER TABLE accounts DISABLE TRIGGER $g},
		qr/permission denied to disable the guard of table "accounts"/ ],
	[ 'DISABLE TRIGGER ALL', q{ALTER TABLE accounts DISABLE TRIGGER ALL}, qr/disable the guard/ ],
	[ 'DISABLE TRIGGER USER', q{ALTER TABLE accounts DISABLE TRIGGER USER}, qr/disable the guard/ ],
	[ 'DISABLE TRIGGER (the TRUNCATE guard)', qq{ALTER TABLE accounts DISABLE TRIGGER $gt}, qr/disable the guard/ ],
	[ 'DISABLE TRIGGER of a partition\'s clone', qq{ALTER TABLE parts_low DISABLE TRIGGER $g},
		qr/disable the guard of table "parts_low"/ ],
	[ 'DISABLE TRIGGER of the partitioned table', qq{ALTER TABLE parts DISABLE TRIGGER $g}, qr/disable the guard/ ],
	[ 'ENABLE REPLICA TRIGGER', qq{ALTER TABLE accounts ENABLE REPLICA TRIGGER $g},
		qr/permission denied to change when the guard of table "accounts" fires/ ],
	[ 'ENABLE ALWAYS TRIGGER', qq{ALTER TABLE accounts ENABLE ALWAYS TRIGGER $g}, qr/change when the guard/ ],
	[ 'DROP TRIGGER', qq{DROP TRIGGER $g ON accounts},
		qr/permission denied to drop the guard of table "accounts"/ ],
	[ 'DROP TRIGGER (the TRUNCATE guard)', qq{DROP TRIGGER $gt ON public.accounts}, qr/drop the guard/ ],
	[ 'DROP TRIGGER of the partitioned table', qq{DROP TRIGGER IF EXISTS $g ON parts}, qr/drop the guard/ ],
	[ 'ALTER TRIGGER ... RENAME', qq{ALTER TRIGGER $g ON accounts RENAME TO zz_guard},
		qr/permission denied to rename the guard of table "accounts"/ ],
	[ 'ALTER COLUMN TYPE of the tenant column (a rewrite: no trigger fires)',
		qq{ALTER TABLE accounts ALTER COLUMN org_id TYPE text USING '$foreign'},
		qr/permission denied to change the tenant column of guarded table "accounts"/ ],
	[ 'ALTER COLUMN TYPE of the tenant column to another type', q{ALTER TABLE accounts ALTER COLUMN org_id TYPE varchar(40)},
		qr/tenant column/ ],
	[ 'RENAME COLUMN of the tenant column', q{ALTER TABLE accounts RENAME COLUMN org_id TO o}, qr/tenant column/ ],
	[ 'ADD COLUMN of the tenant column', qq{ALTER TABLE accounts ADD COLUMN IF NOT EXISTS org_id text DEFAULT '$foreign'},
		qr/tenant column/ ],
	[ 'DROP COLUMN of the tenant column', q{ALTER TABLE accounts DROP COLUMN org_id}, qr/tenant column/ ],
	[ 'DROP COLUMN and ADD COLUMN ... DEFAULT of the tenant column',
		qq{BEGIN; ALTER TABLE accounts DROP COLUMN org_id CASCADE;
		   ALTER TABLE accounts ADD COLUMN org_id text DEFAULT '$foreign'; COMMIT},
		qr/tenant column/ ],
	[ 'ATTACH PARTITION of a table with a foreign tenant\'s rows',
		qq{CREATE TABLE parts_mid (LIKE parts); INSERT INTO parts_mid VALUES ('$foreign', 1500, 'x');
		   ALTER TABLE parts ATTACH PARTITION parts_mid FOR VALUES FROM (1000) TO (2000)},
		qr/permission denied to add table "parts_mid", which has rows, to guarded table "parts"/ ],
	[ 'INHERIT of a table with a foreign tenant\'s rows',
		qq{CREATE TABLE loose (org_id text NOT NULL, id bigint NOT NULL, v text);
		   INSERT INTO loose VALUES ('$foreign', 1500, 'x'); ALTER TABLE loose INHERIT accounts},
		qr/permission denied to add table "loose", which has rows, to guarded table "accounts"/ ]);
for my $t (@tamper)
{
	my ($name, $sql, $message) = @$t;
	($rc, $out, $err) = attempt($owner, $sql);
	like($err, qr/ERROR:  42501: /, "the owner's $name is refused with 42501");
	like($err, $message, "$name: the message");
	like($err, qr/HINT:  .*chash_operator/, "$name: the hint");
	misplaced_refused($name);
	$shard->safe_psql('postgres', 'DROP TABLE IF EXISTS parts_mid, loose');
}
($rc, $out, $err) = attempt($owner, qq{ALTER TABLE accounts DISABLE TRIGGER $g});
like($err, qr/HINT:  A member of chash_operator who owns the table unguards it with chash_unguard\('orgs', 'public.accounts'\)\./,
	'the hint names chash_unguard');
is($shard->safe_psql('postgres', q{SELECT string_agg(DISTINCT org_id, ',') FROM accounts}), $mine,
	'the rewrite changed no tenant');
is(status(), '{public.accounts,public.parts} {}', 'after the attempts both tables are still enforced');

# What stays allowed: an empty table joins (and is guarded), ENABLE TRIGGER,
# other columns.
($rc, $out, $err) = attempt($owner, qq{
    CREATE TABLE kid (org_id text NOT NULL, id bigint NOT NULL, v text);
    ALTER TABLE kid INHERIT accounts;
    ALTER TABLE accounts ENABLE TRIGGER $g;
    ALTER TABLE accounts ENABLE TRIGGER ALL;
    ALTER TABLE accounts ALTER COLUMN v TYPE varchar(100);
    ALTER TABLE accounts ALTER COLUMN org_id TYPE text COLLATE "C";
});
is($rc, 0, 'the owner adds an empty child, enables triggers, changes the tenant column\'s collation') or diag($err);
($rc, $out, $err) = attempt($owner, qq{INSERT INTO kid VALUES ('$foreign', 1500, 'x')});
like($err, qr/ERROR:  SH001:/, 'the new child is guarded');
is(status(), '{public.accounts,public.parts} {}', 'and enforced');
$shard->safe_psql('postgres', 'DROP TABLE kid');

# A member of chash_operator who owns the table may unguard it; the status
# says so.
($rc, $out, $err) = attempt($op, qq{ALTER TABLE parts DISABLE TRIGGER $g});
like($err, qr/ERROR:  42501: must be owner of table parts/, 'an operator who does not own the table may not');
$shard->safe_psql('postgres', q{
    ALTER TABLE accounts OWNER TO op;
    ALTER TABLE parts OWNER TO op;
    ALTER TABLE parts_low OWNER TO op;   -- chash_guard_sync makes the partitions' clones
    GRANT ALL ON accounts, parts TO tenant_owner;
});
($rc, $out, $err) = attempt($op, qq{ALTER TABLE accounts DISABLE TRIGGER $g});
is($rc, 0, 'the operator who owns the table disables its guard') or diag($err);
is(status(), '{public.parts} {public.accounts}', 'disabled: the status lists accounts as not enforced');
($rc, $out, $err) = attempt($op, qq{INSERT INTO accounts VALUES ('$foreign', 8, 'x'); DELETE FROM accounts WHERE id = 8});
is($rc, 0, '(and it is not: a misplaced insert is accepted)') or diag($err);
for my $step ([ "ALTER TABLE accounts ENABLE TRIGGER $g", '{public.accounts,public.parts} {}', 'enabled again' ],
	[ "ALTER TABLE accounts ENABLE REPLICA TRIGGER $g", '{public.parts} {public.accounts}', 'ENABLE REPLICA' ],
	[ "ALTER TABLE accounts ENABLE ALWAYS TRIGGER $g", '{public.parts} {public.accounts}', 'ENABLE ALWAYS' ],
	[ "ALTER TABLE accounts ENABLE TRIGGER $g", '{public.accounts,public.parts} {}', 'enabled again' ],
	[ "ALTER TABLE accounts DISABLE TRIGGER $gt", '{public.parts} {public.accounts}', 'TRUNCATE guard disabled' ],
	[ "ALTER TABLE accounts ENABLE TRIGGER ALL", '{public.accounts,public.parts} {}', 'ENABLE TRIGGER ALL' ],
	[ "DROP TRIGGER $g ON accounts", '{public.parts} {public.accounts}', 'DROP TRIGGER' ],
	[ "SELECT chash_guard_sync('orgs')", '{public.accounts,public.parts} {}', 'chash_guard_sync' ],
	[ "ALTER TABLE accounts ALTER COLUMN org_id TYPE varchar(40)", '{public.accounts,public.parts} {}',
		'ALTER COLUMN TYPE of the tenant column' ])
{
	my ($sql, $status, $name) = @$step;
	($rc, $out, $err) = attempt($op, $sql);
	is($rc, 0, "the owning operator may: $name") or diag($err);
	is(status(), $status, "$name: the status");
}
# a superuser's partition clone disabled: the partitioned table is not enforced
$shard->safe_psql('postgres', qq{ALTER TABLE parts_low DISABLE TRIGGER $g});
is(status(), '{public.accounts} {public.parts}', 'a partition\'s disabled guard makes its table not enforced');
$shard->safe_psql('postgres', qq{ALTER TABLE parts_low ENABLE TRIGGER $g});
misplaced_refused('after the operator');

# DROP EXTENSION on the joined shard (as the superuser, by peer)
($rc, $out, $err) = $shard->psql('postgres', "\\set VERBOSITY verbose\nDROP EXTENSION chash CASCADE");
like($err, qr/ERROR:  55006: cannot drop extension "chash" while this database is a shard/,
	'DROP EXTENSION chash CASCADE on a joined shard is refused with 55006');
like($err, qr/DETAIL:  This database has joined directories "orgs"/, 'the detail names the directory');
like($err, qr/HINT:  Leave each directory first \(chash_shard_leave\), then drop the extension\./, 'the hint says leave first');
($rc, $out, $err) = $shard->psql('postgres', "\\set VERBOSITY verbose\nDROP SCHEMA public CASCADE");
like($err, qr/ERROR:  55006: cannot drop schema "public", which holds extension "chash", while this database is a shard/,
	'DROP SCHEMA of its schema too');
misplaced_refused('after DROP EXTENSION');
is($shard->safe_psql('postgres', q{SELECT count(*) FROM pg_subscription}), '1', 'the subscription is still there');

$shard->safe_psql('postgres', q{SELECT chash_shard_leave('orgs')});
($rc, $out, $err) = $shard->psql('postgres', 'DROP EXTENSION chash CASCADE');
is($rc, 0, 'after chash_shard_leave DROP EXTENSION is allowed') or diag($err);
is($dir->safe_psql('postgres', q{SELECT count(*) FROM pg_replication_slots}), '0', 'and no slot is left on the directory server');
($rc, $out, $err) = attempt($owner, qq{INSERT INTO accounts VALUES ('$foreign', 9, 'x')});
is($rc, 0, 'without chash the tables are plain tables') or diag($err);

$_->stop('fast') for ($shard, $dir);
done_testing();
