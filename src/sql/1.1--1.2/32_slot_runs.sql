-- ---------------------------------------------------------------------------
-- Slot runs, said once (docs/directory.md): runs of consecutive slots with
-- one owner as [first, last, shard], for chash_directory_snapshot (every
-- slot) and chash_directory_changes (the slots changed since a version).
-- Both are redefined here to call it (their comments stay); the rest of
-- their bodies is 1.0's and 1.1's.
-- ---------------------------------------------------------------------------

\ir ../functions/chash_slot_runs/1.2.sql

\ir ../functions/chash_directory_snapshot/1.2.sql

\ir ../functions/chash_directory_changes/1.2.sql
