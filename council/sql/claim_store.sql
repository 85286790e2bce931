-- add_claims --
-- Claims of one run (JSON array :claims of id, node_version_id, claim_type,
-- confidence and rationale; ids made by the caller put the returned rows back in
-- order), checked by the caller in this transaction: one statement for any number.
INSERT INTO claims (id, run_id, node_version_id, claim_type, confidence, rationale)
SELECT c.id, CAST(:run_id AS uuid), c.node_version_id, c.claim_type, c.confidence, c.rationale
FROM jsonb_to_recordset(CAST(:claims AS jsonb))
    AS c(id uuid, node_version_id uuid, claim_type text, confidence numeric, rationale text)
RETURNING *

-- versions_by_id --
-- Node versions by id (:version_ids), every column, in one query for any number.
SELECT * FROM node_versions WHERE id = ANY(CAST(:version_ids AS uuid[]))

-- claimed_by_run --
-- The claim type a run already has on each of :version_ids that it claimed.
SELECT node_version_id, claim_type FROM claims
WHERE run_id = :run_id AND node_version_id = ANY(CAST(:version_ids AS uuid[]))

-- add_citations --
-- Citations (JSON array :citations of id, node_version_id, evidence_id, branch_id,
-- claim_id, run_id, role and interpretation; ids made by the caller, so nothing comes
-- back), resolved and checked by the caller: one statement for any number.
INSERT INTO citations (id, node_version_id, evidence_id, branch_id, claim_id, run_id, role, interpretation)
SELECT c.id, c.node_version_id, c.evidence_id, c.branch_id, c.claim_id, c.run_id, c.role, c.interpretation
FROM jsonb_to_recordset(CAST(:citations AS jsonb))
    AS c(id uuid, node_version_id uuid, evidence_id uuid, branch_id uuid, claim_id uuid, run_id uuid, role text,
         interpretation text)

-- branch_facts_by_id --
-- What the output check needs of the branches an output names (:branch_ids): thread and status.
SELECT id, thread_id, status FROM branches WHERE id = ANY(CAST(:branch_ids AS uuid[]))

-- logical_node_threads_by_id --
-- The thread of each logical node an output names (:node_ids).
SELECT id, thread_id FROM logical_nodes WHERE id = ANY(CAST(:node_ids AS uuid[]))

-- version_branch --
-- The thread and branch of one node version (the branch a fork leaves).
SELECT id, thread_id, branch_id FROM node_versions WHERE id = :version_id
