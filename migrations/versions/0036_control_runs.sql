-- Council ledger, revision 0036: control runs (issue 34 part 2; docs/guide/learning.md).
--
-- A deliberative dispatch asked with controls (dispatches.controls) creates, beside each
-- run of a later round (one that is shown the previous round's stances), a control run:
-- the same agent profile, round and parent, compiled on the blind briefing (no stance is
-- shown, so none is recorded as exposure). agent_runs.control_of names the run it
-- controls; it is set when the run is created and never changes (the run guard leaves
-- it immutable). A control run's claims are never support: the decision's snapshot,
-- the correlation of model errors, a council's quorum and the independence views leave
-- control runs out; council_v_stance_changes compares a run's change with its control's.

ALTER TABLE dispatches ADD COLUMN controls boolean NOT NULL DEFAULT false;
ALTER TABLE dispatches ADD CONSTRAINT dispatches_controls_deliberative CHECK (NOT controls OR mode = 'deliberative');
COMMENT ON COLUMN dispatches.controls IS
    'Each run of a later round is paired with a control run of the same profile on the blind briefing';

ALTER TABLE agent_runs ADD COLUMN control_of uuid REFERENCES agent_runs (id);
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_control_in_a_later_round
    CHECK (control_of IS NULL OR (dispatch_id IS NOT NULL AND mode = 'deliberative' AND round >= 2));
COMMENT ON COLUMN agent_runs.control_of IS
    'A control run: the deliberative run it re-runs on the blind briefing (never counted as support)';
-- One run per dispatch, round and agent, and at most one control of each run.
DROP INDEX agent_runs_dispatch_round_agent;
CREATE UNIQUE INDEX agent_runs_dispatch_round_agent_v2 ON agent_runs (dispatch_id, round, agent)
    WHERE dispatch_id IS NOT NULL AND control_of IS NULL;
CREATE UNIQUE INDEX agent_runs_control_of ON agent_runs (control_of) WHERE control_of IS NOT NULL;

-- council_v_runs shows a control run as one: control_of appended (a view only grows).
CREATE OR REPLACE VIEW council_v_runs AS
SELECT r.id AS run_id,
       r.thread_id,
       r.dispatch_id,
       r.parent_run_id,
       p.agent AS parent_agent,
       r.round,
       r.mode,
       r.agent,
       r.model,
       r.provider,
       r.simulated,
       r.status,
       r.attempt,
       r.request_sha256,
       r.proposal_id,
       (SELECT count(*) FROM run_exposures e WHERE e.run_id = r.id AND e.kind = 'stance') AS stance_exposures,
       (SELECT count(*) FROM claims c WHERE c.run_id = r.id) AS claims,
       r.error,
       r.usage,
       r.cost_usd,
       r.created_at,
       r.started_at,
       r.finished_at,
       EXTRACT(epoch FROM r.finished_at - r.started_at) AS duration_s,
       r.control_of
FROM agent_runs r
LEFT JOIN agent_runs p ON p.id = r.parent_run_id;

-- ------------------------------------------------------ stance changes (issue 34)
--
-- council_v_stance_changes as in revision 0012, with two changes: a control run is
-- neither a subject nor anyone's prior stance (its claims are not the council's), and a
-- class between after_evidence and toward_exposure. The class (first match):
--   first_stance       no prior claim of the same agent: nothing to change from;
--   held               same position as the prior claim;
--   after_evidence     it cites evidence the prior claim did not, or evidence either
--                      cites was challenged or invalidated between the two claims;
--   self_revision      its control run (same profile, round and version, blind) took
--                      the same new position: it changes so without seeing anyone;
--   toward_exposure    closer to the mean position of the stances it was shown;
--   against_exposure   farther from it;
--   no_recorded_cause  changed, and nothing recorded explains it.
-- Mirrored by council/domain/stances.py (a test keeps them in agreement).
CREATE OR REPLACE VIEW council_v_stance_changes AS
WITH facts AS (
    SELECT c.id AS claim_id, c.node_version_id, nv.thread_id, c.run_id, r.agent, r.model, r.provider,
           r.round, c.claim_type, c.confidence, c.created_at,
           p.id AS prior_claim_id, p.run_id AS prior_run_id, p.claim_type AS prior_claim_type,
           p.confidence AS prior_confidence, p.created_at AS prior_created_at,
           x.exposed_stances, x.exposed_mean_position, x.exposed_claim_types,
           (SELECT count(DISTINCT ci.evidence_id) FROM citations ci
            WHERE p.id IS NOT NULL AND ci.node_version_id = c.node_version_id AND ci.run_id = c.run_id
              AND NOT EXISTS (SELECT 1 FROM citations cp
                              WHERE cp.node_version_id = c.node_version_id AND cp.run_id = p.run_id
                                AND cp.evidence_id = ci.evidence_id)) AS new_evidence,
           (SELECT count(DISTINCT ci.evidence_id) FROM citations ci
            WHERE p.id IS NOT NULL AND ci.node_version_id = c.node_version_id
              AND ci.run_id IN (c.run_id, p.run_id)
              AND EXISTS (SELECT 1 FROM evidence_transitions et
                          WHERE et.evidence_id = ci.evidence_id
                            AND et.to_status IN ('challenged', 'invalidated')
                            AND et.created_at > p.created_at AND et.created_at <= c.created_at))
               AS invalidated_evidence,
           k.run_id AS control_run_id, k.claim_type AS control_claim_type
    FROM claims c
    JOIN agent_runs r ON r.id = c.run_id AND r.control_of IS NULL
    JOIN node_versions nv ON nv.id = c.node_version_id
    LEFT JOIN LATERAL (
        SELECT pc.* FROM claims pc JOIN agent_runs pr ON pr.id = pc.run_id
        WHERE pc.node_version_id = c.node_version_id AND pr.agent = r.agent AND pr.thread_id = r.thread_id
          AND pr.control_of IS NULL AND pc.run_id <> c.run_id AND pc.created_at < c.created_at
        ORDER BY pc.created_at DESC, pc.id DESC LIMIT 1) p ON true
    LEFT JOIN LATERAL (
        SELECT kc.run_id, kc.claim_type FROM agent_runs kr JOIN claims kc ON kc.run_id = kr.id
        WHERE kr.control_of = c.run_id AND kc.node_version_id = c.node_version_id
        ORDER BY kc.created_at DESC, kc.id DESC LIMIT 1) k ON true
    CROSS JOIN LATERAL (
        SELECT count(*) AS exposed_stances,
               avg(CASE s.claim_type WHEN 'dispute' THEN -1 WHEN 'abstain' THEN 0 ELSE 1 END)
                   AS exposed_mean_position,
               coalesce(array_agg(s.claim_type ORDER BY s.claim_type), '{}') AS exposed_claim_types
        FROM (SELECT DISTINCT cx.id, cx.claim_type
              FROM run_exposures e
              JOIN claims cx ON cx.run_id = e.exposed_to_run_id AND cx.node_version_id = c.node_version_id
                            AND (e.claim_id IS NULL OR e.claim_id = cx.id)
              WHERE e.run_id = c.run_id AND e.kind = 'stance') s) x
), positioned AS (
    SELECT f.*,
           CASE f.claim_type WHEN 'dispute' THEN -1 WHEN 'abstain' THEN 0 ELSE 1 END AS position,
           CASE WHEN f.prior_claim_type IS NULL THEN NULL WHEN f.prior_claim_type = 'dispute' THEN -1
                WHEN f.prior_claim_type = 'abstain' THEN 0 ELSE 1 END AS prior_position,
           CASE WHEN f.control_claim_type IS NULL THEN NULL WHEN f.control_claim_type = 'dispute' THEN -1
                WHEN f.control_claim_type = 'abstain' THEN 0 ELSE 1 END AS control_position
    FROM facts f
    WHERE f.prior_claim_id IS NOT NULL OR f.exposed_stances > 0
)
SELECT thread_id, node_version_id, claim_id, run_id, agent, model, provider, round,
       claim_type, confidence, position,
       prior_claim_id, prior_run_id, prior_claim_type, prior_confidence, prior_position,
       exposed_stances, exposed_mean_position, exposed_claim_types, new_evidence, invalidated_evidence,
       CASE
           WHEN prior_claim_id IS NULL THEN 'first_stance'
           WHEN position = prior_position THEN 'held'
           WHEN new_evidence > 0 OR invalidated_evidence > 0 THEN 'after_evidence'
           WHEN control_position = position THEN 'self_revision'
           WHEN exposed_stances > 0
                AND abs(position - exposed_mean_position) < abs(prior_position - exposed_mean_position)
               THEN 'toward_exposure'
           WHEN exposed_stances > 0
                AND abs(position - exposed_mean_position) > abs(prior_position - exposed_mean_position)
               THEN 'against_exposure'
           ELSE 'no_recorded_cause'
       END AS change_class,
       created_at,
       control_run_id, control_claim_type
