-- list_evidence --
-- A thread's evidence, in the order it was added (`council evidence list`, GET
-- /threads/{id}/evidence): what each item is and whether it still stands.
SELECT e.id, te.title, e.source_kind, e.source_uri, e.media_type, e.byte_size,
       e.content_sha256, e.validity, e.validity_changed_at, te.added_by, te.created_at AS added_at
FROM thread_evidence te
JOIN evidence e ON e.id = te.evidence_id
WHERE te.thread_id = :thread_id
ORDER BY te.created_at, e.id

-- list_nodes --
-- A thread's logical nodes at their head version, oldest first (`council node list`,
-- GET /threads/{id}/nodes): the status, the head's claims by type (a control run's are
-- not the council's: never counted) and whether a live consolidation stands for the node.
SELECT ln.id AS logical_node_id, v.id AS version_id, v.version_no, v.branch_id, b.kind AS branch_kind,
       s.status, v.content, ln.created_at,
       count(c.id) FILTER (WHERE c.claim_type IN ('originate', 'endorse')) AS support_claims,
       count(c.id) FILTER (WHERE c.claim_type = 'dispute') AS dispute_claims,
       count(c.id) FILTER (WHERE c.claim_type = 'abstain') AS abstain_claims,
       (SELECT k.id FROM consolidations k WHERE k.logical_node_id = ln.id AND k.status = 'live') AS live_consolidation_id,
       (SELECT k.node_version_id FROM consolidations k WHERE k.logical_node_id = ln.id AND k.status = 'live')
         AS live_consolidation_version_id
FROM logical_nodes ln
JOIN node_versions v ON v.id = ln.head_version_id
JOIN node_version_states s ON s.id = v.id
JOIN branches b ON b.id = v.branch_id
LEFT JOIN (claims c JOIN agent_runs cr ON cr.id = c.run_id AND cr.control_of IS NULL)
       ON c.node_version_id = v.id
WHERE ln.thread_id = :thread_id
GROUP BY ln.id, v.id, b.kind, s.status
ORDER BY ln.created_at, ln.id

-- list_runs --
-- Runs, the newest `limit` in creation order (`council run list`, GET /runs), each
-- filter applied only when given: thread, status, agent, dispatch.
SELECT * FROM (
    SELECT id, thread_id, dispatch_id, parent_run_id, agent, model, provider, simulated, round, mode,
           proposal_id, status, attempt, request_sha256, error, created_at, started_at, finished_at,
           (usage ->> 'prompt_tokens')::bigint AS prompt_tokens,
           (usage ->> 'completion_tokens')::bigint AS completion_tokens,
           cost_usd::float8 AS cost_usd, control_of
    FROM agent_runs
    WHERE (CAST(:thread_id AS uuid) IS NULL OR thread_id = :thread_id)
      AND (CAST(:status AS text) IS NULL OR status = :status)
      AND (CAST(:agent AS text) IS NULL OR agent = :agent)
      AND (CAST(:dispatch_id AS uuid) IS NULL OR dispatch_id = :dispatch_id)
    ORDER BY created_at DESC, id DESC
    LIMIT :limit + 1
) newest
ORDER BY created_at, id

-- list_dispatches --
-- Dispatches, oldest first, of a thread (`council dispatch list`, GET
-- /threads/{id}/dispatches) or one by id (`dispatch show`), with their runs counted
-- by status and their cost.
SELECT d.id, d.thread_id, d.mode, d.agents, d.rounds, d.proposal_id, d.created_at, d.controls,
       count(r.id) AS run_count,
       count(r.id) FILTER (WHERE r.status = 'succeeded') AS succeeded,
       count(r.id) FILTER (WHERE r.status = 'failed') AS failed,
       count(r.id) FILTER (WHERE r.status NOT IN ('succeeded', 'failed')) AS unfinished,
       coalesce(sum(r.cost_usd), 0)::float8 AS cost_usd,
       coalesce(sum((r.usage ->> 'prompt_tokens')::bigint), 0) AS prompt_tokens,
       coalesce(sum((r.usage ->> 'completion_tokens')::bigint), 0) AS completion_tokens,
       count(r.id) FILTER (WHERE r.cost_usd IS NULL AND (r.usage ? 'prompt_tokens'
                                                          OR r.usage ? 'completion_tokens')) AS unpriced
