# Whose rights a move runs a table owner's code with (docs/shards.md,
# "Whose code a move runs"): pg_hba.conf as Debian ships it, a table owner
# who is no superuser, a mover that is one (by peer, as online moves need).
# The owner's trigger function records current_user, then tries RESET ROLE
# and ALTER ROLE ... SUPERUSER.  An ordinary trigger does not fire for the
# mover's writes (they are written as replication writes them), blocking
# or online; an ENABLE ALWAYS trigger would fire there and in the online
# move's apply worker, as a superuser, so both moves are refused before
# any fence, naming the trigger; made SECURITY DEFINER it runs as its
# owner, and the online move goes on, its apply worker's trigger calls
# the owner's.  The owner is never a superuser afterwards.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use ChashTest;
use IPC::Run;

my $conf = "max_replication_slots = 16\nmax_wal_senders = 16\n"
  . "max_logical_replication_workers = 8\nmax_worker_processes = 16\n";
my $dir = new_node('directory', logical => 1, conf => $conf);
my %shard = map { $_ => new_node($_, logical => 1, preload => 1, conf => $conf) } qw(s1 s2);
debian_hba($dir, values %shard);

$dir->safe_psql('postgres', 'CREATE EXTENSION chash');
publish_directory($dir);
my $dirconn = password_role($dir, 'chash_replicator', options => 'REPLICATION');
$dirconn =~ s/dbname='?postgres'?/dbname=postgres/;
$dir->safe_psql('postgres', q{
    SELECT chash_create_directory('orgs', ARRAY['s1', 's2'], 16);
    SELECT chash_add_table('orgs', 'public.accounts', 'org_id');
    SELECT chash_pin('orgs', 'acme', 's1');
    SELECT chash_pin('orgs', 'bolt', 's1');
});
my %owner;
for my $s (sort keys %shard)
{
	$owner{$s} = password_role($shard{$s}, 'app_owner');
	$shard{$s}->safe_psql('postgres', q{
        CREATE EXTENSION chash;
        CREATE TABLE accounts (org_id text, id bigint, payload text, PRIMARY KEY (org_id, id));
        CREATE TABLE seen (who text, what text);
        ALTER TABLE accounts OWNER TO app_owner;
        ALTER TABLE seen OWNER TO app_owner;
        GRANT INSERT ON seen TO PUBLIC;
        GRANT CREATE ON SCHEMA public TO app_owner;
    });
	# the owner's code: records who runs it, then tries to become a superuser
	my ($rc, $out, $err) = as_role($shard{$s}, $owner{$s}, q{
        CREATE FUNCTION public.grab() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO public.seen VALUES (current_user, TG_NAME || ' ' || TG_OP);
            BEGIN RESET ROLE; EXCEPTION WHEN others THEN NULL; END;
            BEGIN EXECUTE 'ALTER ROLE app_owner SUPERUSER'; EXCEPTION WHEN others THEN NULL; END;
            RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
        END $$;
        CREATE TRIGGER grab BEFORE INSERT OR DELETE ON public.accounts FOR EACH ROW EXECUTE FUNCTION public.grab();
    });
	is($rc, 0, "$s: the owner makes his trigger") or diag $err;
}
join_shards($dir, $dirconn, 'orgs', \%shard);
shard_applied($dir, $_) or die 'a shard did not apply the directory' for values %shard;
$shard{s1}->safe_psql('postgres', q{
    SET session_replication_role = replica;  -- the seed fires no trigger
    INSERT INTO accounts SELECT t, i, 'initial' FROM unnest(ARRAY['acme', 'bolt']) t, generate_series(1, 200) i;
});

# Runs chash_move over migration $m with @args; $during runs once the
# online move's subscription exists.  Returns (exit status, stderr).
sub move
{
	my ($m, $during, @args) = @_;
	my ($out, $err) = ('', '');
	local $ENV{CHASH_MOVE_PAUSE_SUBSCRIBED} = $during ? 3 : '';
	my $h = IPC::Run::start([ 'chash_move', '--verbose', '--lease', '2', @args, '--migration', $m,
							  $dir->connstr('postgres') ], '>', \$out, '2>', \$err);
	while ($during && $h->pumpable)
	{
		$h->pump_nb;
		next unless $shard{s2}->safe_psql('postgres',
			q{SELECT count(*) FROM pg_subscription WHERE subname LIKE 'chash\_move\_%'});
		$during->();
		$during = undef;
	}
	$h->finish;
	my $rc = $h->full_result;
	note "chash_move @args --migration $m: exit " . ($rc >> 8) . "\n$err";
	return ($rc >> 8, $err);
}

