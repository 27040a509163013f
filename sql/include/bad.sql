-- bad(statement): runs the statement and shows "SQLSTATE: message" (plus
-- the detail when there is one), or "no error" when it succeeds.
CREATE OR REPLACE FUNCTION bad(statement text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN others THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || SQLERRM
        || CASE WHEN detail <> '' THEN ' (' || detail || ')' ELSE '' END;
END
$$;
