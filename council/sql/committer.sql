-- commit_weights --
-- Before any lock: the claims on each of :version_ids (a version that does
-- not exist is absent), to size the committer's transactions.
SELECT nv.id, (SELECT count(*) FROM claims c WHERE c.node_version_id = nv.id) AS claims
FROM node_versions nv
WHERE nv.id = ANY(CAST(:version_ids AS uuid[]))

-- evaluate_read --
-- A committer round's first call (council_evaluate_read_v1, revision 0044, says each step
-- and why): SET LOCAL the lock and statement timeouts; take the round's locks in one fixed
-- order (each thread's alternatives key, then each version's node key, ascending; :wait
-- 'exclusive' or 'try'), then shared locks on the evidence the versions decided cite,
-- ascending; and read, each after the locks, everything the decision needs as one
-- document: each node's live consolidation, the rows of each snapshot (its manifest in
-- one statement), what is recorded for each version and its evaluation chain's tail.
SELECT council_evaluate_read_v1(
    CAST(:version_ids AS uuid[]), CAST(:wait AS text), CAST(:lock_timeout AS text),
    CAST(:statement_timeout AS text)
) AS document

-- evaluate_write --
-- A committer round's second call, after the decision in Python (council_evaluate_write_v1,
-- revision 0044): every record it makes, in one statement — the reasons of the not-ready
-- decisions stored once by content, each not-ready evaluation (the next row of its chain)
-- with its event, each older live consolidation superseded with its memory item and event,
-- each new consolidation with its evidence index, memory item, transition and event.
SELECT council_evaluate_write_v1(
    CAST(:actor AS text), CAST(:reasons AS jsonb), CAST(:not_ready AS jsonb), CAST(:supersede AS jsonb),
    CAST(:positive AS jsonb)
) AS document
