-- snapshot_manifests --
-- The ids of every row a consolidation decision on each of :version_ids depends
-- on, chosen in ONE statement (one view of the data under READ COMMITTED), after
-- the node locks are held. Current states are named by their latest transition
-- row; all named rows are immutable, so reading them later changes nothing.
-- 'retraction' names the latest retraction or restore of a consolidation of this
-- version (a retracted version does not consolidate again on claims alone).
-- A control run (agent_runs.control_of, revision 0036) is never counted: its claims,
-- citations and exposures are left out, so no decision depends on them (a citation
-- made with its node, by no run, stays).
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
        FROM claims c JOIN agent_runs r ON r.id = c.run_id AND r.control_of IS NULL
        WHERE c.node_version_id = nv.id),
    'runs', (
        SELECT coalesce(json_agg(DISTINCT c.run_id), '[]'::json)
        FROM claims c JOIN agent_runs r ON r.id = c.run_id AND r.control_of IS NULL
        WHERE c.node_version_id = nv.id),
    'exposures', (
        SELECT coalesce(json_agg(e.id ORDER BY e.id), '[]'::json)
        FROM run_exposures e
        WHERE e.run_id IN (SELECT c.run_id FROM claims c JOIN agent_runs r ON r.id = c.run_id
                           WHERE c.node_version_id = nv.id AND r.control_of IS NULL)
          AND e.kind = 'stance'),
    'citations', (
        SELECT coalesce(json_agg(ci.id ORDER BY ci.id), '[]'::json)
        FROM citations ci
        WHERE ci.node_version_id = nv.id
          AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.id = ci.run_id AND r.control_of IS NOT NULL)),
    'evidence', (
        SELECT coalesce(json_agg(json_build_object('id', e.id, 'transition', (
            SELECT t.id FROM evidence_transitions t WHERE t.evidence_id = e.id
            ORDER BY t.created_at DESC, t.id DESC LIMIT 1)) ORDER BY e.id), '[]'::json)
        FROM (SELECT DISTINCT ci.evidence_id AS id
              FROM citations ci
              WHERE ci.node_version_id = nv.id
                AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.id = ci.run_id AND r.control_of IS NOT NULL)) e),
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
        WHERE c.node_version_id = nv.id AND d.mode <> 'review' AND r.control_of IS NULL
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
      AND r.control_of IS NULL)
END AS seats,
-- Under a rule set with min_effective_support: its prior and threshold, and the
-- model and provider family of every run that claimed on the version (and, under
-- exclusive_alternatives, on its rivals' heads: their support is measured too).
CASE WHEN rs.body ? 'min_effective_support' THEN json_build_object(
    'prior', rs.body -> 'error_correlation_prior',
    'min_resolved', rs.body -> 'correlation_min_resolved',
    'models', (
        SELECT coalesce(json_agg(DISTINCT jsonb_build_object('model', r.model, 'provider', r.provider)), '[]'::json)
        FROM claims c JOIN agent_runs r ON r.id = c.run_id
        WHERE r.control_of IS NULL
          AND c.node_version_id IN (
              SELECT nv.id
              UNION ALL
              SELECT h.head_version_id
              FROM council_alternative_set_v1(nv.logical_node_id) AS a(id)
              JOIN logical_nodes h ON h.id = a.id
              WHERE rs.body @> '{"exclusive_alternatives": true}' AND h.id <> nv.logical_node_id)))
END AS correlation_inputs,
-- Under a rule set with exclusive_alternatives (revision 0040): every other alternative of
-- the version's set (council_alternative_set_v1: contradicts edges and option sets, read
-- in this statement's view) with the rows its part of the decision depends on — its head
-- version and that version's latest status transition, the claims on the head (never a
-- control run's), their runs' stance exposures, the head's citations, and its node's
-- live consolidation named with its latest transition. Runs are those of the claims.
CASE WHEN rs.body @> '{"exclusive_alternatives": true}' THEN (
    SELECT coalesce(json_agg(json_build_object(
        'node', h.id,
        'version', h.head_version_id,
        'transition', (
            SELECT t.id FROM node_status_transitions t WHERE t.node_version_id = h.head_version_id
            ORDER BY t.created_at DESC, t.id DESC LIMIT 1),
        'claims', (
            SELECT coalesce(json_agg(c.id ORDER BY c.id), '[]'::json)
            FROM claims c JOIN agent_runs r ON r.id = c.run_id AND r.control_of IS NULL
            WHERE c.node_version_id = h.head_version_id),
        'exposures', (
            SELECT coalesce(json_agg(e.id ORDER BY e.id), '[]'::json)
            FROM run_exposures e
            WHERE e.kind = 'stance' AND e.run_id IN (
                SELECT c.run_id FROM claims c JOIN agent_runs r ON r.id = c.run_id
                WHERE c.node_version_id = h.head_version_id AND r.control_of IS NULL)),
        'citations', (
            SELECT coalesce(json_agg(ci.id ORDER BY ci.id), '[]'::json)
            FROM citations ci
            WHERE ci.node_version_id = h.head_version_id
              AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.id = ci.run_id AND r.control_of IS NOT NULL)),
        'consolidation', (
            SELECT json_build_array(k.id, (
                SELECT t.id FROM consolidation_transitions t WHERE t.consolidation_id = k.id
                ORDER BY t.created_at DESC, t.id DESC LIMIT 1))
            FROM consolidations k WHERE k.logical_node_id = h.id AND k.status = 'live'))
        ORDER BY h.id), '[]'::json)
    FROM council_alternative_set_v1(nv.logical_node_id) AS a(id)
    JOIN logical_nodes h ON h.id = a.id
    WHERE h.id <> nv.logical_node_id)
