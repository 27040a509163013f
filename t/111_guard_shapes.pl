# The guard for every table shape, plan and session (docs/shards.md, "The
# guard"): one server WITHOUT shared_preload_libraries that is its own
# directory database and shard "s1" of a directory of two shards.  A
# later BEFORE trigger or a stored generated column cannot write a foreign
# tenant; inheritance children and partitions are guarded; char(n) tenants
# route unpadded; nondeterministic collations are refused; TRUNCATE needs
# no directory grants; parallel plans check in the leader; and the join
# makes every new session check statements, the leave undoes it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;

my $node = new_node('shapes');
$node->safe_psql('postgres', 'CREATE EXTENSION chash');
create_sql_helpers($node);

sub sql { return $node->safe_psql('postgres', $_[0]); }
sub state_of
{
	my ($statement, $prefix) = @_;
	return sql(($prefix // '') . qq{SELECT sqlstate_of(\$q\$$statement\$q\$)});
}

sql(q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 64);
    CREATE TABLE accounts (org_id text, id bigint, v text, PRIMARY KEY (org_id, id));
    CREATE TABLE accounts_old_child (extra int) INHERITS (accounts);
    CREATE FUNCTION set_org() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN NEW.org_id := NEW.v; RETURN NEW; END $$;
    CREATE TABLE retagged (org_id text, id bigint PRIMARY KEY, v text);
    CREATE TRIGGER set_org BEFORE INSERT OR UPDATE ON retagged FOR EACH ROW EXECUTE FUNCTION set_org();
    CREATE TABLE generated (base text, org_id text GENERATED ALWAYS AS (lower(base)) STORED, id bigint PRIMARY KEY);
    CREATE TABLE fixed (org_id char(12), id bigint, PRIMARY KEY (org_id, id));
    CREATE TABLE parts (org_id text, id bigint, PRIMARY KEY (org_id, id)) PARTITION BY HASH (org_id);
    CREATE TABLE parts_0 PARTITION OF parts FOR VALUES WITH (MODULUS 2, REMAINDER 0);
    CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
    CREATE TABLE nocase_tab (org_id text COLLATE nocase, id bigint, PRIMARY KEY (org_id, id));
    CREATE TABLE altered (org_id text, id bigint, PRIMARY KEY (org_id, id));
    SELECT chash_add_table('orgs', t, 'org_id')
      FROM unnest(ARRAY['public.accounts', 'public.retagged', 'public.generated', 'public.fixed',
                        'public.parts', 'public.altered']) t;
    CREATE ROLE app LOGIN;
    GRANT ALL ON ALL TABLES IN SCHEMA public TO app;
    CREATE ROLE trunc LOGIN;
    ALTER DATABASE postgres SET session_preload_libraries = 'auto_explain';
});

# Tenants of each shard; $tp of s1, whose char(12) padding routes to s2.
my ($t1, $t2) = map {
	sql(qq{SELECT t FROM (SELECT 'org-' || i AS t FROM generate_series(1, 1000) i) x
           WHERE chash_route('orgs', t) = '$_' ORDER BY t LIMIT 1})
} ('s1', 's2');
my $tp = sql(q{SELECT t FROM (SELECT 'org-' || i AS t FROM generate_series(1, 1000) i) x
               WHERE chash_route('orgs', t) = 's1' AND chash_route('orgs', rpad(t, 12)) = 's2' ORDER BY t LIMIT 1});

# ---- 13: the statement check in every new session ----
is(state_of(qq{SELECT count(*) FROM accounts WHERE org_id = '$t2'}), 'no error', 'before the join nothing is checked');
sql(q{SELECT chash_shard_join('orgs', 's1', NULL)});
is(sql(q{SELECT statement_check FROM chash_shard_status}), 't', 'the status shows the statement check active');
is(sql(q{SELECT setconfig FROM pg_db_role_setting WHERE setrole = 0 AND setdatabase = (SELECT oid FROM pg_database WHERE datname = 'postgres')}),
	'{"session_preload_libraries=auto_explain, chash"}', 'the join appends chash to the database\'s session_preload_libraries');
