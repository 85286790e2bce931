-- Council ledger, revision 0013: evaluation chains (DESIGN §4, docs/architecture.md §4).
--
-- Since 0005 a not-ready evaluation stores its manifest, but a manifest names
-- every claim, run, exposure and citation of its version, and a hot node is
-- evaluated after every run that claims on it: the table still grew with
-- claims × evaluations. Now the evaluations of one version form a chain
-- numbered by seq (unique per version; the committer assigns it under the
-- node lock). A root (seq 0, and again every 64 links, so a rebuild reads at
-- most 64 deltas) stores the whole manifest and section hashes as before; a
-- link stores in delta only what changed since the evaluation seq - 1 of the
-- same version (ids added and removed per manifest section, changed scalars,
-- the hashes of the snapshot sections that changed). Replay rebuilds the
-- manifest from the nearest root, never from timestamps or other records.
--
-- Reasons repeat too (most evaluations of a node fail the same rules the same
-- way): they are stored once in decision_reasons, keyed by the SHA-256 of
-- their canonical JSON, and an evaluation points at them. Rows written before
-- this revision keep their columns (seq NULL, reasons inline) and replay as before.
CREATE TABLE decision_reasons (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sha256 text NOT NULL UNIQUE CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    reasons jsonb NOT NULL CHECK (jsonb_typeof(reasons) = 'array')
);
COMMENT ON TABLE decision_reasons IS
    'Reasons of recorded evaluations, once per content (SHA-256 of the canonical JSON)';
CREATE TRIGGER decision_reasons_immutable BEFORE UPDATE OR DELETE ON decision_reasons
    FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1();
CREATE TRIGGER decision_reasons_no_truncate BEFORE TRUNCATE ON decision_reasons
    FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1();

ALTER TABLE consolidation_evaluations ADD COLUMN seq integer CHECK (seq >= 0);
ALTER TABLE consolidation_evaluations ADD COLUMN delta jsonb CHECK (jsonb_typeof(delta) = 'object');
ALTER TABLE consolidation_evaluations ADD COLUMN reasons_id bigint REFERENCES decision_reasons (id);
ALTER TABLE consolidation_evaluations ALTER COLUMN reasons DROP NOT NULL;
-- claims_seen was generated from the manifest, which a link no longer holds: the committer writes it.
ALTER TABLE consolidation_evaluations ALTER COLUMN claims_seen DROP EXPRESSION;

ALTER TABLE consolidation_evaluations DROP CONSTRAINT consolidation_evaluations_replayable;
ALTER TABLE consolidation_evaluations ADD CONSTRAINT consolidation_evaluations_replayable CHECK (
    snapshot IS NOT NULL
    OR (manifest IS NOT NULL AND section_sha256 IS NOT NULL AND delta IS NULL)
    OR (manifest IS NULL AND delta IS NOT NULL AND seq > 0)
);
ALTER TABLE consolidation_evaluations ADD CONSTRAINT consolidation_evaluations_reasoned
    CHECK (reasons IS NOT NULL OR reasons_id IS NOT NULL);
CREATE UNIQUE INDEX consolidation_evaluations_chain_idx ON consolidation_evaluations (node_version_id, seq);
-- The roots alone, to find where a walk starts.
CREATE INDEX consolidation_evaluations_roots_idx ON consolidation_evaluations (node_version_id, seq)
    WHERE manifest IS NOT NULL;

GRANT SELECT, INSERT ON decision_reasons TO council_app;

CREATE OR REPLACE VIEW council_v_decisions AS
SELECT 'consolidation' AS kind,
       c.id AS decision_id,
       c.thread_id,
       c.logical_node_id,
       c.node_version_id,
       nv.version_no,
       c.rule_set_id,
       c.grouping_algorithm_id,
       c.snapshot_sha256,
       'committed' AS outcome,
       c.status AS consolidation_status,
       (SELECT count(*) FROM jsonb_array_elements(c.decision -> 'groups') AS g(grp)
        WHERE g.grp ->> 'kind' = 'support') AS support_groups,
       (SELECT count(*) FROM jsonb_array_elements(c.decision -> 'groups') AS g(grp)
        WHERE g.grp ->> 'kind' = 'dispute') AS dispute_groups,
       ARRAY(SELECT x.reason ->> 'rule' FROM jsonb_array_elements(c.decision -> 'reasons') WITH ORDINALITY
             AS x(reason, n) WHERE NOT (x.reason ->> 'ok')::boolean ORDER BY x.n) AS failed_rules,
       c.decision -> 'reasons' AS reasons,
       (SELECT m.id FROM memory_items m WHERE m.consolidation_id = c.id) AS memory_item_id,
       c.status_changed_at,
       c.created_at
FROM consolidations c
JOIN node_versions nv ON nv.id = c.node_version_id
UNION ALL
SELECT 'evaluation',
       e.id,
       e.thread_id,
       e.logical_node_id,
       e.node_version_id,
       nv.version_no,
       e.rule_set_id,
       e.grouping_algorithm_id,
       e.snapshot_sha256,
       e.outcome,
       NULL,
       NULL,
       NULL,
       ARRAY(SELECT x.reason ->> 'rule' FROM jsonb_array_elements(coalesce(e.reasons, dr.reasons))
             WITH ORDINALITY AS x(reason, n) WHERE NOT (x.reason ->> 'ok')::boolean ORDER BY x.n),
       coalesce(e.reasons, dr.reasons),
       NULL,
       NULL,
       e.created_at
FROM consolidation_evaluations e
JOIN node_versions nv ON nv.id = e.node_version_id
LEFT JOIN decision_reasons dr ON dr.id = e.reasons_id;
