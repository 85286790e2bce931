-- claimable_versions --
-- The node versions an output claims on (ids :ids), each with the type of the
-- claim this run (:run_id) already has on it, or NULL: the output check's one
-- query for every claim. Named SQL, not a Core select built per run: a run's
-- worker CPU is what bounds throughput.
SELECT v.*,
       (SELECT c.claim_type FROM claims c WHERE c.run_id = :run_id AND c.node_version_id = v.id LIMIT 1)
           AS claimed_by_this_run
FROM node_versions v
WHERE v.id = ANY(:ids)

-- attached_evidence --
-- Which of the evidence ids :ids are attached to thread :thread_id (one query
-- for every citation of an output).
SELECT evidence_id FROM thread_evidence WHERE thread_id = :thread_id AND evidence_id = ANY(:ids)
