-- snapshot_manifests --
-- The ids of every row a consolidation decision on each of :version_ids depends
-- on, chosen in ONE statement (one view of the data under READ COMMITTED), after
-- the node locks are held. Current states are named by their latest transition
-- row; all named rows are immutable, so reading them later changes nothing.
-- 'retraction' names the latest retraction or restore of a consolidation of this
-- version (a retracted version does not consolidate again on claims alone).
-- One row per version found: (version_id, manifest).
SELECT nv.id AS version_id, json_build_object(
    'version_id', nv.id,
    'thread_id', nv.thread_id,
    'versions', (
        SELECT coalesce(json_agg(x.id ORDER BY x.id), '[]'::json)
        FROM node_versions x WHERE x.logical_node_id = nv.logical_node_id),
    'node_transition', (
        SELECT t.id FROM node_status_transitions t
        WHERE t.node_version_id = nv.id
        ORDER BY t.created_at DESC, t.id DESC LIMIT 1),
    'branches', (
        SELECT coalesce(json_agg(json_build_object('id', b.id, 'transition', (
            SELECT t.id FROM branch_transitions t WHERE t.branch_id = b.id
            ORDER BY t.created_at DESC, t.id DESC LIMIT 1)) ORDER BY b.id), '[]'::json)
        FROM branches b
        WHERE b.id = nv.branch_id OR (b.thread_id = nv.thread_id AND b.kind = 'objective')),
    'claims', (
        SELECT coalesce(json_agg(c.id ORDER BY c.id), '[]'::json)
        FROM claims c WHERE c.node_version_id = nv.id),
    'runs', (
        SELECT coalesce(json_agg(DISTINCT c.run_id), '[]'::json)
        FROM claims c WHERE c.node_version_id = nv.id),
    'exposures', (
        SELECT coalesce(json_agg(e.id ORDER BY e.id), '[]'::json)
        FROM run_exposures e
        WHERE e.run_id IN (SELECT c.run_id FROM claims c WHERE c.node_version_id = nv.id)
          AND e.kind = 'stance'),
    'citations', (
        SELECT coalesce(json_agg(ci.id ORDER BY ci.id), '[]'::json)
        FROM citations ci WHERE ci.node_version_id = nv.id),
    'evidence', (
        SELECT coalesce(json_agg(json_build_object('id', e.id, 'transition', (
            SELECT t.id FROM evidence_transitions t WHERE t.evidence_id = e.id
            ORDER BY t.created_at DESC, t.id DESC LIMIT 1)) ORDER BY e.id), '[]'::json)
        FROM (SELECT DISTINCT ci.evidence_id AS id FROM citations ci WHERE ci.node_version_id = nv.id) e),
    'pending_actions', (
        SELECT coalesce(json_agg(json_build_object('id', p.id, 'transition', (
            SELECT t.id FROM pending_action_transitions t WHERE t.pending_action_id = p.id
            ORDER BY t.created_at DESC, t.id DESC LIMIT 1)) ORDER BY p.id), '[]'::json)
        FROM pending_actions p WHERE p.node_version_id = nv.id),
    'retraction', (
        SELECT t.id FROM consolidation_transitions t
        JOIN consolidations c ON c.id = t.consolidation_id
        WHERE c.node_version_id = nv.id AND t.to_status IN ('retracted', 'live')
        ORDER BY t.created_at DESC, t.id DESC LIMIT 1),
    'rule_set_id', th.rule_set_id,
    'grouping_algorithm_id', th.grouping_algorithm_id
) AS manifest,
-- Under a rule set with min_council_answered: the runs of the version's council
-- (council/domain/quorum.py), with their status now. Every dispatch (not a review)
-- with a run that claimed on the version, and every later one on the thread that
-- sent one of its agents again; their runs of those agents (never a control run).
CASE WHEN rs.body ? 'min_council_answered' THEN (
    WITH judged AS (
        SELECT DISTINCT d.id, d.created_at, d.agents
        FROM claims c
        JOIN agent_runs r ON r.id = c.run_id
        JOIN dispatches d ON d.id = r.dispatch_id
        WHERE c.node_version_id = nv.id AND d.mode <> 'review'
    ), seated AS (
        SELECT DISTINCT unnest(j.agents) AS agent FROM judged j
    ), sent AS (
        SELECT j.id FROM judged j
        UNION
        SELECT d.id FROM dispatches d
        WHERE d.thread_id = nv.thread_id AND d.mode <> 'review'
          AND d.created_at > (SELECT min(j.created_at) FROM judged j)
          AND d.agents && (SELECT array_agg(s.agent) FROM seated s)
    )
    SELECT coalesce(json_agg(json_build_object(
        'dispatch_id', r.dispatch_id, 'run_id', r.id, 'agent', r.agent, 'status', r.status)
        ORDER BY r.id), '[]'::json)
    FROM agent_runs r
    WHERE r.dispatch_id IN (SELECT s.id FROM sent s)
      AND r.agent IN (SELECT s.agent FROM seated s)
      AND r.mode <> 'control')
END AS seats,
-- Under a rule set with min_effective_support: its prior and threshold, and the
-- model and provider family of every run that claimed on the version.
CASE WHEN rs.body ? 'min_effective_support' THEN json_build_object(
    'prior', rs.body -> 'error_correlation_prior',
    'min_resolved', rs.body -> 'correlation_min_resolved',
    'models', (
        SELECT coalesce(json_agg(DISTINCT jsonb_build_object('model', r.model, 'provider', r.provider)), '[]'::json)
        FROM claims c JOIN agent_runs r ON r.id = c.run_id
        WHERE c.node_version_id = nv.id))
END AS correlation_inputs
FROM node_versions nv
JOIN threads th ON th.id = nv.thread_id
JOIN rule_sets rs ON rs.id = th.rule_set_id
WHERE nv.id = ANY(CAST(:version_ids AS uuid[]))

-- resolved_stances --
-- Every stance of :models on a resolved node version, with the resolution in force
-- (the latest), in the order the claims were made: what the error-correlation table
-- of min_effective_support is measured on (council/domain/effective.py).
SELECT r.model, c.node_version_id::text AS version_id, c.claim_type, res.outcome
FROM (
    SELECT DISTINCT ON (x.node_version_id) x.node_version_id, x.outcome
    FROM resolutions x
    ORDER BY x.node_version_id, x.created_at DESC, x.id DESC) res
JOIN claims c ON c.node_version_id = res.node_version_id
JOIN agent_runs r ON r.id = c.run_id
WHERE r.model = ANY(CAST(:models AS text[]))
ORDER BY c.created_at, c.id
