-- A run's status moves only forward: created -> queued -> running -> succeeded | failed
-- (running -> queued when an attempt is released for a retry; running -> running when a
-- new attempt takes over an expired lease; created or queued -> failed for a run that could
-- not start). Nothing moves back to created, and a succeeded or failed run is final: its
-- status, attempt, lease, usage, cost, reason, lint findings and times never change again
-- (written once, with the status that ended it; the request columns stay write-once under
-- 0001's guard). A run's attempt number never falls.
CREATE FUNCTION council_run_moves_forward_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status IN ('succeeded', 'failed') AND (
        NEW.status, NEW.attempt, NEW.lease_owner, NEW.lease_expires_at, NEW.usage, NEW.cost_usd,
        NEW.error, NEW.lint_findings, NEW.started_at, NEW.finished_at
    ) IS DISTINCT FROM (
        OLD.status, OLD.attempt, OLD.lease_owner, OLD.lease_expires_at, OLD.usage, OLD.cost_usd,
        OLD.error, OLD.lint_findings, OLD.started_at, OLD.finished_at
    ) THEN
        RAISE EXCEPTION 'run % is %: a finished run is never rewritten', OLD.id, OLD.status
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NEW.status = 'created' AND OLD.status <> 'created' THEN
        RAISE EXCEPTION 'run % cannot move from % back to created', OLD.id, OLD.status
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NEW.attempt < OLD.attempt THEN
        RAISE EXCEPTION 'run % attempt cannot fall from % to %', OLD.id, OLD.attempt, NEW.attempt
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER agent_runs_move_forward BEFORE UPDATE ON agent_runs FOR EACH ROW
    EXECUTE FUNCTION council_run_moves_forward_v1();
