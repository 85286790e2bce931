-- thread_row --
-- One thread, every column.
SELECT * FROM threads WHERE id = :thread_id

-- rule_set_named --
-- Whether a rule set with this id exists (a new thread is pinned to it).
SELECT id FROM rule_sets WHERE id = :key

-- grouping_algorithm_named --
-- Whether a grouping algorithm with this id exists (a new thread is pinned to it).
SELECT id FROM grouping_algorithms WHERE id = :key

-- add_thread --
-- A thread: its question, objective, and the rule set and grouping version it is pinned to.
INSERT INTO threads (title, objective, rule_set_id, grouping_algorithm_id)
VALUES (:title, :objective, :rule_set_id, :grouping_algorithm_id)
RETURNING *

-- add_main_branch --
-- The main branch of a new thread.
INSERT INTO branches (thread_id, kind, label) VALUES (:thread_id, 'main', 'main') RETURNING id

-- main_branch --
-- A thread's main branch.
SELECT id FROM branches WHERE thread_id = :thread_id AND kind = 'main'

-- thread_counts --
-- How much a thread holds: branches, logical nodes, node versions, runs, evidence and events.
SELECT (SELECT count(*) FROM branches WHERE thread_id = :thread_id) AS branches,
       (SELECT count(*) FROM logical_nodes WHERE thread_id = :thread_id) AS nodes,
       (SELECT count(*) FROM node_versions WHERE thread_id = :thread_id) AS node_versions,
       (SELECT count(*) FROM agent_runs WHERE thread_id = :thread_id) AS runs,
       (SELECT count(*) FROM thread_evidence WHERE thread_id = :thread_id) AS evidence,
       (SELECT count(*) FROM events WHERE thread_id = :thread_id) AS events

-- thread_cost --
-- What a thread's runs cost: summed USD over the priced runs, summed prompt and completion
-- tokens (an agent CLI's input/output tokens are recorded under these names), and how many
-- ended runs were priced and how many were not (cost_usd NULL: a call could not be priced),
-- with the reasons those runs give (usage.unpriced_reason: which model has no price).
SELECT coalesce(sum(cost_usd), 0)::float8 AS usd,
       coalesce(sum((usage ->> 'prompt_tokens')::bigint), 0)::bigint AS prompt_tokens,
       coalesce(sum((usage ->> 'completion_tokens')::bigint), 0)::bigint AS completion_tokens,
       count(*) FILTER (WHERE cost_usd IS NOT NULL) AS runs_priced,
       count(*) FILTER (WHERE cost_usd IS NULL AND usage IS NOT NULL) AS runs_unpriced,
       coalesce(array_agg(DISTINCT coalesce(usage ->> 'unpriced_reason', 'no price for ' || model))
                FILTER (WHERE cost_usd IS NULL AND usage IS NOT NULL), '{}') AS unpriced_reasons
FROM agent_runs
WHERE thread_id = :thread_id

-- graph_versions --
-- Every node version of a thread with its status and number of claims, by creation.
SELECT v.id AS version_id, v.logical_node_id, v.version_no, v.branch_id, v.parent_version_id, v.content,
       v.created_by_run_id, v.created_at, s.status, coalesce(c.claims, 0) AS claims
FROM node_versions v
JOIN node_version_states s ON s.id = v.id
LEFT OUTER JOIN (SELECT node_version_id, count(*) AS claims FROM claims GROUP BY node_version_id) c
    ON c.node_version_id = v.id
WHERE v.thread_id = :thread_id
ORDER BY v.created_at, v.logical_node_id, v.version_no

-- graph_heads --
-- Every logical node of a thread with its branch and head version, by creation.
SELECT id, branch_id, head_version_id FROM logical_nodes
WHERE thread_id = :thread_id
ORDER BY created_at, id

-- graph_edges --
-- A thread's edges, by creation.
SELECT id, kind, from_version_id, to_version_id, branch_id, created_by_run_id FROM edges
WHERE thread_id = :thread_id
ORDER BY created_at, id

-- graph_branches --
-- A thread's branches, by creation.
SELECT id, kind, label, status, parent_branch_id, divergence_type FROM branches
WHERE thread_id = :thread_id
ORDER BY created_at, id

-- graph_consolidations --
-- A thread's consolidations, by creation.
SELECT id, logical_node_id, node_version_id, status, created_at FROM consolidations
WHERE thread_id = :thread_id
ORDER BY created_at, id

-- graph_memory --
-- A thread's memory items, by creation.
SELECT id, consolidation_id, logical_node_id, node_version_id, status, status_changed_at FROM memory_items
WHERE thread_id = :thread_id
ORDER BY created_at, id
