-- ---------------------------------------------------------------------------
-- The shard directory: its change history, the changes feed and NOTIFY
-- (docs/directory.md, "Changes")
--
-- Every committed change of a directory is a new version (the bump
-- triggers).  chash_directory_change records, per version, which keys it
-- changed (not their values: those are in the tables), so a client or a
-- routing cache holding the state at version v reaches the current state
-- by reading the rows of the keys changed after v.  The last
-- 1,000 versions of each directory are kept.
-- ---------------------------------------------------------------------------

CREATE TABLE @extschema@.chash_directory_change (
    directory text NOT NULL,
    version bigint NOT NULL,
    kind text NOT NULL CHECK (kind IN ('version', 'full', 'shard', 'slot', 'override',
                                       'migration', 'step')),
    key text NOT NULL,
    PRIMARY KEY (directory, version, kind, key)
);
COMMENT ON TABLE @extschema@.chash_directory_change IS
    'the keys each version of a directory changed: version (key: the previous version, empty when created), full (not described here), shard, slot, override, migration (key: id), step (key: migration:step)';

-- A name's versions never repeat: a directory created again under a name
-- continues after the version its drop reached.
CREATE TABLE @extschema@.chash_directory_dropped (
    name text PRIMARY KEY,
    version bigint NOT NULL
);
COMMENT ON TABLE @extschema@.chash_directory_dropped IS
    'the version each dropped directory name reached (its last version + 1): a directory created again under the name starts after it';

-- Before the insert of a directory: continue after the dropped name's
-- version (also for a version written by hand, which could repeat one).
CREATE FUNCTION @extschema@.chash_directory_renew() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    last bigint;
BEGIN
    DELETE FROM @extschema@.chash_directory_dropped x WHERE x.name = NEW.name
        RETURNING x.version INTO last;
    IF last IS NOT NULL AND NEW.version <= last AND last < 9223372036854775807 THEN
        NEW.version := last + 1;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_renew() IS
    'trigger: a directory created under a dropped name continues after the version the drop reached';
CREATE TRIGGER chash_directory_renew BEFORE INSERT ON @extschema@.chash_directory
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_directory_renew();

-- After every new version of a directory row (created, bumped, written by
-- hand, dropped): the version's entry in the history, NOTIFY at commit
-- (nothing after a rollback: notifications are transactional), and now
-- and then the pruning of old history.
CREATE FUNCTION @extschema@.chash_directory_log() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    payload text;
    dropped bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- a drop is a version too: the name's next directory starts after
        -- it (a version at the bigint maximum, only reachable by hand with
        -- triggers off, stays where it is rather than block the drop)
        dropped := CASE WHEN OLD.version < 9223372036854775807 THEN OLD.version + 1 ELSE OLD.version END;
        DELETE FROM @extschema@.chash_directory_change c WHERE c.directory = OLD.name;
        INSERT INTO @extschema@.chash_directory_dropped AS x (name, version)
             VALUES (OLD.name, dropped)
        ON CONFLICT (name) DO UPDATE SET version = greatest(x.version, excluded.version);
        payload := OLD.name || ':' || dropped;
    ELSE
        INSERT INTO @extschema@.chash_directory_change (directory, version, kind, key)
             VALUES (NEW.name, NEW.version, 'version',
                     CASE WHEN TG_OP = 'UPDATE' THEN OLD.version::text ELSE '' END)
        ON CONFLICT DO NOTHING;
        -- one range delete every 100 versions keeps 1,000 to 1,100 of them
        IF NEW.version % 100 = 0 THEN
            DELETE FROM @extschema@.chash_directory_change c
             WHERE c.directory = NEW.name AND c.version <= NEW.version - 1000;
        END IF;
        payload := NEW.name || ':' || NEW.version;
    END IF;
    -- NOTIFY payloads are shorter than 8000 bytes; such names get none
    IF octet_length(payload) < 8000 THEN
        PERFORM pg_notify('chash_directory', payload);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_log() IS
    'trigger: records each new version of a directory in chash_directory_change and sends NOTIFY chash_directory ''<directory>:<version>''';
CREATE TRIGGER chash_directory_log AFTER INSERT OR UPDATE OR DELETE ON @extschema@.chash_directory
    FOR EACH ROW EXECUTE FUNCTION @extschema@.chash_directory_log();

