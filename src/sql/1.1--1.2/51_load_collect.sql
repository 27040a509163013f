
-- Collecting the load statistics into the directory database (docs/load.md,
-- "Collecting"): chash_collect asks every shard through its server.

\ir ../functions/chash_shard_sizes/1.2.sql

\ir ../functions/chash_shard_fetch/1.2.sql

CREATE TABLE @extschema@.chash_load_slot (
    directory text NOT NULL REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    shard text NOT NULL,
    slot int NOT NULL,
    reads bigint NOT NULL DEFAULT 0,
    writes bigint NOT NULL DEFAULT 0,
    rows bigint NOT NULL DEFAULT 0,
    exec_time float8 NOT NULL DEFAULT 0,
    since timestamptz,
    collected_at timestamptz NOT NULL,
    PRIMARY KEY (directory, shard, slot)
);
COMMENT ON TABLE @extschema@.chash_load_slot IS
    'load statistics of each slot as chash_collect last read them from each shard';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_load_slot', '');

CREATE TABLE @extschema@.chash_load_tenant (
    directory text NOT NULL REFERENCES @extschema@.chash_directory (name) ON DELETE CASCADE,
    shard text NOT NULL,
    tenant text NOT NULL,
    slot int NOT NULL,
    reads bigint,
    writes bigint,
    rows bigint,
    exec_time float8,
    score float8,
    stored_rows bigint,
    bytes bigint,
    collected_at timestamptz NOT NULL,
    PRIMARY KEY (directory, shard, tenant)
);
COMMENT ON TABLE @extschema@.chash_load_tenant IS
    'each tenant as chash_collect last read it from each shard: its statistics if it is among the shard''s top tenants, its stored rows and bytes';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.chash_load_tenant', '');

-- Per directory, shard and slot: the load counted and the bytes stored.
CREATE VIEW @extschema@.chash_load WITH (security_invoker = true) AS
WITH sized AS (
    SELECT t.directory, t.shard, t.slot, count(*) AS tenants,
           sum(t.stored_rows)::bigint AS stored_rows, sum(t.bytes)::bigint AS bytes,
           max(t.collected_at) AS collected_at
    FROM @extschema@.chash_load_tenant t WHERE t.bytes IS NOT NULL
    GROUP BY 1, 2, 3
)
SELECT coalesce(s.directory, z.directory) AS directory,
       coalesce(s.shard, z.shard) AS shard,
       coalesce(s.slot, z.slot) AS slot,
       coalesce(s.reads, 0) AS reads,
       coalesce(s.writes, 0) AS writes,
       coalesce(s.rows, 0) AS rows,
       coalesce(s.exec_time, 0) AS exec_time,
       coalesce(z.tenants, 0) AS tenants,
       coalesce(z.stored_rows, 0) AS stored_rows,
       coalesce(z.bytes, 0) AS bytes,
       s.since,
       coalesce(s.collected_at, z.collected_at) AS collected_at
FROM @extschema@.chash_load_slot s
FULL JOIN sized z ON z.directory = s.directory AND z.shard = s.shard AND z.slot = s.slot;
COMMENT ON VIEW @extschema@.chash_load IS
    'per directory, shard and slot: statements that read, rows written, rows, executor time (ms) counted there, and the tenants, rows and bytes stored, as chash_collect last read them';

\ir ../functions/chash_collect/1.2.sql
