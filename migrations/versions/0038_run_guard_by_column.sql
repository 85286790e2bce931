-- Council ledger, revision 0038: the run guard by column (issue 36; docs/architecture.md §2).
--
-- agent_runs_guard ran council_guard_update_v3 on every update of a run: a JSON copy of the
-- old and of the new row, the stored request (8-10 KB) included, less the named columns,
-- then compared. A run's row is updated three times or more while it runs (claim, stored
-- request, end), and the copies were about a third of those statements' server CPU.
--
-- Version 1 of the run guard means the same — a column not free to change may not change,
-- a write-once column only from NULL, the same errors — but is attached to the columns it
-- protects (UPDATE OF ...): PostgreSQL fires it only for an UPDATE whose SET names one of
-- them, so a claim or an end (which set only the free columns) costs nothing, and storing
-- the request compares the few columns it names. A column added to agent_runs later must
-- be named here or in the free list (tests/migrations/test_run_guard.py fails otherwise).
-- Free: status, attempt, lease_owner, lease_expires_at, usage, cost_usd, error,
-- lint_findings, started_at, finished_at (and council_run_moves_forward_v1 keeps a finished
-- run's from changing).

CREATE FUNCTION council_guard_agent_runs_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.request_sha256 IS NOT NULL THEN
        IF NEW.request_sha256 IS DISTINCT FROM OLD.request_sha256 THEN
            RAISE EXCEPTION 'council: agent_runs.request_sha256 is write-once' USING ERRCODE = 'CN001';
        END IF;
    END IF;
    IF OLD.input_fingerprint IS NOT NULL THEN
        IF NEW.input_fingerprint IS DISTINCT FROM OLD.input_fingerprint THEN
            RAISE EXCEPTION 'council: agent_runs.input_fingerprint is write-once' USING ERRCODE = 'CN001';
        END IF;
    END IF;
    IF OLD.request IS NOT NULL THEN
        IF NEW.request IS DISTINCT FROM OLD.request THEN
            RAISE EXCEPTION 'council: agent_runs.request is write-once' USING ERRCODE = 'CN001';
        END IF;
    END IF;
    IF (NEW.id, NEW.thread_id, NEW.dispatch_id, NEW.agent, NEW.model, NEW.provider, NEW.simulated,
        NEW.parent_run_id, NEW.round, NEW.mode, NEW.proposal_id, NEW.created_at, NEW.executor,
        NEW.control_of)
       IS DISTINCT FROM
       (OLD.id, OLD.thread_id, OLD.dispatch_id, OLD.agent, OLD.model, OLD.provider, OLD.simulated,
        OLD.parent_run_id, OLD.round, OLD.mode, OLD.proposal_id, OLD.created_at, OLD.executor,
        OLD.control_of)
    THEN
        RAISE EXCEPTION 'council: UPDATE on agent_runs is refused: only status, attempt, lease_owner, '
            'lease_expires_at, usage, cost_usd, error, lint_findings, started_at, finished_at, '
            'once:request_sha256, once:input_fingerprint, once:request may change'
            USING ERRCODE = 'CN001';
    END IF;
    RETURN NEW;
END;
$$;
REVOKE ALL ON FUNCTION council_guard_agent_runs_v1() FROM PUBLIC;

DROP TRIGGER agent_runs_guard ON agent_runs;
CREATE TRIGGER agent_runs_guard
    BEFORE UPDATE OF id, thread_id, dispatch_id, agent, model, provider, simulated, parent_run_id,
        round, mode, proposal_id, request_sha256, input_fingerprint, created_at, request, executor,
        control_of
    ON agent_runs FOR EACH ROW EXECUTE FUNCTION council_guard_agent_runs_v1();
