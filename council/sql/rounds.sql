-- round_closed_versions --
-- The node versions a dispatch's round claimed on, when every run of that round has ended
-- (none otherwise): what is decided before the next round is shown the round's stances.
SELECT DISTINCT c.node_version_id
FROM agent_runs r
JOIN claims c ON c.run_id = r.id
WHERE r.dispatch_id = :dispatch_id AND r.round = :round
  AND NOT EXISTS (SELECT 1 FROM agent_runs o WHERE o.dispatch_id = :dispatch_id AND o.round = :round
                  AND o.status NOT IN ('succeeded', 'failed'))
ORDER BY c.node_version_id
