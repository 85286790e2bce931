-- add_logical_node --
-- A logical node on a branch (its first version follows).
INSERT INTO logical_nodes (thread_id, branch_id) VALUES (:thread_id, :branch_id) RETURNING id

-- add_node_version --
-- An immutable node version: its number, parent, content and address, the status it
-- starts in and the run that made it.
INSERT INTO node_versions (logical_node_id, thread_id, branch_id, version_no, parent_version_id, content,
                           content_sha256, initial_status, created_by_run_id)
VALUES (:logical_node_id, :thread_id, :branch_id, :version_no, :parent_version_id, :content, :content_sha256,
        :initial_status, :run_id)
RETURNING *

-- add_originate_claim --
-- The claim by which a run originates the node it made, at the confidence it gave (else 1).
INSERT INTO claims (run_id, node_version_id, claim_type, confidence)
VALUES (:run_id, :node_version_id, 'originate', :confidence)
RETURNING id

-- add_edges --
-- Edges from a new version (JSON array :edges of kind and to_version_id), in the array's
-- order; their ids come back in that order.
INSERT INTO edges (thread_id, branch_id, kind, from_version_id, to_version_id, created_by_run_id)
SELECT CAST(:thread_id AS uuid), CAST(:branch_id AS uuid), e.value ->> 'kind', CAST(:from_version_id AS uuid),
       CAST(e.value ->> 'to_version_id' AS uuid), CAST(:run_id AS uuid)
FROM jsonb_array_elements(CAST(:edges AS jsonb)) WITH ORDINALITY AS e(value, n)
ORDER BY e.n
RETURNING id

-- add_status_transition --
-- A node version moved by hand between open, tentative and killed.
INSERT INTO node_status_transitions (node_version_id, from_status, to_status, reason, actor)
VALUES (:version_id, :from_status, :to_status, :reason, :actor)

-- version_status --
-- A node version's current status.
SELECT status FROM node_version_states WHERE id = :version_id

-- version_edges_out --
-- The edges from a node version, in order.
SELECT * FROM edges WHERE from_version_id = :version_id ORDER BY created_at

-- version_edges_in --
-- The edges to a node version, in order.
SELECT * FROM edges WHERE to_version_id = :version_id ORDER BY created_at

-- version_claims --
-- The claims on a node version, in order.
SELECT * FROM claims WHERE node_version_id = :version_id ORDER BY created_at

-- version_citations --
-- The citations of a node version, in order.
SELECT * FROM citations WHERE node_version_id = :version_id ORDER BY created_at

-- version_status_history --
-- A node version's status transitions, in order.
SELECT * FROM node_status_transitions WHERE node_version_id = :version_id ORDER BY created_at
