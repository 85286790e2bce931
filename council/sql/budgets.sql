-- add_thread_budget --
-- Append a thread's budget: the latest row is in force (usd NULL removes the budget).
INSERT INTO thread_budgets (thread_id, usd, reason, actor)
VALUES (:thread_id, CAST(:usd AS numeric), :reason, :actor)

-- thread_budget_history --
-- A thread's budget changes, oldest first (the last is in force).
SELECT usd, reason, actor, created_at AS set_at
FROM thread_budgets WHERE thread_id = :thread_id
ORDER BY created_at, id

-- budget_state --
-- A thread's budget in force, what its runs cost (spent: every billed call, a failed or
-- retried run's too) and what its dispatches still hold (reserved). Reserved is derived,
-- never updated: each reservation holds run_usd for every
-- run of its agent in its dispatch that has not ended (rounds not yet created included);
-- an ended run counts its recorded cost as spent instead (a failed run without a cost
-- releases its share), and a run under a reservation that succeeded without a recorded
-- cost is counted at its reserved price. Read under lock_thread_budget by a dispatch.
WITH budget AS (
    SELECT usd FROM thread_budgets WHERE thread_id = :thread_id
    ORDER BY created_at DESC, id DESC LIMIT 1
), held AS (
    SELECT b.run_usd, b.runs,
           count(r.id) FILTER (WHERE r.status IN ('succeeded', 'failed')) AS ended,
           count(r.id) FILTER (WHERE r.status = 'succeeded' AND r.cost_usd IS NULL) AS ended_unpriced
    FROM budget_reservations b
    LEFT JOIN agent_runs r ON r.dispatch_id = b.dispatch_id AND r.agent = b.agent
    WHERE b.thread_id = :thread_id
    GROUP BY b.dispatch_id, b.agent, b.run_usd, b.runs
)
SELECT (SELECT usd FROM budget) AS usd,
       (SELECT coalesce(sum(cost_usd), 0) FROM agent_runs WHERE thread_id = :thread_id)
         + (SELECT coalesce(sum(run_usd * ended_unpriced), 0) FROM held) AS spent_usd,
       (SELECT coalesce(sum(run_usd * greatest(runs - ended, 0)), 0) FROM held) AS reserved_usd

-- add_reservations --
-- A dispatch's reservation, one row per agent (taken under lock_thread_budget, in the
-- dispatch's transaction, before its runs are enqueued).
INSERT INTO budget_reservations (dispatch_id, agent, thread_id, model, runs, prompt_tokens,
                                 max_output_tokens, run_usd, dispatch_budget_usd, thread_budget_usd)
SELECT :dispatch_id, a.agent, :thread_id, a.model, a.runs, a.prompt_tokens, a.max_output_tokens,
       a.run_usd, CAST(:dispatch_budget_usd AS numeric), CAST(:thread_budget_usd AS numeric)
FROM jsonb_to_recordset(CAST(:agents AS jsonb))
     AS a(agent text, model text, runs integer, prompt_tokens integer, max_output_tokens integer,
          run_usd numeric)

-- dispatch_reservation --
-- What a dispatch reserved, one row per agent, as it was recorded (none: the dispatch ran
-- under no budget); `ask` reports it beside what the runs cost.
SELECT agent, model, runs, prompt_tokens, max_output_tokens, run_usd, dispatch_budget_usd
FROM budget_reservations WHERE dispatch_id = :dispatch_id
ORDER BY agent
