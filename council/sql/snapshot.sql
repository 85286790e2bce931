-- snapshot_manifest --
-- The ids of every row a consolidation decision on one node version depends on,
-- chosen in ONE statement (one view of the data under READ COMMITTED), after the
-- node lock is held. Current states are named by their latest transition row;
-- all named rows are immutable, so reading them later changes nothing.
WITH v AS (
    SELECT nv.id, nv.logical_node_id, nv.thread_id, nv.branch_id
    FROM node_versions nv
    WHERE nv.id = :version_id
), cl AS (
    SELECT c.id, c.run_id FROM claims c WHERE c.node_version_id = :version_id
), br AS (
    SELECT b.id FROM branches b JOIN v ON b.id = v.branch_id
    UNION
    SELECT b.id FROM branches b JOIN v ON b.thread_id = v.thread_id WHERE b.kind = 'objective'
), ci AS (
    SELECT c.id, c.evidence_id FROM citations c WHERE c.node_version_id = :version_id
)
SELECT json_build_object(
    'version_id', (SELECT id FROM v),
    'thread_id', (SELECT thread_id FROM v),
    'versions', (
        SELECT coalesce(json_agg(x.id ORDER BY x.id), '[]'::json)
        FROM node_versions x JOIN v ON x.logical_node_id = v.logical_node_id),
    'node_transition', (
        SELECT t.id FROM node_status_transitions t
        WHERE t.node_version_id = :version_id
        ORDER BY t.created_at DESC, t.id DESC LIMIT 1),
    'branches', (
        SELECT coalesce(json_agg(json_build_object('id', br.id, 'transition', (
            SELECT t.id FROM branch_transitions t WHERE t.branch_id = br.id
            ORDER BY t.created_at DESC, t.id DESC LIMIT 1)) ORDER BY br.id), '[]'::json)
        FROM br),
    'claims', (SELECT coalesce(json_agg(cl.id ORDER BY cl.id), '[]'::json) FROM cl),
    'runs', (SELECT coalesce(json_agg(DISTINCT cl.run_id), '[]'::json) FROM cl),
    'exposures', (
        SELECT coalesce(json_agg(e.id ORDER BY e.id), '[]'::json)
        FROM run_exposures e
        WHERE e.run_id IN (SELECT run_id FROM cl) AND e.kind = 'stance'),
    'citations', (SELECT coalesce(json_agg(ci.id ORDER BY ci.id), '[]'::json) FROM ci),
    'evidence', (
        SELECT coalesce(json_agg(json_build_object('id', e.id, 'transition', (
            SELECT t.id FROM evidence_transitions t WHERE t.evidence_id = e.id
            ORDER BY t.created_at DESC, t.id DESC LIMIT 1)) ORDER BY e.id), '[]'::json)
        FROM (SELECT DISTINCT evidence_id AS id FROM ci) e),
    'pending_actions', (
        SELECT coalesce(json_agg(json_build_object('id', p.id, 'transition', (
            SELECT t.id FROM pending_action_transitions t WHERE t.pending_action_id = p.id
            ORDER BY t.created_at DESC, t.id DESC LIMIT 1)) ORDER BY p.id), '[]'::json)
        FROM pending_actions p WHERE p.node_version_id = :version_id),
    'rule_set_id', (SELECT th.rule_set_id FROM threads th JOIN v ON th.id = v.thread_id),
    'grouping_algorithm_id', (SELECT th.grouping_algorithm_id FROM threads th JOIN v ON th.id = v.thread_id)
) AS manifest