FROM dispatches d
LEFT JOIN agent_runs r ON r.dispatch_id = d.id
WHERE (CAST(:thread_id AS uuid) IS NULL OR d.thread_id = :thread_id)
  AND (CAST(:dispatch_id AS uuid) IS NULL OR d.id = :dispatch_id)
GROUP BY d.id
ORDER BY d.created_at, d.id

-- list_proposals --
-- Retraction proposals, oldest first (`council proposal list`, GET /proposals), each
-- filter applied only when given: thread, status; with the version under review and
-- the votes cast so far.
SELECT p.id, p.thread_id, p.consolidation_id, k.node_version_id, p.reason, p.status, p.opened_by,
       p.created_at, p.status_changed_at,
       (SELECT count(*) FROM retraction_votes v WHERE v.proposal_id = p.id) AS votes
FROM retraction_proposals p
JOIN consolidations k ON k.id = p.consolidation_id
WHERE (CAST(:thread_id AS uuid) IS NULL OR p.thread_id = :thread_id)
  AND (CAST(:status AS text) IS NULL OR p.status = :status)
ORDER BY p.created_at, p.id

-- list_consolidations --
-- Consolidations, the newest `limit` in creation order (`council consolidation list`, GET
-- /consolidations), each filter applied only when given: thread, status, logical node;
-- with the consolidated version's content and its memory item's status.
SELECT * FROM (
    SELECT k.id, k.thread_id, k.logical_node_id, k.node_version_id, v.content, k.rule_set_id, k.status,
           m.status AS memory_status, k.snapshot_sha256, k.created_at, k.status_changed_at
    FROM consolidations k
    JOIN node_versions v ON v.id = k.node_version_id
    LEFT JOIN memory_items m ON m.consolidation_id = k.id
    WHERE (CAST(:thread_id AS uuid) IS NULL OR k.thread_id = :thread_id)
      AND (CAST(:status AS text) IS NULL OR k.status = :status)
      AND (CAST(:logical_node_id AS uuid) IS NULL OR k.logical_node_id = :logical_node_id)
    ORDER BY k.created_at DESC, k.id DESC
    LIMIT :limit + 1
) newest
ORDER BY created_at, id

-- list_claims --
-- Claims, the newest `limit` in creation order (`council claim list`, GET /claims), each
-- filter applied only when given: run, node version, thread, claim type; with the claiming
-- run's agent, round and whether it is a control run (never counted as support).
SELECT * FROM (
    SELECT c.id, c.run_id, r.thread_id, r.agent, r.round, r.control_of IS NOT NULL AS control,
           c.node_version_id, c.claim_type, c.confidence::float8 AS confidence, c.rationale, c.created_at
    FROM claims c
    JOIN agent_runs r ON r.id = c.run_id
    WHERE (CAST(:run_id AS uuid) IS NULL OR c.run_id = :run_id)
      AND (CAST(:node_version_id AS uuid) IS NULL OR c.node_version_id = :node_version_id)
      AND (CAST(:thread_id AS uuid) IS NULL OR r.thread_id = :thread_id)
      AND (CAST(:claim_type AS text) IS NULL OR c.claim_type = :claim_type)
    ORDER BY c.created_at DESC, c.id DESC
    LIMIT :limit + 1
) newest
ORDER BY created_at, id

-- list_actions --
-- Pending actions, the newest `limit` in creation order (`council action list`, GET
-- /actions), each filter applied only when given: thread, status, node version.
SELECT * FROM (
    SELECT a.id, a.thread_id, a.branch_id, a.node_version_id, a.description, a.acceptance_condition,
           a.status, a.created_by_run_id, a.created_at, a.status_changed_at
    FROM pending_actions a
    WHERE (CAST(:thread_id AS uuid) IS NULL OR a.thread_id = :thread_id)
      AND (CAST(:status AS text) IS NULL OR a.status = :status)
      AND (CAST(:node_version_id AS uuid) IS NULL OR a.node_version_id = :node_version_id)
    ORDER BY a.created_at DESC, a.id DESC
    LIMIT :limit + 1
) newest
ORDER BY created_at, id
