-- Council ledger, revision 0004: views with stable names for dashboards, and
-- the read-only role council_dashboard that may read them (and run the two
-- grouping functions they call) and nothing else (docs/architecture.md §8). Every view and
-- every column is described in schema/views.md.
--
-- Conventions
--   * Names start with council_v_. A shipped view keeps its name and columns;
--     a column may be added at the end, never renamed or removed.
--   * Views read the core tables alone: no table exists for dashboards.
--   * Independence groups are not stored for every node version (a committed
--     consolidation records the groups it was decided on; a not_ready
--     evaluation records only its reasons), so council_v_independence_*
--     compute them on read with exactly the algorithm of
--     council/domain/independence.py, under the thread's pinned grouping
--     parameters. tests/integration/test_views.py checks the two agree.

-- ------------------------------------------------------------------ threads

CREATE VIEW council_v_threads AS
SELECT th.id AS thread_id,
       th.title,
       th.objective,
       th.rule_set_id,
       th.grouping_algorithm_id,
       mb.id AS main_branch_id,
       (SELECT count(*) FROM branches b WHERE b.thread_id = th.id AND b.status = 'active') AS active_branches,
       (SELECT count(*) FROM branches b
        WHERE b.thread_id = th.id AND b.kind = 'objective' AND b.status = 'active') AS open_objective_forks,
       (SELECT count(*) FROM logical_nodes ln WHERE ln.thread_id = th.id) AS logical_nodes,
       (SELECT count(*) FROM node_versions nv WHERE nv.thread_id = th.id) AS node_versions,
       (SELECT count(*) FROM logical_nodes ln
        JOIN node_version_states s ON s.id = ln.head_version_id
        JOIN branches b ON b.id = ln.branch_id
        WHERE ln.thread_id = th.id AND s.status IN ('open', 'tentative')
          AND b.status IN ('active', 'merged')) AS frontier_heads,
       (SELECT count(*) FROM thread_evidence te WHERE te.thread_id = th.id) AS evidence,
       (SELECT count(*) FROM agent_runs r WHERE r.thread_id = th.id) AS runs,
       (SELECT count(*) FROM agent_runs r WHERE r.thread_id = th.id AND r.status = 'failed') AS failed_runs,
       (SELECT count(*) FROM claims c JOIN node_versions nv ON nv.id = c.node_version_id
        WHERE nv.thread_id = th.id) AS claims,
       (SELECT count(*) FROM consolidations c WHERE c.thread_id = th.id AND c.status = 'live') AS live_consolidations,
       (SELECT count(*) FROM memory_items m WHERE m.thread_id = th.id AND m.status = 'stable') AS stable_memory,
       (SELECT count(*) FROM memory_items m
        WHERE m.thread_id = th.id AND m.status IN ('provisional', 'contested')) AS unsettled_memory,
       (SELECT count(*) FROM pending_actions p WHERE p.thread_id = th.id AND p.status = 'open') AS open_pending_actions,
       (SELECT max(e.created_at) FROM events e WHERE e.thread_id = th.id) AS last_event_at,
       th.created_at
FROM threads th
JOIN branches mb ON mb.thread_id = th.id AND mb.kind = 'main';

-- --------------------------------------------------------- runs and claims

CREATE VIEW council_v_runs AS
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
       EXTRACT(epoch FROM r.finished_at - r.started_at) AS duration_s
FROM agent_runs r
LEFT JOIN agent_runs p ON p.id = r.parent_run_id;

CREATE VIEW council_v_claims AS
SELECT c.id AS claim_id,
       nv.thread_id,
       c.node_version_id,
       nv.logical_node_id,
       nv.version_no,
       nv.branch_id,
       c.run_id,
       r.agent,
       r.provider,
       r.model,
       r.round,
       c.claim_type,
       c.confidence,
       c.rationale,
       (SELECT count(*) FROM citations ci WHERE ci.claim_id = c.id) AS citations,
       c.created_at
FROM claims c
JOIN node_versions nv ON nv.id = c.node_version_id
JOIN agent_runs r ON r.id = c.run_id;

