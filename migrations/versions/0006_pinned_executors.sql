-- Council ledger, revision 0006: what ran is what the run says ran (docs/architecture.md §7).
--
-- The executor is pinned at dispatch: the machine that dispatches resolves the
-- profile once and the run stores it (runtime, the model to call — council-sim/…
-- when simulated —, provider family, api_base, the *name* of the key variable,
-- non-secret parameters, CLI limits, simulated or not). A worker executes exactly
-- that or fails the run; it never resolves a profile from its own environment.
-- The column is set when the row is inserted and, absent from agent_runs_guard's
-- list of mutable columns, can never change. Runs created before this revision
-- (and runs recorded from outside, mode 'external') have none.
ALTER TABLE agent_runs ADD COLUMN executor jsonb;
-- The run's model, provider and simulated flag are the pinned executor's.
ALTER TABLE agent_runs ADD CONSTRAINT agent_runs_executor_pinned CHECK (
    executor IS NULL OR (
        jsonb_typeof(executor) = 'object'
        AND executor ->> 'model' = model
        AND executor ->> 'provider' = provider
        AND executor -> 'simulated' = to_jsonb(simulated)
    )
);

-- Who ran each attempt, kept after the run ends (the lease owner is cleared then):
-- one 'claimed' row written by the statement that claims the run, one 'ended' row
-- by the statement that finishes, releases or takes over the attempt. Append-only.
CREATE TABLE run_attempts (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    run_id uuid NOT NULL REFERENCES agent_runs (id),
    attempt integer NOT NULL CHECK (attempt >= 1),
    event text NOT NULL CHECK (event IN ('claimed', 'ended')),
    worker text NOT NULL CHECK (length(worker) > 0),
    status text CHECK (status IN ('succeeded', 'failed', 'released', 'lease_expired')),
    reason text,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (run_id, attempt, event),
    CHECK ((event = 'claimed') = (status IS NULL))
);

CREATE TRIGGER run_attempts_immutable BEFORE UPDATE OR DELETE ON run_attempts
    FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1();
CREATE TRIGGER run_attempts_no_truncate BEFORE TRUNCATE ON run_attempts
    FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1();
