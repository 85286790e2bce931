-- Council ledger, revision 0016: the update guard of agent_runs and
-- cascade_continuations in one pass (docs/architecture.md §2).
--
-- council_guard_update_v1 removed each column it lets change from a JSON copy
-- of the old and of the new row, one column at a time: a run's row carries its
-- whole request (about 10 KB of JSON), so every update of a run rebuilt that
-- document 26 times, about 0.3 ms of the server's CPU each, and a run's row is
-- updated three times while it runs. Version 3 means the same — a column not
-- named may not change, a once: column only from NULL — and removes the named
-- columns from each copy in one pass. The derived: form of version 1 (trusting
-- the trigger depth) is not carried over: version 2 replaced it (revision 0007).

CREATE FUNCTION council_guard_update_v3() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    o jsonb := to_jsonb(OLD);
    n jsonb := to_jsonb(NEW);
    arg text;
    col text;
    named text[] := '{}';
BEGIN
    FOREACH arg IN ARRAY TG_ARGV LOOP
        IF arg LIKE 'once:%' THEN
            col := substr(arg, 6);
            IF (o -> col) <> 'null'::jsonb AND (o -> col) IS DISTINCT FROM (n -> col) THEN
                RAISE EXCEPTION 'council: %.% is write-once', TG_TABLE_NAME, col
                    USING ERRCODE = 'CN001';
            END IF;
        ELSIF arg LIKE '%:%' THEN
            RAISE EXCEPTION 'council: council_guard_update_v3 does not know the argument %', arg;
        ELSE
            col := arg;
        END IF;
        named := named || col;
    END LOOP;
    IF (o - named) <> (n - named) THEN
        RAISE EXCEPTION 'council: UPDATE on % is refused: only % may change',
            TG_TABLE_NAME, array_to_string(TG_ARGV, ', ')
            USING ERRCODE = 'CN001';
    END IF;
    RETURN NEW;
END;
$$;
REVOKE ALL ON FUNCTION council_guard_update_v3() FROM PUBLIC;

DROP TRIGGER agent_runs_guard ON agent_runs;
CREATE TRIGGER agent_runs_guard BEFORE UPDATE ON agent_runs FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v3(
        'status', 'attempt', 'lease_owner', 'lease_expires_at', 'usage', 'cost_usd',
        'error', 'lint_findings', 'started_at', 'finished_at',
        'once:request_sha256', 'once:input_fingerprint', 'once:request');

DROP TRIGGER cascade_continuations_guard ON cascade_continuations;
CREATE TRIGGER cascade_continuations_guard BEFORE UPDATE ON cascade_continuations FOR EACH ROW
    EXECUTE FUNCTION council_guard_update_v3('once:continued_at');
