# Output plugin 'chash' (docs/shards.md, "Online moves of every slot
# method"): a subscription reading a logical slot of plugin chash receives
# exactly the rows of the batch's slots ('xxh64', 'jump' with a bigint key,
# 'redis' with a tenant list too), never a pinned tenant's, with inserts,
# updates, deletes and updates that move a row's tenant into or out of the
# batch; TRUNCATE does not pass.  The slot is created over the replication
# protocol (CREATE_REPLICATION_SLOT ... LOGICAL chash) and with
# pg_create_logical_replication_slot; a slot without a filter fails.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;

my $conf = "max_replication_slots = 8\nmax_wal_senders = 8\n";
my $source = new_node('source', logical => 1, conf => $conf);
my $target = new_node('target', logical => 1, conf => $conf);

# One directory per slot method, each with a table of its own, on the
# source (a directory database may be a shard too).
my %case = (
	x => { method => 'xxh64', slots => 64, key => 'text', table => 'x_rows' },
	j => { method => 'jump', slots => 64, key => 'bigint', table => 'j_rows' },
	r => { method => 'redis', slots => 16384, key => 'text', table => 'r_rows' },
);
$source->safe_psql('postgres', 'CREATE EXTENSION chash');
for my $n (sort keys %case)
{
	my $c = $case{$n};
	my $type = $c->{key} eq 'bigint' ? 'bigint' : 'text';
	for my $node ($source, $target)
	{
		$node->safe_psql('postgres',
			"CREATE TABLE $c->{table} (tenant $type, id int, v text, PRIMARY KEY (tenant, id))");
	}
	$source->safe_psql('postgres', qq{
        SELECT chash_create_directory('$n', ARRAY['s1', 's2'], $c->{slots}, '$c->{method}', key_type => '$c->{key}');
        SELECT chash_add_table('$n', 'public.$c->{table}', 'tenant');
        CREATE PUBLICATION pub_$n FOR TABLE $c->{table};
    });
}

# The tenants of case $n: 200 of them (decimal ones for the bigint key).
sub tenant_sql
{
	my ($n) = @_;
	return $case{$n}{key} eq 'bigint' ? "(i * 7919 - 500000)::bigint" : "'t' || i";
}

# The batch: a quarter of the slots that the tenants use, and a pinned
# tenant in one of them.  'r' also moves one tenant by name.
my %batch;
for my $n (sort keys %case)
{
	my $c = $case{$n};
	my $t = tenant_sql($n);
	$batch{$n} = $source->safe_psql('postgres', qq{
        SELECT array_agg(DISTINCT s ORDER BY s)::text FROM (
          SELECT chash_tenant_slot($t, $c->{slots}, '$c->{method}') AS s
            FROM generate_series(1, 200) i) x
         WHERE s % 4 = 0});
	my $pinned = $source->safe_psql('postgres', qq{
        SELECT min($t) FROM generate_series(1, 200) i
         WHERE chash_tenant_slot($t, $c->{slots}, '$c->{method}') = ANY ('$batch{$n}'::int[])});
	$source->safe_psql('postgres', "SELECT chash_pin('$n', '$pinned', 's2')");
	my $tenants = $n eq 'r' ? ", tenants => ARRAY['named']" : '';
	$source->safe_psql('postgres',
		"SELECT chash_decoding_filter_create('chash_$n', '$n', '$batch{$n}'$tenants)");
}

# The slots: over the replication protocol for 'x', by SQL for the others.
my $repl = $source->connstr('postgres') . ' replication=database';
my ($ret, $out, $err) = $source->psql('postgres', 'CREATE_REPLICATION_SLOT chash_x LOGICAL chash NOEXPORT_SNAPSHOT',
	extra_params => [ '-d', $repl ]);
is($ret, 0, 'CREATE_REPLICATION_SLOT ... LOGICAL chash works') or diag($err);
$source->safe_psql('postgres', "SELECT pg_create_logical_replication_slot('chash_$_', 'chash')") for qw(j r);
is($source->safe_psql('postgres', "SELECT string_agg(plugin, ',' ORDER BY slot_name) FROM pg_replication_slots"),
	'chash,chash,chash', 'the slots decode with plugin chash');

my $source_conn = $source->connstr('postgres');
for my $n (sort keys %case)
{
	$target->safe_psql('postgres', qq{
        CREATE SUBSCRIPTION sub_$n CONNECTION \$\$$source_conn\$\$ PUBLICATION pub_$n
          WITH (create_slot = false, slot_name = 'chash_$n', copy_data = false)});
}

