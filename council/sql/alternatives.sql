-- add_option_set --
-- The options of one multiple-choice question (revision 0040): one alternative set. The
-- members follow (add_option_members), in the same transaction.
INSERT INTO option_sets (thread_id, origin, actor) VALUES (:thread_id, :origin, :actor) RETURNING id

-- add_option_members --
-- The options of a set (JSON array :members of logical_node_id, label, ordinal).
INSERT INTO option_set_members (logical_node_id, option_set_id, thread_id, label, ordinal)
SELECT m.logical_node_id, CAST(:option_set_id AS uuid), CAST(:thread_id AS uuid), m.label, m.ordinal
FROM jsonb_to_recordset(CAST(:members AS jsonb)) AS m(logical_node_id uuid, label text, ordinal integer)

-- alternatives_guard --
-- Before a write that adds a contradicts edge on a thread (:thread_id), when the thread's rule
-- set has exclusive_alternatives, take the thread's alternatives key (exclusive, until the
-- transaction ends: council_alternatives_lock_key_v1, revision 0040), the key every
-- committer deciding a version of the thread holds, so that what edge_sets reads next
-- stays true until the edge is written; taken before any node key, as the committer does.
-- Whether the thread is exclusive (its rule set never changes).
SELECT CASE WHEN rs.body @> '{"exclusive_alternatives": true}'
            THEN pg_advisory_xact_lock(council_alternatives_lock_key_v1(th.id)) IS NOT NULL
            ELSE false END AS exclusive
FROM threads th JOIN rule_sets rs ON rs.id = th.rule_set_id
WHERE th.id = :thread_id

-- edge_sets --
-- For each of :version_ids (the ends of contradicts edges about to be written): its logical
-- node, its alternative set's smallest member (the set's name in this statement) and the
-- members of that set holding a live consolidation (at most one under exclusive_alternatives).
SELECT nv.id AS version_id, nv.logical_node_id,
       (SELECT min(CAST(m AS text)) FROM council_alternative_set_v1(nv.logical_node_id) AS m) AS set_name,
       ARRAY(SELECT k.logical_node_id
             FROM council_alternative_set_v1(nv.logical_node_id) AS a(id)
             JOIN consolidations k ON k.logical_node_id = a.id AND k.status = 'live'
             ORDER BY k.logical_node_id) AS live
FROM node_versions nv
WHERE nv.id = ANY(CAST(:version_ids AS uuid[]))

-- add_edges_between --
-- Edges between existing versions of one thread (JSON array :edges of kind, from and to),
-- from an agent's output; an edge already recorded is the same fact and is not added twice.
INSERT INTO edges (thread_id, branch_id, kind, from_version_id, to_version_id, created_by_run_id)
SELECT CAST(:thread_id AS uuid), f.branch_id, e.kind, e.from_version_id, e.to_version_id, CAST(:run_id AS uuid)
FROM jsonb_to_recordset(CAST(:edges AS jsonb)) AS e(kind text, from_version_id uuid, to_version_id uuid)
JOIN node_versions f ON f.id = e.from_version_id
ON CONFLICT (from_version_id, to_version_id, kind) DO NOTHING
RETURNING id

-- alternative_links --
-- What joins the logical nodes of :thread_ids into alternative sets: each contradicts edge
-- (between its versions' nodes) and each option with its set, label and place; the
-- components are made by council/domain/alternatives.py::components. Every version of a
-- linked node comes with its node, so a reader keyed by versions (council eval) finds it.
SELECT CAST(l.thread_id AS text) AS thread_id, CAST(l.a AS text) AS a, CAST(l.b AS text) AS b,
       l.label, l.ordinal
FROM (
    SELECT e.thread_id, f.logical_node_id AS a, t.logical_node_id AS b, NULL::text AS label, NULL::int AS ordinal
    FROM edges e
    JOIN node_versions f ON f.id = e.from_version_id
    JOIN node_versions t ON t.id = e.to_version_id
    WHERE e.kind = 'contradicts' AND e.thread_id = ANY(CAST(:thread_ids AS uuid[]))
    UNION ALL
    SELECT o.thread_id, o.logical_node_id, CAST(o.option_set_id AS uuid), o.label, o.ordinal
    FROM option_set_members o
    WHERE o.thread_id = ANY(CAST(:thread_ids AS uuid[]))
) AS l
ORDER BY 1, 2, 3

-- alternative_versions --
-- The versions of the logical nodes of :thread_ids that are linked to another (by a
-- contradicts edge or an option set), each with its node.
SELECT CAST(nv.thread_id AS text) AS thread_id, CAST(nv.id AS text) AS version_id,
       CAST(nv.logical_node_id AS text) AS logical_node_id
FROM node_versions nv
WHERE nv.thread_id = ANY(CAST(:thread_ids AS uuid[]))
  AND (EXISTS (SELECT 1 FROM option_set_members o WHERE o.logical_node_id = nv.logical_node_id)
       OR EXISTS (SELECT 1 FROM node_versions x JOIN edges e ON e.from_version_id = x.id
                  WHERE x.logical_node_id = nv.logical_node_id AND e.kind = 'contradicts')
       OR EXISTS (SELECT 1 FROM node_versions x JOIN edges e ON e.to_version_id = x.id
                  WHERE x.logical_node_id = nv.logical_node_id AND e.kind = 'contradicts'))
ORDER BY 1, 2

-- rival_heads --
-- The head versions of the other members of the alternative sets of :version_ids' nodes,
-- on threads whose rule set has exclusive_alternatives (under no other do rivals weigh in
-- one another's decisions): a claim on one alternative, a contradicts edge or a retracted
-- consolidation changes each rival's decision (its derived disputes, the margin, the live
-- rival), so they are evaluated again.
SELECT DISTINCT ln.head_version_id AS version_id
FROM node_versions nv
JOIN threads th ON th.id = nv.thread_id
JOIN rule_sets rs ON rs.id = th.rule_set_id AND rs.body @> '{"exclusive_alternatives": true}'
CROSS JOIN LATERAL council_alternative_set_v1(nv.logical_node_id) AS a(id)
JOIN logical_nodes ln ON ln.id = a.id
WHERE nv.id = ANY(CAST(:version_ids AS uuid[]))
  AND a.id <> nv.logical_node_id
  AND ln.head_version_id IS NOT NULL
ORDER BY 1
