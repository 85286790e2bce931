-- unevaluated_versions --
-- For the sweep: open or tentative head versions holding claims that no
-- evaluation or consolidation of them saw (claims are append-only and every
-- snapshot holds all of its version's claims, so "saw fewer than there are" is
-- exact; migration 0008), whose newest claim is older than :settle_s (a fresh
-- claim's evaluation is normally already on its way). Oldest first, at most
-- :limit. Each head costs index lookups only: node_version_states_status_idx,
-- claims_node_version_idx and, for the claims an evaluation saw, its chain's
-- tail (council_evaluation_tail_v2, revisions 0014, 0017; the tail saw the most: it
-- was decided last under the node lock, revision 0013)
-- or a row from before 0013 (consolidation_evaluations_legacy_sha256_key); a
-- consolidation's snapshot is read only for a head that was consolidated and
-- is open again (retracted). A control run's claims are counted by no snapshot
-- (revision 0036), so not here either. A head claimed on in a dispatch's round that is
-- still open waits for the round: the run that closes it has the round's versions
-- evaluated (council/services/run_followups.py), so its claims are not unfinished yet —
-- unless the run is a review's, or its thread's rule set reads a quorum
-- (min_council_answered), whose runs are evaluated one by one.
WITH unseen AS MATERIALIZED (
    SELECT s.id
    FROM node_version_states s
    JOIN node_versions nv ON nv.id = s.id
    JOIN logical_nodes ln ON ln.id = nv.logical_node_id AND ln.head_version_id = nv.id
    CROSS JOIN LATERAL (SELECT count(*) AS n FROM claims c JOIN agent_runs r ON r.id = c.run_id
                        WHERE c.node_version_id = s.id AND r.control_of IS NULL) k
    WHERE s.status IN ('open', 'tentative')
      AND k.n > coalesce((SELECT e.claims_seen FROM council_evaluation_tail_v2(s.id) e), 0)
      AND k.n > coalesce((SELECT max(e.claims_seen) FROM consolidation_evaluations e
                          WHERE e.node_version_id = s.id AND e.seq IS NULL), 0)
      AND k.n > coalesce((SELECT max(jsonb_array_length(c.snapshot -> 'claims')) FROM consolidations c
                          WHERE c.node_version_id = s.id), 0)
      AND NOT EXISTS (
          SELECT 1 FROM claims c JOIN agent_runs r ON r.id = c.run_id
          WHERE c.node_version_id = s.id AND r.dispatch_id IS NOT NULL AND r.mode <> 'review'
            AND EXISTS (SELECT 1 FROM agent_runs o WHERE o.dispatch_id = r.dispatch_id AND o.round = r.round
                        AND o.status NOT IN ('succeeded', 'failed'))
            AND NOT EXISTS (SELECT 1 FROM threads th JOIN rule_sets rs ON rs.id = th.rule_set_id
                            WHERE th.id = r.thread_id AND rs.body ? 'min_council_answered'))
)
SELECT u.id, newest.at AS newest_claim_at
FROM unseen u
CROSS JOIN LATERAL (SELECT max(c.created_at) AS at FROM claims c WHERE c.node_version_id = u.id) newest
WHERE newest.at < clock_timestamp() - make_interval(secs => :settle_s)
ORDER BY newest.at, u.id
LIMIT :limit

-- stalled_dispatches --
-- For the sweep: dispatches of several rounds whose latest round ended, all of
-- it, at least :settle_s ago, while rounds remain — the next round was never
-- created (the database went away just after the round's last run committed).
-- Creating a round is idempotent (next_round), so finding one twice is harmless.
SELECT d.id AS dispatch_id, r.round + 1 AS next_round, d.mode
FROM dispatches d
CROSS JOIN LATERAL (
    SELECT max(a.round) AS round, max(a.finished_at) AS finished_at,
           bool_and(a.status IN ('succeeded', 'failed')) AS ended
    FROM agent_runs a WHERE a.dispatch_id = d.id
) r
WHERE d.rounds > 1 AND r.ended AND r.round < d.rounds
  AND r.finished_at < clock_timestamp() - make_interval(secs => :settle_s)
ORDER BY r.finished_at, d.id
LIMIT :limit

-- reviewed_open_proposals --
-- For the sweep: open retraction proposals whose review dispatch ended, all of
-- it, at least :settle_s ago — the last review run's adjudication never ran
-- (or found the votes short: adjudicating again is idempotent and writes
-- nothing while it stays pending).
SELECT p.id
FROM retraction_proposals p
JOIN dispatches d ON d.proposal_id = p.id AND d.mode = 'review'
JOIN agent_runs a ON a.dispatch_id = d.id
WHERE p.status = 'open'
GROUP BY p.id
HAVING bool_and(a.status IN ('succeeded', 'failed'))
   AND max(a.finished_at) < clock_timestamp() - make_interval(secs => :settle_s)
ORDER BY max(a.finished_at), p.id
LIMIT :limit
