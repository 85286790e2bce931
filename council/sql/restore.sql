-- restore_live_rival --
-- Before an explicit restore (under the node's lock): another consolidation of the
-- node that is live, if any — a restore would make two.
SELECT id FROM consolidations WHERE logical_node_id = :logical_node_id AND status = 'live' LIMIT 1

-- restore_live_alternative --
-- Before an explicit restore under a rule set with exclusive_alternatives (under the
-- thread's alternatives key, then the node's lock): a rival alternative of the node that
-- holds a live consolidation, if any — a restore would make two in one set (invariant 8).
SELECT k.id
FROM council_alternative_set_v1(:logical_node_id) AS a(id)
JOIN consolidations k ON k.logical_node_id = a.id AND k.status = 'live'
JOIN threads th ON th.id = k.thread_id
JOIN rule_sets rs ON rs.id = th.rule_set_id AND rs.body @> '{"exclusive_alternatives": true}'
WHERE k.logical_node_id <> :logical_node_id
LIMIT 1

-- restore_version --
-- The version a retracted consolidation decided, with its place in its node's history.
SELECT id, logical_node_id, version_no FROM node_versions WHERE id = :id

-- restore_newer_version --
-- A newer version of the node, if any: that one is consolidated instead.
SELECT id FROM node_versions WHERE logical_node_id = :logical_node_id AND version_no > :version_no LIMIT 1

-- restore_proposal --
-- The proposal moves retracted -> restored (its trigger updates the proposal's status).
INSERT INTO retraction_proposal_transitions (proposal_id, from_status, to_status, reason, actor, details)
VALUES (:proposal_id, 'retracted', 'restored', :reason, :actor, CAST(:details AS jsonb))

-- restore_consolidation --
-- Its consolidation moves back retracted -> live.
INSERT INTO consolidation_transitions (consolidation_id, from_status, to_status, reason, actor)
VALUES (:consolidation_id, 'retracted', 'live', :reason, :actor)

-- restore_version_resolved --
-- An open or tentative version becomes resolved again by the restored consolidation.
INSERT INTO node_status_transitions (node_version_id, from_status, to_status, reason, actor, consolidation_id)
VALUES (:node_version_id, :from_status, 'resolved', :reason, :actor, :consolidation_id)
