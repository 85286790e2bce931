-- Each turn of a resolved thread (a thread with a resolution) with the answer it gave and
-- whether it was correct, as `council eval` reads them (docs/guide/observe.md): a turn's answer is the
-- node version it endorsed or originated with the highest confidence (ties: the greatest
-- version id as text); it is correct when the resolution in force of that version is true;
-- no answer is not correct. A turn's order within its agent is the record's turn order (an
-- imported run's turn index, else round, then creation). Review runs are not turns.
CREATE VIEW council_v_turn_answers AS
WITH resolved AS (
    SELECT DISTINCT thread_id FROM resolutions
), turns AS (
    SELECT r.id AS run_id, r.thread_id, r.agent, r.provider, r.model, r.mode, r.round,
           it.turn_index,
           row_number() OVER (PARTITION BY r.thread_id, r.agent
                              ORDER BY it.turn_index NULLS LAST, r.round, r.created_at, r.id) AS agent_turn,
           count(*) OVER (PARTITION BY r.thread_id, r.agent) AS agent_turns
    FROM agent_runs r
    JOIN resolved USING (thread_id)
    LEFT JOIN imported_turns it ON it.run_id = r.id
    WHERE r.mode <> 'review'
), answers AS (
    SELECT DISTINCT ON (c.run_id) c.run_id, c.node_version_id, c.confidence
    FROM claims c JOIN turns t ON t.run_id = c.run_id
    WHERE c.claim_type IN ('endorse', 'originate')
    ORDER BY c.run_id, c.confidence DESC, c.node_version_id::text DESC
)
SELECT t.thread_id, t.run_id, t.agent, t.provider, t.model, t.mode, t.round, t.turn_index,
       t.agent_turn, t.agent_turn = 1 AS first_turn, t.agent_turn = t.agent_turns AS last_turn,
       a.node_version_id AS answer_version_id, a.confidence,
       coalesce(v.outcome, false) AND a.node_version_id IS NOT NULL AS correct
FROM turns t
LEFT JOIN answers a ON a.run_id = t.run_id
LEFT JOIN council_v_resolutions v ON v.node_version_id = a.node_version_id AND v.in_force;

-- Each agent's first and last accuracy over the resolved threads it has a turn in
-- (`agents.NAME.first_accuracy` / `last_accuracy` of `council eval`, rounded the same way).
CREATE VIEW council_v_agent_accuracy AS
SELECT agent,
       count(DISTINCT thread_id) AS records,
       round(avg(CASE WHEN correct THEN 1.0 ELSE 0.0 END) FILTER (WHERE first_turn), 6)::float8 AS first_accuracy,
       round(avg(CASE WHEN correct THEN 1.0 ELSE 0.0 END) FILTER (WHERE last_turn), 6)::float8 AS last_accuracy
FROM council_v_turn_answers
GROUP BY agent;

GRANT SELECT ON council_v_turn_answers, council_v_agent_accuracy TO council_app, council_dashboard;