# The workload: inserts of every tenant, updates, deletes, and updates
# that change a row's tenant into, out of and within the batch.
for my $n (sort keys %case)
{
	my $c = $case{$n};
	my $t = tenant_sql($n);
	my $in = "chash_tenant_slot(tenant, $c->{slots}, '$c->{method}') = ANY ('$batch{$n}'::int[])";
	my $one_in = $source->safe_psql('postgres', qq{
        SELECT min($t) FROM generate_series(1, 200) i
         WHERE chash_tenant_slot($t, $c->{slots}, '$c->{method}') = ANY ('$batch{$n}'::int[])
           AND NOT EXISTS (SELECT FROM chash_override o WHERE o.directory = '$n' AND o.tenant = ($t)::text)});
	my $one_out = $source->safe_psql('postgres', qq{
        SELECT min($t) FROM generate_series(1, 200) i
         WHERE NOT chash_tenant_slot($t, $c->{slots}, '$c->{method}') = ANY ('$batch{$n}'::int[])});
	my $named = $n eq 'r' ? "INSERT INTO $c->{table} VALUES ('named', 1, 'by name'), ('named', 2, 'by name');" : '';
	$source->safe_psql('postgres', qq{
        INSERT INTO $c->{table} SELECT $t, k, 'v' FROM generate_series(1, 200) i, generate_series(1, 5) k;
        $named
        UPDATE $c->{table} SET v = 'updated' WHERE id = 2;
        DELETE FROM $c->{table} WHERE id = 3;
        -- into the batch, out of it, and within it
        UPDATE $c->{table} SET tenant = '$one_in', id = 100 WHERE tenant = '$one_out' AND id = 4;
        UPDATE $c->{table} SET tenant = '$one_out', id = 101 WHERE tenant = '$one_in' AND id = 5;
        UPDATE $c->{table} SET id = 102 WHERE tenant = '$one_in' AND id = 1;
    });
	$source->wait_for_catchup("sub_$n");
	my $want = $source->safe_psql('postgres', qq{
        SELECT count(*), md5(string_agg(tenant || ':' || id || ':' || v, ',' ORDER BY tenant, id))
          FROM $c->{table} r
         WHERE ($in AND NOT EXISTS (SELECT FROM chash_override o WHERE o.directory = '$n' AND o.tenant = r.tenant::text))
            OR tenant::text = 'named'});
	my $got = $target->safe_psql('postgres', qq{
        SELECT count(*), md5(string_agg(tenant || ':' || id || ':' || v, ',' ORDER BY tenant, id))
          FROM $c->{table}});
	is($got, $want, "$c->{method}: the target has exactly the rows of the batch");
	my ($rows) = split /\|/, $got;
	my $all = $source->safe_psql('postgres', "SELECT count(*) FROM $c->{table}");
	ok($rows > 50 && $rows < $all / 2, "$c->{method}: $rows of $all rows passed");
	# one_in keeps 2 and 4, gains 100 (from one_out) and 102 (its 1); its 5
	# left for one_out, which is not in the batch
	is($target->safe_psql('postgres', qq{
        SELECT string_agg(id::text, ',' ORDER BY id) FILTER (WHERE tenant = '$one_in') || '|'
               || count(*) FILTER (WHERE tenant = '$one_out')
          FROM $c->{table}}), '2,4,100,102|0',
		"$c->{method}: a row whose tenant enters the batch arrives, one that leaves it goes");
}

# TRUNCATE of the source does not empty the target.
my $kept = $target->safe_psql('postgres', 'SELECT count(*) FROM x_rows');
$source->safe_psql('postgres', q{
    TRUNCATE x_rows;
    INSERT INTO x_rows SELECT 't' || i, 1000, 'after' FROM generate_series(1, 200) i;});
$source->wait_for_catchup('sub_x');
is($target->safe_psql('postgres', "SELECT count(*) FILTER (WHERE id <> 1000) || '|' || (count(*) FILTER (WHERE id = 1000) > 0) FROM x_rows"),
	"$kept|true", 'TRUNCATE does not pass; the rows after it do');

# A slot of plugin chash without a filter, and the filter read by SQL decoding.
$source->safe_psql('postgres', q{
    CREATE TABLE plain (tenant text PRIMARY KEY);
    SELECT chash_add_table('x', 'public.plain', 'tenant');
    CREATE PUBLICATION pub_plain FOR TABLE plain;
    SELECT pg_create_logical_replication_slot('chash_none', 'chash');
    INSERT INTO plain SELECT 't' || i FROM generate_series(1, 200) i;
});
($ret, $out, $err) = $source->psql('postgres', q{
    SELECT count(*) FROM pg_logical_slot_peek_binary_changes('chash_none', NULL, NULL,
        'proto_version', '1', 'publication_names', 'pub_plain')});
like($err, qr/logical slot "chash_none" has no decoding filter/, 'a slot without a filter fails');
$source->safe_psql('postgres', q{
    SELECT pg_drop_replication_slot('chash_none');
    SELECT chash_decoding_filter_create('chash_peek', 'x', ARRAY[0, 1, 2, 3, 4, 5, 6, 7]);
    SELECT pg_create_logical_replication_slot('chash_peek', 'chash');
    INSERT INTO plain SELECT 'u' || i FROM generate_series(1, 200) i;
});
is($source->safe_psql('postgres', q{
    SELECT count(*) FROM pg_logical_slot_peek_binary_changes('chash_peek', NULL, NULL,
        'proto_version', '1', 'publication_names', 'pub_plain') WHERE substr(data, 1, 1) = 'I'}),
	$source->safe_psql('postgres', q{
    SELECT count(*) FROM plain WHERE tenant LIKE 'u%' AND chash_tenant_slot(tenant, 64) < 8}),
	'SQL decoding through the plugin: one insert message per row of the slots');

for my $n (sort keys %case)
{
	$target->safe_psql('postgres', "DROP SUBSCRIPTION sub_$n");
	ok($source->safe_psql('postgres', "SELECT chash_decoding_filter_drop('chash_$n')") eq 't', "filter chash_$n dropped");
}
done_testing();
