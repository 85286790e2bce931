-- evaluation_compact_records --
-- Which of :record_ids are compact chained evaluations (revision 0014), and where.
SELECT e.id, e.node_version_id, e.seq
FROM consolidation_evaluations e
WHERE e.id = ANY(CAST(:record_ids AS uuid[])) AND e.link IS NOT NULL

-- evaluation_compact_chains --
-- For each i, the compact chain of version :version_ids[i] from its latest
-- root at or before seq :seqs[i] up to seq :lasts[i], in seq order, each row
-- found by its id (council_evaluation_id_v1; seq is gapless), the root
-- through consolidation_evaluations_compact_roots_idx. One statement for any
-- number of chains.
SELECT v.version_id AS node_version_id, c.seq, c.manifest, c.section_sha256, c.delta, c.link
FROM unnest(CAST(:version_ids AS uuid[]), CAST(:seqs AS integer[]), CAST(:lasts AS integer[]))
     AS v(version_id, seq, last)
CROSS JOIN LATERAL (
    SELECT max(r.seq) AS root FROM consolidation_evaluations r
    WHERE r.node_version_id = v.version_id AND r.link IS NOT NULL AND r.rule_set_id IS NOT NULL
      AND r.seq <= v.seq
) r
CROSS JOIN generate_series(r.root, v.last) AS s(seq)
JOIN consolidation_evaluations c ON c.id = council_evaluation_id_v1(v.version_id, s.seq)
ORDER BY v.version_id, s.seq

-- evaluation_chains --
-- For replay of rows written before revision 0014: for each evaluation of
-- :record_ids that is part of a 0013 chain (seq set, no link), the rows from
-- the nearest root at or before it up to it, in seq order, tagged with the
-- evaluation they rebuild (consolidation_evaluations_chain_idx). Rows written
-- before 0013 (seq NULL) come back alone with their manifest or snapshot.
-- One statement for any number of records.
SELECT x.id AS record_id, c.seq, c.manifest, c.section_sha256, c.delta, c.snapshot
FROM consolidation_evaluations x
CROSS JOIN LATERAL (
    SELECT max(r.seq) AS root FROM consolidation_evaluations r
    WHERE r.node_version_id = x.node_version_id AND r.manifest IS NOT NULL AND r.seq <= x.seq
) r
JOIN consolidation_evaluations c
  ON c.id = x.id
  OR (c.node_version_id = x.node_version_id AND c.seq BETWEEN r.root AND x.seq AND c.link IS NULL)
WHERE x.id = ANY(CAST(:record_ids AS uuid[])) AND x.link IS NULL
ORDER BY x.id, c.seq

-- evaluation_claim_runs --
-- The run of each claim of :claim_ids (a compact chain's manifest names its
-- claims, and its runs are theirs, revision 0014).
SELECT c.id, c.run_id FROM claims c WHERE c.id = ANY(CAST(:claim_ids AS uuid[]))

-- evaluation_history --
-- Every recorded evaluation of the logical node :logical_node_id (through its
-- versions), its columns and reasons resolved whatever its layout.
SELECT e.id, e.node_version_id, e.outcome, e.snapshot_sha256, e.created_at, e.reasons
FROM council_v_evaluations e
WHERE e.node_version_id IN (SELECT nv.id FROM node_versions nv WHERE nv.logical_node_id = :logical_node_id)
ORDER BY e.created_at, e.seq

-- evaluation_record --
-- One evaluation's columns as resolved for any layout (its manifest is rebuilt apart).
SELECT e.thread_id, e.logical_node_id, e.rule_set_id, e.grouping_algorithm_id, e.snapshot_sha256,
       e.outcome, e.reasons
FROM council_v_evaluations e
WHERE e.id = :id