-- What changed in a directory after since_version, as a client holding
-- chash_directory_snapshot() at since_version applies it:
--   version    the current version;
--   shards     when any shard changed: the whole shards array, as in the snapshot;
--   slots      [first, last, shard] runs of the changed slots, with their owners now;
--   overrides  {tenant: shard} for changed overrides, null for an unpinned tenant;
--   steps      when steps in flight changed: the whole steps array.
-- {"full": true, "version": v} when the history needed is gone (pruned,
-- dropped and created again, or a change too large to record key by key).
CREATE FUNCTION @extschema@.chash_directory_changes(directory text, since_version bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    d @extschema@.chash_directory;
    snap jsonb;
    result jsonb;
BEGIN
    SELECT * INTO d FROM @extschema@.chash_directory x WHERE x.name = $1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'directory "%" does not exist', @extschema@.chash_message_text($1)
            USING ERRCODE = '42704';
    END IF;
    IF since_version = d.version THEN
        RETURN jsonb_build_object('full', false, 'version', d.version, 'slots', '[]'::jsonb,
                                  'overrides', '{}'::jsonb);
    END IF;
    -- complete only if the version after since_version is still recorded
    -- as following it, and nothing since is recorded as full
    IF since_version > d.version
       OR NOT EXISTS (SELECT FROM @extschema@.chash_directory_change c
                       WHERE c.directory = d.name AND c.version > since_version
                         AND c.kind = 'version' AND c.key = since_version::text)
       OR EXISTS (SELECT FROM @extschema@.chash_directory_change c
                   WHERE c.directory = d.name AND c.version > since_version AND c.kind = 'full') THEN
        RETURN jsonb_build_object('full', true, 'version', d.version);
    END IF;
    result := jsonb_build_object('full', false, 'version', d.version);
    IF EXISTS (SELECT FROM @extschema@.chash_directory_change c
                WHERE c.directory = d.name AND c.version > since_version AND c.kind = 'shard')
       OR EXISTS (SELECT FROM @extschema@.chash_directory_change c
                   WHERE c.directory = d.name AND c.version > since_version
                     AND c.kind IN ('migration', 'step')) THEN
        snap := @extschema@.chash_directory_snapshot(d.name);
        IF EXISTS (SELECT FROM @extschema@.chash_directory_change c
                    WHERE c.directory = d.name AND c.version > since_version AND c.kind = 'shard') THEN
            result := result || jsonb_build_object('shards', snap -> 'shards');
        END IF;
        IF EXISTS (SELECT FROM @extschema@.chash_directory_change c
                    WHERE c.directory = d.name AND c.version > since_version
                      AND c.kind IN ('migration', 'step')) THEN
            result := result || jsonb_build_object('steps', snap -> 'steps');
        END IF;
    END IF;
    result := result || jsonb_build_object('slots', coalesce((
        SELECT jsonb_agg(jsonb_build_array(r.first, r.last, r.shard) ORDER BY r.first)
          FROM (SELECT min(x.slot) AS first, max(x.slot) AS last, x.shard
                  FROM (SELECT s.slot, s.shard,
                               s.slot - row_number() OVER (PARTITION BY s.shard ORDER BY s.slot) AS run
                          FROM (SELECT DISTINCT c.key::int AS slot
                                  FROM @extschema@.chash_directory_change c
                                 WHERE c.directory = d.name AND c.version > since_version
                                   AND c.kind = 'slot') k
                          JOIN @extschema@.chash_slot s ON s.directory = d.name AND s.slot = k.slot) x
                 GROUP BY x.shard, x.run) r), '[]'));
    result := result || jsonb_build_object('overrides', coalesce((
        SELECT jsonb_object_agg(k.tenant, o.shard)
          FROM (SELECT DISTINCT c.key AS tenant FROM @extschema@.chash_directory_change c
                 WHERE c.directory = d.name AND c.version > since_version AND c.kind = 'override') k
          LEFT JOIN @extschema@.chash_override o ON o.directory = d.name AND o.tenant = k.tenant), '{}'));
    RETURN result;
END
$$;
COMMENT ON FUNCTION @extschema@.chash_directory_changes(text, bigint) IS
    'what changed in a directory after a version: slot runs, overrides, shards and steps in flight to apply to chash_directory_snapshot() at that version; {"full": true} when the history is gone';