# Nobody but the owner ran his code, and he is no superuser.
sub owner_unharmed
{
	my ($name) = @_;
	for my $s (sort keys %shard)
	{
		is($shard{$s}->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'app_owner'}), 'f',
			"$name: app_owner is no superuser on $s");
		is($shard{$s}->safe_psql('postgres', q{SELECT string_agg(DISTINCT who, ',') FROM seen WHERE who <> 'app_owner'}), '',
			"$name: no other role ran the owner's trigger on $s");
	}
}

sub rows_on
{
	my ($s, $tenant) = @_;
	return $shard{$s}->safe_psql('postgres',
		"SET chash.bypass_guard = on; SELECT count(*) FROM accounts WHERE org_id = '$tenant'");
}

# ---- an ordinary trigger: not fired by the mover's writes ----
{
	my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'acme', 's2')});
	my ($rc, $err) = move($m);
	is($rc, 0, 'an ordinary trigger: the blocking move of acme by a superuser mover succeeds');
	is(rows_on('s2', 'acme') . '/' . rows_on('s1', 'acme'), '200/0', 'acme is on s2');
	owner_unharmed('blocking, an ordinary trigger');
	is($shard{$_}->safe_psql('postgres', 'SELECT count(*) FROM seen'), '0', "blocking: the trigger did not fire on $_")
	  for sort keys %shard;

	$m = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'acme', 's1')});
	($rc, $err) = move($m, undef, '--online');
	is($rc, 0, 'the online move back succeeds');
	like($err, qr/tenant 'acme' s2 -> s1 online/, 'it moved online');
	is(rows_on('s1', 'acme') . '/' . rows_on('s2', 'acme'), '200/0', 'acme is on s1');
	owner_unharmed('online, an ordinary trigger');
}

# ---- ENABLE ALWAYS: it would fire as the superuser; refused before any fence ----
for my $s (sort keys %shard)
{
	my ($rc, $out, $err) = as_role($shard{$s}, $owner{$s}, 'ALTER TABLE public.accounts ENABLE ALWAYS TRIGGER grab');
	is($rc, 0, "$s: the owner enables his trigger always") or diag $err;
}
my $m = $dir->safe_psql('postgres', q{SELECT chash_migration_move_tenant('orgs', 'bolt', 's2')});
for my $how ([ 'blocking' ], [ 'online', '--online' ])
{
	my ($name, @args) = @$how;
	my ($rc, $err) = move($m, undef, @args);
	isnt($rc, 0, "ENABLE ALWAYS, $name: the superuser mover refuses the move");
	like($err, qr/error: table "public.accounts" on shard "s\d" has code of role "app_owner" that the mover would run as a superuser\n.*detail: trigger grab on table (?:public\.)?accounts calls function (?:public\.)?grab\(\), owned by role "app_owner", which is not a superuser; .*No step was fenced\.\n.*hint: Make such a function SECURITY DEFINER/,
		"ENABLE ALWAYS, $name: the error names the trigger and its function");
	is($dir->safe_psql('postgres', "SELECT string_agg(state, ',') FROM chash_migration_step WHERE migration = $m"),
		'pending', "ENABLE ALWAYS, $name: the step was not fenced");
	is(rows_on('s1', 'bolt') . '/' . rows_on('s2', 'bolt'), '200/0', "ENABLE ALWAYS, $name: bolt stays on s1");
	owner_unharmed("ENABLE ALWAYS, $name");
}

# ---- SECURITY DEFINER: the owner's code runs as the owner, the online move goes on ----
for my $s (sort keys %shard)
{
	my ($rc, $out, $err) = as_role($shard{$s}, $owner{$s}, 'ALTER FUNCTION public.grab() SECURITY DEFINER');
	is($rc, 0, "$s: the owner makes his function SECURITY DEFINER") or diag $err;
}
{
	my ($rc, $err) = move($m, sub {
		$shard{s1}->safe_psql('postgres', q{INSERT INTO accounts VALUES ('bolt', 1000, 'during')});
	}, '--online');
	is($rc, 0, 'SECURITY DEFINER: the online move succeeds');
	like($err, qr/tenant 'bolt' s1 -> s2 online/, 'it moved online');
	is(rows_on('s2', 'bolt') . '/' . rows_on('s1', 'bolt'), '201/0', 'bolt is on s2, the row written while it streamed too');
	is($shard{s2}->safe_psql('postgres', q{SELECT count(*) FROM seen WHERE what = 'grab INSERT'}), '201',
		'the trigger fired for the copy and for the apply of the row written while it streamed');
	owner_unharmed('SECURITY DEFINER, online');
}

$_->stop('fast') for $dir, values %shard;
done_testing();