END AS rivals
FROM node_versions nv
JOIN threads th ON th.id = nv.thread_id
JOIN rule_sets rs ON rs.id = th.rule_set_id
WHERE nv.id = ANY(CAST(:version_ids AS uuid[]))

-- resolved_error_sums --
-- Per pair of :models, over the resolved node versions both took a stance on: how many,
-- how many times each was in error and how many times both were (council/domain/effective.py:
-- a model's latest non-abstain stance on a version is in error when supporting contradicts
-- the resolution in force; a control run's stance is not counted). Sums, not stances: a decision under min_effective_support
-- reads one row a pair however many records were resolved.
WITH res AS (
    SELECT DISTINCT ON (x.node_version_id) x.node_version_id, x.outcome
    FROM resolutions x
    ORDER BY x.node_version_id, x.created_at DESC, x.id DESC
), st AS (
    SELECT DISTINCT ON (r.model, c.node_version_id) r.model, c.node_version_id,
           CASE WHEN (c.claim_type IN ('originate', 'endorse')) = res.outcome THEN 0 ELSE 1 END AS err
    FROM res
    JOIN claims c ON c.node_version_id = res.node_version_id AND c.claim_type <> 'abstain'
    JOIN agent_runs r ON r.id = c.run_id
    WHERE r.model = ANY(CAST(:models AS text[])) AND r.control_of IS NULL
    ORDER BY r.model, c.node_version_id, c.created_at DESC, c.id DESC
)
SELECT a.model AS a, b.model AS b, count(*)::int AS n, sum(a.err)::int AS sa, sum(b.err)::int AS sb,
       sum(a.err * b.err)::int AS sab
FROM st a JOIN st b ON b.node_version_id = a.node_version_id AND b.model <> a.model
WHERE a.model < b.model
GROUP BY a.model, b.model

-- resolved_errors_of --
-- The error of each of :models on each of :version_ids that is resolved (its latest
-- non-abstain stance, as resolved_error_sums counts it): what a decision on one of those
-- versions subtracts, since a version's own resolution never measures its decision.
WITH res AS (
    SELECT DISTINCT ON (x.node_version_id) x.node_version_id, x.outcome
    FROM resolutions x
    WHERE x.node_version_id = ANY(CAST(:version_ids AS uuid[]))
    ORDER BY x.node_version_id, x.created_at DESC, x.id DESC
)
SELECT DISTINCT ON (r.model, c.node_version_id) r.model, c.node_version_id::text AS version_id,
       CASE WHEN (c.claim_type IN ('originate', 'endorse')) = res.outcome THEN 0 ELSE 1 END AS err
FROM res
JOIN claims c ON c.node_version_id = res.node_version_id AND c.claim_type <> 'abstain'
JOIN agent_runs r ON r.id = c.run_id
WHERE r.model = ANY(CAST(:models AS text[])) AND r.control_of IS NULL
ORDER BY r.model, c.node_version_id, c.created_at DESC, c.id DESC

-- snapshot_rows --
-- The rows that manifests name (used for new snapshots and for replay alike),
-- the manifests passed flattened: per kind of row, parallel arrays of the
-- manifest's number (:ords, from 1) and the row ids (and, for states, the
-- transition ids). One row per manifest, (ord, rows), in order. Every row is
-- fetched by primary key, so the cost follows the manifests, not the tables.
-- A manifest from before the retraction rule names no retraction (:retraction_named
-- false): its rows carry none, so its snapshot rebuilds exactly as it was.
WITH x AS (
    SELECT * FROM unnest(CAST(:ords AS int[]), CAST(:version_ids AS uuid[]), CAST(:node_transitions AS uuid[]),
                         CAST(:rule_set_ids AS text[]), CAST(:grouping_algorithm_ids AS text[]),
                         CAST(:retraction_named AS boolean[]), CAST(:retractions AS uuid[]))
        AS x(ord, version_id, node_transition, rule_set_id, grouping_algorithm_id, retraction_named, retraction)
), versions_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', nv.id, 'version_no', nv.version_no)) AS j
    FROM unnest(CAST(:versions_ord AS int[]), CAST(:versions_id AS uuid[])) AS u(ord, id)
    JOIN node_versions nv ON nv.id = u.id
    GROUP BY u.ord
), claims_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', c.id, 'run_id', c.run_id, 'type', c.claim_type, 'confidence', c.confidence::text)) AS j
    FROM unnest(CAST(:claims_ord AS int[]), CAST(:claims_id AS uuid[])) AS u(ord, id)
    JOIN claims c ON c.id = u.id
    GROUP BY u.ord
), runs_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', r.id, 'agent', r.agent, 'model', r.model, 'provider', r.provider, 'simulated', r.simulated,
        'parent_run_id', r.parent_run_id, 'input_fingerprint', r.input_fingerprint)) AS j
    FROM unnest(CAST(:runs_ord AS int[]), CAST(:runs_id AS uuid[])) AS u(ord, id)
    JOIN agent_runs r ON r.id = u.id
    GROUP BY u.ord
), exposures_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', e.id, 'run_id', e.run_id, 'exposed_to_run_id', e.exposed_to_run_id, 'channel', e.channel)) AS j
    FROM unnest(CAST(:exposures_ord AS int[]), CAST(:exposures_id AS uuid[])) AS u(ord, id)
    JOIN run_exposures e ON e.id = u.id
    GROUP BY u.ord
), citations_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', c.id, 'run_id', c.run_id, 'claim_id', c.claim_id, 'evidence_id', c.evidence_id,
        'role', c.role)) AS j
    FROM unnest(CAST(:citations_ord AS int[]), CAST(:citations_id AS uuid[])) AS u(ord, id)
    JOIN citations c ON c.id = u.id
    GROUP BY u.ord
), branches_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', b.id, 'kind', b.kind, 'transition', u.transition, 'to_status', t.to_status)) AS j
    FROM unnest(CAST(:branches_ord AS int[]), CAST(:branches_id AS uuid[]), CAST(:branches_transition AS uuid[]))
        AS u(ord, id, transition)
    JOIN branches b ON b.id = u.id
    LEFT JOIN branch_transitions t ON t.id = u.transition
    GROUP BY u.ord
), evidence_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', e.id, 'sha256', e.content_sha256, 'transition', u.transition,
        'to_status', t.to_status)) AS j
    FROM unnest(CAST(:evidence_ord AS int[]), CAST(:evidence_id AS uuid[]), CAST(:evidence_transition AS uuid[]))
        AS u(ord, id, transition)
    JOIN evidence e ON e.id = u.id
    LEFT JOIN evidence_transitions t ON t.id = u.transition
    GROUP BY u.ord
), pending_actions_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', p.id, 'transition', u.transition, 'to_status', t.to_status)) AS j
    FROM unnest(CAST(:pending_actions_ord AS int[]), CAST(:pending_actions_id AS uuid[]), CAST(:pending_actions_transition AS uuid[]))
        AS u(ord, id, transition)
    JOIN pending_actions p ON p.id = u.id
    LEFT JOIN pending_action_transitions t ON t.id = u.transition
    GROUP BY u.ord
)
SELECT x.ord, json_build_object(
    'version', (
        SELECT row_to_json(r) FROM (
            SELECT nv.id, nv.logical_node_id, nv.thread_id, nv.branch_id, nv.version_no,
                   nv.content_sha256, nv.initial_status
            FROM node_versions nv WHERE nv.id = x.version_id) r),
    'versions', coalesce(versions_by.j, '[]'::json),
    'node_transition', (
        SELECT row_to_json(r) FROM (
            SELECT t.id, t.to_status FROM node_status_transitions t WHERE t.id = x.node_transition) r),
    'retraction', CASE WHEN x.retraction_named THEN coalesce((
        SELECT row_to_json(r) FROM (
            SELECT t.id, t.consolidation_id, t.to_status FROM consolidation_transitions t
            WHERE t.id = x.retraction) r), '{}'::json) END,
    'branches', coalesce(branches_by.j, '[]'::json),
    'claims', coalesce(claims_by.j, '[]'::json),
    'runs', coalesce(runs_by.j, '[]'::json),
    'exposures', coalesce(exposures_by.j, '[]'::json),
    'citations', coalesce(citations_by.j, '[]'::json),
    'evidence', coalesce(evidence_by.j, '[]'::json),
    'pending_actions', coalesce(pending_actions_by.j, '[]'::json),
    'rule_set', (
        SELECT row_to_json(r) FROM (
            SELECT rs.id, rs.body, rs.body_sha256 AS sha256 FROM rule_sets rs WHERE rs.id = x.rule_set_id) r),
    'grouping', (
        SELECT row_to_json(r) FROM (
            SELECT g.id, g.params, g.params_sha256 AS sha256 FROM grouping_algorithms g
            WHERE g.id = x.grouping_algorithm_id) r)
) AS rows
FROM x
LEFT JOIN versions_by USING (ord)
LEFT JOIN claims_by USING (ord)
LEFT JOIN runs_by USING (ord)
LEFT JOIN exposures_by USING (ord)
LEFT JOIN citations_by USING (ord)
LEFT JOIN branches_by USING (ord)
LEFT JOIN evidence_by USING (ord)
LEFT JOIN pending_actions_by USING (ord)
ORDER BY x.ord

