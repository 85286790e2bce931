-- lock_node --
-- Serialise every decision on one logical node: a transaction-scoped advisory
-- lock (never a session lock: those leak through poolers) on the node's
-- namespaced 64-bit key, council_node_lock_key_v1 (migration 0032), the one
-- definition of the key. Released at commit or rollback, or when the backend dies.
SELECT pg_advisory_xact_lock(council_node_lock_key_v1(CAST(:logical_node_id AS uuid)))

-- lock_evidence_exclusive --
-- Exclusive lock on one evidence key, taken by a validity change before it
-- records the transition and looks up affected consolidations.
SELECT pg_advisory_xact_lock(hashtextextended('council.evidence:' || CAST(:evidence_id AS text), 0))

-- lock_proposal --
-- Serialise the review dispatches of one retraction proposal, so that two
-- re-verification sweeps never both dispatch a review of it.
SELECT pg_advisory_xact_lock(hashtextextended('council.proposal:' || CAST(:proposal_id AS text), 0))

-- lock_dispatch_key --
-- Serialise the dispatches that give one idempotency key, so that two retries racing
-- each other create one dispatch between them.
SELECT pg_advisory_xact_lock(hashtextextended('council.dispatch-key:' || CAST(:key AS text), 0))

-- lock_thread_budget --
-- Serialise the reservations on one thread's budget: a dispatch reads what is spent and
-- reserved and adds its own under this lock, so concurrent dispatches never reserve past it.
SELECT pg_advisory_xact_lock(hashtextextended('council.budget:' || CAST(:thread_id AS text), 0))
