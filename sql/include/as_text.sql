-- pg_temp.as_text(b): the bytes as text when a text value can hold them
-- (valid UTF-8 without NUL), else NULL; for the text overloads of the hash
-- functions, tested against the same vectors as the bytea ones.
CREATE FUNCTION pg_temp.as_text(b bytea) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN convert_from(b, 'UTF8');
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;