is(sql(q{SHOW shared_preload_libraries}), '', 'the server preloads nothing');
is(state_of(qq{SELECT count(*) FROM accounts WHERE org_id = '$t2'}), 'SH001', 'a new session refuses a stale SELECT');
is(state_of(qq{UPDATE accounts SET v = 'x' WHERE org_id = '$t2' AND id = 5}, 'SET ROLE app;'), 'SH001',
	'a new session of the application\'s role refuses a stale UPDATE of no row');
is(state_of(qq{SELECT count(*) FROM accounts WHERE org_id = '$t1'}), 'no error', 'and runs a routed SELECT');

# ---- 5: a BEFORE trigger that sorts after the guard sets the tenant ----
is(state_of(qq{INSERT INTO retagged VALUES ('$t1', 1, '$t2')}), 'SH001',
	'a tenant set by a later BEFORE trigger is checked');
is(state_of(qq{INSERT INTO retagged VALUES ('$t2', 1, '$t1')}), 'no error', 'and one it sets to this shard\'s is written');
is(state_of(qq{UPDATE retagged SET v = '$t2' WHERE id = 1}), 'SH001', 'an UPDATE the trigger moves to a foreign tenant is refused');
is(sql(q{SELECT string_agg(tgrelid::regclass || ' ' || tgname, ', ' ORDER BY tgrelid::regclass::text) FROM pg_trigger WHERE tgname LIKE 'chash\_guard\_%\_final'}),
	'generated chash_guard_584b269c77fc_final, retagged chash_guard_584b269c77fc_final',
	'only tables whose rows may change after the guard get the guard of the final row');
sql(qq{CREATE FUNCTION to_foreign() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN NEW.org_id := '$t2'; RETURN NEW; END \$\$;
    CREATE TRIGGER later_set_org BEFORE INSERT ON fixed FOR EACH ROW EXECUTE FUNCTION to_foreign()});
is(state_of(qq{INSERT INTO fixed VALUES ('$t1', 99)}), 'SH001', 'so does a table with such a trigger created after the join');
sql(q{DROP TRIGGER later_set_org ON fixed; DROP TRIGGER IF EXISTS chash_guard_584b269c77fc_final ON retagged});
like(sql(qq{SELECT message_of(\$\$INSERT INTO retagged VALUES ('$t1', 2, '$t1')\$\$)}),
	qr/^55000: table "retagged" may change a row's tenant after the guard checked it \/ In directory "orgs", trigger "set_org" fires after the guard/,
	'without the guard of the final row the guard refuses every write');
sql(q{SELECT chash_guard_table('orgs', 'public.retagged')});

# ---- 6: a stored generated tenant column ----
is(state_of(qq{INSERT INTO generated (base, id) VALUES (upper('$t1'), 1)}), 'no error', 'the shard writes its own tenant through a generated column');
is(state_of(qq{INSERT INTO generated (base, id) VALUES (upper('$t2'), 2)}), 'SH001', 'a generated foreign tenant is refused');
is(state_of(qq{UPDATE generated SET base = upper('$t2') WHERE id = 1}), 'SH001',
	'an UPDATE of the base column that moves the row to a foreign tenant is refused');

# ---- 7: inheritance children and partitions ----
sql(q{CREATE TABLE accounts_new_child () INHERITS (accounts)});
sql(q{CREATE TABLE loose (org_id text NOT NULL, id bigint NOT NULL, v text)});
sql(q{ALTER TABLE loose INHERIT accounts});
for my $child (qw(accounts_old_child accounts_new_child loose))
{
	is(state_of(qq{INSERT INTO $child (org_id, id, v) VALUES ('$t2', 1, 'a')}), 'SH001', "a foreign tenant written through child $child is refused");
	is(state_of(qq{INSERT INTO $child (org_id, id, v) VALUES ('$t1', 1, 'a')}), 'no error', "child $child writes this shard's tenant");
}
is(state_of(qq{UPDATE accounts SET org_id = '$t2' WHERE id = 1}), 'SH001', 'an UPDATE of the parent that moves children\'s rows is refused');
is(state_of(qq{SELECT count(*) FROM accounts_new_child WHERE org_id = '$t2'}), 'SH001', 'a stale read of a child is refused');
sql(q{CREATE TABLE parts_1 (org_id text, id bigint, PRIMARY KEY (org_id, id))});
sql(q{ALTER TABLE parts ATTACH PARTITION parts_1 FOR VALUES WITH (MODULUS 2, REMAINDER 1)});
is(state_of(qq{INSERT INTO parts VALUES ('$t2', 1)}), 'SH001', 'a foreign tenant in a partitioned table is refused');
is(state_of(qq{INSERT INTO parts VALUES ('$t1', 1)}), 'no error', 'and this shard\'s is written');
is(sql(q{SELECT count(*) FROM pg_trigger WHERE tgrelid IN ('parts_0'::regclass, 'parts_1'::regclass) AND tgname LIKE 'chash_guard_%'}),
	'2', 'both partitions, also the one attached later, carry the row guard');

