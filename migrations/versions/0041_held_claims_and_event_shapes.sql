-- Council ledger, revision 0041: the database refuses what the application refuses
-- (docs/operations/security.md, issue 44).
--
-- As council_app (every CLI user, worker and web process) one transaction could insert an
-- endorsement on a succeeded worker run with a claim.added event whose payload was {}: it
-- committed, a support group formed on it, and every reader of the event log that read
-- the payload failed on that event for good. The application checked both; the database
-- checked neither.
--
-- 1. A claim is accepted only from a run that is live and held by the inserting
--    transaction. The writer marks what it holds: the statement that fences a run (locks
--    its row, checks the attempt still owns it and that it is running) also calls
--    council_hold_v1(run, attempt), which appends "run:attempt" to the transaction-local
--    setting council.held_runs. A statement-level trigger on claims then takes a share
--    lock on each claiming run and refuses the statement unless every run is running and
--    named there at its current attempt: a worker's fenced attempt, an MCP session's run,
--    a run recorded by hand still open (each holder's path fences before it writes).
--    A run that ended, failed, was taken over by a later attempt or was never fenced in
--    this transaction takes nothing. The one other writer is `council import`, which
--    writes an imported debate's finished runs and their claims together: a claim of a
--    run of mode 'imported' is accepted in the transaction that wrote that run.
--    Why a trigger and a setting rather than a SECURITY DEFINER function as the only
--    insert path: the trigger holds for every statement that inserts a claim (the
--    set-based add_claims, an originate claim, COPY), as council_app or as the owner,
--    with no second privilege story; the setting is local to the transaction, so
--    nothing held leaks into the next one. The mark is the writer's statement of what
--    it fenced, not a secret: a role that can run any SQL can fence a running run as a
--    worker would — what it can no longer do is claim on a run that is not live.
-- 2. Each event's payload fits its kind: event_shapes lists every kind with the keys
--    its payload always has and their JSON types (council/domain/event_shapes.py, the
--    same table; tests/integration/test_forged_claims.py keeps them equal); a
--    statement-level trigger refuses an unknown kind, a payload that is not an object,
--    a missing key or one of another type.
-- 3. A claim's claim.added event names the claim's own run and node version
--    (council_claim_has_event_v2, replacing v1 of revision 0030 on the same deferred
--    constraint trigger).

CREATE TABLE event_shapes (
    kind text PRIMARY KEY,
    required jsonb NOT NULL CHECK (jsonb_typeof(required) = 'object')
);
COMMENT ON TABLE event_shapes IS
    'Every event kind, with the keys its payload always has and their JSON types (revision 0041)';
INSERT INTO event_shapes (kind, required) VALUES
    ('action.added', '{"node_version_id": "string|null"}'),
    ('action.cancelled', '{"reason": "string"}'),
    ('action.satisfied', '{"reason": "string"}'),
    ('branch.abandoned', '{"reason": "string"}'),
    ('branch.forked', '{"kind": "string", "parent_branch_id": "string"}'),
    ('branch.killed', '{"reason": "string"}'),
    ('branch.merged', '{"merge_id": "string", "target_branch_id": "string"}'),
    ('claim.added', '{"citations": "number", "claim_type": "string", "confidence": "number", "node_version_id": "string", "run_id": "string"}'),
    ('consolidation.committed', '{"memory_item_id": "string", "node_version_id": "string", "snapshot_sha256": "string", "support_groups": "array"}'),
    ('consolidation.not_ready', '{"evaluation_id": "string", "failed": "array"}'),
    ('consolidation.superseded', '{"by_version_id": "string", "memory_item_id": "string"}'),
    ('dispatch.created', '{"agents": "array", "mode": "string", "rounds": "number"}'),
    ('evidence.added', '{"new_content": "boolean", "sha256": "string"}'),
    ('evidence.challenged', '{"affected": "number", "from": "string", "reason": "string"}'),
    ('evidence.invalidated', '{"affected": "number", "from": "string", "reason": "string"}'),
    ('evidence.reaffirmed', '{"affected": "number", "from": "string", "reason": "string"}'),
    ('memory.contested', '{"from": "string", "reason": "string|null"}'),
    ('memory.provisional', '{"from": "string", "reason": "string|null"}'),
    ('memory.retracted', '{"from": "string", "reason": "string|null"}'),
    ('memory.stable', '{"from": "string", "reason": "string|null"}'),
    ('memory.superseded', '{"from": "string", "reason": "string|null"}'),
    ('node.created', '{"branch_id": "string", "logical_node_id": "string", "status": "string"}'),
    ('node.resolved', '{"outcome": "boolean", "resolution_id": "string", "source": "string"}'),
    ('node.status_changed', '{"from": "string", "reason": "string", "to": "string"}'),
    ('node.versioned', '{"logical_node_id": "string", "parent_version_id": "string", "version_no": "number"}'),
    ('retraction.proposed', '{"consolidation_id": "string", "reason": "string"}'),
    ('retraction.restored', '{"consolidation_id": "string"}'),
    ('retraction.retracted', '{"consolidation_id": "string"}'),
    ('retraction.review_unfunded', '{"reason": "string"}'),
    ('retraction.review_unstaffed', '{"reviewers": "object"}'),
    ('retraction.superseded', '{"consolidation_id": "string"}'),
    ('retraction.voted', '{"proposal_id": "string", "run_id": "string", "vote": "string"}'),
    ('rule_set.pinned', '{}'),
    ('rule_set.stored', '{"sha256": "string"}'),
    ('run.begun', '{"agent": "string", "exposed_to": "array", "model": "string", "provider": "string"}'),
    ('run.failed', '{"attempt": "number"}'),
    ('run.output_applied', '{"claims": "number", "nodes": "number", "versions": "number"}'),
    ('run.recorded', '{"agent": "string", "exposed_to": "array", "model": "string", "provider": "string"}'),
    ('run.started', '{"attempt": "number", "exposures": "number", "request_sha256": "string"}'),
    ('run.succeeded', '{"attempt": "number"}'),
    ('thread.budget_set', '{"usd": "string|null"}'),
    ('thread.created', '{"grouping_algorithm_id": "string", "rule_set_id": "string", "title": "string"}'),
    ('thread.imported', '{"import_id": "string", "record_id": "string", "turns": "number"}'),
    ('thread.question_asked', '{"question": "string"}'),
    ('thread.review_set', '{"review": "string"}');
GRANT SELECT ON event_shapes TO council_app;

-- The kind of every new event is known and its payload has the keys of its shape, each of
-- its JSON type ("string|null" takes either). Statement level: one query per statement,
-- whatever the number of rows (a run's end appends its claims' events at once).
CREATE FUNCTION council_event_shape_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    SELECT a.id, a.kind,
           CASE WHEN s.kind IS NULL THEN 'no event kind ' || quote_literal(a.kind) || ' is known'
                WHEN jsonb_typeof(a.payload) IS DISTINCT FROM 'object'
                    THEN 'its payload is a JSON ' || coalesce(jsonb_typeof(a.payload), 'NULL') || ', not an object'
                ELSE 'its payload''s ' || quote_literal(k.key) || ' is missing or not a ' || k.type END AS why
    INTO bad
    FROM added a
    LEFT JOIN event_shapes s ON s.kind = a.kind
    LEFT JOIN LATERAL jsonb_each_text(s.required) AS k(key, type) ON jsonb_typeof(a.payload) = 'object'
    WHERE s.kind IS NULL
       OR jsonb_typeof(a.payload) IS DISTINCT FROM 'object'
       OR (k.key IS NOT NULL
           AND coalesce(jsonb_typeof(a.payload -> k.key), 'missing') <> ALL (string_to_array(k.type, '|')))
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'council: event % (%) does not fit its kind: %', bad.id, bad.kind, bad.why
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION council_event_shape_v1() FROM PUBLIC;

CREATE TRIGGER events_fit_their_kind AFTER INSERT ON events
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION council_event_shape_v1();

-- The writer's mark of a run it holds: called by the statement that fences the run.
CREATE FUNCTION council_hold_v1(run uuid, attempt integer) RETURNS boolean
    LANGUAGE sql VOLATILE AS $$
    SELECT set_config('council.held_runs',
                      coalesce(current_setting('council.held_runs', true), '') || ' ' || run || ':' || attempt,
                      true) IS NOT NULL
$$;
COMMENT ON FUNCTION council_hold_v1(uuid, integer) IS
    'Marks, for this transaction, that it fenced the run at this attempt: its claims are accepted (revision 0041)';
REVOKE ALL ON FUNCTION council_hold_v1(uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION council_hold_v1(uuid, integer) TO council_app;

CREATE FUNCTION council_claims_need_a_held_run_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    held text := coalesce(current_setting('council.held_runs', true), '') || ' ';
    mine bigint := CAST(CAST(pg_current_xact_id() AS text) AS bigint) % 4294967296;
    r record;
BEGIN
    FOR r IN
        SELECT a.id, a.status, a.attempt, a.mode, CAST(CAST(a.xmin AS text) AS bigint) AS made_by
        FROM agent_runs a
        WHERE a.id IN (SELECT DISTINCT c.run_id FROM added c)
        ORDER BY a.id
        FOR SHARE
    LOOP
        CONTINUE WHEN r.mode = 'imported' AND r.made_by = mine;
        IF r.status <> 'running' THEN
            RAISE EXCEPTION 'council: run % is %: a claim is accepted only from a run that is live and held', r.id, r.status
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF strpos(held, ' ' || r.id || ':' || r.attempt || ' ') = 0 THEN
            RAISE EXCEPTION 'council: run % (attempt %) is not held by this transaction: a claim is accepted only '
                'from a run that is live and held (its writer fences it first)', r.id, r.attempt
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION council_claims_need_a_held_run_v1() FROM PUBLIC;

CREATE TRIGGER claims_need_a_held_run AFTER INSERT ON claims
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION council_claims_need_a_held_run_v1();

-- Version 2 of revision 0030's check: the claim.added event of a claim also names its run
-- and node version (what every reader of a claim's event reads).
CREATE FUNCTION council_claim_has_event_v2() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM events
        WHERE kind = 'claim.added' AND subject_id = NEW.id::text
          AND payload ->> 'run_id' = NEW.run_id::text AND payload ->> 'node_version_id' = NEW.node_version_id::text
    ) THEN
        RAISE EXCEPTION 'claim % has no claim.added event naming its run and node version: a claim is written with its event', NEW.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION council_claim_has_event_v2() FROM PUBLIC;

DROP TRIGGER claims_have_their_event ON claims;
CREATE CONSTRAINT TRIGGER claims_have_their_event AFTER INSERT ON claims
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION council_claim_has_event_v2();
