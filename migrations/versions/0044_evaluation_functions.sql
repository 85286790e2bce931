-- Council ledger, revision 0044: the evaluation as one read call, the decision in Python,
-- one write call (issue 46, item 2).
--
-- A committer transaction sent Postgres up to ten statements for one round of a batch:
-- commit_begin (timeouts and node locks), commit_live (live consolidations and shared
-- evidence locks), snapshot_manifests and the two correlation reads, snapshot_rows and
-- snapshot_rival_rows, commit_decided (idempotency), evaluation_tails, evaluation_reasons,
-- then commit_not_ready, the supersession statements and commit_write. Now:
--   council_evaluate_read_v1   the locks, in the order and mode commit_begin and commit_live
--                              took them, then everything the decision reads, as one
--                              document: the versions, each node's live consolidation, the
--                              rows each snapshot is built from, what was already recorded
--                              for each version (idempotency) and its evaluation chain's tail;
--   (the decision in Python: council.domain.rules.evaluate, one implementation)
--   council_evaluate_write_v1  every record the round writes: not-ready evaluations with
--                              their reasons stored once by content, the supersession of an
--                              older live consolidation with its memory item and event, the
--                              new consolidations with evidence index, memory item,
--                              status transition and event.
-- The snapshot queries become functions (council_snapshot_manifests_v1,
-- council_snapshot_rows_v1, council_snapshot_rival_rows_v1, council_resolved_error_sums_v1,
-- council_resolved_errors_of_v1), their bodies the named queries' of council/sql/snapshot.sql
-- unchanged but for taking the manifests as JSON: the committer's read and replay's named
-- queries run one implementation, so a snapshot hashes alike either way.
-- Like every council_*_vN function, each is never edited in place; they run as the invoker
-- (every trigger and check applies to their writes as to the statements they replace).

-- The ids of every row a decision on each of p_version_ids depends on, in ONE statement
-- (called by one statement, a STABLE function reads with its caller's snapshot): the
-- former snapshot_manifests query, whose comments say what each part is.
-- One row per version found: (version_id, manifest, seats, correlation_inputs, rivals).
CREATE FUNCTION council_snapshot_manifests_v1(p_version_ids uuid[])
RETURNS TABLE (version_id uuid, manifest json, seats json, correlation_inputs json, rivals json)
LANGUAGE sql STABLE
AS $$
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
WHERE nv.id = ANY(p_version_ids)
$$;
COMMENT ON FUNCTION council_snapshot_manifests_v1(uuid[]) IS
    'The ids of every row a consolidation decision on each version depends on, read in one statement (revision 0044)';

-- Per pair of p_models, over the resolved versions both took a stance on: how many, and
-- how many times each and both were in error (the former resolved_error_sums query).
CREATE FUNCTION council_resolved_error_sums_v1(p_models text[])
RETURNS TABLE (a text, b text, n integer, sa integer, sb integer, sab integer)
LANGUAGE sql STABLE
AS $$
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
    WHERE r.model = ANY(p_models) AND r.control_of IS NULL
    ORDER BY r.model, c.node_version_id, c.created_at DESC, c.id DESC
)
SELECT a.model AS a, b.model AS b, count(*)::int AS n, sum(a.err)::int AS sa, sum(b.err)::int AS sb,
       sum(a.err * b.err)::int AS sab
FROM st a JOIN st b ON b.node_version_id = a.node_version_id AND b.model <> a.model
WHERE a.model < b.model
GROUP BY a.model, b.model
$$;
COMMENT ON FUNCTION council_resolved_error_sums_v1(text[]) IS
    'Error sums per pair of models over resolved versions, for the effective-support rule (revision 0044)';

-- The error of each of p_models on each of p_version_ids that is resolved (the former
-- resolved_errors_of query): what a decision on that version subtracts from the sums.
CREATE FUNCTION council_resolved_errors_of_v1(p_models text[], p_version_ids uuid[])
RETURNS TABLE (model text, version_id text, err integer)
LANGUAGE sql STABLE
AS $$
WITH res AS (
    SELECT DISTINCT ON (x.node_version_id) x.node_version_id, x.outcome
    FROM resolutions x
    WHERE x.node_version_id = ANY(p_version_ids)
    ORDER BY x.node_version_id, x.created_at DESC, x.id DESC
)
SELECT DISTINCT ON (r.model, c.node_version_id) r.model, c.node_version_id::text AS version_id,
       CASE WHEN (c.claim_type IN ('originate', 'endorse')) = res.outcome THEN 0 ELSE 1 END AS err
