-- affected_consolidations --
-- Live consolidations resting on one evidence item, found through the evidence
-- index written at commit time (never by scanning snapshots).
SELECT c.id, c.logical_node_id, c.node_version_id, c.thread_id
FROM consolidation_evidence ce
JOIN consolidations c ON c.id = ce.consolidation_id
WHERE ce.evidence_id = :evidence_id AND c.status = 'live'
ORDER BY c.id

-- evidence_validity --
-- Current validity of a set of evidence items.
SELECT id, validity FROM evidence WHERE id = ANY (CAST(:ids AS uuid[]))

-- dependents --
-- One bounded step of the cascade: versions that depend on any of :versions,
-- with their live consolidation and memory item (if they have one).
SELECT DISTINCT e.from_version_id AS version_id, c.id AS consolidation_id, m.id AS memory_item_id,
       m.status AS memory_status, c.thread_id
FROM edges e
LEFT JOIN consolidations c ON c.node_version_id = e.from_version_id AND c.status = 'live'
LEFT JOIN memory_items m ON m.consolidation_id = c.id
WHERE e.kind = 'depends_on' AND e.to_version_id = ANY (CAST(:versions AS uuid[]))
ORDER BY e.from_version_id
