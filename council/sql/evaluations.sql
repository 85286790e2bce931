-- evaluation_tails --
-- Under the node locks, before a batch's not-ready evaluations are written:
-- for each of :version_ids, its chain's rows from the latest root on (seq
-- order), from which the newest evaluation's manifest and section hashes are
-- rebuilt (at most ROOT_EVERY links; consolidation_evaluations_roots_idx,
-- then consolidation_evaluations_chain_idx). A version never evaluated since
-- revision 0013 has no rows.
SELECT c.node_version_id, c.seq, c.manifest, c.section_sha256, c.delta
FROM (SELECT r.node_version_id, max(r.seq) AS root
      FROM consolidation_evaluations r
      WHERE r.node_version_id = ANY(CAST(:version_ids AS uuid[])) AND r.manifest IS NOT NULL
      GROUP BY r.node_version_id) r
JOIN consolidation_evaluations c ON c.node_version_id = r.node_version_id AND c.seq >= r.root
ORDER BY c.node_version_id, c.seq

-- evaluation_chains --
-- For replay: for each evaluation of :record_ids that is part of a chain
-- (seq set, revision 0013), the rows from the nearest root at or before it
-- up to it, in seq order, tagged with the evaluation they rebuild. Rows
-- written before 0013 (seq NULL) come back alone with their manifest or
-- snapshot. One statement for any number of records.
SELECT x.id AS record_id, c.seq, c.manifest, c.section_sha256, c.delta, c.snapshot
FROM consolidation_evaluations x
CROSS JOIN LATERAL (
    SELECT max(r.seq) AS root FROM consolidation_evaluations r
    WHERE r.node_version_id = x.node_version_id AND r.manifest IS NOT NULL AND r.seq <= x.seq
) r
JOIN consolidation_evaluations c
  ON c.id = x.id OR (c.node_version_id = x.node_version_id AND c.seq BETWEEN r.root AND x.seq)
WHERE x.id = ANY(CAST(:record_ids AS uuid[]))
ORDER BY x.id, c.seq

-- evaluation_reasons --
-- Before a batch's not-ready evaluations are written: the reasons of its links
-- (JSON array :reasons of {sha256, reason}), each stored once by content, in
-- ascending hash order (two batches never wait on each other in a cycle). A
-- separate statement from the evaluations' insert, so that the insert's
-- snapshot sees a hash another transaction committed while this one waited.
INSERT INTO decision_reasons (sha256, reason)
SELECT DISTINCT ON (x.sha256) x.sha256, x.reason
FROM jsonb_to_recordset(CAST(:reasons AS jsonb)) AS x(sha256 text, reason jsonb)
ORDER BY x.sha256
ON CONFLICT (sha256) DO NOTHING
