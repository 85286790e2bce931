-- add_action --
-- A pending action on a branch, with its acceptance condition and the version and
-- run it came from, if any.
INSERT INTO pending_actions (thread_id, branch_id, node_version_id, description, acceptance_condition,
                             created_by_run_id)
VALUES (:thread_id, :branch_id, :node_version_id, :description, :acceptance_condition, :run_id)
RETURNING *

-- close_action --
-- A pending action leaves open (satisfied or cancelled): its transition appended.
INSERT INTO pending_action_transitions (pending_action_id, from_status, to_status, reason, actor)
VALUES (:action_id, 'open', :status, :reason, :actor)
