-- frontier --
-- The active frontier of a thread (docs/architecture.md §6): open and tentative heads on
-- every live branch (newest first, tentative before open, capped), their
-- depends_on chains (bounded depth), live counterarguments, open pending
-- actions, every evidence item of the thread as a reference (challenged or invalidated
-- first, then those a frontier version cites, then in the order they were attached), the
-- questions asked on the thread, unresolved objective forks, branch topology and memory.
-- One statement: one consistent view of the thread.
WITH RECURSIVE
br AS (
    SELECT b.id, b.kind, b.label, b.status, b.divergence_type, b.objective, b.parent_branch_id,
           b.fork_version_id, b.created_at
    FROM branches b WHERE b.thread_id = :thread_id
),
heads_all AS (
    SELECT ln.id AS logical_node_id, ln.head_version_id AS version_id, ln.branch_id,
           s.status, s.status_changed_at
    FROM logical_nodes ln
    JOIN node_version_states s ON s.id = ln.head_version_id
    JOIN br ON br.id = ln.branch_id AND br.status IN ('active', 'merged')
    WHERE ln.thread_id = :thread_id AND s.status IN ('open', 'tentative')
),
heads AS (
    SELECT * FROM heads_all
    ORDER BY (status = 'tentative') DESC, status_changed_at DESC, version_id
    LIMIT :head_limit
),
deps (root, version_id, depth, path) AS (
    SELECT h.version_id, e.to_version_id, 1, ARRAY[h.version_id, e.to_version_id]
    FROM heads h JOIN edges e ON e.from_version_id = h.version_id AND e.kind = 'depends_on'
    UNION ALL
    SELECT d.root, e.to_version_id, d.depth + 1, d.path || e.to_version_id
    FROM deps d JOIN edges e ON e.from_version_id = d.version_id AND e.kind = 'depends_on'
    WHERE d.depth < :dep_depth AND NOT e.to_version_id = ANY (d.path)
),
dep_rows AS (
    SELECT DISTINCT ON (d.root, d.version_id) d.root, d.version_id, d.depth
    FROM deps d ORDER BY d.root, d.version_id, d.depth
),
frontier_versions AS (
    SELECT version_id FROM heads
    UNION
    SELECT version_id FROM (SELECT version_id FROM dep_rows ORDER BY depth, version_id LIMIT :dep_limit) d
),
counter_nodes AS (
    SELECT e.to_version_id AS target, e.from_version_id AS version_id
    FROM edges e
    JOIN node_version_states s ON s.id = e.from_version_id AND s.status NOT IN ('killed', 'orphaned')
    WHERE e.kind = 'contradicts' AND e.to_version_id IN (SELECT version_id FROM heads)
),
disputes AS (
    SELECT c.node_version_id AS target, c.id AS claim_id, c.run_id, r.agent, r.provider, c.confidence,
           c.rationale
    FROM claims c JOIN agent_runs r ON r.id = c.run_id AND r.control_of IS NULL  -- a control is no one's dispute
    WHERE c.claim_type = 'dispute' AND c.node_version_id IN (SELECT version_id FROM heads)
),
cited AS (
    SELECT DISTINCT ci.node_version_id, ci.evidence_id
    FROM citations ci WHERE ci.node_version_id IN (SELECT version_id FROM frontier_versions)
      AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.id = ci.run_id AND r.control_of IS NOT NULL)
)
SELECT json_build_object(
    'thread', (SELECT row_to_json(t) FROM (
        SELECT id, title, objective, rule_set_id, grouping_algorithm_id FROM threads WHERE id = :thread_id) t),
    'high_water_event_id', (SELECT max(id) FROM events WHERE thread_id = :thread_id),
    'head_count', (SELECT count(*) FROM heads_all),
    'heads', (SELECT coalesce(json_agg(json_build_object(
            'version_id', h.version_id, 'logical_node_id', h.logical_node_id, 'branch_id', h.branch_id,
            'status', h.status, 'content', nv.content, 'version_no', nv.version_no,
            'support_claims', (SELECT count(*) FROM claims c JOIN agent_runs r ON r.id = c.run_id
                               WHERE c.node_version_id = h.version_id AND r.control_of IS NULL
                                 AND c.claim_type IN ('originate', 'endorse')),
            'dispute_claims', coalesce(dc.disputes, 0),
            -- The other alternatives of the head's set (revision 0040: contradicts edges and
            -- option sets): each rival's head, its status, whether its node holds a live
            -- consolidation. A structural fact about propositions, no stance.
            'rivals', (SELECT coalesce(json_agg(json_build_object(
                    'version_id', ln.head_version_id, 'status', s.status,
                    'consolidated', EXISTS (SELECT 1 FROM consolidations k
                                            WHERE k.logical_node_id = ln.id AND k.status = 'live'))
                    ORDER BY ln.id), '[]'::json)
                FROM council_alternative_set_v1(h.logical_node_id) AS a(id)
                JOIN logical_nodes ln ON ln.id = a.id
                JOIN node_version_states s ON s.id = ln.head_version_id
                WHERE ln.id <> h.logical_node_id))
        ORDER BY (h.status = 'tentative') DESC, h.status_changed_at DESC, h.version_id), '[]'::json)
        FROM heads h JOIN node_versions nv ON nv.id = h.version_id
        -- Counted once per head by grouping, not by rescanning every dispute for each head.
        LEFT JOIN (SELECT target, count(*) AS disputes FROM disputes GROUP BY target) dc
               ON dc.target = h.version_id),
    'dependencies', (SELECT coalesce(json_agg(json_build_object(
            'root', d.root, 'version_id', d.version_id, 'depth', d.depth, 'content', nv.content,
            'status', s.status) ORDER BY d.root, d.depth, d.version_id), '[]'::json)
        FROM dep_rows d
        JOIN frontier_versions f ON f.version_id = d.version_id
        JOIN node_versions nv ON nv.id = d.version_id
        JOIN node_version_states s ON s.id = d.version_id),
    'dependency_count', (SELECT count(*) FROM dep_rows),
    'counter_nodes', (SELECT coalesce(json_agg(json_build_object(
            'target', c.target, 'version_id', c.version_id, 'content', nv.content)
        ORDER BY c.target, c.version_id), '[]'::json)
        FROM (SELECT * FROM counter_nodes ORDER BY target, version_id LIMIT :counter_limit) c
        JOIN node_versions nv ON nv.id = c.version_id),
    'counter_node_count', (SELECT count(*) FROM counter_nodes),
    'disputes', (SELECT coalesce(json_agg(json_build_object(
            'target', d.target, 'claim_id', d.claim_id, 'run_id', d.run_id, 'agent', d.agent,
            'provider', d.provider, 'confidence', d.confidence::text, 'rationale', d.rationale)
        ORDER BY d.target, d.confidence DESC, d.claim_id), '[]'::json)
        FROM (SELECT * FROM disputes ORDER BY target, confidence DESC, claim_id LIMIT :counter_limit) d),
    'dispute_count', (SELECT count(*) FROM disputes),
    'actions', (SELECT coalesce(json_agg(json_build_object(
            'id', p.id, 'node_version_id', p.node_version_id, 'branch_id', p.branch_id,
            'description', p.description, 'acceptance_condition', p.acceptance_condition)
        ORDER BY p.created_at, p.id), '[]'::json)
        FROM (SELECT * FROM pending_actions WHERE thread_id = :thread_id AND status = 'open'
              ORDER BY created_at, id LIMIT :action_limit) p),
    'action_count', (SELECT count(*) FROM pending_actions WHERE thread_id = :thread_id AND status = 'open'),
    'evidence', (SELECT coalesce(json_agg(json_build_object(
            'id', t.id, 'title', t.title, 'sha256', t.sha256, 'validity', t.validity,
            'cited_by', coalesce(t.cited_by, '[]'::json)) ORDER BY t.n), '[]'::json)
        FROM (SELECT e.id, te.title, e.content_sha256 AS sha256, e.validity, x.cited_by,
                     row_number() OVER (ORDER BY (e.validity <> 'valid' AND e.validity <> 'reaffirmed') DESC,
                                                 x.cited_by IS NULL, te.created_at, e.id) AS n
              FROM thread_evidence te
              JOIN evidence e ON e.id = te.evidence_id
              LEFT JOIN (SELECT evidence_id, json_agg(node_version_id ORDER BY node_version_id) AS cited_by
                         FROM cited GROUP BY evidence_id) x ON x.evidence_id = e.id
              WHERE te.thread_id = :thread_id
              ORDER BY n LIMIT :evidence_limit) t),
    'evidence_count', (SELECT count(*) FROM thread_evidence WHERE thread_id = :thread_id),
    'questions', (SELECT coalesce(json_agg(q.payload ->> 'question' ORDER BY q.id), '[]'::json)
        FROM events q WHERE q.thread_id = :thread_id AND q.kind = 'thread.question_asked'),
    'branches', (SELECT coalesce(json_agg(row_to_json(br) ORDER BY br.created_at, br.id), '[]'::json) FROM br),
    'killed_reasons', (SELECT coalesce(json_object_agg(t.branch_id, t.reason), '{}'::json)
        FROM (SELECT DISTINCT ON (bt.branch_id) bt.branch_id, bt.reason FROM branch_transitions bt
              JOIN br ON br.id = bt.branch_id AND br.status = 'killed'
              ORDER BY bt.branch_id, bt.created_at DESC) t),
    'memory', (SELECT coalesce(json_agg(json_build_object(
            'id', m.id, 'node_version_id', m.node_version_id, 'consolidation_id', m.consolidation_id,
            'status', m.status, 'content', m.content,
            -- its rivals still open: the live counterarguments of what it states (revision 0040)
            'rivals', (SELECT coalesce(json_agg(ln.head_version_id ORDER BY ln.id), '[]'::json)
                FROM council_alternative_set_v1(m.logical_node_id) AS a(id)
                JOIN logical_nodes ln ON ln.id = a.id
                JOIN node_version_states s ON s.id = ln.head_version_id
                WHERE ln.id <> m.logical_node_id AND s.status IN ('open', 'tentative')))
            ORDER BY m.status_changed_at DESC, m.id), '[]'::json)
        FROM (SELECT * FROM memory_items WHERE thread_id = :thread_id
              AND status IN ('stable', 'provisional', 'contested', 'retracted')
              ORDER BY status_changed_at DESC, id LIMIT :memory_limit) m),
    'memory_count', (SELECT count(*) FROM memory_items WHERE thread_id = :thread_id
                     AND status IN ('stable', 'provisional', 'contested', 'retracted'))
) AS frontier

