-- What runs cost, per thread, dispatch, agent, provider and model (schema/views.md).
-- Only runs that recorded usage (they ended with an answer or an invalid one) are counted;
-- usd sums the priced runs, runs_unpriced counts those whose model had no price (cost unknown).
CREATE OR REPLACE VIEW council_v_costs AS
SELECT thread_id, dispatch_id, agent, provider, model,
       count(*) AS runs,
       coalesce(sum((usage ->> 'prompt_tokens')::bigint), 0)::bigint AS prompt_tokens,
       coalesce(sum((usage ->> 'completion_tokens')::bigint), 0)::bigint AS completion_tokens,
       coalesce(sum(cost_usd), 0) AS usd,
       count(*) FILTER (WHERE cost_usd IS NOT NULL) AS runs_priced,
       count(*) FILTER (WHERE cost_usd IS NULL) AS runs_unpriced
FROM agent_runs
WHERE usage IS NOT NULL
GROUP BY thread_id, dispatch_id, agent, provider, model;
COMMENT ON VIEW council_v_costs IS 'Per thread, dispatch, agent, provider and model: runs, tokens, USD (schema/views.md)';
GRANT SELECT ON council_v_costs TO council_app, council_dashboard;
