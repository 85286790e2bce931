-- supersede_consolidation --
-- A newer version of the node consolidates: its old live consolidation becomes
-- superseded (historically valid, replaced), in the committer's transaction under
-- the node lock; the transition's trigger updates the consolidation's status.
INSERT INTO consolidation_transitions (consolidation_id, from_status, to_status, reason, actor)
VALUES (:consolidation_id, 'live', 'superseded', :reason, :actor)

-- superseded_memory --
-- The memory item of the consolidation being superseded, and its status now.
SELECT id, status FROM memory_items WHERE consolidation_id = :consolidation_id

-- supersede_memory --
-- That memory item becomes superseded too (unless it is already retracted or
-- superseded, which the committer checks first).
INSERT INTO memory_transitions (memory_item_id, from_status, to_status, reason, actor)
VALUES (:memory_item_id, :from_status, 'superseded', :reason, :actor)
