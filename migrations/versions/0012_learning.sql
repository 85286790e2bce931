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

-- ------------------------------------------------------ stance changes (issue 20)
--
-- One row per claim whose run either follows an earlier claim on the same node
-- version by a run of the same agent profile (the prior stance), or was shown
-- other runs' stances on that version (recorded exposures). Positions: endorse
-- and originate +1, abstain 0, dispute -1. The class (first match):
--   first_stance       no prior claim of the same agent: nothing to change from;
--   held               same position as the prior claim;
--   after_evidence     it cites evidence the prior claim did not, or evidence either
--                      cites was challenged or invalidated between the two claims;
--   toward_exposure    closer to the mean position of the stances it was shown;
--   against_exposure   farther from it;
--   no_recorded_cause  changed, and nothing recorded explains it.
-- Mirrored by council/domain/stances.py (a test keeps them in agreement).
CREATE VIEW council_v_stance_changes AS
WITH facts AS (
    SELECT c.id AS claim_id, c.node_version_id, nv.thread_id, c.run_id, r.agent, r.model, r.provider,
           r.round, c.claim_type, c.confidence, c.created_at,
           p.id AS prior_claim_id, p.run_id AS prior_run_id, p.claim_type AS prior_claim_type,
           p.confidence AS prior_confidence, p.created_at AS prior_created_at,
           x.exposed_stances, x.exposed_mean_position, x.exposed_claim_types,
           (SELECT count(DISTINCT ci.evidence_id) FROM citations ci
            WHERE p.id IS NOT NULL AND ci.node_version_id = c.node_version_id AND ci.run_id = c.run_id
              AND NOT EXISTS (SELECT 1 FROM citations cp
                              WHERE cp.node_version_id = c.node_version_id AND cp.run_id = p.run_id
                                AND cp.evidence_id = ci.evidence_id)) AS new_evidence,
           (SELECT count(DISTINCT ci.evidence_id) FROM citations ci
            WHERE p.id IS NOT NULL AND ci.node_version_id = c.node_version_id
              AND ci.run_id IN (c.run_id, p.run_id)
              AND EXISTS (SELECT 1 FROM evidence_transitions et
                          WHERE et.evidence_id = ci.evidence_id
                            AND et.to_status IN ('challenged', 'invalidated')
                            AND et.created_at > p.created_at AND et.created_at <= c.created_at))
               AS invalidated_evidence
    FROM claims c
    JOIN agent_runs r ON r.id = c.run_id
    JOIN node_versions nv ON nv.id = c.node_version_id
    LEFT JOIN LATERAL (
        SELECT pc.* FROM claims pc JOIN agent_runs pr ON pr.id = pc.run_id
        WHERE pc.node_version_id = c.node_version_id AND pr.agent = r.agent AND pr.thread_id = r.thread_id
          AND pc.run_id <> c.run_id AND pc.created_at < c.created_at
        ORDER BY pc.created_at DESC, pc.id DESC LIMIT 1) p ON true
    CROSS JOIN LATERAL (
        SELECT count(*) AS exposed_stances,
               avg(CASE s.claim_type WHEN 'dispute' THEN -1 WHEN 'abstain' THEN 0 ELSE 1 END)
                   AS exposed_mean_position,
               coalesce(array_agg(s.claim_type ORDER BY s.claim_type), '{}') AS exposed_claim_types
        FROM (SELECT DISTINCT cx.id, cx.claim_type
              FROM run_exposures e
              JOIN claims cx ON cx.run_id = e.exposed_to_run_id AND cx.node_version_id = c.node_version_id
                            AND (e.claim_id IS NULL OR e.claim_id = cx.id)
              WHERE e.run_id = c.run_id AND e.kind = 'stance') s) x
), positioned AS (
    SELECT f.*,
           CASE f.claim_type WHEN 'dispute' THEN -1 WHEN 'abstain' THEN 0 ELSE 1 END AS position,
           CASE WHEN f.prior_claim_type IS NULL THEN NULL WHEN f.prior_claim_type = 'dispute' THEN -1
                WHEN f.prior_claim_type = 'abstain' THEN 0 ELSE 1 END AS prior_position
    FROM facts f
    WHERE f.prior_claim_id IS NOT NULL OR f.exposed_stances > 0
)
SELECT thread_id, node_version_id, claim_id, run_id, agent, model, provider, round,
       claim_type, confidence, position,
       prior_claim_id, prior_run_id, prior_claim_type, prior_confidence, prior_position,
       exposed_stances, exposed_mean_position, exposed_claim_types, new_evidence, invalidated_evidence,
       CASE
           WHEN prior_claim_id IS NULL THEN 'first_stance'
           WHEN position = prior_position THEN 'held'
           WHEN new_evidence > 0 OR invalidated_evidence > 0 THEN 'after_evidence'
           WHEN exposed_stances > 0
                AND abs(position - exposed_mean_position) < abs(prior_position - exposed_mean_position)
               THEN 'toward_exposure'
           WHEN exposed_stances > 0
                AND abs(position - exposed_mean_position) > abs(prior_position - exposed_mean_position)
               THEN 'against_exposure'
           ELSE 'no_recorded_cause'
       END AS change_class,
       created_at
