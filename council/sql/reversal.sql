-- affected_consolidations --
-- Live consolidations resting on one evidence item, found through the evidence
-- index written at commit time (never by scanning snapshots), in ascending
-- order of their node's lock key (lock_node's key, locks.sql): reassessment
-- takes those locks in this order.
SELECT c.id, c.logical_node_id, c.node_version_id, c.thread_id,
       council_node_lock_key_v1(c.logical_node_id) AS node_lock_key
FROM consolidation_evidence ce
JOIN consolidations c ON c.id = ce.consolidation_id
WHERE ce.evidence_id = :evidence_id AND c.status = 'live'
ORDER BY node_lock_key, c.id

-- provisional_challenged --
-- Live consolidations whose memory is provisional while some evidence they
-- rest on is challenged (through the evidence index), optionally only those of
-- the given memory items, in lock-key order like affected_consolidations.
SELECT c.id, c.logical_node_id, c.node_version_id, c.thread_id,
       council_node_lock_key_v1(c.logical_node_id) AS node_lock_key
FROM memory_items m
JOIN consolidations c ON c.id = m.consolidation_id AND c.status = 'live'
WHERE m.status = 'provisional'
  AND (CAST(:memory_item_ids AS uuid[]) IS NULL OR m.id = ANY (CAST(:memory_item_ids AS uuid[])))
  AND EXISTS (SELECT 1 FROM consolidation_evidence ce JOIN evidence e ON e.id = ce.evidence_id
              WHERE ce.consolidation_id = c.id AND e.validity = 'challenged')
ORDER BY node_lock_key, c.id
LIMIT :limit

-- reassess_load --
-- After the node locks: each consolidation of the batch with its memory item
-- and the current validity of every evidence item its stored snapshot names
-- (looked up by key: `= ANY (ARRAY(..))`, as `IN (..)` was planned as a scan
-- of all evidence per consolidation).
SELECT c.id, c.status, c.node_version_id, c.thread_id, c.snapshot,
       m.id AS memory_item_id, m.status AS memory_status, m.thread_id AS memory_thread_id,
       (SELECT coalesce(jsonb_object_agg(e.id, e.validity), '{}'::jsonb)
        FROM evidence e
        WHERE e.id = ANY (ARRAY(
            SELECT CAST(x ->> 'id' AS uuid) FROM jsonb_array_elements(c.snapshot -> 'evidence') AS x))) AS validity
FROM consolidations c
JOIN memory_items m ON m.consolidation_id = c.id
WHERE c.id = ANY (CAST(:ids AS uuid[]))

-- move_memory_batch --
-- Memory moves in one statement, applied in the given order (two moves of one
-- item chain: the transition trigger checks each from-status), each with its
-- event (council.ledger.memory: every memory move goes through here).
WITH moves AS (
    SELECT j.ord, CAST(j.x ->> 'memory_item_id' AS uuid) AS memory_item_id,
           CAST(j.x ->> 'thread_id' AS uuid) AS thread_id, j.x ->> 'from' AS from_status,
           j.x ->> 'to' AS to_status, j.x ->> 'reason' AS reason, j.x -> 'details' AS details
    FROM jsonb_array_elements(CAST(:moves AS jsonb)) WITH ORDINALITY AS j(x, ord)
), moved AS (
    INSERT INTO memory_transitions (memory_item_id, from_status, to_status, reason, actor, details)
    SELECT memory_item_id, from_status, to_status, reason, :actor, details FROM moves ORDER BY ord
)
INSERT INTO events (thread_id, kind, subject_id, actor, payload)
SELECT thread_id, 'memory.' || to_status, CAST(memory_item_id AS text), :actor,
       jsonb_build_object('from', from_status, 'reason', reason)
FROM moves ORDER BY ord

