-- The state names of the C code (src/core/states.c) are exactly the values
-- the CHECK constraints of the tables allow: a state added on one side
-- only shows here as a row.

-- the values a CHECK constraint on one column allows, from its definition
-- "CHECK ((col = ANY (ARRAY['a'::text, ...])))"
CREATE FUNCTION check_values(tab text, col text) RETURNS SETOF text LANGUAGE sql AS $$
    SELECT m[1]
      FROM pg_constraint c
      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ALL (c.conkey)
     CROSS JOIN LATERAL regexp_matches(pg_get_constraintdef(c.oid), '''([^'']*)''::text', 'g') AS m
     WHERE c.contype = 'c' AND c.conrelid = tab::regclass AND a.attname = col
$$;

-- every kind, with its table and column
SELECT kind, table_name, column_name, count(*) AS states
  FROM chash_state_names() GROUP BY 1, 2, 3 ORDER BY 1;

-- in the C table but not allowed by the CHECK, or the other way round
WITH c AS (SELECT DISTINCT kind, table_name, column_name FROM chash_state_names()),
allowed AS (SELECT c.kind, v AS state FROM c, check_values(c.table_name, c.column_name) AS v),
known AS (SELECT kind, state FROM chash_state_names())
SELECT kind, state, 'C only' AS side FROM (SELECT * FROM known EXCEPT SELECT * FROM allowed) x
UNION ALL
SELECT kind, state, 'CHECK only' FROM (SELECT * FROM allowed EXCEPT SELECT * FROM known) y
 ORDER BY 1, 2;

-- each CHECK was found (a constraint renamed or rewritten would hide here)
SELECT c.kind, (SELECT count(*) FROM check_values(c.table_name, c.column_name)) AS allowed
  FROM (SELECT DISTINCT kind, table_name, column_name FROM chash_state_names()) c
 ORDER BY 1;

-- the enum values are the table's order: 0 .. count - 1
SELECT kind, array_agg(state ORDER BY value) AS states, max(value) + 1 = count(*) AS dense
  FROM chash_state_names() GROUP BY kind ORDER BY kind;

DROP FUNCTION check_values(text, text);
