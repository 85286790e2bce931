-- A run's status moves only forward: created -> queued -> running -> succeeded | failed
-- (running -> queued when an attempt is released for a retry; running -> running when a
-- new attempt takes over an expired lease; created or queued -> failed for a run that could
-- not start). Nothing moves back to created, and a succeeded or failed run is final: none
-- of its columns changes again (its lint findings, usage, cost and reason are written once,
-- with the status that ended it). A run's attempt number never falls.
CREATE FUNCTION council_run_moves_forward_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status IN ('succeeded', 'failed') AND NEW IS DISTINCT FROM OLD THEN
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
