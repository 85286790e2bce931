-- Council ledger, revision 0013: evaluation chains (docs/architecture.md §4).
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
-- Reasons repeat too: the same rule with the same detail ("1 independent
-- support group(s), 2 required") recurs across evaluations and nodes, though
-- rarely a whole list (counts move). Each reason is stored once in
-- decision_reasons, keyed by the SHA-256 of its canonical JSON, and a link
-- lists its reasons' ids in order; a root keeps its reasons inline, so it
-- stands alone. Rows written before this revision keep their columns (seq
-- NULL, reasons inline) and replay as before.
--
-- What a chained row no longer needs an index for: its hash. Under the node
-- lock the committer compares a new snapshot's hash with its chain's tail; an
-- older snapshot of a version never recurs (its manifest only gains rows:
-- claims, exposures and citations are appended, a transition is a new row), so
-- (node_version_id, seq) is the key. The hash stays unique among the rows
-- written before, and the sweep reads a chain's claims_seen from its tail.
CREATE TABLE decision_reasons (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sha256 text NOT NULL UNIQUE CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    reason jsonb NOT NULL CHECK (jsonb_typeof(reason) = 'object')
);
COMMENT ON TABLE decision_reasons IS
    'Each reason of recorded evaluations once, by content (SHA-256 of its canonical JSON)';
CREATE TRIGGER decision_reasons_immutable BEFORE UPDATE OR DELETE ON decision_reasons
    FOR EACH ROW EXECUTE FUNCTION council_refuse_mutation_v1();
CREATE TRIGGER decision_reasons_no_truncate BEFORE TRUNCATE ON decision_reasons
    FOR EACH STATEMENT EXECUTE FUNCTION council_refuse_mutation_v1();

ALTER TABLE consolidation_evaluations ADD COLUMN seq integer CHECK (seq >= 0);
ALTER TABLE consolidation_evaluations ADD COLUMN delta jsonb CHECK (jsonb_typeof(delta) = 'object');
ALTER TABLE consolidation_evaluations ADD COLUMN reason_ids integer[]
    CHECK (cardinality(reason_ids) > 0 AND array_position(reason_ids, NULL) IS NULL);
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
    CHECK (reasons IS NOT NULL OR reason_ids IS NOT NULL);
CREATE UNIQUE INDEX consolidation_evaluations_chain_idx ON consolidation_evaluations (node_version_id, seq)
    INCLUDE (claims_seen);
ALTER TABLE consolidation_evaluations
    DROP CONSTRAINT consolidation_evaluations_node_version_id_snapshot_sha256_key;
CREATE UNIQUE INDEX consolidation_evaluations_legacy_sha256_key
    ON consolidation_evaluations (node_version_id, snapshot_sha256) WHERE seq IS NULL;
-- The sweep reads a legacy row's claims_seen through the index above, a chain's from its tail.
DROP INDEX consolidation_evaluations_claims_seen_idx;
-- history() finds a node's evaluations through its versions (the two indexes above).
DROP INDEX consolidation_evaluations_node_idx;
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
       ARRAY(SELECT x.reason ->> 'rule' FROM jsonb_array_elements(r.reasons)
             WITH ORDINALITY AS x(reason, n) WHERE NOT (x.reason ->> 'ok')::boolean ORDER BY x.n),
       r.reasons,
       NULL,
       NULL,
       e.created_at
FROM consolidation_evaluations e
JOIN node_versions nv ON nv.id = e.node_version_id
-- Its reasons: inline, or its reason ids' reasons in order.
CROSS JOIN LATERAL (
    SELECT coalesce(e.reasons, (SELECT jsonb_agg(dr.reason ORDER BY u.n)
                                FROM unnest(e.reason_ids) WITH ORDINALITY AS u(id, n)
                                JOIN decision_reasons dr ON dr.id = u.id)) AS reasons
) r;