-- open_retractions --
-- Open (or find the already open) retraction proposal of each given
-- consolidation, pinned to the given rule set and grouping, with its event
-- (retraction.open_many; open_proposal is one of them). Call under the node locks.
WITH wanted AS (
    SELECT j.ord, CAST(j.x ->> 'consolidation_id' AS uuid) AS consolidation_id,
           CAST(j.x ->> 'thread_id' AS uuid) AS thread_id, j.x ->> 'reason' AS reason,
           j.x ->> 'rule_set_id' AS rule_set_id, j.x ->> 'grouping_algorithm_id' AS grouping_algorithm_id
    FROM jsonb_array_elements(CAST(:proposals AS jsonb)) WITH ORDINALITY AS j(x, ord)
), existing AS (
    SELECT p.consolidation_id, p.id
    FROM retraction_proposals p JOIN wanted w ON w.consolidation_id = p.consolidation_id
    WHERE p.status = 'open'
), opened AS (
    INSERT INTO retraction_proposals (thread_id, consolidation_id, reason, rule_set_id, grouping_algorithm_id,
                                      opened_by)
    SELECT w.thread_id, w.consolidation_id, w.reason, w.rule_set_id, w.grouping_algorithm_id, :actor
    FROM wanted w
    WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.consolidation_id = w.consolidation_id)
    ORDER BY w.ord
    RETURNING id, thread_id, consolidation_id, reason, rule_set_id, grouping_algorithm_id
), announced AS (
    INSERT INTO events (thread_id, kind, subject_id, actor, payload)
    SELECT thread_id, 'retraction.proposed', CAST(id AS text), :actor,
           jsonb_build_object('consolidation_id', consolidation_id, 'reason', reason,
                              'rule_set_id', rule_set_id, 'grouping_algorithm_id', grouping_algorithm_id)
    FROM opened
)
SELECT consolidation_id, id FROM existing
UNION ALL
SELECT consolidation_id, id FROM opened

-- dependents --
-- One bounded step of the cascade: versions that depend on any of :versions
-- (each with the version it depends on), with their live consolidation and
-- memory item (if they have one).
SELECT DISTINCT e.to_version_id AS depends_on, e.from_version_id AS version_id, c.id AS consolidation_id,
       m.id AS memory_item_id, m.status AS memory_status, c.thread_id
FROM edges e
LEFT JOIN consolidations c ON c.node_version_id = e.from_version_id AND c.status = 'live'
LEFT JOIN memory_items m ON m.consolidation_id = c.id
WHERE e.kind = 'depends_on' AND e.to_version_id = ANY (CAST(:versions AS uuid[]))
ORDER BY e.to_version_id, e.from_version_id

-- unreassessed_consolidations --
-- For the sweep: live consolidations whose memory is still stable although
-- evidence they rest on (through the evidence index) was challenged or
-- invalidated at least :settle_s ago, and has not moved since — a validity
-- change whose reassessment transaction never ran (the database went away
-- between the two). Memory that moved since was reassessed (every
-- reassessment of stable memory over fallen evidence moves it), and may be
-- stable again: an immaterial invalidation, or a re-verification. Driven
-- from the evidence that fell (few rows), in lock-key order like
-- affected_consolidations.
SELECT DISTINCT c.id, c.logical_node_id, c.node_version_id, c.thread_id,
       council_node_lock_key_v1(c.logical_node_id) AS node_lock_key
FROM evidence e
JOIN consolidation_evidence ce ON ce.evidence_id = e.id
JOIN consolidations c ON c.id = ce.consolidation_id AND c.status = 'live'
JOIN memory_items m ON m.consolidation_id = c.id AND m.status = 'stable'
                   AND m.status_changed_at < e.validity_changed_at
WHERE e.validity IN ('challenged', 'invalidated')
  AND e.validity_changed_at < clock_timestamp() - make_interval(secs => :settle_s)
ORDER BY node_lock_key, c.id
LIMIT :limit

-- add_evidence_transition --
-- An evidence item's validity change as recorded (the trigger moves its validity).
INSERT INTO evidence_transitions (evidence_id, from_status, to_status, reason, actor)
VALUES (:evidence_id, :from_status, :to_status, :reason, :actor)
