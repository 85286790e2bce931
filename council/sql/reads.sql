-- all_threads --
-- Every thread, oldest first (`council thread list`, GET /threads, the MCP
-- list_threads tool): the columns of council.domain.results.threads.Thread.
SELECT id, title, objective, rule_set_id, grouping_algorithm_id, created_at
FROM threads
ORDER BY created_at, id
