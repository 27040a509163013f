-- ---------------------------------------------------------------------------
-- The replication objects of online moves, recorded before they are
-- created (docs/shards.md, "Background rebalancing"): a publication and a
-- slot on the step's source shard, a subscription on its target, named
-- after the step (mover/online.c).  A mover that dies, or a step given
-- back by hand, can leave them behind, and a slot holds WAL on its shard
-- for as long as it exists.  The cleaner (mover/replication_cleaner.c,
-- which chash_move and the background rebalance run before and after
-- their jobs) drops those of steps that are done, cancelled or given back
-- and that no mover holds, and forgets them.  The functions are the only
-- way to the table: they check the caller's lease, and run as the
-- extension's owner.
-- ---------------------------------------------------------------------------

CREATE TABLE @extschema@.chash_replication_object (
    migration bigint NOT NULL,
    step int NOT NULL,
    kind text NOT NULL CHECK (kind IN ('publication', 'slot', 'subscription')),
    shard text NOT NULL,
    name text NOT NULL,
    recorded_by text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (migration, step, kind),
    FOREIGN KEY (migration, step) REFERENCES @extschema@.chash_migration_step (migration, step)
        ON DELETE CASCADE
);
COMMENT ON TABLE @extschema@.chash_replication_object IS
    'the publications, slots and subscriptions of online moves, recorded before they are created and forgotten once dropped; not routing state';

\ir ../functions/chash_replication_object_orphan/1.2.sql

\ir ../functions/chash_replication_object_record/1.2.sql

\ir ../functions/chash_replication_object_orphans/1.2.sql

\ir ../functions/chash_replication_object_take/1.2.sql