FROM positioned;
COMMENT ON VIEW council_v_stance_changes IS
    'Each claim of a council run (not a control) that follows an earlier stance of the same agent on the node, or was shown others'' stances: how it changed (schema/views.md)';

-- ------------------------------------------------------- independence (issue 34)
--
-- The grouping functions of revision 0004 again, as _v2, with control runs left out of
-- the vertices (a shipped function is never edited in place); the views read _v2.

CREATE FUNCTION council_independence_links_v2(target uuid)
RETURNS TABLE (run_id uuid, linked_run_id uuid, kind text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET jit = off
ROWS 20
AS $$
WITH params AS (
    SELECT g.params
    FROM node_versions nv
    JOIN threads th ON th.id = nv.thread_id
    JOIN grouping_algorithms g ON g.id = th.grouping_algorithm_id
    WHERE nv.id = target
), claimer AS (
    SELECT c.run_id, r.parent_run_id, r.input_fingerprint
    FROM claims c JOIN agent_runs r ON r.id = c.run_id
    WHERE c.node_version_id = target AND r.control_of IS NULL
), item AS (
    SELECT DISTINCT 'similar_input' AS kind, cl.run_id, f.item
    FROM claimer cl
    CROSS JOIN LATERAL jsonb_array_elements_text(
        CASE jsonb_typeof(cl.input_fingerprint) WHEN 'array' THEN cl.input_fingerprint ELSE '[]'::jsonb END
    ) AS f(item)
    UNION ALL
    SELECT DISTINCT 'shared_evidence', ci.run_id, ci.evidence_id::text
    FROM citations ci JOIN claimer cl ON cl.run_id = ci.run_id
    WHERE ci.node_version_id = target
), sized AS (
    SELECT i.kind, i.run_id, i.item, count(*) OVER (PARTITION BY i.kind, i.run_id) AS size FROM item i
), bound AS (
    SELECT 'similar_input' AS kind, (p.params ->> 'input_jaccard')::double precision AS jaccard,
           0 AS min_shared
    FROM params p
    UNION ALL
    SELECT 'shared_evidence', (p.params ->> 'evidence_jaccard')::double precision,
           (p.params ->> 'evidence_min_shared')::integer
    FROM params p
), pair AS (
    SELECT a.kind, a.run_id AS run_a, b.run_id AS run_b, a.size AS size_a, b.size AS size_b, count(*) AS shared
    FROM sized a JOIN sized b ON b.kind = a.kind AND b.item = a.item AND a.run_id < b.run_id
    GROUP BY a.kind, a.run_id, b.run_id, a.size, b.size
    UNION ALL
    SELECT a.kind, a.run_id, b.run_id, a.size, b.size, 0
    FROM (SELECT DISTINCT kind, run_id, size FROM sized) a
    JOIN (SELECT DISTINCT kind, run_id, size FROM sized) b ON b.kind = a.kind AND a.run_id < b.run_id
    JOIN bound ON bound.kind = a.kind AND bound.jaccard <= 0 AND bound.min_shared <= 0
)
SELECT a.run_id, a.parent_run_id, 'parent'
FROM claimer a JOIN claimer b ON b.run_id = a.parent_run_id
WHERE (SELECT (p.params ->> 'link_parent')::boolean FROM params p) AND a.run_id <> b.run_id
UNION
SELECT a.run_id, b.run_id, 'shared_parent'
FROM claimer a JOIN claimer b ON b.parent_run_id = a.parent_run_id AND a.run_id < b.run_id
WHERE (SELECT (p.params ->> 'link_parent')::boolean FROM params p)
UNION
SELECT e.run_id, e.exposed_to_run_id, 'exposure'
FROM run_exposures e
JOIN claimer a ON a.run_id = e.run_id
JOIN claimer b ON b.run_id = e.exposed_to_run_id
WHERE (SELECT (p.params ->> 'link_exposure')::boolean FROM params p) AND e.kind = 'stance'
UNION
SELECT p.run_a, p.run_b, p.kind
FROM pair p JOIN bound ON bound.kind = p.kind
WHERE p.shared >= bound.min_shared
  AND p.shared::double precision / (p.size_a + p.size_b - p.shared)::double precision >= bound.jaccard
$$;

-- Each claiming run's connected component and, unless it abstained, its
-- group: the runs of its stance (support = originate or endorse; dispute) in
-- its component, with the id council/domain/independence.py derives from them.
CREATE FUNCTION council_independence_members_v2(target uuid)
RETURNS TABLE (run_id uuid, component_runs uuid[], group_kind text, group_runs uuid[], group_id text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET jit = off
ROWS 20
AS $$
WITH RECURSIVE link AS (
    SELECT l.run_id, l.linked_run_id FROM council_independence_links_v2(target) l
), edge AS (
    SELECT link.run_id AS a, link.linked_run_id AS b FROM link
    UNION
    SELECT link.linked_run_id, link.run_id FROM link
), reach (run_id, reached) AS (
    SELECT c.run_id, c.run_id FROM claims c JOIN agent_runs r ON r.id = c.run_id
    WHERE c.node_version_id = target AND r.control_of IS NULL
    UNION
    SELECT reach.run_id, edge.b FROM reach JOIN edge ON edge.a = reach.reached
), member AS (
    SELECT c.run_id,
           (SELECT array_agg(reach.reached ORDER BY reach.reached::text COLLATE "C")
            FROM reach WHERE reach.run_id = c.run_id) AS component_runs,
           CASE WHEN c.claim_type IN ('originate', 'endorse') THEN 'support'
                WHEN c.claim_type = 'dispute' THEN 'dispute' END AS group_kind
    FROM claims c JOIN agent_runs r ON r.id = c.run_id
    WHERE c.node_version_id = target AND r.control_of IS NULL
), grp AS (
    SELECT m.component_runs, m.group_kind, array_agg(m.run_id ORDER BY m.run_id::text COLLATE "C") AS runs
    FROM member m
    WHERE m.group_kind IS NOT NULL
    GROUP BY m.component_runs, m.group_kind
)
SELECT m.run_id, m.component_runs, m.group_kind, grp.runs,
       'g-' || left(encode(sha256(convert_to(grp.group_kind || ':' || array_to_string(grp.runs, ','), 'UTF8')),
                           'hex'), 16)
FROM member m
LEFT JOIN grp ON grp.component_runs = m.component_runs AND grp.group_kind = m.group_kind
$$;

CREATE OR REPLACE VIEW council_v_independence_links AS
SELECT nv.thread_id,
       nv.id AS node_version_id,
       l.run_id,
       l.linked_run_id,
       l.kind
FROM node_versions nv
CROSS JOIN LATERAL council_independence_links_v2(nv.id) l
WHERE EXISTS (SELECT 1 FROM claims c WHERE c.node_version_id = nv.id);

CREATE OR REPLACE VIEW council_v_independence_members AS
SELECT nv.thread_id,
       nv.id AS node_version_id,
       nv.logical_node_id,
       th.grouping_algorithm_id,
       c.id AS claim_id,
       g.run_id,
       r.agent,
       r.provider,
       c.claim_type,
       c.confidence,
       cardinality(g.component_runs) AS component_size,
       g.component_runs,
       g.group_id,
       g.group_kind,
       cardinality(g.group_runs) AS group_size,
       g.group_runs
FROM node_versions nv
JOIN threads th ON th.id = nv.thread_id
CROSS JOIN LATERAL council_independence_members_v2(nv.id) g
JOIN claims c ON c.node_version_id = nv.id AND c.run_id = g.run_id
JOIN agent_runs r ON r.id = g.run_id
WHERE EXISTS (SELECT 1 FROM claims x WHERE x.node_version_id = nv.id);


-- Observation question 1 (which endorsements were independent?) reads _v2 too.
CREATE OR REPLACE VIEW council_v_endorsement_independence AS
SELECT m.thread_id,
       m.node_version_id,
       m.logical_node_id,
       m.claim_id,
       m.run_id,
       m.agent,
       m.provider,
       m.claim_type,
       m.confidence,
       m.group_id,
       m.group_size,
       m.group_runs,
       CASE WHEN m.group_size = 1 THEN 'independent' ELSE 'inherited' END AS independence,
       coalesce(l.linked_by, ARRAY[]::text[]) AS linked_by,
       coalesce(l.linked_runs, ARRAY[]::uuid[]) AS linked_runs
FROM council_v_independence_members m
LEFT JOIN LATERAL (
    SELECT array_agg(DISTINCT x.link ORDER BY x.link) AS linked_by,
           array_agg(DISTINCT x.other ORDER BY x.other) AS linked_runs
    FROM council_independence_links_v2(m.node_version_id) il
    CROSS JOIN LATERAL (VALUES (
        CASE WHEN il.kind = 'parent' AND il.run_id = m.run_id THEN 'parent'
             WHEN il.kind = 'parent' THEN 'child'
             WHEN il.kind = 'exposure' AND il.run_id = m.run_id THEN 'saw_stance'
             WHEN il.kind = 'exposure' THEN 'stance_seen'
             ELSE il.kind END COLLATE "C",
        CASE WHEN il.run_id = m.run_id THEN il.linked_run_id ELSE il.run_id END
    )) AS x(link, other)
    WHERE m.run_id IN (il.run_id, il.linked_run_id)
) l ON true
WHERE m.group_kind = 'support';

-- The frontier counts the council's claims and citations: a control run's are left out.
CREATE OR REPLACE VIEW council_v_frontier AS
SELECT ln.thread_id,
       ln.branch_id,
       b.kind AS branch_kind,
       b.status AS branch_status,
       ln.id AS logical_node_id,
       nv.id AS node_version_id,
       nv.version_no,
       s.status,
       s.status_changed_at,
       nv.content,
       (SELECT count(*) FROM claims c JOIN agent_runs r ON r.id = c.run_id AND r.control_of IS NULL
        WHERE c.node_version_id = nv.id AND c.claim_type IN ('originate', 'endorse')) AS support_claims,
       (SELECT count(*) FROM claims c JOIN agent_runs r ON r.id = c.run_id AND r.control_of IS NULL
        WHERE c.node_version_id = nv.id AND c.claim_type = 'dispute') AS dispute_claims,
       (SELECT count(*) FROM claims c JOIN agent_runs r ON r.id = c.run_id AND r.control_of IS NULL
        WHERE c.node_version_id = nv.id AND c.claim_type = 'abstain') AS abstentions,
       (SELECT count(*) FROM pending_actions p
        WHERE p.node_version_id = nv.id AND p.status = 'open') AS open_pending_actions,
       (SELECT count(*) FROM edges e WHERE e.from_version_id = nv.id AND e.kind = 'depends_on') AS depends_on,
       (SELECT count(*) FROM edges e JOIN node_version_states cs ON cs.id = e.from_version_id
        WHERE e.to_version_id = nv.id AND e.kind = 'contradicts'
          AND cs.status NOT IN ('killed', 'orphaned')) AS contradicted_by,
       (SELECT count(DISTINCT ci.evidence_id) FROM citations ci
        WHERE ci.node_version_id = nv.id
          AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.id = ci.run_id AND r.control_of IS NOT NULL))
           AS cited_evidence,
       (SELECT count(DISTINCT ci.evidence_id) FROM citations ci JOIN evidence e ON e.id = ci.evidence_id
        WHERE ci.node_version_id = nv.id AND e.validity IN ('challenged', 'invalidated')
          AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.id = ci.run_id AND r.control_of IS NOT NULL))
           AS unsound_evidence,
       nv.created_at
FROM logical_nodes ln
JOIN node_versions nv ON nv.id = ln.head_version_id
JOIN node_version_states s ON s.id = nv.id
JOIN branches b ON b.id = ln.branch_id
WHERE s.status IN ('open', 'tentative') AND b.status IN ('active', 'merged');

REVOKE ALL ON FUNCTION council_independence_links_v2(uuid), council_independence_members_v2(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_independence_links_v2(uuid), council_independence_members_v2(uuid)
    TO council_dashboard;
-- No view calls _v1 any more: callable by whoever reads the views, and by nobody else.
REVOKE EXECUTE ON FUNCTION council_independence_links_v1(uuid), council_independence_members_v1(uuid)
    FROM council_dashboard;
