-- round_closed_versions --
-- The node versions a dispatch's round claimed on or made (a revision carries no claim of
-- its maker's), once every run of that round has ended (none otherwise): what is decided
-- before the next round is shown the round's stances, and what the last round sends to the
-- commit queue (a dispatch's runs are evaluated once a round).
SELECT DISTINCT touched.node_version_id
FROM agent_runs r
CROSS JOIN LATERAL (
    SELECT c.node_version_id FROM claims c WHERE c.run_id = r.id
    UNION ALL
    SELECT v.id FROM node_versions v WHERE v.created_by_run_id = r.id
) touched
WHERE r.dispatch_id = :dispatch_id AND r.round = :round
  AND NOT EXISTS (SELECT 1 FROM agent_runs o WHERE o.dispatch_id = :dispatch_id AND o.round = :round
                  AND o.status NOT IN ('succeeded', 'failed'))
ORDER BY touched.node_version_id
