-- Before every statement that writes an ownership table of the directory
-- database: refused (55000) while a directory's newest version was made by
-- another server (this one was promoted or restored since: its shards may
-- still follow that server and admit writes by its state).  A directory
-- without any origin entry (made before 1.2) passes.  On a shard the
-- replica's writes are refused by chash_replica_read_only; the apply
-- worker fires neither trigger.  chash_directory_reconcile writes while it
-- holds chash_directory_change in EXCLUSIVE mode, and a shard's
-- chash_shard_leave drops its replica (its subscription gone already)
-- holding chash_shard_member in SHARE ROW EXCLUSIVE mode: only the
-- extension's owner and a superuser can take those locks, so their
-- writes pass.
CREATE FUNCTION @extschema@.chash_directory_gate() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me constant text := @extschema@.chash_server_identity();
    other record;
BEGIN
    -- per directory one index scan from its newest history entry back to
    -- its newest origin entry (one of them this server's: it passes)
    SELECT d.name, o.version, o.key INTO other
      FROM @extschema@.chash_directory d
     CROSS JOIN LATERAL (SELECT c.version, c.key FROM @extschema@.chash_directory_change c
                          WHERE c.directory = d.name AND c.kind = 'origin'
                          ORDER BY c.version DESC, c.key = me DESC LIMIT 1) o
     WHERE o.key <> me
     ORDER BY d.name LIMIT 1;
    IF NOT FOUND OR @extschema@.chash_shard_subscription() IS NOT NULL
       OR EXISTS (SELECT FROM pg_locks l
                   WHERE l.locktype = 'relation' AND l.pid = pg_backend_pid()
                     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                     AND ((l.relation = '@extschema@.chash_directory_change'::regclass AND l.mode = 'ExclusiveLock')
                          OR (l.relation = '@extschema@.chash_shard_member'::regclass AND l.mode = 'ShareRowExclusiveLock'))
                     AND l.granted) THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'directory "%" was last changed by another server', @extschema@.chash_message_text(other.name)
        USING ERRCODE = '55000',
              DETAIL = format('Version %s of directory "%s" was made by server %s; this server is %s: it was promoted or restored since, and its shards may still follow the other one.',
                              other.version, @extschema@.chash_message_text(other.name), other.key, me),
              HINT = 'Run CALL chash_directory_recover(''<the connection string the shards use to reach this database>'') here: it reconciles the directories and brings every shard to this server (docs/shards.md, "Failover").';
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_gate() IS
    'trigger: refuses ownership changes (55000) while a directory''s newest version was made by another server, until chash_directory_recover has brought every shard to this one';
