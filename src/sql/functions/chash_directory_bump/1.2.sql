CREATE OR REPLACE FUNCTION @extschema@.chash_directory_bump() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dirs text[];
    rows_sql text;
    key_sql text;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        SELECT array_agg(name) INTO dirs FROM @extschema@.chash_directory;
    ELSIF TG_TABLE_NAME = 'chash_migration_step' THEN
        IF TG_OP = 'INSERT' THEN
            SELECT array_agg(DISTINCT m.directory) INTO dirs
            FROM new_rows r JOIN @extschema@.chash_migration m ON m.id = r.migration;
        ELSIF TG_OP = 'DELETE' THEN
            SELECT array_agg(DISTINCT m.directory) INTO dirs
            FROM old_rows r JOIN @extschema@.chash_migration m ON m.id = r.migration;
        ELSE
            SELECT array_agg(DISTINCT m.directory) INTO dirs
            FROM (SELECT migration FROM new_rows UNION SELECT migration FROM old_rows) r
            JOIN @extschema@.chash_migration m ON m.id = r.migration;
        END IF;
    ELSIF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT directory) INTO dirs FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT directory) INTO dirs FROM old_rows;
    ELSE
        SELECT array_agg(directory) INTO dirs
        FROM (SELECT directory FROM new_rows UNION SELECT directory FROM old_rows) r;
    END IF;
    -- in name order: the lock order of docs/directory.md
    UPDATE @extschema@.chash_directory d SET version = d.version
    FROM (SELECT x.name FROM @extschema@.chash_directory x
          WHERE x.name = ANY (dirs) AND x.xmin <> xid(pg_current_xact_id())
          ORDER BY x.name FOR NO KEY UPDATE) l
    WHERE d.name = l.name;

    -- the history: not for directories created by this transaction (their
    -- version's entry says "created"), nor for registered tables (not
    -- routing state: the version entry alone says something changed)
    SELECT array_agg(d.name) INTO dirs FROM @extschema@.chash_directory d
     WHERE d.name = ANY (dirs)
       AND NOT EXISTS (SELECT FROM @extschema@.chash_directory_change c
                        WHERE c.directory = d.name AND c.version = d.version
                          AND c.kind = 'version' AND c.key = '');
    IF dirs IS NULL OR TG_TABLE_NAME = 'chash_table' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        INSERT INTO @extschema@.chash_directory_change (directory, version, kind, key)
        SELECT d.name, d.version, 'full', '' FROM @extschema@.chash_directory d
         WHERE d.name = ANY (dirs)
        ON CONFLICT DO NOTHING;
        RETURN NULL;
    END IF;
    rows_sql := CASE TG_OP WHEN 'INSERT' THEN 'SELECT * FROM new_rows'
                           WHEN 'DELETE' THEN 'SELECT * FROM old_rows'
                           ELSE 'SELECT * FROM new_rows UNION ALL SELECT * FROM old_rows' END;
    -- steps matter to routing only while in flight; several steps of a
    -- migration changed at once (a batch) are one key, the migration
    key_sql := CASE TG_TABLE_NAME
        WHEN 'chash_shard' THEN 'SELECT r.directory, ''shard'', r.shard FROM (%s) r'
        -- more than 16 slots of a directory (a batch's completion): 'slots'
        -- keys of up to 200 slots each, in slot order, comma-separated
        WHEN 'chash_slot' THEN 'SELECT c.directory, CASE WHEN c.total > 16 THEN ''slots'' ELSE ''slot'' END,
                     pg_catalog.string_agg(c.slot::text, '','' ORDER BY c.slot)
                FROM (SELECT r.directory, r.slot, pg_catalog.count(*) OVER (PARTITION BY r.directory) AS total,
                             (pg_catalog.row_number() OVER (PARTITION BY r.directory ORDER BY r.slot) - 1) / 200 AS chunk
                        FROM (SELECT DISTINCT r.directory, r.slot FROM (%s) r) r) c
               GROUP BY c.directory, c.total, CASE WHEN c.total > 16 THEN c.chunk ELSE c.slot END'
        WHEN 'chash_override' THEN 'SELECT r.directory, ''override'', r.tenant FROM (%s) r'
        WHEN 'chash_migration' THEN 'SELECT r.directory, ''migration'', r.id::text FROM (%s) r'
        ELSE 'SELECT m.directory, CASE WHEN c.steps > 1 THEN ''migration'' ELSE ''step'' END,
                     CASE WHEN c.steps > 1 THEN c.migration::text ELSE c.migration || '':'' || c.step END
                FROM (SELECT r.migration, count(DISTINCT r.step) AS steps, min(r.step) AS step
                        FROM (%s) r WHERE r.state IN (''copying'', ''fenced'')
                       GROUP BY r.migration) c
                JOIN @extschema@.chash_migration m ON m.id = c.migration' END;
    EXECUTE format($q$
        WITH k (directory, kind, key) AS (SELECT DISTINCT * FROM (%s) x WHERE x.directory = ANY ($1)),
             n AS (SELECT k.directory, count(*) AS keys FROM k GROUP BY k.directory)
        INSERT INTO @extschema@.chash_directory_change (directory, version, kind, key)
        SELECT k.directory, d.version, k.kind, k.key
          FROM k JOIN n ON n.directory = k.directory
          JOIN @extschema@.chash_directory d ON d.name = k.directory
         WHERE n.keys <= 10000
        UNION ALL
        SELECT n.directory, d.version, 'full', ''
          FROM n JOIN @extschema@.chash_directory d ON d.name = n.directory
         WHERE n.keys > 10000
        ON CONFLICT DO NOTHING$q$, format(key_sql, rows_sql)) USING dirs;
    RETURN NULL;
END
$$;
