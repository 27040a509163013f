-- ---------------------------------------------------------------------------
-- The decoding filter of output plugin 'chash' (src/decoding_filter.c;
-- docs/shards.md, "Online moves of every slot method")
--
-- A logical slot created with plugin 'chash' streams pgoutput's messages
-- for the rows of one batch only.  Which rows is the slot's row here, keyed
-- by the slot's name: a subscription can send pgoutput's options only, so
-- the filter has to be found on the server.  It is a user catalog table,
-- which decoding may read under its historic snapshot; a filter must be
-- registered before its slot is created (a change decoded sees the table
-- as of that change).  Each database keeps its own: the rows are not
-- replicated, nor dumped (a slot is not dumped either).
-- ---------------------------------------------------------------------------

CREATE TABLE @extschema@.chash_decoding_filter (
    slot_name text PRIMARY KEY,
    directory text NOT NULL,
    slot_count int NOT NULL,
    slot_method text NOT NULL,
    key_type text NOT NULL,
    slots int[],
    tenants text[],
    except_tenants text[],
    tables oid[] NOT NULL,
    tenant_columns text[] NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now()
) WITH (user_catalog_table = true);
COMMENT ON TABLE @extschema@.chash_decoding_filter IS
    'per logical slot of plugin chash: the rows it passes (tenants, or tenants of slots except pinned ones) of which tables (tenant column)';

\ir ../functions/chash_decoding_filter_create/1.2.sql

\ir ../functions/chash_decoding_filter_drop/1.2.sql
