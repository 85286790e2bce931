-- round_closed_versions --
-- Whether every run of a dispatch's round has ended, and then the node versions the round
-- claimed on or made (a revision carries no claim of its maker's; none while it is open):
-- what is decided before the next round is shown the round's stances, and what the last
-- round sends to the commit queue (a dispatch's runs are evaluated once a round). A run
-- that finds its round open stops here: the run that ends it will find it closed.
WITH open_runs AS (
    SELECT 1 FROM agent_runs o
    WHERE o.dispatch_id = :dispatch_id AND o.round = :round AND o.status NOT IN ('succeeded', 'failed')
    LIMIT 1
)
SELECT NOT EXISTS (SELECT 1 FROM open_runs) AS closed,
       ARRAY(
           SELECT DISTINCT touched.node_version_id
           FROM agent_runs r
           CROSS JOIN LATERAL (
               SELECT c.node_version_id FROM claims c WHERE c.run_id = r.id
               UNION ALL
               SELECT v.id FROM node_versions v WHERE v.created_by_run_id = r.id
           ) touched
           WHERE r.dispatch_id = :dispatch_id AND r.round = :round AND NOT EXISTS (SELECT 1 FROM open_runs)
           ORDER BY touched.node_version_id
       ) AS versions