-- lint_items --
-- Everything in a thread a text may talk about, with the durable transitions
-- that back the guarded words: a live consolidation or stable memory
-- (settled), killed (rejected), an explicit merge choice (preferred).
SELECT 'node' AS kind, nv.id, nv.content AS text, ARRAY[CAST(nv.logical_node_id AS text)] AS aliases,
       (EXISTS (SELECT 1 FROM consolidations c WHERE c.node_version_id = nv.id AND c.status = 'live')
        OR EXISTS (SELECT 1 FROM memory_items m WHERE m.node_version_id = nv.id AND m.status = 'stable'))
           AS settled,
       s.status = 'killed' AS rejected,
       EXISTS (SELECT 1 FROM merges g WHERE g.preferred_version_id = nv.id) AS preferred
FROM node_versions nv JOIN node_version_states s ON s.id = nv.id
WHERE nv.thread_id = :thread_id
UNION ALL
SELECT 'branch', b.id, b.label || coalesce(' ' || b.objective, ''), ARRAY[]::text[],
       false, b.status = 'killed', b.status = 'merged'
FROM branches b WHERE b.thread_id = :thread_id AND b.kind <> 'main'
UNION ALL
SELECT 'evidence', e.id, te.title, ARRAY[]::text[], false, false, false
FROM thread_evidence te JOIN evidence e ON e.id = te.evidence_id
WHERE te.thread_id = :thread_id
