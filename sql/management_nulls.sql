-- A NULL in a required argument of a management function is 22004 naming
-- the argument (docs/directory.md).  Management functions are the ones that
-- change state: every VOLATILE function of the extension that is not a
-- trigger, read from pg_proc so that a new one cannot be left out.  An
-- argument is required unless its default is NULL ("not given").  Every
-- call gives the other required arguments valid values, leaves the
-- optional ones out, and is rolled back.

SELECT chash_create_directory('nulls', ARRAY['s1', 's2'], 8);
SELECT chash_add_shard('nulls', 's3');
SELECT chash_migration_start('nulls') AS m \gset
CREATE TABLE nulls_sizes (tenant text, payload text);
INSERT INTO nulls_sizes VALUES ('t1', 'x');

-- the SQLSTATE and message of a statement, which is then rolled back
CREATE FUNCTION outcome(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE statement;
        RAISE EXCEPTION USING ERRCODE = 'ZZ000';
    EXCEPTION WHEN SQLSTATE 'ZZ000' THEN
        RETURN 'no error';
    END;
EXCEPTION WHEN others THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

WITH fn AS (
    SELECT p.oid, p.proname, pg_get_function_arguments(p.oid) AS args
      FROM pg_proc p
      JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
      JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'chash'
     WHERE p.prokind = 'f' AND p.provolatile = 'v' AND p.prorettype <> 'trigger'::regtype AND p.pronargs > 0
), arg AS (
    -- "name type [DEFAULT expr]" per input argument, in order
    SELECT fn.oid, fn.proname, a.ord, a.txt,
           split_part(a.txt, ' ', 1) AS name,
           format_type(p.proargtypes[a.ord - 1], NULL) AS type,
           a.txt ~ ' DEFAULT NULL::' AS null_default
      FROM fn
      JOIN pg_proc p ON p.oid = fn.oid
     CROSS JOIN LATERAL (
           SELECT x.txt, row_number() OVER () AS ord
             FROM regexp_split_to_table(fn.args, ', (?=(OUT )?[a-z_]+ )') x(txt)
            WHERE x.txt !~ '^OUT ') a
), valued AS (
    -- a valid value for every argument, by name (then by type)
    SELECT arg.*,
           CASE name
               WHEN 'directory' THEN quote_literal('nulls')
               WHEN 'name' THEN quote_literal(CASE proname WHEN 'chash_create_directory' THEN 'nulls2' ELSE 'nulls' END)
               WHEN 'shard' THEN quote_literal(CASE proname WHEN 'chash_add_shard' THEN 's4' ELSE 's1' END)
               WHEN 'to_shard' THEN quote_literal('s3')
               WHEN 'shards' THEN quote_literal('{x,y}')
               WHEN 'tenant' THEN quote_literal('t1')
               WHEN 'migration' THEN :'m'
               WHEN 'step' THEN '1'
               WHEN 'kind' THEN quote_literal('rebalance')
               WHEN 'strategy' THEN quote_literal('slots')
               WHEN 'slot_method' THEN quote_literal('xxh64')
               WHEN 'key_type' THEN quote_literal('text')
               WHEN 'state' THEN quote_literal('active')
               WHEN 'rel' THEN quote_literal('nulls_sizes')
               WHEN 'tenant_column' THEN quote_literal('tenant')
               WHEN 'names' THEN quote_literal('{a}')
               WHEN 'nulls' THEN quote_literal('{false}')
               WHEN 'lease' THEN quote_literal('1 second')
               WHEN 'steps' THEN quote_literal('{1}')
               ELSE CASE type WHEN 'text' THEN quote_literal('x') WHEN 'text[]' THEN quote_literal('{x}')
                              WHEN 'jsonb' THEN quote_literal('[]')
                              ELSE '1' END
           END || '::' || type AS value
      FROM arg
)
SELECT v.proname || '(' || v.name || ' => NULL)' AS call,
       outcome(format('SELECT %I(%s)', v.proname,
                      (SELECT string_agg(format('%I => %s', o.name,
                                                CASE WHEN o.ord = v.ord THEN 'NULL::' || o.type ELSE o.value END),
                                         ', ' ORDER BY o.ord)
                         FROM valued o WHERE o.oid = v.oid AND NOT o.null_default))) AS outcome
  FROM valued v
 WHERE NOT v.null_default
 ORDER BY v.proname, v.ord, v.oid::regprocedure::text;   -- overloads in signature order

-- nothing changed, and the optional arguments really are optional
SELECT count(*) AS directories FROM chash_directory;
SELECT count(*) AS shards FROM chash_shard WHERE directory = 'nulls';
SELECT status FROM chash_migration WHERE id = :m;
SELECT chash_set_shard('nulls', 's1', NULL, NULL, NULL, NULL);
SELECT chash_pin('nulls', 't1', 's1', NULL);
SELECT chash_migration_cancel(:m);
SELECT chash_migration_start('nulls', 'slots', NULL) IS NOT NULL AS started;

-- the procedure (CALLed, so not in the listing above)
SELECT outcome($$CALL chash_directory_recover(NULL)$$) AS recover_null;

SELECT chash_drop_directory('nulls');
DROP TABLE nulls_sizes;
DROP FUNCTION outcome(text);
