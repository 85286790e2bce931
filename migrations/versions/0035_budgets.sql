-- Budgets (docs/guide/budgets.md): a thread's budget, appended per change (the latest row
-- is in force; usd NULL removes it), and the reservations a dispatch takes under the
-- thread's budget lock before any run is enqueued.
CREATE TABLE thread_budgets (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    thread_id uuid NOT NULL REFERENCES threads (id),
    usd numeric(12, 6) CHECK (usd >= 0),
    reason text NOT NULL DEFAULT '',
    actor text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE thread_budgets IS
    'A thread''s budget in USD, one row per change; the latest is in force (usd NULL: no budget)';
CREATE INDEX thread_budgets_thread_idx ON thread_budgets (thread_id, created_at);

-- One row per dispatch and agent: the agent's runs (one per round) are each reserved at
-- run_usd, estimated from prompt tokens and max output tokens at the model's price. What
-- is still reserved is derived, never updated: run_usd for each of the agent's runs in the
-- dispatch that has not ended (a round not yet created included); an ended run counts its
-- recorded cost instead (a failed run without one releases its reservation).
CREATE TABLE budget_reservations (
    dispatch_id uuid NOT NULL REFERENCES dispatches (id),
    agent text NOT NULL,
    thread_id uuid NOT NULL REFERENCES threads (id),
    model text NOT NULL,
    runs integer NOT NULL CHECK (runs >= 1),
    prompt_tokens integer NOT NULL CHECK (prompt_tokens >= 0),
    max_output_tokens integer NOT NULL CHECK (max_output_tokens >= 0),
    run_usd numeric(12, 6) NOT NULL CHECK (run_usd >= 0),
    dispatch_budget_usd numeric(12, 6) CHECK (dispatch_budget_usd >= 0),
    thread_budget_usd numeric(12, 6) CHECK (thread_budget_usd >= 0),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (dispatch_id, agent)
);
COMMENT ON TABLE budget_reservations IS
    'What a dispatch reserved per agent before its runs were enqueued (docs/guide/budgets.md)';
CREATE INDEX budget_reservations_thread_idx ON budget_reservations (thread_id);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['thread_budgets', 'budget_reservations'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I '
                       'FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1()', t || '_immutable', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1()', t || '_no_truncate', t);
    END LOOP;
END;
$$;

GRANT SELECT, INSERT ON thread_budgets, budget_reservations TO council_app;
