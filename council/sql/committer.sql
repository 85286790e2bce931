-- commit_begin --
-- First statement of a consolidation transaction: SET LOCAL the lock and
-- statement timeouts, report the isolation level, find the version, and take
-- the logical node's transaction-scoped advisory lock (in that order: target
-- list expressions run left to right). Nothing read here may be trusted for
-- the decision: this statement's snapshot predates the lock wait, and the
-- version row it reads is immutable.
SELECT set_config('lock_timeout', :lock_timeout, true) AS lock_timeout,
       set_config('statement_timeout', :statement_timeout, true) AS statement_timeout,
       current_setting('transaction_isolation') AS isolation,
       nv.logical_node_id, nv.thread_id, nv.content,
       pg_advisory_xact_lock(hashtextextended('council.node:' || CAST(nv.logical_node_id AS text), 0)) AS locked
FROM node_versions nv
WHERE nv.id = :version_id

-- commit_live --
-- After the node lock: the node's live consolidation, if any (fast path for
-- repeated evaluations), and shared locks on the evidence now cited on the
-- version, in ascending key order.
SELECT (SELECT json_build_object('id', c.id, 'node_version_id', c.node_version_id,
                                 'snapshot_sha256', c.snapshot_sha256, 'reasons', c.decision -> 'reasons')
        FROM consolidations c WHERE c.logical_node_id = :logical_node_id AND c.status = 'live') AS live,
       (SELECT coalesce(json_agg(e.evidence_id), '[]'::json)
        FROM (SELECT evidence_id, pg_advisory_xact_lock_shared(
                         hashtextextended('council.evidence:' || CAST(evidence_id AS text), 0)) AS locked
              FROM (SELECT DISTINCT evidence_id FROM citations WHERE node_version_id = :version_id) d
              ORDER BY hashtextextended('council.evidence:' || CAST(evidence_id AS text), 0)) e) AS locked

-- commit_decided --
-- Idempotency: a consolidation or recorded evaluation of this version with
-- this exact snapshot hash.
SELECT (SELECT json_build_object('id', c.id, 'reasons', c.decision -> 'reasons') FROM consolidations c
        WHERE c.node_version_id = :version_id AND c.snapshot_sha256 = :digest) AS consolidation,
       (SELECT json_build_object('id', e.id, 'reasons', e.reasons) FROM consolidation_evaluations e
        WHERE e.node_version_id = :version_id AND e.snapshot_sha256 = :digest) AS evaluation

-- commit_write --
-- The positive decision in one statement: the consolidation, its evidence
-- index, the stable memory item, the version's `resolved` transition and the
-- event (the event trigger sends the NOTIFY).
WITH c AS (
    INSERT INTO consolidations (thread_id, logical_node_id, node_version_id, rule_set_id,
                                grouping_algorithm_id, snapshot, snapshot_sha256, decision)
    VALUES (:thread_id, :logical_node_id, :version_id, :rule_set_id, :grouping_algorithm_id,
            CAST(:snapshot AS jsonb), :digest, CAST(:decision AS jsonb))
    RETURNING id
), ev AS (
    INSERT INTO consolidation_evidence (evidence_id, consolidation_id)
    SELECT CAST(e AS uuid), c.id FROM c, unnest(CAST(:evidence_ids AS text[])) AS e
), m AS (
    INSERT INTO memory_items (thread_id, consolidation_id, logical_node_id, node_version_id, content)
    SELECT :thread_id, c.id, :logical_node_id, :version_id, :content FROM c
    RETURNING id
), s AS (
    INSERT INTO node_status_transitions (node_version_id, from_status, to_status, reason, actor,
                                         consolidation_id)
    SELECT :version_id, :from_status, 'resolved', :reason, :actor, c.id FROM c
), e AS (
    INSERT INTO events (thread_id, kind, subject_id, actor, payload)
    SELECT :thread_id, 'consolidation.committed', CAST(c.id AS text), :actor,
           CAST(:payload AS jsonb) || jsonb_build_object('memory_item_id', m.id)
    FROM c, m
)
SELECT c.id AS consolidation_id, m.id AS memory_item_id FROM c, m