-- snapshot_rival_rows --
-- The rows the rivals of v4 manifests name (council/domain/snapshot.py, format v4), the
-- manifests passed flattened: per rival, :rival_ords (the manifest's number, from 1) and
-- :rival_nos (its place among that manifest's rivals) beside its head version, that
-- version's status transition and its live consolidation (and transition) if any; per
-- claim, exposure and citation, the (ord, no) of its rival and its id. One row per rival,
-- (ord, no, rows), in order; its runs are those of its claims, with their model. Every
-- row is read by primary key, so the cost follows what the manifests name.
WITH x AS (
    SELECT * FROM unnest(CAST(:rival_ords AS int[]), CAST(:rival_nos AS int[]), CAST(:rival_versions AS uuid[]),
                         CAST(:rival_transitions AS uuid[]), CAST(:rival_consolidations AS uuid[]),
                         CAST(:rival_consolidation_transitions AS uuid[]))
        AS x(ord, no, version_id, node_transition, consolidation, consolidation_transition)
), claims_by AS (
    SELECT u.ord, u.no, json_agg(json_build_object(
        'id', c.id, 'run_id', c.run_id, 'type', c.claim_type, 'confidence', c.confidence::text)) AS j,
        array_agg(DISTINCT c.run_id) AS runs
    FROM unnest(CAST(:claims_ord AS int[]), CAST(:claims_no AS int[]), CAST(:claims_id AS uuid[])) AS u(ord, no, id)
    JOIN claims c ON c.id = u.id
    GROUP BY u.ord, u.no
), exposures_by AS (
    SELECT u.ord, u.no, json_agg(json_build_object(
        'id', e.id, 'run_id', e.run_id, 'exposed_to_run_id', e.exposed_to_run_id, 'channel', e.channel)) AS j
    FROM unnest(CAST(:exposures_ord AS int[]), CAST(:exposures_no AS int[]), CAST(:exposures_id AS uuid[]))
        AS u(ord, no, id)
    JOIN run_exposures e ON e.id = u.id
    GROUP BY u.ord, u.no
), citations_by AS (
    SELECT u.ord, u.no, json_agg(json_build_object(
        'id', c.id, 'run_id', c.run_id, 'claim_id', c.claim_id, 'evidence_id', c.evidence_id,
        'role', c.role)) AS j
    FROM unnest(CAST(:citations_ord AS int[]), CAST(:citations_no AS int[]), CAST(:citations_id AS uuid[]))
        AS u(ord, no, id)
    JOIN citations c ON c.id = u.id
    GROUP BY u.ord, u.no
)
SELECT x.ord, x.no, json_build_object(
    'version', (
        SELECT row_to_json(r) FROM (
            SELECT nv.id, nv.logical_node_id, nv.initial_status FROM node_versions nv WHERE nv.id = x.version_id) r),
    'node_transition', (
        SELECT row_to_json(r) FROM (
            SELECT t.id, t.to_status FROM node_status_transitions t WHERE t.id = x.node_transition) r),
    'consolidation', (
        SELECT row_to_json(r) FROM (
            SELECT k.id, k.node_version_id, x.consolidation_transition AS transition, t.to_status
            FROM consolidations k
            LEFT JOIN consolidation_transitions t ON t.id = x.consolidation_transition
            WHERE k.id = x.consolidation) r),
    'claims', coalesce(claims_by.j, '[]'::json),
    'runs', (
        SELECT coalesce(json_agg(json_build_object(
            'id', r.id, 'agent', r.agent, 'model', r.model, 'provider', r.provider, 'simulated', r.simulated,
            'parent_run_id', r.parent_run_id, 'input_fingerprint', r.input_fingerprint)), '[]'::json)
        FROM agent_runs r WHERE r.id = ANY(claims_by.runs)),
    'exposures', coalesce(exposures_by.j, '[]'::json),
    'citations', coalesce(citations_by.j, '[]'::json)
) AS rows
FROM x
LEFT JOIN claims_by USING (ord, no)
LEFT JOIN exposures_by USING (ord, no)
LEFT JOIN citations_by USING (ord, no)
ORDER BY x.ord, x.no

-- quorum_versions --
-- When run :run_id of a dispatch ends, the versions whose council it sat on and whose
-- thread's rule set has min_council_answered (council/domain/quorum.py), not yet
-- consolidated: the versions claimed on by runs of the thread's dispatches (not
-- reviews) that sent the run's agent. Their decision may change with the run's status
-- even when it claimed on none of them (a failure, or a re-run that answers elsewhere).
SELECT DISTINCT c.node_version_id
FROM agent_runs me
JOIN threads th ON th.id = me.thread_id
JOIN rule_sets rs ON rs.id = th.rule_set_id AND rs.body ? 'min_council_answered'
JOIN dispatches d ON d.thread_id = me.thread_id AND d.mode <> 'review' AND me.agent = ANY(d.agents)
JOIN agent_runs r ON r.dispatch_id = d.id AND r.control_of IS NULL
JOIN claims c ON c.run_id = r.id
WHERE me.id = :run_id AND me.dispatch_id IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM consolidations k WHERE k.node_version_id = c.node_version_id AND k.status = 'live')
