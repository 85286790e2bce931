-- stored_decisions --
-- Every stored decision a counterfactual replay re-decides: consolidations (their
-- decision was to consolidate) and recorded not-ready evaluations, optionally of
-- one thread and recorded at or after :since. Ordered by recording time and id
-- only so the report reads the same each time; the decisions do not depend on it.
SELECT d.id, d.kind, d.thread_id, d.node_version_id, d.outcome, d.snapshot_sha256, d.created_at
FROM (
    SELECT c.id, 'consolidation' AS kind, c.thread_id, c.node_version_id,
           'consolidate' AS outcome, c.snapshot_sha256, c.created_at
    FROM consolidations c
    UNION ALL
    SELECT e.id, 'evaluation', e.thread_id, e.node_version_id, e.outcome, e.snapshot_sha256, e.created_at
    FROM council_v_evaluations e
) d
WHERE (CAST(:thread_id AS uuid) IS NULL OR d.thread_id = CAST(:thread_id AS uuid))
  AND (CAST(:since AS timestamptz) IS NULL OR d.created_at >= CAST(:since AS timestamptz))
ORDER BY d.created_at, d.id
