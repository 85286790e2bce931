-- export_imported --
-- Whether a thread was made by `council import` (its `export --format json` is then
-- the council-debate-v1 record it came from).
SELECT EXISTS (SELECT 1 FROM imported_threads WHERE thread_id = :thread_id) AS imported

-- export_versions --
-- Every version of every logical node of a thread (the decision record's propositions),
-- nodes in creation order, versions by number.
SELECT ln.id AS logical_node_id, ln.head_version_id, v.id AS version_id, v.version_no,
       v.parent_version_id, v.branch_id, v.content, v.content_sha256, s.status,
       v.created_by_run_id, v.created_at
FROM logical_nodes ln
JOIN node_versions v ON v.logical_node_id = ln.id
JOIN node_version_states s ON s.id = v.id
WHERE ln.thread_id = :thread_id
ORDER BY ln.created_at, ln.id, v.version_no, v.id

-- export_consolidations --
-- A thread's consolidations, oldest first: the version decided, the pinned rule set and
-- grouping, the snapshot hash a replay recomputes, the stored decision and the status.
SELECT id, logical_node_id, node_version_id, rule_set_id, grouping_algorithm_id, snapshot_sha256,
       decision, status, status_changed_at, created_at
FROM consolidations
WHERE thread_id = :thread_id
ORDER BY created_at, id

-- export_proposals --
-- A thread's retraction proposals, oldest first.
SELECT p.id, p.consolidation_id, k.node_version_id, p.reason, p.rule_set_id, p.grouping_algorithm_id,
       p.opened_by, p.status, p.status_changed_at, p.created_at
FROM retraction_proposals p
JOIN consolidations k ON k.id = p.consolidation_id
WHERE p.thread_id = :thread_id
ORDER BY p.created_at, p.id

-- export_votes --
-- The votes on a thread's retraction proposals, with the voting run's agent and provider.
SELECT rv.id, rv.proposal_id, rv.run_id, r.agent, r.provider, rv.vote, rv.confidence::float8 AS confidence,
       rv.rationale, rv.created_at
FROM retraction_votes rv
JOIN retraction_proposals p ON p.id = rv.proposal_id
JOIN agent_runs r ON r.id = rv.run_id
WHERE p.thread_id = :thread_id
ORDER BY rv.created_at, rv.id

-- export_adjudications --
-- The status transitions of a thread's retraction proposals (their adjudications).
SELECT t.id, t.proposal_id, t.from_status, t.to_status, t.reason, t.actor, t.details, t.created_at
FROM retraction_proposal_transitions t
JOIN retraction_proposals p ON p.id = t.proposal_id
WHERE p.thread_id = :thread_id
ORDER BY t.created_at, t.id

-- export_contradicts --
-- The contradicts edges of a thread (from, to): the rivals among the alternatives of its answer.
SELECT from_version_id, to_version_id FROM edges
WHERE thread_id = :thread_id AND kind = 'contradicts'
ORDER BY created_at, id

-- export_resolutions --
-- The resolutions of a thread's node versions, oldest first: the outside fact, who
-- recorded it, and whether it is the one in force for its version.
SELECT id, node_version_id, outcome, source, reason, actor, created_at, in_force
FROM council_v_resolutions
WHERE thread_id = :thread_id
ORDER BY created_at, id

-- export_debate_rounds --
-- Each imported run's round in the record it came from (its run's `round` is one more).
SELECT it.run_id, it.debate_round
FROM imported_turns it
JOIN agent_runs r ON r.id = it.run_id
WHERE r.thread_id = :thread_id