-- snapshot_rows --
-- The rows a manifest names (used for a new snapshot and for replay alike).
WITH m AS (SELECT CAST(:manifest AS jsonb) AS m),
ids AS (
    SELECT key, (jsonb_array_elements_text(m -> key))::uuid AS id
    FROM m, unnest(ARRAY['versions', 'claims', 'runs', 'exposures', 'citations']) AS key
),
keyed AS (
    SELECT key, (x ->> 'id')::uuid AS id, (x ->> 'transition')::uuid AS transition
    FROM m, unnest(ARRAY['branches', 'evidence', 'pending_actions']) AS key,
         jsonb_array_elements(m -> key) AS x
)
SELECT json_build_object(
    'version', (
        SELECT row_to_json(r) FROM (
            SELECT nv.id, nv.logical_node_id, nv.thread_id, nv.branch_id, nv.version_no,
                   nv.content_sha256, nv.initial_status
            FROM node_versions nv, m WHERE nv.id = (m.m ->> 'version_id')::uuid) r),
    'versions', (
        SELECT coalesce(json_agg(json_build_object('id', nv.id, 'version_no', nv.version_no)), '[]'::json)
        FROM node_versions nv WHERE nv.id IN (SELECT id FROM ids WHERE key = 'versions')),
    'node_transition', (
        SELECT row_to_json(r) FROM (
            SELECT t.id, t.to_status FROM node_status_transitions t, m
            WHERE t.id = (m.m ->> 'node_transition')::uuid) r),
    'branches', (
        SELECT coalesce(json_agg(json_build_object(
            'id', b.id, 'kind', b.kind, 'transition', k.transition, 'to_status', t.to_status)), '[]'::json)
        FROM keyed k JOIN branches b ON b.id = k.id
        LEFT JOIN branch_transitions t ON t.id = k.transition
        WHERE k.key = 'branches'),
    'claims', (
        SELECT coalesce(json_agg(json_build_object(
            'id', c.id, 'run_id', c.run_id, 'type', c.claim_type, 'confidence', c.confidence::text)), '[]'::json)
        FROM claims c WHERE c.id IN (SELECT id FROM ids WHERE key = 'claims')),
    'runs', (
        SELECT coalesce(json_agg(json_build_object(
            'id', r.id, 'agent', r.agent, 'provider', r.provider, 'simulated', r.simulated,
            'parent_run_id', r.parent_run_id, 'input_fingerprint', r.input_fingerprint)), '[]'::json)
        FROM agent_runs r WHERE r.id IN (SELECT id FROM ids WHERE key = 'runs')),
    'exposures', (
        SELECT coalesce(json_agg(json_build_object(
            'id', e.id, 'run_id', e.run_id, 'exposed_to_run_id', e.exposed_to_run_id,
            'channel', e.channel)), '[]'::json)
        FROM run_exposures e WHERE e.id IN (SELECT id FROM ids WHERE key = 'exposures')),
    'citations', (
        SELECT coalesce(json_agg(json_build_object(
            'id', c.id, 'run_id', c.run_id, 'claim_id', c.claim_id, 'evidence_id', c.evidence_id,
            'role', c.role)), '[]'::json)
        FROM citations c WHERE c.id IN (SELECT id FROM ids WHERE key = 'citations')),
    'evidence', (
        SELECT coalesce(json_agg(json_build_object(
            'id', e.id, 'sha256', e.content_sha256, 'transition', k.transition,
            'to_status', t.to_status)), '[]'::json)
        FROM keyed k JOIN evidence e ON e.id = k.id
        LEFT JOIN evidence_transitions t ON t.id = k.transition
        WHERE k.key = 'evidence'),
    'pending_actions', (
        SELECT coalesce(json_agg(json_build_object(
            'id', p.id, 'transition', k.transition, 'to_status', t.to_status)), '[]'::json)
        FROM keyed k JOIN pending_actions p ON p.id = k.id
        LEFT JOIN pending_action_transitions t ON t.id = k.transition
        WHERE k.key = 'pending_actions'),
    'rule_set', (
        SELECT row_to_json(r) FROM (
            SELECT rs.id, rs.body, rs.body_sha256 AS sha256 FROM rule_sets rs, m
            WHERE rs.id = m.m ->> 'rule_set_id') r),
    'grouping', (
        SELECT row_to_json(r) FROM (
            SELECT g.id, g.params, g.params_sha256 AS sha256 FROM grouping_algorithms g, m
            WHERE g.id = m.m ->> 'grouping_algorithm_id') r)
) AS rows