FROM res
JOIN claims c ON c.node_version_id = res.node_version_id AND c.claim_type <> 'abstain'
JOIN agent_runs r ON r.id = c.run_id
WHERE r.model = ANY(p_models) AND r.control_of IS NULL
ORDER BY r.model, c.node_version_id, c.created_at DESC, c.id DESC
$$;
COMMENT ON FUNCTION council_resolved_errors_of_v1(text[], uuid[]) IS
    'Each model''s error on each resolved version of a decision, left out of its own measure (revision 0044)';

-- The rows that manifests name (for new snapshots and replay alike; the former snapshot_rows
-- query): p_manifests is a JSON array of manifests (council.domain.manifests.Manifest), each
-- numbered by its place from 1. One row per manifest, (ord, rows), in order. Every row is
-- fetched by primary key, so the cost follows the manifests, not the tables. A manifest from
-- before the retraction rule has no 'retraction' key: its rows carry none, so its snapshot
-- rebuilds exactly as it was.
CREATE FUNCTION council_snapshot_rows_v1(p_manifests jsonb)
RETURNS TABLE (ord integer, rows json)
LANGUAGE sql STABLE
AS $$
WITH m AS (
    SELECT CAST(a.n AS integer) AS ord, a.value AS m
    FROM jsonb_array_elements(p_manifests) WITH ORDINALITY AS a(value, n)
), x AS (
    SELECT m.ord, CAST(m.m ->> 'version_id' AS uuid) AS version_id,
           CAST(m.m ->> 'node_transition' AS uuid) AS node_transition,
           m.m ->> 'rule_set_id' AS rule_set_id, m.m ->> 'grouping_algorithm_id' AS grouping_algorithm_id,
           (m.m -> 'retraction') IS NOT NULL AS retraction_named, CAST(m.m ->> 'retraction' AS uuid) AS retraction
    FROM m
), versions_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', nv.id, 'version_no', nv.version_no)) AS j
    FROM (SELECT m.ord, CAST(i.id AS uuid) AS id
          FROM m, jsonb_array_elements_text(m.m -> 'versions') WITH ORDINALITY AS i(id, n)) AS u
    JOIN node_versions nv ON nv.id = u.id
    GROUP BY u.ord
), claims_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', c.id, 'run_id', c.run_id, 'type', c.claim_type, 'confidence', c.confidence::text)) AS j
    FROM (SELECT m.ord, CAST(i.id AS uuid) AS id
          FROM m, jsonb_array_elements_text(m.m -> 'claims') WITH ORDINALITY AS i(id, n)) AS u
    JOIN claims c ON c.id = u.id
    GROUP BY u.ord
), runs_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', r.id, 'agent', r.agent, 'model', r.model, 'provider', r.provider, 'simulated', r.simulated,
        'parent_run_id', r.parent_run_id, 'input_fingerprint', r.input_fingerprint)) AS j
    FROM (SELECT m.ord, CAST(i.id AS uuid) AS id
          FROM m, jsonb_array_elements_text(m.m -> 'runs') WITH ORDINALITY AS i(id, n)) AS u
    JOIN agent_runs r ON r.id = u.id
    GROUP BY u.ord
), exposures_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', e.id, 'run_id', e.run_id, 'exposed_to_run_id', e.exposed_to_run_id, 'channel', e.channel)) AS j
    FROM (SELECT m.ord, CAST(i.id AS uuid) AS id
          FROM m, jsonb_array_elements_text(m.m -> 'exposures') WITH ORDINALITY AS i(id, n)) AS u
    JOIN run_exposures e ON e.id = u.id
    GROUP BY u.ord
), citations_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', c.id, 'run_id', c.run_id, 'claim_id', c.claim_id, 'evidence_id', c.evidence_id,
        'role', c.role)) AS j
    FROM (SELECT m.ord, CAST(i.id AS uuid) AS id
          FROM m, jsonb_array_elements_text(m.m -> 'citations') WITH ORDINALITY AS i(id, n)) AS u
    JOIN citations c ON c.id = u.id
    GROUP BY u.ord
), branches_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', b.id, 'kind', b.kind, 'transition', u.transition, 'to_status', t.to_status)) AS j
    FROM (SELECT m.ord, i.id, i.transition
          FROM m, jsonb_to_recordset(m.m -> 'branches') AS i(id uuid, transition uuid)) AS u
    JOIN branches b ON b.id = u.id
    LEFT JOIN branch_transitions t ON t.id = u.transition
    GROUP BY u.ord
), evidence_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', e.id, 'sha256', e.content_sha256, 'transition', u.transition,
        'to_status', t.to_status)) AS j
    FROM (SELECT m.ord, i.id, i.transition
          FROM m, jsonb_to_recordset(m.m -> 'evidence') AS i(id uuid, transition uuid)) AS u
    JOIN evidence e ON e.id = u.id
    LEFT JOIN evidence_transitions t ON t.id = u.transition
    GROUP BY u.ord
), pending_actions_by AS (
    SELECT u.ord, json_agg(json_build_object(
        'id', p.id, 'transition', u.transition, 'to_status', t.to_status)) AS j
    FROM (SELECT m.ord, i.id, i.transition
          FROM m, jsonb_to_recordset(m.m -> 'pending_actions') AS i(id uuid, transition uuid)) AS u
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
$$;
COMMENT ON FUNCTION council_snapshot_rows_v1(jsonb) IS
    'The rows each consolidation manifest names, one JSON document per manifest (revision 0044)';

-- The rows the rivals of v4 manifests name (council/domain/snapshot.py, format v4; the former
-- snapshot_rival_rows query): p_rivals is a JSON array of {ord, rivals}, a manifest's number
-- (from 1) and the rivals it names (council.domain.snapshot_shapes.RivalIds), each numbered
-- by its place from 1. One row per rival, (ord, no, rows), in order; its runs are those of
-- its claims, with their model. Every row is read by primary key.
CREATE FUNCTION council_snapshot_rival_rows_v1(p_rivals jsonb)
RETURNS TABLE (ord integer, no integer, rows json)
LANGUAGE sql STABLE
AS $$
WITH r AS (
    SELECT CAST(o.value ->> 'ord' AS integer) AS ord, CAST(i.n AS integer) AS no, i.value AS r
    FROM jsonb_array_elements(p_rivals) AS o(value),
         jsonb_array_elements(o.value -> 'rivals') WITH ORDINALITY AS i(value, n)
), x AS (
    SELECT r.ord, r.no, CAST(r.r ->> 'version' AS uuid) AS version_id,
           CAST(r.r ->> 'transition' AS uuid) AS node_transition,
           CAST(CASE WHEN jsonb_typeof(r.r -> 'consolidation') = 'array' THEN r.r -> 'consolidation' ->> 0 END AS uuid)
               AS consolidation,
           CAST(CASE WHEN jsonb_typeof(r.r -> 'consolidation') = 'array' THEN r.r -> 'consolidation' ->> 1 END AS uuid)
               AS consolidation_transition
    FROM r
), claims_by AS (
    SELECT u.ord, u.no, json_agg(json_build_object(
        'id', c.id, 'run_id', c.run_id, 'type', c.claim_type, 'confidence', c.confidence::text)) AS j,
        array_agg(DISTINCT c.run_id) AS runs
    FROM (SELECT r.ord, r.no, CAST(i.id AS uuid) AS id
          FROM r, jsonb_array_elements_text(r.r -> 'claims') WITH ORDINALITY AS i(id, n)) AS u
    JOIN claims c ON c.id = u.id
    GROUP BY u.ord, u.no
), exposures_by AS (
    SELECT u.ord, u.no, json_agg(json_build_object(
        'id', e.id, 'run_id', e.run_id, 'exposed_to_run_id', e.exposed_to_run_id, 'channel', e.channel)) AS j
    FROM (SELECT r.ord, r.no, CAST(i.id AS uuid) AS id
          FROM r, jsonb_array_elements_text(r.r -> 'exposures') WITH ORDINALITY AS i(id, n)) AS u
    JOIN run_exposures e ON e.id = u.id
    GROUP BY u.ord, u.no
), citations_by AS (
    SELECT u.ord, u.no, json_agg(json_build_object(
        'id', c.id, 'run_id', c.run_id, 'claim_id', c.claim_id, 'evidence_id', c.evidence_id,
        'role', c.role)) AS j
    FROM (SELECT r.ord, r.no, CAST(i.id AS uuid) AS id
          FROM r, jsonb_array_elements_text(r.r -> 'citations') WITH ORDINALITY AS i(id, n)) AS u
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
$$;
COMMENT ON FUNCTION council_snapshot_rival_rows_v1(jsonb) IS
    'The rows the rivals of v4 consolidation manifests name, one JSON document per rival (revision 0044)';
-- Shared locks on evidence keys in ascending key order (deadlock-free; an invalidation takes
-- the exclusive lock on its key): the one definition the read function uses.
CREATE FUNCTION council_lock_evidence_shared_v1(p_evidence_ids uuid[]) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_key bigint;
BEGIN
    FOR v_key IN
        SELECT DISTINCT hashtextextended('council.evidence:' || CAST(e AS text), 0)
        FROM unnest(p_evidence_ids) AS e
        ORDER BY 1
    LOOP
        PERFORM pg_advisory_xact_lock_shared(v_key);
    END LOOP;
END
$$;
COMMENT ON FUNCTION council_lock_evidence_shared_v1(uuid[]) IS
    'Shared advisory locks on evidence keys, ascending (revision 0044)';


-- The read half of a committer round (council.ledger.committer), for the node versions
-- p_version_ids (a batch; one is a batch of one). First SET LOCAL the lock and statement
-- timeouts, and generic plans for the statements that follow (their shapes never change),
-- then take the batch's locks, transaction-scoped, in one fixed order (deadlock-free
-- between batches and with every other taker of these keys), as commit_begin did:
--   1. the alternatives key of each thread of the batch whose pinned rule set has
--      exclusive_alternatives (council_alternatives_lock_key_v1, revision 0040), in
--      ascending key order: the thread's key covers every alternative set of it as it is
--      and as it will be (see revision 0040 and council/sql/alternatives.sql);
--   2. each version's logical-node lock (council_node_lock_key_v1), in ascending key order.
-- As p_wait says: 'exclusive' waits for each; 'try' takes the free ones without waiting
-- and, where another transaction holds one, waits for a shared lock instead, granted to
-- every such waiter at once when the holder ends, to read what the holder decided, never
-- to decide (`locked` false). A version whose thread's key was only shared takes its
-- node's lock shared too. A wait is only ever for a key above every one held.
-- Then, each statement reading what committed before it (a VOLATILE function: a fresh
-- snapshot a statement, after the locks):
--   3. each version's node's live consolidation (`live`): a repeat of a version already
--      live is answered from that;
--   4. the versions this round decides: of each logical node, the first locked version in
--      p_version_ids' order, unless its node's live consolidation is of it (`decides`);
--   5. shared locks on the evidence they cite, in ascending key order, as commit_live did
--      (an invalidation takes the exclusive lock, DESIGN §4 trap 2), then their manifests
--      in ONE statement (council_snapshot_manifests_v1, trap 1); evidence a manifest names
--      that is not locked yet (cited meanwhile) is locked and the manifests read again;
--   6. the rows the manifests name, the rows their rivals name and the error sums the
--      effective-support rule measures (immutable rows, read by id);
--   7. what is recorded for each decided version: its consolidations and unchained (before
--      revision 0013) evaluations with their snapshot hashes and reasons, and its
--      evaluation chain's tail (council_evaluation_tail_v2) with its reasons: the
--      idempotency check (same version, same snapshot hash) and the next chain link.
-- The document: {isolation, versions: [{id, logical_node_id, thread_id, content, locked,
-- live}] in lock order (none found: empty), decided: [{version_id, manifest, seats,
-- correlation_inputs, rivals, rows, rival_rows, consolidations, unchained, tail}],
-- error_sums, own_errors}. The rows stay JSON, not jsonb: numbers keep their text, so each
-- snapshot is byte for byte what snapshot_rows gives replay. The manifests pass through jsonb
-- (read once, not parsed again at each access): they hold ids, text and values read from
-- jsonb columns, which come back unchanged.
CREATE FUNCTION council_evaluate_read_v1(
    p_version_ids uuid[], p_wait text, p_lock_timeout text, p_statement_timeout text
) RETURNS json
LANGUAGE plpgsql
AS $$
DECLARE
    v_isolation text;
    v_key bigint;
    v_thread uuid;
    v_shared_threads uuid[] := '{}';
    v_version record;
    v_locked_ids uuid[] := '{}';
    v_locked_flags boolean[] := '{}';
    v_versions json;
    v_decides uuid[];
    v_evidence uuid[];
    v_extra uuid[];
    v_manifests jsonb;
    v_manifest_list jsonb;
    v_rival_list jsonb;
    v_measured uuid[];
    v_models text[];
    v_error_sums json := '[]';
    v_own_errors json := '[]';
    v_decided json;
BEGIN
    PERFORM set_config('lock_timeout', p_lock_timeout, true),
            set_config('statement_timeout', p_statement_timeout, true),
            set_config('plan_cache_mode', 'force_generic_plan', true);
    v_isolation := current_setting('transaction_isolation');

    -- 1. The alternatives keys, ascending.
    FOR v_key, v_thread IN
        SELECT DISTINCT council_alternatives_lock_key_v1(nv.thread_id) AS key, nv.thread_id
        FROM node_versions nv
        JOIN threads th ON th.id = nv.thread_id
        JOIN rule_sets rs ON rs.id = th.rule_set_id
        WHERE nv.id = ANY(p_version_ids) AND rs.body @> '{"exclusive_alternatives": true}'
        ORDER BY 1, 2
    LOOP
        IF p_wait <> 'try' THEN
            PERFORM pg_advisory_xact_lock(v_key);
        ELSIF NOT pg_try_advisory_xact_lock(v_key) THEN
            PERFORM pg_advisory_xact_lock_shared(v_key);
            v_shared_threads := v_shared_threads || v_thread;
        END IF;
    END LOOP;

    -- 2. The node keys, ascending (a version at a time, as commit_begin: a key taken again is
    -- held already).
    FOR v_version IN
        SELECT nv.id, nv.thread_id, council_node_lock_key_v1(nv.logical_node_id) AS key
        FROM node_versions nv
        WHERE nv.id = ANY(p_version_ids)
        ORDER BY council_node_lock_key_v1(nv.logical_node_id), nv.id
    LOOP
        v_locked_ids := v_locked_ids || v_version.id;
        IF p_wait <> 'try' THEN
            PERFORM pg_advisory_xact_lock(v_version.key);
            v_locked_flags := v_locked_flags || true;
        ELSIF v_version.thread_id = ANY(v_shared_threads) THEN
            PERFORM pg_advisory_xact_lock_shared(v_version.key);
            v_locked_flags := v_locked_flags || false;
        ELSIF pg_try_advisory_xact_lock(v_version.key) THEN
            v_locked_flags := v_locked_flags || true;
        ELSE
            PERFORM pg_advisory_xact_lock_shared(v_version.key);
            v_locked_flags := v_locked_flags || false;
        END IF;
    END LOOP;

    -- 3. Each version's node's live consolidation, read now (after its lock).
    SELECT coalesce(json_agg(json_build_object(
               'id', nv.id, 'logical_node_id', nv.logical_node_id, 'thread_id', nv.thread_id,
               'content', nv.content, 'locked', l.locked,
               'live', (SELECT json_build_object('id', c.id, 'node_version_id', c.node_version_id,
                                                 'snapshot_sha256', c.snapshot_sha256,
                                                 'reasons', c.decision -> 'reasons')
                        FROM consolidations c WHERE c.logical_node_id = nv.logical_node_id AND c.status = 'live'))
               ORDER BY l.n), '[]'::json)
    INTO v_versions
    FROM unnest(v_locked_ids, v_locked_flags) WITH ORDINALITY AS l(id, locked, n)
    JOIN node_versions nv ON nv.id = l.id;

    -- 4. What this round decides.
    SELECT coalesce(array_agg(f.id), '{}') INTO v_decides
    FROM (SELECT DISTINCT ON (CAST(v.value ->> 'logical_node_id' AS uuid))
                 CAST(v.value ->> 'id' AS uuid) AS id, v.value -> 'live' ->> 'node_version_id' AS live_version
          FROM json_array_elements(v_versions) AS v(value)
          WHERE CAST(v.value ->> 'locked' AS boolean)
          ORDER BY CAST(v.value ->> 'logical_node_id' AS uuid),
                   array_position(p_version_ids, CAST(v.value ->> 'id' AS uuid))) AS f
    WHERE f.live_version IS DISTINCT FROM CAST(f.id AS text);

    IF cardinality(v_decides) = 0 THEN
        RETURN json_build_object('isolation', v_isolation, 'versions', v_versions, 'decided', '[]'::json,
                                 'error_sums', v_error_sums, 'own_errors', v_own_errors);
    END IF;

    -- 5. Shared evidence locks, ascending, then the manifests in one statement.
    SELECT coalesce(array_agg(e.evidence_id ORDER BY e.key), '{}') INTO v_evidence
    FROM (SELECT DISTINCT ci.evidence_id, hashtextextended('council.evidence:' || CAST(ci.evidence_id AS text), 0) AS key
          FROM citations ci WHERE ci.node_version_id = ANY(v_decides)) AS e;
    PERFORM council_lock_evidence_shared_v1(v_evidence);
    LOOP
        SELECT jsonb_agg(jsonb_build_object('version_id', m.version_id, 'manifest', m.manifest, 'seats', m.seats,
                                            'correlation_inputs', m.correlation_inputs, 'rivals', m.rivals)
                         ORDER BY array_position(v_decides, m.version_id))
        INTO v_manifests
        FROM council_snapshot_manifests_v1(v_decides) AS m;
        SELECT array_agg(DISTINCT CAST(e.value ->> 'id' AS uuid)) INTO v_extra
        FROM jsonb_array_elements(v_manifests) AS x(value),
             jsonb_array_elements(x.value -> 'manifest' -> 'evidence') AS e(value)
        WHERE NOT CAST(e.value ->> 'id' AS uuid) = ANY(v_evidence);
        EXIT WHEN v_extra IS NULL;
        PERFORM council_lock_evidence_shared_v1(v_extra);
        v_evidence := v_evidence || v_extra;
    END LOOP;

    -- 6. What the rows functions take (each given as a value, so that it is inlined and its
    -- plan kept), and the error sums the effective-support rule measures.
    SELECT jsonb_agg(x.value -> 'manifest' ORDER BY x.n),
           coalesce(jsonb_agg(jsonb_build_object('ord', x.n, 'rivals', x.value -> 'rivals') ORDER BY x.n)
                        FILTER (WHERE jsonb_typeof(x.value -> 'rivals') = 'array'), '[]'::jsonb),
           array_agg(CAST(x.value ->> 'version_id' AS uuid) ORDER BY x.n)
               FILTER (WHERE jsonb_typeof(x.value -> 'correlation_inputs') = 'object')
    INTO v_manifest_list, v_rival_list, v_measured
    FROM jsonb_array_elements(v_manifests) WITH ORDINALITY AS x(value, n);
    SELECT array_agg(DISTINCT i.value ->> 'model') INTO v_models
    FROM jsonb_array_elements(v_manifests) AS x(value),
         jsonb_array_elements(x.value -> 'correlation_inputs' -> 'models') AS i(value)
    WHERE jsonb_typeof(x.value -> 'correlation_inputs') = 'object';
    IF v_models IS NOT NULL THEN
        SELECT coalesce(json_agg(row_to_json(s)), '[]'::json) INTO v_error_sums
        FROM council_resolved_error_sums_v1(v_models) AS s;
        SELECT coalesce(json_agg(row_to_json(o)), '[]'::json) INTO v_own_errors
        FROM council_resolved_errors_of_v1(v_models, v_measured) AS o;
    END IF;

    -- 7. Per decided version: its manifest, the rows it and its rivals name, what is
    -- recorded for it and its chain's tail.
    WITH m AS (
        SELECT x.value AS d, CAST(x.n AS integer) AS n, CAST(x.value ->> 'version_id' AS uuid) AS version_id
        FROM jsonb_array_elements(v_manifests) WITH ORDINALITY AS x(value, n)
    ), r AS (
        SELECT * FROM council_snapshot_rows_v1(v_manifest_list)
    ), rr AS (
        SELECT k.ord, json_agg(k.rows ORDER BY k.no) AS rows FROM council_snapshot_rival_rows_v1(v_rival_list) AS k
        GROUP BY k.ord
    )
    SELECT json_agg(json_build_object(
               'version_id', m.version_id, 'manifest', CAST(m.d -> 'manifest' AS json),
               'seats', CAST(m.d -> 'seats' AS json), 'correlation_inputs', CAST(m.d -> 'correlation_inputs' AS json),
               'rivals', CAST(m.d -> 'rivals' AS json), 'rows', r.rows, 'rival_rows', coalesce(rr.rows, '[]'::json),
               'consolidations', (
                   SELECT coalesce(json_agg(json_build_object(
                       'id', c.id, 'snapshot_sha256', c.snapshot_sha256, 'reasons', c.decision -> 'reasons')), '[]'::json)
                   FROM consolidations c WHERE c.node_version_id = m.version_id),
               'unchained', (
                   SELECT coalesce(json_agg(json_build_object(
                       'id', e.id, 'snapshot_sha256', e.snapshot_sha256, 'reasons', e.reasons)), '[]'::json)
                   FROM consolidation_evaluations e
                   WHERE e.node_version_id = m.version_id AND e.seq IS NULL),
               'tail', (
                   SELECT json_build_object(
                       'id', e.id, 'seq', e.seq, 'digest', encode(e.digest, 'hex'), 'compact', e.link IS NOT NULL,
                       'snapshot_sha256', coalesce(e.snapshot_sha256, encode(e.digest, 'hex')),
                       'reasons', coalesce(e.reasons, (
                           SELECT jsonb_agg(dr.reason ORDER BY u.n)
                           FROM unnest(coalesce(e.reason_ids, council_reason_ids_v1(e.reason_refs)))
                                WITH ORDINALITY AS u(id, n)
                           JOIN decision_reasons dr ON dr.id = u.id)))
                   FROM council_evaluation_tail_v2(m.version_id) AS e))
               ORDER BY m.n)
    INTO v_decided
    FROM m
    JOIN r ON r.ord = m.n
    LEFT JOIN rr ON rr.ord = m.n;

    RETURN json_build_object('isolation', v_isolation, 'versions', v_versions, 'decided', v_decided,
                             'error_sums', v_error_sums, 'own_errors', v_own_errors);
END
$$;
COMMENT ON FUNCTION council_evaluate_read_v1(uuid[], text, text, text) IS
    'A committer round''s locks and everything its decision reads, as one document (revision 0044)';


-- The write half of a committer round: every record its decisions make, in one call, in the
-- order the statements it replaces wrote them (so the event log reads as before):
--   1. p_reasons (a JSON array), each stored once by content (decision_reasons_content_key,
--      the MD5 of its jsonb text, revision 0014), in ascending key order (two rounds never
--      wait on each other in a cycle); a statement of its own, so that the evaluations'
--      insert, a later statement, sees a reason another transaction committed meanwhile;
--   2. the not-ready decisions (p_not_ready, as commit_not_ready took them), each the next
--      row of its version's evaluation chain in the compact layout of revision 0014, its
--      reasons named by id (council_reason_refs_v1), with its consolidation.not_ready event;
--   3. for each of p_supersede ({consolidation_id, version_id, thread_id}, in order): the
--      older live consolidation of the node, superseded by a consolidation of version_id,
--      and its memory item (unless already retracted or superseded), with the
--      consolidation.superseded event;
--   4. the positive decisions (p_positive, as commit_write took them; at most one per
--      logical node): the consolidation, its evidence index, the stable memory item, the
--      version's `resolved` transition and the consolidation.committed event.
-- Returns {not_ready: [{version_id, evaluation_id}], committed: [{version_id,
-- consolidation_id, memory_item_id}]}.
CREATE FUNCTION council_evaluate_write_v1(
    p_actor text, p_reasons jsonb, p_not_ready jsonb, p_supersede jsonb, p_positive jsonb
) RETURNS json
LANGUAGE plpgsql
AS $$
DECLARE
    v_not_ready json := '[]';
    v_committed json := '[]';
    v_old record;
    v_reason text;
    v_memory_id uuid;
    v_memory_status text;
BEGIN
    -- 1. The reasons, once each by content.
    IF jsonb_array_length(p_reasons) > 0 THEN
        INSERT INTO decision_reasons (reason)
        SELECT DISTINCT ON (CAST(md5(CAST(x.reason AS text)) AS uuid)) x.reason
        FROM jsonb_array_elements(p_reasons) AS x(reason)
        ORDER BY CAST(md5(CAST(x.reason AS text)) AS uuid)
        ON CONFLICT ((CAST(md5(CAST(reason AS text)) AS uuid))) DO NOTHING;
    END IF;

    -- 2. The not-ready evaluations and their events.
    IF jsonb_array_length(p_not_ready) > 0 THEN
        WITH x AS (
            SELECT * FROM jsonb_to_recordset(p_not_ready) AS x(
                thread_id uuid, logical_node_id uuid, version_id uuid, rule_set_id text,
                grouping_algorithm_id text, digest text, reasons jsonb, seq integer, root boolean,
                link text, claims_seen integer, failed jsonb)
        ), ev AS (
            INSERT INTO consolidation_evaluations (id, thread_id, logical_node_id, node_version_id, rule_set_id,
                                                   grouping_algorithm_id, outcome, digest, reason_refs, seq, link,
                                                   claims_seen)
            SELECT council_evaluation_id_v1(x.version_id, x.seq),
                   CASE WHEN x.root THEN x.thread_id END, CASE WHEN x.root THEN x.logical_node_id END,
                   x.version_id, CASE WHEN x.root THEN x.rule_set_id END,
                   CASE WHEN x.root THEN x.grouping_algorithm_id END, CASE WHEN x.root THEN 'not_ready' END,
                   decode(x.digest, 'hex'),
                   council_reason_refs_v1(ARRAY(
                       SELECT dr.id FROM jsonb_array_elements(x.reasons) WITH ORDINALITY AS r(reason, n)
                       JOIN decision_reasons dr
                         ON CAST(md5(CAST(dr.reason AS text)) AS uuid) = CAST(md5(CAST(r.reason AS text)) AS uuid)
                       ORDER BY r.n)),
                   x.seq, decode(x.link, 'hex'), x.claims_seen
            FROM x
            RETURNING id, node_version_id
        ), e AS (
            INSERT INTO events (thread_id, kind, subject_id, actor, payload)
            SELECT x.thread_id, 'consolidation.not_ready', CAST(ev.node_version_id AS text), p_actor,
                   jsonb_build_object('evaluation_id', ev.id, 'failed', x.failed)
            FROM ev JOIN x ON x.version_id = ev.node_version_id
        )
        SELECT json_agg(json_build_object('version_id', ev.node_version_id, 'evaluation_id', ev.id))
        INTO v_not_ready
        FROM ev;
    END IF;

    -- 3. The older live consolidations superseded, each with its memory item and event.
    FOR v_old IN
        SELECT CAST(s.value ->> 'consolidation_id' AS uuid) AS consolidation_id,
               CAST(s.value ->> 'version_id' AS uuid) AS version_id, CAST(s.value ->> 'thread_id' AS uuid) AS thread_id
        FROM jsonb_array_elements(p_supersede) WITH ORDINALITY AS s(value, n)
        ORDER BY s.n
    LOOP
        v_reason := 'superseded by a consolidation of version ' || v_old.version_id;
        INSERT INTO consolidation_transitions (consolidation_id, from_status, to_status, reason, actor)
        VALUES (v_old.consolidation_id, 'live', 'superseded', v_reason, p_actor);
        SELECT m.id, m.status INTO STRICT v_memory_id, v_memory_status
        FROM memory_items m WHERE m.consolidation_id = v_old.consolidation_id;
        IF v_memory_status NOT IN ('retracted', 'superseded') THEN
            INSERT INTO memory_transitions (memory_item_id, from_status, to_status, reason, actor)
            VALUES (v_memory_id, v_memory_status, 'superseded', v_reason, p_actor);
        END IF;
        INSERT INTO events (kind, actor, thread_id, subject_id, payload)
        VALUES ('consolidation.superseded', p_actor, v_old.thread_id, CAST(v_old.consolidation_id AS text),
                jsonb_build_object('by_version_id', CAST(v_old.version_id AS text),
                                   'memory_item_id', CAST(v_memory_id AS text)));
    END LOOP;

    -- 4. The consolidations, with evidence index, memory item, transition and event.
    IF jsonb_array_length(p_positive) > 0 THEN
        WITH x AS (
            SELECT * FROM jsonb_to_recordset(p_positive) AS x(
                thread_id uuid, logical_node_id uuid, version_id uuid, rule_set_id text,
                grouping_algorithm_id text, snapshot jsonb, digest text, decision jsonb, evidence_ids jsonb,
                content text, from_status text, reason text, payload jsonb)
        ), c AS (
            INSERT INTO consolidations (thread_id, logical_node_id, node_version_id, rule_set_id,
                                        grouping_algorithm_id, snapshot, snapshot_sha256, decision)
            SELECT thread_id, logical_node_id, version_id, rule_set_id, grouping_algorithm_id, snapshot, digest,
                   decision
            FROM x
            RETURNING id, node_version_id
        ), ev AS (
            INSERT INTO consolidation_evidence (evidence_id, consolidation_id)
            SELECT CAST(e AS uuid), c.id
            FROM c JOIN x ON x.version_id = c.node_version_id, jsonb_array_elements_text(x.evidence_ids) AS e
        ), m AS (
            INSERT INTO memory_items (thread_id, consolidation_id, logical_node_id, node_version_id, content)
            SELECT x.thread_id, c.id, x.logical_node_id, x.version_id, x.content
            FROM c JOIN x ON x.version_id = c.node_version_id
            RETURNING id, node_version_id
        ), s AS (
            INSERT INTO node_status_transitions (node_version_id, from_status, to_status, reason, actor,
                                                 consolidation_id)
            SELECT x.version_id, x.from_status, 'resolved', x.reason, p_actor, c.id
            FROM c JOIN x ON x.version_id = c.node_version_id
        ), e AS (
            INSERT INTO events (thread_id, kind, subject_id, actor, payload)
            SELECT x.thread_id, 'consolidation.committed', CAST(c.id AS text), p_actor,
                   x.payload || jsonb_build_object('memory_item_id', m.id)
            FROM c JOIN x ON x.version_id = c.node_version_id JOIN m ON m.node_version_id = c.node_version_id
        )
        SELECT json_agg(json_build_object('version_id', c.node_version_id, 'consolidation_id', c.id,
                                          'memory_item_id', m.id))
        INTO v_committed
        FROM c JOIN m ON m.node_version_id = c.node_version_id;
    END IF;

    RETURN json_build_object('not_ready', v_not_ready, 'committed', v_committed);
END
$$;
COMMENT ON FUNCTION council_evaluate_write_v1(text, jsonb, jsonb, jsonb, jsonb) IS
    'Every record a committer round writes: not-ready evaluations, supersessions, consolidations (revision 0044)';

-- A function is executable by PUBLIC unless revoked; the application runs these.
REVOKE ALL ON FUNCTION
    council_snapshot_manifests_v1(uuid[]), council_resolved_error_sums_v1(text[]),
    council_resolved_errors_of_v1(text[], uuid[]), council_snapshot_rows_v1(jsonb),
    council_snapshot_rival_rows_v1(jsonb), council_lock_evidence_shared_v1(uuid[]),
    council_evaluate_read_v1(uuid[], text, text, text), council_evaluate_write_v1(text, jsonb, jsonb, jsonb, jsonb)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    council_snapshot_manifests_v1(uuid[]), council_resolved_error_sums_v1(text[]),
    council_resolved_errors_of_v1(text[], uuid[]), council_snapshot_rows_v1(jsonb),
    council_snapshot_rival_rows_v1(jsonb), council_lock_evidence_shared_v1(uuid[]),
    council_evaluate_read_v1(uuid[], text, text, text), council_evaluate_write_v1(text, jsonb, jsonb, jsonb, jsonb)
TO council_app;