-- ------------------------------------------------------------ independence
--
-- The vertices of a node version are the runs that claimed on it. Links
-- (council/domain/independence.py, under the thread's pinned parameters):
--   parent          run_id's parent run also claimed here
--   shared_parent   both have the same parent run (whether or not it claimed)
--   exposure        run_id was shown linked_run_id's stance (on any node)
--   similar_input   run-specific inputs (input fingerprints) with Jaccard >=
--                   input_jaccard
--   shared_evidence evidence cited on this version with >= evidence_min_shared
--                   items in common and Jaccard >= evidence_jaccard
-- Similar pairs are found through the items they share (a join on the item),
-- never by comparing all pairs; only parameters that link every two non-empty
-- sets (Jaccard <= 0 and no shared item required) pair them all.
--
-- The grouping is two functions of one node version, which the views call
-- once per version. Functions rather than inline SQL: a filter on the version
-- reaches them, their queries are planned per version, and they run without
-- JIT, whose compilation of these plans costs seconds and saves nothing. They
-- run with their owner's rights (like a view) and only council_dashboard may
-- call them besides their owner.

CREATE FUNCTION council_independence_links_v1(target uuid)
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
    WHERE c.node_version_id = target
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
CREATE FUNCTION council_independence_members_v1(target uuid)
RETURNS TABLE (run_id uuid, component_runs uuid[], group_kind text, group_runs uuid[], group_id text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET jit = off
ROWS 20
AS $$
WITH RECURSIVE link AS (
    SELECT l.run_id, l.linked_run_id FROM council_independence_links_v1(target) l
), edge AS (
    SELECT link.run_id AS a, link.linked_run_id AS b FROM link
    UNION
    SELECT link.linked_run_id, link.run_id FROM link
), reach (run_id, reached) AS (
    SELECT c.run_id, c.run_id FROM claims c WHERE c.node_version_id = target
    UNION
    SELECT reach.run_id, edge.b FROM reach JOIN edge ON edge.a = reach.reached
), member AS (
    SELECT c.run_id,
           (SELECT array_agg(reach.reached ORDER BY reach.reached::text COLLATE "C")
            FROM reach WHERE reach.run_id = c.run_id) AS component_runs,
           CASE WHEN c.claim_type IN ('originate', 'endorse') THEN 'support'
                WHEN c.claim_type = 'dispute' THEN 'dispute' END AS group_kind
    FROM claims c
    WHERE c.node_version_id = target
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

CREATE VIEW council_v_independence_links AS
SELECT nv.thread_id,
       nv.id AS node_version_id,
       l.run_id,
       l.linked_run_id,
       l.kind
FROM node_versions nv
CROSS JOIN LATERAL council_independence_links_v1(nv.id) l
WHERE EXISTS (SELECT 1 FROM claims c WHERE c.node_version_id = nv.id);

CREATE VIEW council_v_independence_members AS
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
CROSS JOIN LATERAL council_independence_members_v1(nv.id) g
JOIN claims c ON c.node_version_id = nv.id AND c.run_id = g.run_id
JOIN agent_runs r ON r.id = g.run_id
WHERE EXISTS (SELECT 1 FROM claims x WHERE x.node_version_id = nv.id);

CREATE VIEW council_v_independence_groups AS
SELECT m.thread_id,
       m.node_version_id,
       m.logical_node_id,
       nv.version_no,
       m.grouping_algorithm_id,
       m.group_id,
       m.group_kind AS kind,
       m.group_size AS run_count,
       m.group_runs AS runs,
       array_agg(DISTINCT m.provider COLLATE "C" ORDER BY m.provider COLLATE "C") AS providers,
       max(m.confidence) AS max_confidence,
       m.component_runs
FROM council_v_independence_members m
JOIN node_versions nv ON nv.id = m.node_version_id
WHERE m.group_id IS NOT NULL
GROUP BY m.thread_id, m.node_version_id, m.logical_node_id, nv.version_no, m.grouping_algorithm_id,
         m.group_id, m.group_kind, m.group_size, m.group_runs, m.component_runs;

-- The groups a committed consolidation was decided on, as it recorded them.
CREATE VIEW council_v_consolidation_groups AS
SELECT c.id AS consolidation_id,
       c.thread_id,
       c.logical_node_id,
       c.node_version_id,
       c.status AS consolidation_status,
       c.grouping_algorithm_id,
       g.position::integer AS position,
       g.grp ->> 'id' AS group_id,
       g.grp ->> 'kind' AS kind,
       jsonb_array_length(g.grp -> 'runs') AS run_count,
       ARRAY(SELECT x.run::uuid FROM jsonb_array_elements_text(g.grp -> 'runs') WITH ORDINALITY AS x(run, n)
             ORDER BY x.n) AS runs,
       ARRAY(SELECT x.provider FROM jsonb_array_elements_text(g.grp -> 'providers') WITH ORDINALITY
             AS x(provider, n) ORDER BY x.n) AS providers,
       (g.grp ->> 'max_confidence')::numeric AS max_confidence
FROM consolidations c
CROSS JOIN LATERAL jsonb_array_elements(c.decision -> 'groups') WITH ORDINALITY AS g(grp, position);

-- ------------------------------------------------- decisions and memory

CREATE VIEW council_v_decisions AS
SELECT 'consolidation' AS kind,
       c.id AS decision_id,
       c.thread_id,
       c.logical_node_id,
       c.node_version_id,
       nv.version_no,
       c.rule_set_id,
       c.grouping_algorithm_id,
       c.snapshot_sha256,
       'committed' AS outcome,
       c.status AS consolidation_status,
       (SELECT count(*) FROM jsonb_array_elements(c.decision -> 'groups') AS g(grp)
        WHERE g.grp ->> 'kind' = 'support') AS support_groups,
       (SELECT count(*) FROM jsonb_array_elements(c.decision -> 'groups') AS g(grp)
        WHERE g.grp ->> 'kind' = 'dispute') AS dispute_groups,
       ARRAY(SELECT x.reason ->> 'rule' FROM jsonb_array_elements(c.decision -> 'reasons') WITH ORDINALITY
             AS x(reason, n) WHERE NOT (x.reason ->> 'ok')::boolean ORDER BY x.n) AS failed_rules,
       c.decision -> 'reasons' AS reasons,
       (SELECT m.id FROM memory_items m WHERE m.consolidation_id = c.id) AS memory_item_id,
       c.status_changed_at,
       c.created_at
FROM consolidations c
JOIN node_versions nv ON nv.id = c.node_version_id
UNION ALL
SELECT 'evaluation',
       e.id,
       e.thread_id,
       e.logical_node_id,
       e.node_version_id,
       nv.version_no,
       e.rule_set_id,
       e.grouping_algorithm_id,
       e.snapshot_sha256,
       e.outcome,
       NULL,
       NULL,
       NULL,
       ARRAY(SELECT x.reason ->> 'rule' FROM jsonb_array_elements(e.reasons) WITH ORDINALITY
             AS x(reason, n) WHERE NOT (x.reason ->> 'ok')::boolean ORDER BY x.n),
       e.reasons,
       NULL,
       NULL,
       e.created_at
FROM consolidation_evaluations e
JOIN node_versions nv ON nv.id = e.node_version_id;

CREATE VIEW council_v_decision_reasons AS
SELECT d.kind,
       d.decision_id,
       d.thread_id,
       d.node_version_id,
       x.position::integer AS position,
       x.reason ->> 'rule' AS rule,
       (x.reason ->> 'ok')::boolean AS ok,
       x.reason ->> 'detail' AS detail,
       d.created_at
FROM council_v_decisions d
CROSS JOIN LATERAL jsonb_array_elements(d.reasons) WITH ORDINALITY AS x(reason, position);

CREATE VIEW council_v_memory_items AS
SELECT m.id AS memory_item_id,
       m.thread_id,
       m.consolidation_id,
       m.logical_node_id,
       m.node_version_id,
       m.content,
       m.status,
       m.status_changed_at,
       h.transitions,
       coalesce(h.first_status || ' > ' || h.path, m.status) AS status_path,
       h.last_reason,
       coalesce(h.history, '[]'::jsonb) AS history,
       m.created_at
FROM memory_items m
LEFT JOIN LATERAL (
    SELECT count(*) AS transitions,
           (array_agg(t.from_status ORDER BY t.created_at, t.id))[1] AS first_status,
           string_agg(t.to_status, ' > ' ORDER BY t.created_at, t.id) AS path,
           (array_agg(t.reason ORDER BY t.created_at DESC, t.id DESC))[1] AS last_reason,
           jsonb_agg(jsonb_build_object(
               'from_status', t.from_status, 'to_status', t.to_status, 'reason', t.reason,
               'actor', t.actor, 'details', t.details, 'created_at', t.created_at)
               ORDER BY t.created_at, t.id) AS history
    FROM memory_transitions t
    WHERE t.memory_item_id = m.id
) h ON true;

CREATE VIEW council_v_memory_history AS
SELECT t.id AS transition_id,
       m.id AS memory_item_id,
       m.thread_id,
       m.consolidation_id,
       m.node_version_id,
       t.from_status,
       t.to_status,
       t.reason,
       t.actor,
       t.details,
       t.created_at
FROM memory_transitions t
JOIN memory_items m ON m.id = t.memory_item_id;

-- ----------------------------------------------------------------- frontier

-- Open and tentative heads on live branches: the heads of the reentry packet
-- (council/sql/frontier.sql), uncapped.
CREATE VIEW council_v_frontier AS
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
       (SELECT count(*) FROM claims c
        WHERE c.node_version_id = nv.id AND c.claim_type IN ('originate', 'endorse')) AS support_claims,
       (SELECT count(*) FROM claims c WHERE c.node_version_id = nv.id AND c.claim_type = 'dispute') AS dispute_claims,
       (SELECT count(*) FROM claims c WHERE c.node_version_id = nv.id AND c.claim_type = 'abstain') AS abstentions,
       (SELECT count(*) FROM pending_actions p
        WHERE p.node_version_id = nv.id AND p.status = 'open') AS open_pending_actions,
       (SELECT count(*) FROM edges e WHERE e.from_version_id = nv.id AND e.kind = 'depends_on') AS depends_on,
       (SELECT count(*) FROM edges e JOIN node_version_states cs ON cs.id = e.from_version_id
        WHERE e.to_version_id = nv.id AND e.kind = 'contradicts'
          AND cs.status NOT IN ('killed', 'orphaned')) AS contradicted_by,
       (SELECT count(DISTINCT ci.evidence_id) FROM citations ci WHERE ci.node_version_id = nv.id) AS cited_evidence,
       (SELECT count(DISTINCT ci.evidence_id) FROM citations ci JOIN evidence e ON e.id = ci.evidence_id
        WHERE ci.node_version_id = nv.id AND e.validity IN ('challenged', 'invalidated')) AS unsound_evidence,
       nv.created_at
FROM logical_nodes ln
JOIN node_versions nv ON nv.id = ln.head_version_id
JOIN node_version_states s ON s.id = nv.id
JOIN branches b ON b.id = ln.branch_id
WHERE s.status IN ('open', 'tentative') AND b.status IN ('active', 'merged');

-- ------------------------------------------------- observation questions

-- 1. Which endorsements were independent? Every support claim (originate,
-- endorse) with its independence group: independent when its group holds it
-- alone, inherited when it shares the group (and so one vote) with others.
CREATE VIEW council_v_endorsement_independence AS
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
    FROM council_independence_links_v1(m.node_version_id) il
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

-- 2. Which evidence did each agent rely on? Every citation an agent run made,
-- with the role and reading it gave the evidence on that branch.
CREATE VIEW council_v_evidence_reliance AS
SELECT nv.thread_id,
       ci.run_id,
       r.agent,
       r.provider,
       ci.node_version_id,
       nv.logical_node_id,
       ci.branch_id,
       ci.claim_id,
       c.claim_type,
       ci.id AS citation_id,
       ci.evidence_id,
       te.title AS evidence_title,
       e.content_sha256 AS evidence_sha256,
       e.validity AS evidence_validity,
       ci.role,
       ci.interpretation,
       ci.created_at
FROM citations ci
JOIN agent_runs r ON r.id = ci.run_id
JOIN node_versions nv ON nv.id = ci.node_version_id
JOIN evidence e ON e.id = ci.evidence_id
LEFT JOIN thread_evidence te ON te.thread_id = nv.thread_id AND te.evidence_id = ci.evidence_id
LEFT JOIN claims c ON c.id = ci.claim_id;

-- 3. What did each branch diverge over? Every fork with its divergence type
-- and what the ledger holds about it.
CREATE VIEW council_v_branch_divergence AS
SELECT b.thread_id,
       b.id AS branch_id,
       b.label,
       b.kind,
       b.divergence_type,
       b.status,
       (SELECT t.reason FROM branch_transitions t WHERE t.branch_id = b.id
        ORDER BY t.created_at DESC, t.id DESC LIMIT 1) AS status_reason,
       b.parent_branch_id,
       pb.label AS parent_label,
       b.fork_version_id,
       fv.logical_node_id AS fork_logical_node_id,
       fv.content AS fork_content,
       b.objective,
       th.objective AS thread_objective,
       b.created_by_run_id,
       cr.agent AS created_by_agent,
       (SELECT count(*) FROM node_versions x WHERE x.branch_id = b.id) AS node_versions,
       (SELECT count(DISTINCT ci.evidence_id) FROM citations ci
        WHERE ci.branch_id = b.id
          AND EXISTS (SELECT 1 FROM citations pc
                      WHERE pc.branch_id = b.parent_branch_id AND pc.evidence_id = ci.evidence_id)
          AND NOT EXISTS (SELECT 1 FROM citations pc
                          WHERE pc.branch_id = b.parent_branch_id AND pc.evidence_id = ci.evidence_id
                            AND pc.role = ci.role AND pc.interpretation = ci.interpretation))
           AS reinterpreted_evidence,
       ARRAY(SELECT p.acceptance_condition FROM pending_actions p WHERE p.branch_id = b.id
             ORDER BY p.created_at, p.id) AS acceptance_conditions,
       mg.target_branch_id AS merged_into_branch_id,
       mg.rationale AS merge_rationale,
       mg.preferred_version_id,
       b.created_at
FROM branches b
JOIN threads th ON th.id = b.thread_id
LEFT JOIN branches pb ON pb.id = b.parent_branch_id
LEFT JOIN node_versions fv ON fv.id = b.fork_version_id
LEFT JOIN agent_runs cr ON cr.id = b.created_by_run_id
LEFT JOIN merges mg ON mg.source_branch_id = b.id
WHERE b.kind <> 'main';

-- 4. Did an agent see another's conclusion before forming its own? Every
-- claim a run made on a node version where a run whose stance it was shown
-- also claimed (the exposure names that claim, or no claim in particular).
CREATE VIEW council_v_exposure_before_claim AS
SELECT nv.thread_id,
       own.node_version_id,
       nv.logical_node_id,
       own.run_id,
       r.agent,
       own.id AS claim_id,
       own.claim_type,
       own.created_at AS claimed_at,
       e.id AS exposure_id,
       e.channel,
       e.created_at AS exposed_at,
       e.exposed_to_run_id,
       sr.agent AS exposed_to_agent,
       seen.id AS seen_claim_id,
       seen.claim_type AS seen_claim_type,
       seen.created_at AS seen_claimed_at,
       (e.created_at <= own.created_at AND seen.created_at <= own.created_at) AS saw_before_claiming
FROM run_exposures e
JOIN claims own ON own.run_id = e.run_id
JOIN claims seen ON seen.run_id = e.exposed_to_run_id AND seen.node_version_id = own.node_version_id
JOIN agent_runs r ON r.id = own.run_id
JOIN agent_runs sr ON sr.id = seen.run_id
JOIN node_versions nv ON nv.id = own.node_version_id
WHERE e.kind = 'stance'
  AND (e.claim_id IS NULL OR e.claim_id = seen.id)
  AND (e.node_version_id IS NULL OR e.node_version_id = own.node_version_id);

-- 5. Was each convergence independent or inherited? Support runs against
-- support groups, per node version that has claims.
CREATE VIEW council_v_convergence AS
SELECT m.thread_id,
       m.node_version_id,
       m.logical_node_id,
       nv.version_no,
       nv.content,
       s.status AS node_status,
       count(*) FILTER (WHERE m.group_kind = 'support') AS support_runs,
       count(DISTINCT m.group_id) FILTER (WHERE m.group_kind = 'support') AS support_groups,
       count(*) FILTER (WHERE m.group_kind = 'dispute') AS dispute_runs,
       count(DISTINCT m.group_id) FILTER (WHERE m.group_kind = 'dispute') AS dispute_groups,
       count(*) FILTER (WHERE m.claim_type = 'abstain') AS abstentions,
       coalesce(array_agg(DISTINCT m.provider COLLATE "C" ORDER BY m.provider COLLATE "C")
                FILTER (WHERE m.group_kind = 'support'), ARRAY[]::text[]) AS support_providers,
       CASE
           WHEN count(*) FILTER (WHERE m.group_kind = 'support') = 0 THEN 'no_support'
           WHEN count(*) FILTER (WHERE m.group_kind = 'support') = 1 THEN 'single_support'
           WHEN count(DISTINCT m.group_id) FILTER (WHERE m.group_kind = 'support')
                = count(*) FILTER (WHERE m.group_kind = 'support') THEN 'independent'
           WHEN count(DISTINCT m.group_id) FILTER (WHERE m.group_kind = 'support') = 1 THEN 'inherited'
           ELSE 'partly_inherited'
       END AS convergence,
       (SELECT c.id FROM consolidations c
        WHERE c.node_version_id = m.node_version_id AND c.status = 'live') AS live_consolidation_id
FROM council_v_independence_members m
JOIN node_versions nv ON nv.id = m.node_version_id
JOIN node_version_states s ON s.id = m.node_version_id
GROUP BY m.thread_id, m.node_version_id, m.logical_node_id, nv.version_no, nv.content, s.status;

-- ---------------------------------------------------------------- comments

COMMENT ON VIEW council_v_threads IS 'Thread overview with counts (schema/views.md)';
COMMENT ON VIEW council_v_runs IS 'Agent runs with lineage, mode, status and request hash (schema/views.md)';
COMMENT ON VIEW council_v_claims IS 'Claims with their run and node version (schema/views.md)';
COMMENT ON VIEW council_v_independence_links IS
    'Links between runs that claimed on one node version, under the pinned grouping (schema/views.md)';
COMMENT ON VIEW council_v_independence_members IS
    'Every claiming run with its component and independence group, computed now (schema/views.md)';
COMMENT ON VIEW council_v_independence_groups IS
    'Current independence groups per node version, as `council groups` computes them (schema/views.md)';
COMMENT ON VIEW council_v_consolidation_groups IS
    'The groups each consolidation recorded when it was decided (schema/views.md)';
COMMENT ON VIEW council_v_decisions IS 'Consolidations and recorded not_ready evaluations (schema/views.md)';
COMMENT ON VIEW council_v_decision_reasons IS 'One row per rule of every recorded decision (schema/views.md)';
COMMENT ON VIEW council_v_memory_items IS 'Memory items with their status history (schema/views.md)';
COMMENT ON VIEW council_v_memory_history IS 'Every memory status transition (schema/views.md)';
COMMENT ON VIEW council_v_frontier IS 'Open and tentative heads on live branches (schema/views.md)';
COMMENT ON VIEW council_v_endorsement_independence IS
    'Question 1: which endorsements were independent (schema/views.md)';
COMMENT ON VIEW council_v_evidence_reliance IS
    'Question 2: which evidence each agent relied on, with role and reading (schema/views.md)';
COMMENT ON VIEW council_v_branch_divergence IS 'Question 3: what each branch diverged over (schema/views.md)';
COMMENT ON VIEW council_v_exposure_before_claim IS
    'Question 4: whether a run saw another''s conclusion before forming its own (schema/views.md)';
COMMENT ON VIEW council_v_convergence IS
    'Question 5: whether each convergence was independent or inherited (schema/views.md)';

-- ------------------------------------------------------ the dashboard role
--
-- Roles belong to the cluster, not the database: create it only when missing
-- (another database on the same server may have created it, even at the same
-- moment). No password here: an operator sets one (docs/operations/dashboards.md).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'council_dashboard') THEN
        CREATE ROLE council_dashboard LOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;  -- created concurrently by a migration of another database
END;
$$;

DO $$
BEGIN
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO council_dashboard', current_database());
END;
$$;
GRANT USAGE ON SCHEMA public TO council_dashboard;
-- SELECT on each view by name, never ALTER DEFAULT PRIVILEGES: a table added
-- later must not become readable by accident. The views read the tables with
-- their owner's rights, so no table grant is needed; the grouping functions
-- they call must be executable by whoever reads them, and by nobody else.
REVOKE ALL ON FUNCTION council_independence_links_v1(uuid), council_independence_members_v1(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_independence_links_v1(uuid), council_independence_members_v1(uuid)
    TO council_dashboard;
GRANT SELECT ON
    council_v_threads, council_v_runs, council_v_claims,
    council_v_independence_links, council_v_independence_members, council_v_independence_groups,
    council_v_consolidation_groups, council_v_decisions, council_v_decision_reasons,
    council_v_memory_items, council_v_memory_history, council_v_frontier,
    council_v_endorsement_independence, council_v_evidence_reliance, council_v_branch_divergence,
    council_v_exposure_before_claim, council_v_convergence
TO council_dashboard;
