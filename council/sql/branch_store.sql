-- add_branch --
-- A fork: a new active branch off :parent_branch_id (disagreement forks, never overwrites).
INSERT INTO branches (thread_id, kind, parent_branch_id, fork_version_id, divergence_type, objective,
                      label, created_by_run_id)
VALUES (:thread_id, :kind, :parent_branch_id, :fork_version_id, :divergence_type, :objective,
        :label, :created_by_run_id)
RETURNING id, thread_id, kind, parent_branch_id, fork_version_id, divergence_type, objective, label,
          created_by_run_id, status, status_changed_at, created_at

-- add_merge --
-- An explicit merge of a branch into its target, with the version preferred if any.
INSERT INTO merges (thread_id, source_branch_id, target_branch_id, preferred_version_id, rationale, actor)
VALUES (:thread_id, :source_branch_id, :target_branch_id, :preferred_version_id, :rationale, :actor)
RETURNING id, thread_id, source_branch_id, target_branch_id, preferred_version_id, rationale,
          created_by_run_id, actor, created_at

-- add_branch_transition --
-- A branch's status change as recorded (the trigger moves its status).
INSERT INTO branch_transitions (branch_id, from_status, to_status, reason, actor)
VALUES (:branch_id, :from_status, :to_status, :reason, :actor)

-- thread_branches --
-- Every branch of a thread, oldest first.
SELECT id, thread_id, kind, parent_branch_id, fork_version_id, divergence_type, objective, label,
       created_by_run_id, status, status_changed_at, created_at
FROM branches WHERE thread_id = :thread_id ORDER BY created_at
