-- Same columns as 0009's view; a run is covered when it has a trace (an agent CLI) or any
-- opened evidence (an API run given evidence inline), so its citations are set beside them.
CREATE OR REPLACE VIEW council_v_opened_evidence AS
WITH traced AS (
    SELECT run_id FROM run_traces
    UNION
    SELECT run_id FROM run_opened_evidence
), opened AS (
    SELECT run_id, evidence_id, min(created_at) AS opened_at
    FROM run_opened_evidence GROUP BY run_id, evidence_id
), cited AS (
    SELECT c.run_id, c.evidence_id, count(*) AS citations
    FROM citations c JOIN traced USING (run_id) GROUP BY c.run_id, c.evidence_id
)
SELECT r.thread_id, r.id AS run_id, r.agent, (r.executor ->> 'runtime') AS runtime,
       coalesce(o.evidence_id, c.evidence_id) AS evidence_id,
       (o.evidence_id IS NOT NULL) AS opened, (c.evidence_id IS NOT NULL) AS cited,
       o.opened_at, coalesce(c.citations, 0) AS citations
FROM opened o
FULL JOIN cited c ON c.run_id = o.run_id AND c.evidence_id = o.evidence_id
JOIN agent_runs r ON r.id = coalesce(o.run_id, c.run_id);
