-- all_threads --
-- Every thread, oldest first (`council thread list`, GET /threads, the MCP
-- list_threads tool): the columns of council.domain.results.threads.ThreadListed — the
-- thread, its runs (how many, how many still in flight, what they cost and how many
-- could not be priced) and its status: running (a run in flight), open (a head open or
-- tentative), resolved (every head decided) or empty (no node yet).
SELECT t.id, t.title, t.objective, t.rule_set_id, t.grouping_algorithm_id, t.created_at,
       coalesce(r.runs, 0) AS runs, coalesce(r.in_flight, 0) AS runs_in_flight,
       coalesce(r.usd, 0)::float8 AS cost_usd, coalesce(r.unpriced, 0) AS runs_unpriced,
       CASE WHEN coalesce(r.in_flight, 0) > 0 THEN 'running'
            WHEN coalesce(h.open, 0) > 0 THEN 'open'
            WHEN coalesce(h.heads, 0) > 0 THEN 'resolved'
            ELSE 'empty' END AS status
FROM threads t
LEFT JOIN (
    SELECT thread_id, count(*) AS runs,
           count(*) FILTER (WHERE status NOT IN ('succeeded', 'failed')) AS in_flight,
           sum(cost_usd) AS usd,
           count(*) FILTER (WHERE cost_usd IS NULL AND usage IS NOT NULL) AS unpriced
    FROM agent_runs GROUP BY thread_id
) r ON r.thread_id = t.id
LEFT JOIN (
    SELECT ln.thread_id, count(*) AS heads,
           count(*) FILTER (WHERE s.status IN ('open', 'tentative')) AS open
    FROM logical_nodes ln JOIN node_version_states s ON s.id = ln.head_version_id
    GROUP BY ln.thread_id
) h ON h.thread_id = t.id
ORDER BY t.created_at, t.id
