-- ---------------------------------------------------------------------------
-- The lease keeper's renewal skips the leases a job has locked (1.1's
-- 95_mover.sql waited for them).  The keeper renews every lease of its
-- process in one statement while each job locks its batch's leases in its
-- own transactions: waiting made the two deadlock (seen with two jobs of
-- one background rebalance), and held every other job's renewal up behind
-- a long copy.  A locked lease is its job's to extend (chash_steps_lease_set
-- in the same transaction), and a takeover skips locked leases too.
-- ---------------------------------------------------------------------------
\ir ../functions/chash_step_lease_renew/1.2.sql
