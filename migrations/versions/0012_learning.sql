-- Council ledger, revision 0012: learning from the council's own record (issue 20).
--
-- 1. Rule-set provenance. A rule set stored after a counterfactual replay
--    (`council replay --rule-set`) records which report motivated it: the
--    report's digest, its scope (thread, since) and the decisions it changed.
--    Written once with the rule set, never changed.
-- 2. Rule-set pins. Which rule set a new thread is pinned to: the latest row
--    (none at all: council-default-v1). Appended, never changed; a thread keeps
--    the rule set it was created with.
-- 3. Views for dashboards: council_v_stance_changes and council_v_calibration,
--    read from the core tables alone (schema/views.md).

CREATE TABLE rule_set_provenance (
    rule_set_id text PRIMARY KEY REFERENCES rule_sets (id),
    report_sha256 text NOT NULL CHECK (report_sha256 ~ '^[0-9a-f]{64}$'),
    thread_id uuid REFERENCES threads (id),
    since timestamptz,
    compared integer NOT NULL CHECK (compared >= 0),
    changed jsonb NOT NULL CHECK (jsonb_typeof(changed) = 'array'),
    actor text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE rule_set_provenance IS
    'The counterfactual report (council replay --rule-set) that motivated storing a rule set';

CREATE TABLE rule_set_pins (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    rule_set_id text NOT NULL REFERENCES rule_sets (id),
    actor text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE rule_set_pins IS
    'The rule set new threads are pinned to: the latest row (none: council-default-v1)';

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['rule_set_provenance', 'rule_set_pins'] LOOP
        EXECUTE format(
            'CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I '
            'FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1()',
            t || '_immutable', t);
        EXECUTE format(
            'CREATE TRIGGER %I BEFORE TRUNCATE ON %I '
            'FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1()',
            t || '_no_truncate', t);
    END LOOP;
END;
$$;

GRANT SELECT, INSERT ON rule_set_provenance, rule_set_pins TO council_app;
