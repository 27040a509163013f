-- ---------------------------------------------------------------------------
-- User text in messages (docs/directory.md, "Errors"): at most 200 bytes,
-- cut on a character boundary, so that a huge tenant cannot flood the log
-- and a cut never leaves half a character (which a client in another
-- encoding would refuse to convert).
-- ---------------------------------------------------------------------------
CREATE FUNCTION @extschema@.chash_message_text(value text) RETURNS text
    AS 'MODULE_PATHNAME', 'chash_message_text'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.chash_message_text(text) IS
    'the text as error messages quote it: at most 200 bytes, cut on a character boundary';