# ---- 8: char(n) ----
is(state_of(qq{INSERT INTO fixed VALUES ('$tp', 1)}), 'no error', 'a char(12) tenant is routed unpadded: the owner writes it');
is(state_of(qq{SELECT count(*) FROM fixed WHERE org_id = '$tp'}), 'no error', 'and reads it');
is(sql(qq{SELECT count(*) FROM fixed WHERE chash_tenant_slot(org_id, 64) = chash_slot('orgs', '$tp')}), '1',
	'chash_tenant_slot of the column gives the tenant\'s slot');

# ---- 9: nondeterministic collations ----
like(sql(q{SELECT message_of($$SELECT chash_add_table('orgs', 'public.nocase_tab', 'org_id')$$)}),
	qr/^0A000: tenant column "org_id" of table public.nocase_tab has a nondeterministic collation/,
	'a tenant column with a nondeterministic collation is refused at registration');
sql(q{ALTER TABLE altered ALTER COLUMN org_id TYPE text COLLATE nocase});
like(sql(qq{SELECT message_of(\$\$INSERT INTO altered VALUES ('$t1', 1)\$\$)}),
	qr/^0A000: tenant column "org_id" of table "altered" has a nondeterministic collation/,
	'the guard refuses writes once the column has a nondeterministic collation');
is(state_of(qq{SELECT count(*) FROM altered WHERE org_id = '$t1'}), '0A000', 'and statements that name a tenant');

# ---- 11: TRUNCATE with no directory grants ----
sql(q{GRANT TRUNCATE ON accounts, accounts_old_child, accounts_new_child, loose TO trunc});
is(state_of('TRUNCATE accounts', 'SET ROLE trunc;'), 'no error', 'a role with TRUNCATE only truncates a guarded table');
my $mig = sql(qq{SELECT chash_migration_move_tenant('orgs', '$t1', 's2')});
sql(qq{SELECT chash_step_claim($mig)});
is(state_of('TRUNCATE accounts', 'SET ROLE trunc;'), '55006', 'and is refused while a step moves its rows');
sql(qq{SELECT chash_migration_cancel($mig)});

# ---- 12: parallel plans ----
sql(qq{INSERT INTO accounts SELECT '$t1', i, 'p' FROM generate_series(1, 50000) i; ANALYZE accounts});
my $parallel = q{SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
    SET min_parallel_table_scan_size = 0; SET force_parallel_mode = on;};
like(sql(qq{$parallel EXPLAIN (COSTS OFF) SELECT count(*) FROM accounts WHERE org_id = '$t1'}), qr/Gather/, 'the read has a parallel plan');
is(sql(qq{$parallel SELECT count(*) FROM accounts WHERE org_id = '$t1'}), '50000', 'a parallel read of an owned tenant returns its rows');
is(sql(qq{$parallel SET chash.tenant = '$t1'; SELECT count(*) FROM accounts}), '50000', 'and so with chash.tenant declared');
is(state_of(qq{SELECT count(*) FROM accounts WHERE org_id = '$t2'}, $parallel), 'SH001', 'a parallel stale read is refused by the leader');

# ---- 13: the leave undoes the join ----
sql(q{SELECT chash_shard_leave('orgs')});
is(sql(q{SELECT setconfig FROM pg_db_role_setting WHERE setrole = 0 AND setdatabase = (SELECT oid FROM pg_database WHERE datname = 'postgres')}),
	'{session_preload_libraries=auto_explain}', 'the leave removes its own entry only');
is(state_of(qq{SELECT count(*) FROM accounts WHERE org_id = '$t2'}), 'no error', 'after the leave a new session checks nothing');
is(sql(q{SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'chash_guard%'}), '0', 'the leave removes every guard, of children and partitions too');

done_testing();
