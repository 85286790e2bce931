-- node_consolidations --
-- Every consolidation of a logical node, oldest first (its decision history).
SELECT id, thread_id, logical_node_id, node_version_id, rule_set_id, grouping_algorithm_id,
       snapshot, snapshot_sha256, decision, status, status_changed_at, created_at
FROM consolidations WHERE logical_node_id = :logical_node_id ORDER BY created_at

-- consolidation_row --
-- One consolidation as stored, by id (show and record read it whole).
SELECT id, thread_id, logical_node_id, node_version_id, rule_set_id, grouping_algorithm_id,
       snapshot, snapshot_sha256, decision, status, status_changed_at, created_at
FROM consolidations WHERE id = :id

-- evaluation_row --
-- One recorded evaluation as stored, by id (record fills in what a compact row leaves out).
SELECT * FROM consolidation_evaluations WHERE id = :id

-- consolidation_transitions_of --
-- A consolidation's status history, oldest first.
SELECT id, consolidation_id, from_status, to_status, reason, actor, created_at
FROM consolidation_transitions WHERE consolidation_id = :consolidation_id ORDER BY created_at

-- consolidation_evidence_ids --
-- The evidence a consolidation rests on, by id.
SELECT evidence_id FROM consolidation_evidence
WHERE consolidation_id = :consolidation_id ORDER BY evidence_id

-- consolidation_memory --
-- The memory item a consolidation projected, if any, with its status.
SELECT id, status FROM memory_items WHERE consolidation_id = :consolidation_id LIMIT 1

-- consolidation_snapshots --
-- The stored snapshot of each consolidation of :ids (their manifests are read from it).
SELECT id, snapshot FROM consolidations WHERE id = ANY(CAST(:ids AS uuid[]))

-- memory_items_listed --
-- Memory items, oldest first: of one status and one thread when given (NULL: any).
SELECT id, thread_id, consolidation_id, logical_node_id, node_version_id, content, status,
       status_changed_at, created_at
FROM memory_items
WHERE (CAST(:status AS text) IS NULL OR status = CAST(:status AS text))
  AND (CAST(:thread_id AS uuid) IS NULL OR thread_id = CAST(:thread_id AS uuid))
ORDER BY created_at, id

-- memory_transitions_of --
-- The transition history of each memory item of :ids, oldest first.
SELECT id, memory_item_id, from_status, to_status, reason, actor, details, created_at
FROM memory_transitions WHERE memory_item_id = ANY(CAST(:ids AS uuid[])) ORDER BY created_at
