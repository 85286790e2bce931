-- Lookups by id shared by the stores (council/ledger/lookup.py): for each table a row
-- is looked up in, its row by id, the same locked, its ids in a range of the primary
-- key (an id prefix), and its rows by a list of ids.

-- lookup_threads --
-- One row of threads by id, every column (NotFound when none).
SELECT * FROM threads WHERE id = :id

-- lookup_threads_locked --
-- One row of threads by id, every column, locked to the end of the transaction.
SELECT * FROM threads WHERE id = :id FOR UPDATE

-- lookup_threads_prefix --
-- Ids of threads in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM threads WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_threads_many --
-- Rows of threads with any of :ids, every column, in one query.
SELECT * FROM threads WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_evidence --
-- One row of evidence by id, every column (NotFound when none).
SELECT * FROM evidence WHERE id = :id

-- lookup_evidence_locked --
-- One row of evidence by id, every column, locked to the end of the transaction.
SELECT * FROM evidence WHERE id = :id FOR UPDATE

-- lookup_evidence_prefix --
-- Ids of evidence in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM evidence WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_evidence_many --
-- Rows of evidence with any of :ids, every column, in one query.
SELECT * FROM evidence WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_node_versions --
-- One row of node_versions by id, every column (NotFound when none).
SELECT * FROM node_versions WHERE id = :id

-- lookup_node_versions_locked --
-- One row of node_versions by id, every column, locked to the end of the transaction.
SELECT * FROM node_versions WHERE id = :id FOR UPDATE

-- lookup_node_versions_prefix --
-- Ids of node_versions in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM node_versions WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_node_versions_many --
-- Rows of node_versions with any of :ids, every column, in one query.
SELECT * FROM node_versions WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_logical_nodes --
-- One row of logical_nodes by id, every column (NotFound when none).
SELECT * FROM logical_nodes WHERE id = :id

-- lookup_logical_nodes_locked --
-- One row of logical_nodes by id, every column, locked to the end of the transaction.
SELECT * FROM logical_nodes WHERE id = :id FOR UPDATE

-- lookup_logical_nodes_prefix --
-- Ids of logical_nodes in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM logical_nodes WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_logical_nodes_many --
-- Rows of logical_nodes with any of :ids, every column, in one query.
SELECT * FROM logical_nodes WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_agent_runs --
-- One row of agent_runs by id, every column (NotFound when none).
SELECT * FROM agent_runs WHERE id = :id

-- lookup_agent_runs_locked --
-- One row of agent_runs by id, every column, locked to the end of the transaction.
SELECT * FROM agent_runs WHERE id = :id FOR UPDATE

-- lookup_agent_runs_prefix --
-- Ids of agent_runs in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM agent_runs WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_agent_runs_many --
-- Rows of agent_runs with any of :ids, every column, in one query.
SELECT * FROM agent_runs WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_claims --
-- One row of claims by id, every column (NotFound when none).
SELECT * FROM claims WHERE id = :id

-- lookup_claims_locked --
-- One row of claims by id, every column, locked to the end of the transaction.
SELECT * FROM claims WHERE id = :id FOR UPDATE

-- lookup_claims_prefix --
-- Ids of claims in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM claims WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_claims_many --
-- Rows of claims with any of :ids, every column, in one query.
SELECT * FROM claims WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_branches --
-- One row of branches by id, every column (NotFound when none).
SELECT * FROM branches WHERE id = :id

-- lookup_branches_locked --
-- One row of branches by id, every column, locked to the end of the transaction.
SELECT * FROM branches WHERE id = :id FOR UPDATE

-- lookup_branches_prefix --
-- Ids of branches in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM branches WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_branches_many --
-- Rows of branches with any of :ids, every column, in one query.
SELECT * FROM branches WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_pending_actions --
-- One row of pending_actions by id, every column (NotFound when none).
SELECT * FROM pending_actions WHERE id = :id

-- lookup_pending_actions_locked --
-- One row of pending_actions by id, every column, locked to the end of the transaction.
SELECT * FROM pending_actions WHERE id = :id FOR UPDATE

-- lookup_pending_actions_prefix --
-- Ids of pending_actions in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM pending_actions WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_pending_actions_many --
-- Rows of pending_actions with any of :ids, every column, in one query.
SELECT * FROM pending_actions WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_consolidations --
-- One row of consolidations by id, every column (NotFound when none).
SELECT * FROM consolidations WHERE id = :id

-- lookup_consolidations_locked --
-- One row of consolidations by id, every column, locked to the end of the transaction.
SELECT * FROM consolidations WHERE id = :id FOR UPDATE

-- lookup_consolidations_prefix --
-- Ids of consolidations in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM consolidations WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_consolidations_many --
-- Rows of consolidations with any of :ids, every column, in one query.
SELECT * FROM consolidations WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_consolidation_evaluations --
-- One row of consolidation_evaluations by id, every column (NotFound when none).
SELECT * FROM consolidation_evaluations WHERE id = :id

-- lookup_consolidation_evaluations_locked --
-- One row of consolidation_evaluations by id, every column, locked to the end of the transaction.
SELECT * FROM consolidation_evaluations WHERE id = :id FOR UPDATE

-- lookup_consolidation_evaluations_prefix --
-- Ids of consolidation_evaluations in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM consolidation_evaluations WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_consolidation_evaluations_many --
-- Rows of consolidation_evaluations with any of :ids, every column, in one query.
SELECT * FROM consolidation_evaluations WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_retraction_proposals --
-- One row of retraction_proposals by id, every column (NotFound when none).
SELECT * FROM retraction_proposals WHERE id = :id

-- lookup_retraction_proposals_locked --
-- One row of retraction_proposals by id, every column, locked to the end of the transaction.
SELECT * FROM retraction_proposals WHERE id = :id FOR UPDATE

-- lookup_retraction_proposals_prefix --
-- Ids of retraction_proposals in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM retraction_proposals WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_retraction_proposals_many --
-- Rows of retraction_proposals with any of :ids, every column, in one query.
SELECT * FROM retraction_proposals WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_memory_items --
-- One row of memory_items by id, every column (NotFound when none).
SELECT * FROM memory_items WHERE id = :id

-- lookup_memory_items_locked --
-- One row of memory_items by id, every column, locked to the end of the transaction.
SELECT * FROM memory_items WHERE id = :id FOR UPDATE

-- lookup_memory_items_prefix --
-- Ids of memory_items in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM memory_items WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_memory_items_many --
-- Rows of memory_items with any of :ids, every column, in one query.
SELECT * FROM memory_items WHERE id = ANY(CAST(:ids AS uuid[]))

-- lookup_dispatches --
-- One row of dispatches by id, every column (NotFound when none).
SELECT * FROM dispatches WHERE id = :id

-- lookup_dispatches_locked --
-- One row of dispatches by id, every column, locked to the end of the transaction.
SELECT * FROM dispatches WHERE id = :id FOR UPDATE

-- lookup_dispatches_prefix --
-- Ids of dispatches in a range of the primary key (an id prefix), at most :limit.
SELECT id FROM dispatches WHERE id >= :low AND id <= :high ORDER BY id LIMIT :limit

-- lookup_dispatches_many --
-- Rows of dispatches with any of :ids, every column, in one query.
SELECT * FROM dispatches WHERE id = ANY(CAST(:ids AS uuid[]))