FROM positioned;
COMMENT ON VIEW council_v_stance_changes IS
    'Each claim that follows an earlier stance of the same agent on the node, or was shown others'' stances: how it changed (schema/views.md)';

-- ----------------------------------------------------------- calibration (issue 20)
--
-- council_v_claim_outcomes: every endorsement and dispute on a node version, with
-- what became of the version: the status of its latest consolidation (live,
-- superseded, retracted), else killed when the version was killed, else open.
-- A claim is resolved unless open; the node held when live or superseded
-- (superseded = historically valid, replaced by a newer consolidation) and fell
-- when retracted or killed. An endorsement was right when the node held, a
-- dispute when it fell; squared_error = (confidence - right)^2 (Brier).
-- Confidence buckets: 0 = [0, 0.2), 1 = [0.2, 0.4), ... 4 = [0.8, 1].
-- Mirrored by council/domain/calibration.py (a test keeps them in agreement).
CREATE VIEW council_v_claim_outcomes AS
WITH outcomes AS (
    SELECT c.id AS claim_id, nv.thread_id, c.node_version_id, c.run_id, r.agent, r.model, r.provider,
           c.claim_type, c.confidence, least(floor(c.confidence * 5), 4)::integer AS confidence_bucket,
           coalesce(k.status, CASE WHEN s.status = 'killed' THEN 'killed' END, 'open') AS outcome,
           c.created_at
    FROM claims c
    JOIN agent_runs r ON r.id = c.run_id
    JOIN node_versions nv ON nv.id = c.node_version_id
    JOIN node_version_states s ON s.id = c.node_version_id
    LEFT JOIN LATERAL (
        SELECT k.status FROM consolidations k WHERE k.node_version_id = c.node_version_id
        ORDER BY k.created_at DESC, k.id DESC LIMIT 1) k ON true
    WHERE c.claim_type IN ('endorse', 'dispute')
)
SELECT o.*,
       o.outcome <> 'open' AS resolved,
       CASE WHEN o.outcome = 'open' THEN NULL
            ELSE (o.outcome IN ('live', 'superseded')) = (o.claim_type = 'endorse') END AS was_right,
       CASE WHEN o.outcome = 'open' THEN NULL
            ELSE power(o.confidence - CASE WHEN (o.outcome IN ('live', 'superseded'))
                                                = (o.claim_type = 'endorse') THEN 1 ELSE 0 END, 2) END
           AS squared_error
FROM outcomes o;
COMMENT ON VIEW council_v_claim_outcomes IS
    'Each endorsement and dispute with what became of its node version, for calibration (schema/views.md)';

-- council_v_calibration: per model and provider family, over every thread.
CREATE VIEW council_v_calibration AS
SELECT model, provider,
       count(*) FILTER (WHERE claim_type = 'endorse') AS endorsements,
       count(*) FILTER (WHERE claim_type = 'endorse' AND outcome = 'live') AS endorsements_live,
       count(*) FILTER (WHERE claim_type = 'endorse' AND outcome = 'superseded') AS endorsements_superseded,
       count(*) FILTER (WHERE claim_type = 'endorse' AND outcome = 'retracted') AS endorsements_retracted,
       count(*) FILTER (WHERE claim_type = 'dispute') AS disputes,
       count(*) FILTER (WHERE claim_type = 'dispute' AND outcome IN ('retracted', 'killed'))
           AS disputes_vindicated,
       count(*) FILTER (WHERE resolved) AS resolved,
       count(*) FILTER (WHERE was_right) AS right,
       round(avg(squared_error), 6) AS brier
FROM council_v_claim_outcomes
GROUP BY model, provider;
COMMENT ON VIEW council_v_calibration IS
    'Per model and provider: endorsements that survived, disputes vindicated, Brier score (schema/views.md)';

GRANT SELECT ON council_v_stance_changes, council_v_claim_outcomes, council_v_calibration
TO council_dashboard, council_app;
