-- consolidation_memory_item --
-- A consolidation's memory item (every consolidation projects one), to move it:
-- retraction proposed (contested), adjudicated (retracted or stable), restored.
SELECT id, thread_id, status FROM memory_items WHERE consolidation_id = :consolidation_id

-- proposals_of_thread --
-- A thread's retraction proposals, oldest first, with the version their
-- consolidation decided and its content (the governance page).
SELECT p.*, c.node_version_id, nv.content
FROM retraction_proposals p
JOIN consolidations c ON c.id = p.consolidation_id
JOIN node_versions nv ON nv.id = c.node_version_id
WHERE p.thread_id = :thread_id
ORDER BY p.created_at, p.id

-- votes_of_proposals --
-- The votes on the given proposals, each with its run's agent and provider, in
-- the order they were cast.
SELECT v.*, r.agent, r.provider
FROM retraction_votes v
JOIN agent_runs r ON r.id = v.run_id
WHERE v.proposal_id = ANY (CAST(:ids AS uuid[]))
ORDER BY v.created_at, v.id

-- proposal_transitions_of --
-- The status history of the given proposals, in the order it was recorded.
SELECT * FROM retraction_proposal_transitions
WHERE proposal_id = ANY (CAST(:ids AS uuid[]))
ORDER BY created_at

-- proposal_voters --
-- The runs that voted on a proposal, as independence grouping sees them (a vote
-- is the run's stance); adjudication and the governance page group them.
SELECT v.run_id, v.vote, v.confidence, r.provider, r.parent_run_id, r.input_fingerprint
FROM retraction_votes v
JOIN agent_runs r ON r.id = v.run_id
WHERE v.proposal_id = :proposal_id

-- stance_exposures_of --
-- Which runs' stances each of the given runs saw (grouping puts exposed runs together).
SELECT run_id, exposed_to_run_id
FROM run_exposures
WHERE run_id = ANY (CAST(:run_ids AS uuid[])) AND kind = 'stance'

-- run_voted_on --
-- Whether the run already voted on the proposal (a run votes once).
SELECT id FROM retraction_votes WHERE proposal_id = :proposal_id AND run_id = :run_id

-- add_retraction_vote --
-- A run's vote on a proposal (endorse = retract, dispute = keep, abstain), checked first.
INSERT INTO retraction_votes (proposal_id, run_id, vote, confidence, rationale)
VALUES (:proposal_id, :run_id, :vote, :confidence, :rationale)
RETURNING *

-- proposal_evidence --
-- What a review run is shown of the evidence a proposal's consolidation rests on
-- (through the evidence index): each item with its title in the thread and its
-- current validity, by id.
SELECT e.id, coalesce(te.title, e.title) AS title, e.validity
FROM evidence e
JOIN consolidation_evidence ce ON ce.evidence_id = e.id
LEFT OUTER JOIN thread_evidence te ON te.evidence_id = e.id AND te.thread_id = :thread_id
WHERE ce.consolidation_id = :consolidation_id
ORDER BY e.id

-- close_proposal --
-- An adjudication's decision: the proposal moves open -> retracted | restored |
-- superseded (its trigger updates the proposal's status), with the tallies.
INSERT INTO retraction_proposal_transitions (proposal_id, from_status, to_status, reason, actor, details)
VALUES (:proposal_id, 'open', :to_status, :reason, :actor, CAST(:details AS jsonb))

-- retract_consolidation --
-- A retraction adjudicated: the consolidation moves live -> retracted.
INSERT INTO consolidation_transitions (consolidation_id, from_status, to_status, reason, actor)
VALUES (:consolidation_id, 'live', 'retracted', :reason, :actor)

-- reopen_retracted_version --
-- A retracted consolidation's resolved version is open again (it may consolidate
-- on a new version, or through an explicit restore).
INSERT INTO node_status_transitions (node_version_id, from_status, to_status, reason, actor, consolidation_id)
VALUES (:node_version_id, 'resolved', 'open', :reason, :actor, :consolidation_id)
