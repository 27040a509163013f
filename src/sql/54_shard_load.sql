-- ---------------------------------------------------------------------------
-- Load per shard (SPEC 3)
--
-- security_invoker: reading it needs the same table privileges as the
-- tables themselves (and chash_route checks them anyway).
-- ---------------------------------------------------------------------------

CREATE VIEW @extschema@.chash_shard_load WITH (security_invoker = true) AS
WITH slots AS (
    SELECT directory, shard, count(*) AS slots
    FROM @extschema@.chash_slot GROUP BY directory, shard
), pins AS (
    SELECT directory, shard, count(*) AS pinned
    FROM @extschema@.chash_override GROUP BY directory, shard
), sized AS (
    SELECT directory, @extschema@.chash_route(directory, tenant) AS shard, sum(bytes) AS bytes
    FROM @extschema@.chash_tenant_size GROUP BY 1, 2
), totals AS (
    SELECT directory, sum(bytes) AS bytes
    FROM @extschema@.chash_tenant_size GROUP BY directory
), base AS (
    SELECT s.directory, s.shard, s.state, s.weight,
           coalesce(sl.slots, 0) AS slots,
           coalesce(sl.slots, 0)::float8 / d.slot_count AS slot_share,
           CASE WHEN s.state = 'active'
                THEN s.weight / sum(s.weight) FILTER (WHERE s.state = 'active')
                                OVER (PARTITION BY s.directory)
                ELSE 0 END AS target_share,
           coalesce(p.pinned, 0) AS pinned_tenants,
           CASE WHEN t.bytes IS NOT NULL THEN coalesce(z.bytes, 0)::bigint END AS bytes,
           t.bytes AS total_bytes
    FROM @extschema@.chash_shard s
    JOIN @extschema@.chash_directory d ON d.name = s.directory
    LEFT JOIN slots sl ON sl.directory = s.directory AND sl.shard = s.shard
    LEFT JOIN pins p ON p.directory = s.directory AND p.shard = s.shard
    LEFT JOIN sized z ON z.directory = s.directory AND z.shard = s.shard
    LEFT JOIN totals t ON t.directory = s.directory
)
SELECT directory, shard, state, weight, slots, slot_share, target_share, pinned_tenants, bytes,
       -- share of bytes when sizes are known, else share of slots, over the target
       (CASE WHEN total_bytes > 0 THEN bytes::float8 / total_bytes::float8 ELSE slot_share END)
           / NULLIF(target_share, 0) AS load_ratio
FROM base;
COMMENT ON VIEW @extschema@.chash_shard_load IS
    'per directory and shard: state, weight, slots and their share, target share by weight, pinned tenants, bytes when sizes are known, and load over target';
